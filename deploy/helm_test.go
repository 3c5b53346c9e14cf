package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/rebootwatch/rebootwatch/internal/agent"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
)

// chartDir is the Helm chart of the agent.
const chartDir = "helm/rebootwatch-agent"

// helmBin is bin/helm, built by `make helm` from the pinned module in
// hack/helm. Missing: skipped, or failed under REBOOTWATCH_INTEGRATION.
func helmBin(t *testing.T) string {
	t.Helper()
	return testcluster.Require(t, "helm")[0]
}

// runHelm runs helm with a private home, so no user configuration counts.
func runHelm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	home := t.TempDir()
	cmd := exec.Command(helmBin(t), args...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// kubeletVar is a $(VAR) reference, as the kubelet expands it in args.
var kubeletVar = regexp.MustCompile(`\$\([A-Za-z_][A-Za-z0-9_]*\)`)

// valueSet is one way to install the chart.
type valueSet struct {
	name, release, namespace, valuesFile string
	set                                  []string
}

var (
	defaultValues    = valueSet{name: "default", release: "rebootwatch-agent", namespace: "rebootwatch", valuesFile: "testdata/default-values.yaml"}
	nondefaultValues = valueSet{name: "non-default", release: "rw", namespace: "ops", valuesFile: "testdata/nondefault-values.yaml"}
)

func (v valueSet) args() []string {
	a := []string{"--namespace", v.namespace}
	if v.valuesFile != "" {
		a = append(a, "--values", v.valuesFile)
	}
	for _, s := range v.set {
		a = append(a, "--set", s)
	}
	return a
}

// render runs helm template and decodes every manifest.
func render(t *testing.T, v valueSet) []Object {
	t.Helper()
	out, err := runHelm(t, append([]string{"template", v.release, chartDir}, v.args()...)...)
	if err != nil {
		t.Fatalf("helm template (%s values): %v\n%s", v.name, err, out)
	}
	objs, err := Decode("helm template "+v.name, []byte(out))
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if len(objs) == 0 {
		t.Fatalf("helm template (%s values) rendered nothing", v.name)
	}
	return objs
}

func TestHelmLint(t *testing.T) {
	for _, v := range []valueSet{defaultValues, nondefaultValues} {
		out, err := runHelm(t, append([]string{"lint", "--strict", chartDir}, v.args()...)...)
		if err != nil || !strings.Contains(out, "0 chart(s) failed") {
			t.Errorf("helm lint --strict (%s values): %v\n%s", v.name, err, out)
		}
	}
}

// TestHelmRejectsBadValues: values the RBAC cannot be rendered from fail
// the render instead of producing a permission for nothing.
func TestHelmRejectsBadValues(t *testing.T) {
	for _, bad := range [][]string{
		{"fleetlock.groups=null"},
		{"kured.daemonSet.name="},
		{"fleetlock.namespace="},
		{"serviceMonitor.enabled=true", "service.enabled=false"},
		{"image.repository="},
	} {
		v := defaultValues
		v.set = bad
		if out, err := runHelm(t, append([]string{"template", v.release, chartDir}, v.args()...)...); err == nil {
			t.Errorf("--set %v rendered:\n%s", bad, out)
		}
	}
}

// TestHelmRequiresImage (issue 34 §1): no rebootwatch-agent image is
// published, so the chart has no default image to run: without
// image.repository it refuses to render, saying how to build and name one,
// instead of deploying an image no node can pull.
func TestHelmRequiresImage(t *testing.T) {
	out, err := runHelm(t, "template", "rebootwatch-agent", chartDir, "--namespace", "rebootwatch")
	if err == nil {
		t.Fatalf("rendered without image.repository:\n%s", out)
	}
	for _, want := range []string{"image.repository is required", "make image", "image.tag", "docs/agent.md#install"} {
		if !strings.Contains(out, want) {
			t.Errorf("helm template without image.repository: %q not in\n%s", want, out)
		}
	}
}

// helmBookkeeping are the labels only Helm sets (the kustomize directory
// has no chart version or release manager to name).
var helmBookkeeping = []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/version"}

// comparableObject turns an object into a map without Helm's bookkeeping labels,
// keyed by kind/namespace/name.
func comparableObject(t *testing.T, o runtime.Object) (string, map[string]any) {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{Object: m}
	if u.GetKind() == "" {
		gvk := o.GetObjectKind().GroupVersionKind()
		u.SetAPIVersion(gvk.GroupVersion().String())
		u.SetKind(gvk.Kind)
	}
	labels := u.GetLabels()
	for _, l := range helmBookkeeping {
		delete(labels, l)
	}
	u.SetLabels(labels)
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	return u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName(), u.Object
}

func byKey(t *testing.T, objs []Object) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for _, o := range objs {
		k, m := comparableObject(t, o.Object)
		if _, dup := out[k]; dup {
			t.Fatalf("two objects %s", k)
		}
		out[k] = m
	}
	return out
}

func compareObjects(t *testing.T, what string, got, want map[string]map[string]any) {
	t.Helper()
	var keys []string
	for k := range want {
		keys = append(keys, k)
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: the chart renders %s, which is not there", what, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		g, ok := got[k]
		if !ok {
			t.Errorf("%s: the chart does not render %s", what, k)
			continue
		}
		if !reflect.DeepEqual(g, want[k]) {
			gj, _ := json.MarshalIndent(g, "", "  ")
			wj, _ := json.MarshalIndent(want[k], "", "  ")
			t.Errorf("%s: %s differs\nchart:\n%s\nfile:\n%s", what, k, gj, wj)
		}
	}
}

// TestHelmDefaultsEqualKustomize: the kustomize directory deploy/ is kept by
// hand equal to the chart rendered with its default values (release
// rebootwatch-agent in namespace rebootwatch), except for the Namespace
// (kustomize creates it with its Pod Security label; Helm installs use
// --create-namespace) and Helm's bookkeeping labels.
func TestHelmDefaultsEqualKustomize(t *testing.T) {
	var kust []Object
	for _, o := range objects(t) {
		if _, ok := o.Object.(*corev1.Namespace); !ok {
			kust = append(kust, o)
		}
	}
	compareObjects(t, "deploy/ vs chart defaults", byKey(t, render(t, defaultValues)), byKey(t, kust))
}

// monitoringObjects reads deploy/monitoring/'s manifests.
func monitoringObjects(t *testing.T) []Object {
	t.Helper()
	var out []Object
	for _, f := range []string{"monitoring/servicemonitor.yaml", "monitoring/prometheusrule.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		objs, err := Decode(f, b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, objs...)
	}
	return out
}

// TestHelmMonitoringEqualsDeployMonitoring: deploy/monitoring/ is the
// chart's ServiceMonitor and PrometheusRule with the default values.
func TestHelmMonitoringEqualsDeployMonitoring(t *testing.T) {
	v := defaultValues
	v.set = []string{"serviceMonitor.enabled=true", "prometheusRule.enabled=true"}
	var got []Object
	for _, o := range render(t, v) {
		if _, ok := o.Object.(*unstructured.Unstructured); ok {
			got = append(got, o)
		}
	}
	compareObjects(t, "deploy/monitoring vs chart defaults", byKey(t, got), byKey(t, monitoringObjects(t)))
}

// TestHelmDashboardEqualsDeployMonitoring: the chart's Grafana dashboard
// ConfigMap carries deploy/monitoring/grafana-dashboard.json.
func TestHelmDashboardEqualsDeployMonitoring(t *testing.T) {
	want, err := Monitoring.ReadFile("monitoring/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var cms []*corev1.ConfigMap
	for _, o := range render(t, nondefaultValues) {
		if cm, ok := o.Object.(*corev1.ConfigMap); ok {
			cms = append(cms, cm)
		}
	}
	if len(cms) != 1 || cms[0].Labels["grafana_dashboard"] != "1" || cms[0].Namespace != "ops" {
		t.Fatalf("dashboard ConfigMaps %+v: want one, labelled grafana_dashboard=1, in ops", cms)
	}
	var got, wantJSON any
	if err := json.Unmarshal([]byte(cms[0].Data["rebootwatch-agent.json"]), &got); err != nil {
		t.Fatalf("the ConfigMap's dashboard is not JSON: %v", err)
	}
	if err := json.Unmarshal(want, &wantJSON); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, wantJSON) {
		t.Error("the chart's dashboard differs from deploy/monitoring/grafana-dashboard.json: copy it to deploy/helm/rebootwatch-agent/dashboards/rebootwatch-agent.json")
	}
	for _, o := range render(t, defaultValues) {
		if _, ok := o.Object.(*corev1.ConfigMap); ok {
			t.Error("the default values render the dashboard ConfigMap")
		}
	}
}

// TestHelmNonDefaultValues checks that every value reaches the objects: the
// RBAC names exactly the configured objects, and the container's args,
// parsed by the agent's own flag parser, carry the configured settings.
func TestHelmNonDefaultValues(t *testing.T) {
	objs := render(t, nondefaultValues)
	const sa, ns = "rw-rebootwatch-agent", "ops"
	want := []string{
		"get /nodes cluster-wide", "list /nodes cluster-wide", "watch /nodes cluster-wide", "update /nodes cluster-wide",
		// The uncordon's Event on the Node, in default.
		"create /events in default",
		"get longhorn.io/volumes cluster-wide", "list longhorn.io/volumes cluster-wide", "watch longhorn.io/volumes cluster-wide",
		"list coordination.k8s.io/leases in fleet", "watch coordination.k8s.io/leases in fleet",
		"get coordination.k8s.io/leases/fleetlock-default in fleet", "update coordination.k8s.io/leases/fleetlock-default in fleet",
		"get coordination.k8s.io/leases/fleetlock-workers in fleet", "update coordination.k8s.io/leases/fleetlock-workers in fleet",
		"create /events in fleet", "list /events in fleet",
		"get apps/daemonsets/kured-ds in kured", "list apps/daemonsets/kured-ds in kured",
		"watch apps/daemonsets/kured-ds in kured", "update apps/daemonsets/kured-ds in kured",
		"create /events in kured", "list /events in kured",
		"get coordination.k8s.io/leases/rw-leader in ops", "update coordination.k8s.io/leases/rw-leader in ops",
		"list policy/poddisruptionbudgets cluster-wide", "watch policy/poddisruptionbudgets cluster-wide",
		"list /pods cluster-wide", "watch /pods cluster-wide",
		// The coordinator kinds read by default (coordinators.kinds empty).
		"get upgrade.cattle.io/plans cluster-wide", "list upgrade.cattle.io/plans cluster-wide", "watch upgrade.cattle.io/plans cluster-wide",
		"get batch/jobs cluster-wide", "list batch/jobs cluster-wide", "watch batch/jobs cluster-wide",
		"get apps/deployments cluster-wide", "list apps/deployments cluster-wide",
		// The flatcar kind's own grant of its update-agent's pod (issue
		// 32 §3), declared by its package beside the engine's pod watch.
		"list /pods cluster-wide",
	}
	sort.Strings(want)
	if got := grantsOf(t, objs, ns, sa); !slices.Equal(got, want) {
		t.Errorf("grants:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	var d *appsv1.Deployment
	kinds := map[string]int{}
	for _, o := range objs {
		kinds[o.Object.GetObjectKind().GroupVersionKind().Kind]++
		switch x := o.Object.(type) {
		case *appsv1.Deployment:
			d = x
		case *policyv1.PodDisruptionBudget:
			t.Error("podDisruptionBudget.enabled=false still renders a PodDisruptionBudget")
		case *unstructured.Unstructured:
			if x.GetLabels()["release"] != "kube-prometheus-stack" {
				t.Errorf("%s has labels %v: the values' labels are missing", x.GetKind(), x.GetLabels())
			}
		}
	}
	if kinds["ServiceMonitor"] != 1 || kinds["PrometheusRule"] != 1 || kinds["Lease"] != 1 || kinds["Service"] != 1 || kinds["Secret"] != 1 ||
		kinds["ConfigMap"] != 1 {
		t.Errorf("kinds rendered: %v", kinds)
	}
	if d == nil {
		t.Fatal("no Deployment")
	}
	if d.Name != sa || d.Namespace != ns || *d.Spec.Replicas != 3 || d.Spec.Template.Spec.ServiceAccountName != sa {
		t.Errorf("deployment %s/%s replicas %d sa %s", d.Namespace, d.Name, *d.Spec.Replicas, d.Spec.Template.Spec.ServiceAccountName)
	}
	p := d.Spec.Template.Spec
	c := p.Containers[0]
	if c.Image != "registry.example.com/ops/rebootwatch-agent:1.2.3" || c.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("image %s pull %s", c.Image, c.ImagePullPolicy)
	}
	if p.PriorityClassName != "system-cluster-critical" || p.NodeSelector["kubernetes.io/os"] != "linux" || len(p.Tolerations) != 1 ||
		*p.SecurityContext.RunAsUser != 10001 || d.Spec.Template.Labels["team"] != "platform" ||
		d.Spec.Template.Annotations["example.com/owner"] != "platform" || c.Resources.Limits.Memory().String() != "256Mi" {
		t.Errorf("pod spec does not carry the values: %+v", p)
	}
	// The kubelet expands $(VAR) in args from the container's env; the notify
	// URLs come from the chart's Secret through secretKeyRef env vars.
	secrets := map[string]map[string]string{}
	for _, o := range objs {
		if s, ok := o.Object.(*corev1.Secret); ok {
			secrets[s.Name] = s.StringData
		}
	}
	if i := slices.IndexFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "GOGC" }); i < 0 || c.Env[i].Value != "100" {
		t.Errorf("extraEnv's GOGC=100 is not in the container's env: %+v", c.Env)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
			ref := e.ValueFrom.SecretKeyRef
			v, ok := secrets[ref.Name][ref.Key]
			if !ok {
				t.Errorf("env %s refers to %s/%s, which the chart does not render", e.Name, ref.Name, ref.Key)
			}
			env[e.Name] = v
		}
	}
	var args []string
	for _, a := range c.Args {
		if strings.Contains(a, "T0KEN") || strings.Contains(a, "hooks.example.com") {
			t.Errorf("a notify URL is in the args in clear: %q", a)
		}
		args = append(args, kubeletVar.ReplaceAllStringFunc(a, func(ref string) string {
			if v, ok := env[ref[2:len(ref)-1]]; ok {
				return v
			}
			return ref // the kubelet leaves an unknown reference as written
		}))
	}
	cfg, err := agent.ParseFlags(args, io.Discard)
	if err != nil {
		t.Fatalf("args %v: %v", c.Args, err)
	}
	if !slices.Equal(cfg.NotifyURLs, []string{"generic+https://hooks.example.com/rebootwatch/T0KEN?template=json",
		"slack://hook:WNA3PBYV6-F20DUQND3RQ-Webc4MAvoacrpPakR8phF0zi@rebootwatch"}) || cfg.NotifyBlockedAfter != 45*time.Minute {
		t.Errorf("notify settings %v %s do not carry the values", cfg.NotifyURLs, cfg.NotifyBlockedAfter)
	}
	if cfg.KuredDaemonSet != "kured/kured-ds" || cfg.FleetlockNamespace != "fleet" || cfg.ReapGhost || !cfg.ReapExpired ||
		!cfg.ReleaseOrphaned || cfg.Interval != 30*time.Second || cfg.RequestTimeout != 10*time.Second ||
		cfg.OrphanGrace != 20*time.Minute || !cfg.DryRun || cfg.LogLevel != "debug" || !cfg.LeaderElect ||
		cfg.LeaderElectionID != "rw-leader" || cfg.LeaderElectRetryPeriod != 3*time.Second ||
		cfg.HealthProbeBindAddress != ":9091" || cfg.MetricsBindAddress != ":9090" ||
		cfg.PrometheusURL != "http://prometheus-operated.monitoring.svc:9090" || cfg.PrometheusAlerts != "^(KubeNodeNotReady|TargetDown)$" {
		t.Errorf("parsed args %+v do not carry the values (args %v)", cfg, c.Args)
	}
	for _, pr := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		if pr.HTTPGet.Port.StrVal != "health" {
			t.Errorf("probe on %v", pr.HTTPGet.Port)
		}
	}
	if c.Ports[1].Name != "health" || c.Ports[1].ContainerPort != 9091 || c.Ports[0].ContainerPort != 9090 {
		t.Errorf("ports %v", c.Ports)
	}

	// An existing Secret: no Secret rendered, one env var per listed key.
	existing := nondefaultValues
	existing.set = []string{"notify.existingSecret=team-hooks", "notify.existingSecretKeys={slack,teams}"}
	var refs []string
	for _, o := range render(t, existing) {
		switch x := o.Object.(type) {
		case *corev1.Secret:
			t.Errorf("notify.existingSecret still renders Secret %s", x.Name)
		case *appsv1.Deployment:
			for _, e := range x.Spec.Template.Spec.Containers[0].Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					refs = append(refs, e.ValueFrom.SecretKeyRef.Name+"/"+e.ValueFrom.SecretKeyRef.Key)
				}
			}
		}
	}
	if !slices.Equal(refs, []string{"team-hooks/slack", "team-hooks/teams"}) {
		t.Errorf("existing Secret refs %v", refs)
	}

	// Leader election off: no Lease, no leader Role, --leader-elect=false.
	off := nondefaultValues
	off.set = []string{"leaderElection.enabled=false"}
	for _, o := range render(t, off) {
		switch x := o.Object.(type) {
		case *appsv1.Deployment:
			cfg, err := agent.ParseFlags(x.Spec.Template.Spec.Containers[0].Args, io.Discard)
			if err != nil || cfg.LeaderElect {
				t.Errorf("leader election off: args %v (%v)", x.Spec.Template.Spec.Containers[0].Args, err)
			}
		default:
			if o.Object.GetObjectKind().GroupVersionKind().Kind == "Lease" {
				t.Error("leader election off still renders the leader Lease")
			}
		}
	}
	if g := grantsOf(t, render(t, off), ns, sa); slices.ContainsFunc(g, func(s string) bool { return strings.Contains(s, "rw-leader") }) {
		t.Errorf("leader election off still grants the leader Lease: %v", g)
	}
}

// TestIntegrationHelmDryRun sends every manifest the chart renders, for the
// default and the non-default values, to a real API server as a strict
// server-side dry-run create (unknown fields rejected), and checks the
// agent's pod against Pod Security "restricted" enforced on its namespace.
func TestIntegrationHelmDryRun(t *testing.T) {
	c := testcluster.SharedAlone(t)
	cs := c.Client(t)
	dyn := c.Dynamic(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	// The Prometheus Operator's kinds (minimal CRDs written for this test).
	crdObjs := func() []Object {
		b, err := os.ReadFile("testdata/monitoring-crds.yaml")
		if err != nil {
			t.Fatal(err)
		}
		objs, err := Decode("testdata/monitoring-crds.yaml", b)
		if err != nil {
			t.Fatal(err)
		}
		return objs
	}()
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	for _, o := range crdObjs {
		u := o.Object.(*unstructured.Unstructured)
		if _, err := dyn.Resource(crdGVR).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create CRD: %v", err)
		}
		// The apiserver is shared: the CRDs end with the test.
		name := u.GetName()
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := dyn.Resource(crdGVR).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Errorf("clean-up: delete CRD %s: %v", name, err)
				return
			}
			for {
				_, err := dyn.Resource(crdGVR).Get(ctx, name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return
				}
				select {
				case <-ctx.Done():
					t.Errorf("clean-up: CRD %s not deleted: %v", name, err)
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		})
	}
	// The namespaces the two value sets install into (kube-system and
	// default exist), with Pod Security "restricted" enforced where the pod
	// runs (and only there: ensureNamespace sets the labels of one an
	// earlier round made).
	for _, ns := range []string{"rebootwatch", "ops", "kured", "fleet"} {
		labels := map[string]string{}
		if ns == "rebootwatch" || ns == "ops" {
			labels["pod-security.kubernetes.io/enforce"] = "restricted"
		}
		ensureNamespace(ctx, t, cs, ns, labels)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(c.Admin)
	if err != nil {
		t.Fatal(err)
	}
	cached := memory.NewMemCacheClient(disc)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cached)

	dryRun := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"}
	for _, v := range []valueSet{defaultValues, nondefaultValues} {
		objs := render(t, v)
		for _, o := range objs {
			m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o.Object)
			if err != nil {
				t.Fatal(err)
			}
			u := &unstructured.Unstructured{Object: m}
			gvk := o.Object.GetObjectKind().GroupVersionKind()
			u.SetGroupVersionKind(gvk)
			// The discovery cache may predate the CRDs: refresh and retry.
			var rm *meta.RESTMapping
			for attempt := 0; ; attempt++ {
				if rm, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
					break
				}
				if attempt > 50 {
					t.Fatalf("%s values: no mapping for %v: %v", v.name, gvk, err)
				}
				cached.Invalidate()
				mapper.Reset()
				time.Sleep(200 * time.Millisecond)
			}
			if rm.Scope.Name() == meta.RESTScopeNameNamespace {
				_, err = dyn.Resource(rm.Resource).Namespace(u.GetNamespace()).Create(ctx, u, dryRun)
			} else {
				_, err = dyn.Resource(rm.Resource).Create(ctx, u, dryRun)
			}
			if err != nil {
				t.Errorf("%s values: dry-run create %s %s/%s: %v", v.name, gvk.Kind, u.GetNamespace(), u.GetName(), err)
			}
			d, ok := o.Object.(*appsv1.Deployment)
			if !ok {
				continue
			}
			// The pod the Deployment would create, in its namespace.
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "psa-check", Namespace: d.Namespace, Labels: d.Spec.Template.Labels},
				Spec: d.Spec.Template.Spec}
			// The priority class only exists on real clusters' system namespaces.
			pod.Spec.PriorityClassName = ""
			if _, err := cs.CoreV1().Pods(d.Namespace).Create(ctx, pod, dryRun); err != nil {
				t.Errorf("%s values: the agent's pod is rejected in %s: %v", v.name, d.Namespace, err)
			}
			bad := pod.DeepCopy()
			bad.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil
			if _, err := cs.CoreV1().Pods(d.Namespace).Create(ctx, bad, dryRun); err == nil {
				t.Errorf("%s values: a pod allowing privilege escalation was admitted in %s: Pod Security is not enforced there", v.name, d.Namespace)
			}
		}
	}
	// A misspelt field is rejected: the strict dry run proves something.
	typo := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "monitoring.coreos.com/v1", "kind": "PrometheusRule",
		"metadata": map[string]any{"name": "typo", "namespace": "rebootwatch"},
		"spec":     map[string]any{"groups": []any{map[string]any{"name": "g", "rules": []any{map[string]any{"alert": "A", "expr": "1", "fro": "5m"}}}}},
	}}
	if _, err := dyn.Resource(schema.GroupVersionResource{Group: "monitoring.coreos.com", Version: "v1", Resource: "prometheusrules"}).
		Namespace("rebootwatch").Create(ctx, typo, dryRun); err == nil {
		t.Error("a PrometheusRule with an unknown field was accepted: the dry run is not strict")
	}
}

// allowedDisruptions is the eviction API's rule for a budget over expected
// healthy pods (all of them healthy): desiredHealthy is minAvailable, or
// expected − maxUnavailable, and an eviction passes while
// healthy − desiredHealthy > 0.
func allowedDisruptions(t *testing.T, pdb *policyv1.PodDisruptionBudget, expected int) int {
	t.Helper()
	switch {
	case pdb.Spec.MinAvailable != nil && pdb.Spec.MaxUnavailable == nil:
		return expected - pdb.Spec.MinAvailable.IntValue()
	case pdb.Spec.MaxUnavailable != nil && pdb.Spec.MinAvailable == nil:
		return pdb.Spec.MaxUnavailable.IntValue()
	}
	t.Fatalf("budget %+v: want exactly one of minAvailable and maxUnavailable (an integer)", pdb.Spec)
	return 0
}

// TestHelmPDBAllowsADrain: the agent's budget allows one eviction with any
// replica count, one included, so kured's drain of the agent's node never
// hangs on it; the kustomize budget too.
func TestHelmPDBAllowsADrain(t *testing.T) {
	check := func(what string, objs []Object, replicas int) {
		var n int
		for _, o := range objs {
			if pdb, ok := o.Object.(*policyv1.PodDisruptionBudget); ok {
				n++
				if got := allowedDisruptions(t, pdb, replicas); got < 1 {
					t.Errorf("%s: budget %+v allows %d evictions with %d healthy replica(s): a drain of the agent's node would hang", what, pdb.Spec, got, replicas)
				}
			}
		}
		if n != 1 {
			t.Errorf("%s: %d budgets rendered, want 1", what, n)
		}
	}
	check("deploy/", objects(t), int(*deployment(t).Spec.Replicas))
	for _, replicas := range []int{1, 2, 3} {
		v := defaultValues
		v.set = []string{"replicaCount=" + strconv.Itoa(replicas)}
		check("chart replicaCount="+strconv.Itoa(replicas), render(t, v), replicas)
	}
	v := defaultValues
	v.set = []string{"podDisruptionBudget.maxUnavailable=0"}
	if out, err := runHelm(t, append([]string{"template", v.release, chartDir}, v.args()...)...); err == nil {
		t.Errorf("maxUnavailable=0 rendered:\n%s", out)
	}
}

// TestHelmCoordinatorOff: kured.enabled=false or fleetlock.enabled=false
// renders no grant for that coordinator and args the agent parses as that
// coordinator turned off; both off is refused.
func TestHelmCoordinatorOff(t *testing.T) {
	for _, tc := range []struct {
		set     string
		gone    string
		kept    string
		kured   bool
		fleet   bool
		nodeEvt bool
	}{
		{"kured.enabled=false", "apps/daemonsets", "coordination.k8s.io/leases/fleetlock-default", false, true, false},
		{"fleetlock.enabled=false", "coordination.k8s.io/leases/fleetlock", "apps/daemonsets/kured", true, false, true},
	} {
		v := defaultValues
		v.set = []string{tc.set}
		objs := render(t, v)
		g := grants(t, objs)
		if slices.ContainsFunc(g, func(s string) bool { return strings.Contains(s, tc.gone) }) {
			t.Errorf("%s still grants %s: %v", tc.set, tc.gone, g)
		}
		if !slices.ContainsFunc(g, func(s string) bool { return strings.Contains(s, tc.kept) }) {
			t.Errorf("%s lost %s: %v", tc.set, tc.kept, g)
		}
		// The uncordon's Event on the Node, in default, stays granted.
		if !slices.Contains(g, "create /events in default") {
			t.Errorf("%s: no create /events in default: %v", tc.set, g)
		}
		for _, o := range objs {
			d, ok := o.Object.(*appsv1.Deployment)
			if !ok {
				continue
			}
			cfg, err := agent.ParseFlags(d.Spec.Template.Spec.Containers[0].Args, io.Discard)
			if err != nil || cfg.Kured != tc.kured || cfg.Fleetlock != tc.fleet {
				t.Errorf("%s: args %v parse as kured=%v fleetlock=%v (%v)", tc.set, d.Spec.Template.Spec.Containers[0].Args, cfg.Kured, cfg.Fleetlock, err)
			}
		}
	}
	v := defaultValues
	v.set = []string{"kured.enabled=false", "fleetlock.enabled=false", "coordinators.enabled=false"}
	if out, err := runHelm(t, append([]string{"template", v.release, chartDir}, v.args()...)...); err == nil {
		t.Errorf("every coordinator off rendered:\n%s", out)
	}
	// kured and fleetlock off: the agent watches the kinds read once per
	// iteration alone (by default, with no flag).
	v.set = []string{"kured.enabled=false", "fleetlock.enabled=false"}
	for _, o := range render(t, v) {
		if d, ok := o.Object.(*appsv1.Deployment); ok {
			cfg, err := agent.ParseFlags(d.Spec.Template.Spec.Containers[0].Args, io.Discard)
			if err != nil || cfg.Kured || cfg.Fleetlock || cfg.Coordinators.String() != "all" {
				t.Errorf("coordinators only: args %v parse as %+v (%v)", d.Spec.Template.Spec.Containers[0].Args, cfg, err)
			}
		}
	}
}

// TestHelmCoordinatorKinds (issue 32 §2): the chart reads every registered
// kind by default and grants each one's reads; coordinators.kinds is the
// agent's --coordinators filter (only the listed kinds are read and
// granted: a k3s cluster with only the system-upgrade-controller lists
// suc); coordinators.enabled=false is the chart's old default (kured and
// fleetlock only, nothing of the others granted); a name that is not a
// registered kind fails the render, naming the registered ones.
func TestHelmCoordinatorKinds(t *testing.T) {
	args := func(objs []Object) []string {
		for _, o := range objs {
			if d, ok := o.Object.(*appsv1.Deployment); ok {
				return d.Spec.Template.Spec.Containers[0].Args
			}
		}
		t.Fatal("no Deployment rendered")
		return nil
	}
	for _, tc := range []struct {
		name       string
		set        []string
		want       string // the agent's --coordinators as it parses it
		kured      bool
		fleetlock  bool
		grants     []string // granted (substrings of grants)
		notGranted []string
	}{
		{"default", nil, "all", true, true,
			[]string{"list upgrade.cattle.io/plans cluster-wide", "list batch/jobs cluster-wide", "list apps/deployments cluster-wide", "apps/daemonsets/kured", "leases/fleetlock-default"}, nil},
		{"kinds=[suc]", []string{"coordinators.kinds={suc}"}, "suc", false, false,
			[]string{"list upgrade.cattle.io/plans cluster-wide", "list batch/jobs cluster-wide"}, []string{"apps/deployments", "apps/daemonsets", "leases/fleetlock"}},
		{"kinds=[kured,flatcar]", []string{"coordinators.kinds={kured,flatcar}"}, "kured,flatcar", true, false,
			[]string{"list apps/deployments cluster-wide", "apps/daemonsets/kured"}, []string{"upgrade.cattle.io", "batch/jobs", "leases/fleetlock"}},
		{"enabled=false", []string{"coordinators.enabled=false"}, "kured,fleetlock", true, true,
			[]string{"apps/daemonsets/kured", "leases/fleetlock-default"}, []string{"upgrade.cattle.io", "batch/jobs", "apps/deployments"}},
	} {
		v := defaultValues
		v.set = tc.set
		objs := render(t, v)
		cfg, err := agent.ParseFlags(args(objs), io.Discard)
		if err != nil || cfg.Coordinators.String() != tc.want || cfg.LockKindsOn() != (tc.kured || tc.fleetlock) ||
			(cfg.Kured && cfg.Coordinators.Has("kured")) != tc.kured || (cfg.Fleetlock && cfg.Coordinators.Has("fleetlock")) != tc.fleetlock {
			t.Errorf("%s: args %v parse as coordinators %v, kured %v, fleetlock %v (%v); want %s, %v, %v",
				tc.name, args(objs), cfg.Coordinators, cfg.Kured, cfg.Fleetlock, err, tc.want, tc.kured, tc.fleetlock)
		}
		g := grants(t, objs)
		for _, w := range tc.grants {
			if !slices.ContainsFunc(g, func(s string) bool { return strings.Contains(s, w) }) {
				t.Errorf("%s: no grant %q: %v", tc.name, w, g)
			}
		}
		for _, w := range tc.notGranted {
			if slices.ContainsFunc(g, func(s string) bool { return strings.Contains(s, w) }) {
				t.Errorf("%s: grants %q: %v", tc.name, w, g)
			}
		}
	}
	v := defaultValues
	v.set = []string{"coordinators.kinds={kured,zincati}"}
	out, err := runHelm(t, append([]string{"template", v.release, chartDir}, v.args()...)...)
	if err == nil || !strings.Contains(out, `unknown coordinator kind "zincati"`) || !strings.Contains(out, "kured, fleetlock, flatcar, suc") {
		t.Errorf("an unknown kind: %v\n%s", err, out)
	}
}

// TestKustomizeComponentsEqualChart: an overlay of deploy/ with
// components/kured-off, components/fleetlock-off or
// components/coordinators-off equals the chart with kured.enabled=false,
// fleetlock.enabled=false or coordinators.enabled=false (as the defaults
// do).
func TestKustomizeComponentsEqualChart(t *testing.T) {
	kubectl := testcluster.Require(t, "kubectl")[0]
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ component, set string }{
		{"kured-off", "kured.enabled=false"},
		{"fleetlock-off", "fleetlock.enabled=false"},
		{"coordinators-off", "coordinators.enabled=false"},
	} {
		dir := t.TempDir()
		rel, err := filepath.Rel(dir, here)
		if err != nil {
			t.Fatal(err)
		}
		k := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- " + rel +
			"\ncomponents:\n- " + filepath.Join(rel, "components", tc.component) + "\n"
		if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(k), 0o600); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(kubectl, "kustomize", dir).CombinedOutput()
		if err != nil {
			t.Fatalf("kubectl kustomize with %s: %v\n%s", tc.component, err, out)
		}
		objs, err := Decode("kustomize "+tc.component, out)
		if err != nil {
			t.Fatal(err)
		}
		var kust []Object
		for _, o := range objs {
			if _, ok := o.Object.(*corev1.Namespace); !ok {
				kust = append(kust, o)
			}
		}
		v := defaultValues
		v.set = []string{tc.set}
		compareObjects(t, "components/"+tc.component+" vs chart "+tc.set, byKey(t, render(t, v)), byKey(t, kust))
	}
}
