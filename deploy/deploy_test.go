package deploy

import (
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/rebootwatch/rebootwatch/internal/agent"
)

func objects(t *testing.T) []Object {
	t.Helper()
	objs, err := Objects()
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func TestKustomizationListsEveryManifest(t *testing.T) {
	k, err := ReadKustomization()
	if err != nil {
		t.Fatal(err)
	}
	if k.Namespace != "" {
		t.Errorf("kustomization sets namespace %q: it would move the Roles out of the lock namespaces", k.Namespace)
	}
	files, err := fs.Glob(Manifests, "*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return f == "kustomization.yaml" })
	res := slices.Clone(k.Resources)
	sort.Strings(files)
	sort.Strings(res)
	if !slices.Equal(files, res) {
		t.Fatalf("kustomization resources %v, files %v", res, files)
	}
}

func TestManifestKinds(t *testing.T) {
	var got []string
	for _, o := range objects(t) {
		gvk := o.Object.GetObjectKind().GroupVersionKind()
		got = append(got, gvk.Kind)
	}
	want := []string{"Namespace", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Role", "RoleBinding",
		"Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "Lease", "Deployment", "PodDisruptionBudget", "Service"}
	if !slices.Equal(got, want) {
		t.Fatalf("kinds %v, want %v", got, want)
	}
}

// grant is one permission: verb on group/resource[/name] in a namespace
// ("" = cluster-wide).
type grant struct{ ns, group, resource, name, verb string }

func (g grant) String() string {
	s := g.verb + " " + g.group + "/" + g.resource
	if g.name != "" {
		s += "/" + g.name
	}
	if g.ns != "" {
		s += " in " + g.ns
	} else {
		s += " cluster-wide"
	}
	return s
}

const (
	saName      = "rebootwatch-agent"
	saNamespace = "rebootwatch"
)

// grants expands every rule bound to the agent's ServiceAccount.
func grants(t *testing.T, objs []Object) []string {
	t.Helper()
	return grantsOf(t, objs, saNamespace, saName)
}

// grantsOf expands every rule bound to the ServiceAccount saNS/saName.
func grantsOf(t *testing.T, objs []Object, saNamespace, saName string) []string {
	t.Helper()
	clusterRoles := map[string]*rbacv1.ClusterRole{}
	roles := map[string]*rbacv1.Role{}
	for _, o := range objs {
		switch r := o.Object.(type) {
		case *rbacv1.ClusterRole:
			clusterRoles[r.Name] = r
		case *rbacv1.Role:
			roles[r.Namespace+"/"+r.Name] = r
		}
	}
	boundToAgent := func(subjects []rbacv1.Subject) bool {
		for _, s := range subjects {
			if s.Kind == "ServiceAccount" && s.Name == saName && s.Namespace == saNamespace {
				return true
			}
		}
		return false
	}
	var out []string
	expand := func(ns string, rules []rbacv1.PolicyRule) {
		for _, r := range rules {
			if len(r.NonResourceURLs) > 0 {
				t.Errorf("non-resource rule %v", r)
			}
			names := r.ResourceNames
			if len(names) == 0 {
				names = []string{""}
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					for _, n := range names {
						for _, v := range r.Verbs {
							if g == "*" || res == "*" || v == "*" || n == "*" {
								t.Errorf("wildcard in rule %v", r)
							}
							out = append(out, grant{ns, g, res, n, v}.String())
						}
					}
				}
			}
		}
	}
	for _, o := range objs {
		switch b := o.Object.(type) {
		case *rbacv1.ClusterRoleBinding:
			if !boundToAgent(b.Subjects) {
				t.Errorf("ClusterRoleBinding %s binds someone else: %v", b.Name, b.Subjects)
				continue
			}
			cr, ok := clusterRoles[b.RoleRef.Name]
			if b.RoleRef.Kind != "ClusterRole" || !ok {
				t.Fatalf("ClusterRoleBinding %s refers to a role not in deploy/: %v", b.Name, b.RoleRef)
			}
			expand("", cr.Rules)
		case *rbacv1.RoleBinding:
			if !boundToAgent(b.Subjects) {
				t.Errorf("RoleBinding %s/%s binds someone else: %v", b.Namespace, b.Name, b.Subjects)
				continue
			}
			if b.RoleRef.Kind != "Role" {
				t.Fatalf("RoleBinding %s/%s binds a %s: a ClusterRole bound in a namespace widens grants needlessly", b.Namespace, b.Name, b.RoleRef.Kind)
			}
			r, ok := roles[b.Namespace+"/"+b.RoleRef.Name]
			if !ok {
				t.Fatalf("RoleBinding %s/%s refers to a role not in deploy/: %v", b.Namespace, b.Name, b.RoleRef)
			}
			expand(b.Namespace, r.Rules)
		}
	}
	sort.Strings(out)
	return out
}

// TestRBACIsExactlyTheMinimum pins the agent's permissions: every call it
// makes (sources' informers, the probe, the lock Actor, leader election)
// and nothing else.
func TestRBACIsExactlyTheMinimum(t *testing.T) {
	want := []string{
		// sources/kube: the node informer; the agent's per-iteration probe.
		"get /nodes cluster-wide", "list /nodes cluster-wide", "watch /nodes cluster-wide",
		// the Actor: the uncordon that goes with a fleetlock release.
		"update /nodes cluster-wide",
		// sources/longhorn: volumes, read-only.
		"get longhorn.io/volumes cluster-wide", "list longhorn.io/volumes cluster-wide", "watch longhorn.io/volumes cluster-wide",
		// fleetlock: the Lease informer; the Actor's get + update of the one lock.
		"list coordination.k8s.io/leases in default", "watch coordination.k8s.io/leases in default",
		"get coordination.k8s.io/leases/fleetlock-default in default", "update coordination.k8s.io/leases/fleetlock-default in default",
		"create /events in default",
		// a new leader's look for a write of its own without its Event.
		"list /events in default",
		// kured: the DaemonSet informer (metadata.name field selector) and the Actor.
		"get apps/daemonsets/kured in kube-system", "list apps/daemonsets/kured in kube-system",
		"watch apps/daemonsets/kured in kube-system", "update apps/daemonsets/kured in kube-system",
		"create /events in kube-system", "list /events in kube-system",
		// leader election on the pre-created Lease.
		"get coordination.k8s.io/leases/rebootwatch-agent in rebootwatch", "update coordination.k8s.io/leases/rebootwatch-agent in rebootwatch",
		// sources/kube, the blockers' inputs: budgets, and pods listed with a
		// selector (a cordoned node's, kured's blocking-pod selector).
		"list policy/poddisruptionbudgets cluster-wide", "watch policy/poddisruptionbudgets cluster-wide",
		"list /pods cluster-wide", "watch /pods cluster-wide",
		// coordinators-rbac.yaml: the kinds read by default, read only, as
		// their packages declare (system-upgrade-controller's Plans and
		// Jobs; the Flatcar update operator's Deployment).
		"get upgrade.cattle.io/plans cluster-wide", "list upgrade.cattle.io/plans cluster-wide", "watch upgrade.cattle.io/plans cluster-wide",
		"get batch/jobs cluster-wide", "list batch/jobs cluster-wide", "watch batch/jobs cluster-wide",
		"get apps/deployments cluster-wide", "list apps/deployments cluster-wide",
	}
	sort.Strings(want)
	got := grants(t, objects(t))
	if !slices.Equal(got, want) {
		for _, g := range got {
			if !slices.Contains(want, g) {
				t.Errorf("extra grant: %s", g)
			}
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("missing grant: %s", w)
			}
		}
	}
	for _, g := range got {
		for _, forbidden := range []string{"secrets", "delete", "patch", "escalate", "bind", "impersonate", "pods/"} {
			if strings.Contains(g, forbidden) {
				t.Errorf("grant %q touches %s", g, forbidden)
			}
		}
		// Pods are read, never written, evicted or exec'd into.
		if strings.Contains(g, "/pods") && g != "list /pods cluster-wide" && g != "watch /pods cluster-wide" {
			t.Errorf("grant %q does more with pods than list and watch", g)
		}
	}
}

func deployment(t *testing.T) *appsv1.Deployment {
	t.Helper()
	for _, o := range objects(t) {
		if d, ok := o.Object.(*appsv1.Deployment); ok {
			return d
		}
	}
	t.Fatal("no Deployment")
	return nil
}

func TestDeploymentSecurity(t *testing.T) {
	d := deployment(t)
	if d.Namespace != saNamespace || d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("deployment %s/%s replicas %v, want 2 in %s", d.Namespace, d.Name, d.Spec.Replicas, saNamespace)
	}
	p := d.Spec.Template.Spec
	if p.ServiceAccountName != saName {
		t.Errorf("serviceAccountName %q", p.ServiceAccountName)
	}
	if p.HostNetwork || p.HostPID || p.HostIPC {
		t.Error("host namespaces used")
	}
	psc := p.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser == 0 ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod securityContext %+v: want non-root user and seccomp RuntimeDefault", psc)
	}
	if len(p.Containers) != 1 || len(p.InitContainers) != 0 {
		t.Fatalf("want exactly one container, got %d (+%d init)", len(p.Containers), len(p.InitContainers))
	}
	c := p.Containers[0]
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
		(sc.Privileged != nil && *sc.Privileged) || sc.Capabilities == nil ||
		!slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
		t.Errorf("container securityContext %+v: want read-only root, no privilege escalation, all capabilities dropped", sc)
	}
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if _, ok := c.Resources.Requests[r]; !ok {
			t.Errorf("no %s request", r)
		}
		if _, ok := c.Resources.Limits[r]; !ok {
			t.Errorf("no %s limit", r)
		}
	}
	if c.Resources.Limits.Memory().Cmp(*c.Resources.Requests.Memory()) < 0 {
		t.Error("memory limit below request")
	}
}

// TestDeploymentArgsMatchRBACAndProbes parses the container's args with the
// agent's own flag parser and checks them against the probes and the RBAC.
func TestDeploymentArgsMatchRBACAndProbes(t *testing.T) {
	d := deployment(t)
	c := d.Spec.Template.Spec.Containers[0]
	if len(c.Command) != 0 {
		t.Errorf("command %v overrides the image entrypoint", c.Command)
	}
	cfg, err := agent.ParseFlags(c.Args, io.Discard)
	if err != nil {
		t.Fatalf("args %v: %v", c.Args, err)
	}
	if !cfg.LeaderElect || cfg.DryRun {
		t.Errorf("deployed config %+v: want leader election on, dry run off", cfg)
	}
	port := func(addr string) int32 {
		_, p, err := net.SplitHostPort(addr)
		if err != nil {
			t.Fatal(err)
		}
		for _, cp := range c.Ports {
			if strconv.Itoa(int(cp.ContainerPort)) == p {
				return cp.ContainerPort
			}
		}
		t.Fatalf("no container port for %s", addr)
		return 0
	}
	health := port(cfg.HealthProbeBindAddress)
	port(cfg.MetricsBindAddress)
	for name, pr := range map[string]*corev1.Probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe} {
		if pr == nil || pr.HTTPGet == nil {
			t.Fatalf("%s probe missing", name)
		}
		want := map[string]string{"liveness": "/healthz", "readiness": "/readyz"}[name]
		pp := pr.HTTPGet.Port
		ok := pp.IntVal == health
		for _, cp := range c.Ports {
			if pp.StrVal != "" && cp.Name == pp.StrVal && cp.ContainerPort == health {
				ok = true
			}
		}
		if pr.HTTPGet.Path != want || !ok {
			t.Errorf("%s probe %s on %v, want %s on port %d", name, pr.HTTPGet.Path, pp, want, health)
		}
	}
	// POD_NAMESPACE is what the leader Lease namespace resolves to.
	var podNS bool
	for _, e := range c.Env {
		if e.Name == "POD_NAMESPACE" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace" {
			podNS = true
		}
	}
	if !podNS {
		t.Error("POD_NAMESPACE is not set from the downward API")
	}
	// The RBAC covers exactly the locks the args name.
	g := grants(t, objects(t))
	ns, name, _ := strings.Cut(cfg.KuredDaemonSet, "/")
	if !slices.Contains(g, "update apps/daemonsets/"+name+" in "+ns) {
		t.Errorf("--kured-daemonset %s has no update grant", cfg.KuredDaemonSet)
	}
	if !slices.Contains(g, "list coordination.k8s.io/leases in "+cfg.FleetlockNamespace) {
		t.Errorf("--fleetlock-namespace %s has no lease list grant", cfg.FleetlockNamespace)
	}
	if !slices.Contains(g, "update coordination.k8s.io/leases/"+cfg.LeaderElectionID+" in "+d.Namespace) {
		t.Errorf("leader Lease %s/%s has no update grant", d.Namespace, cfg.LeaderElectionID)
	}
}

// TestDeployArgsParseAsPflag: every agent argument deploy/ and its
// components write is a double-dash long flag (the agent's flags are
// pflag's, as the CLI's: -interval=60s would read as -i -n -t…), and the
// args parse with the agent's own flag set, the components' patches applied.
func TestDeployArgsParseAsPflag(t *testing.T) {
	base := deployment(t).Spec.Template.Spec.Containers[0].Args
	check := func(what string, args []string) {
		t.Helper()
		for _, a := range args {
			if !strings.HasPrefix(a, "--") {
				t.Errorf("%s: argument %q is not a double-dash long flag", what, a)
			}
		}
		if _, err := agent.ParseFlags(args, io.Discard); err != nil {
			t.Errorf("%s: args %v: %v", what, args, err)
		}
	}
	check("deploy/deployment.yaml", base)
	comps, err := fs.Glob(os.DirFS("components"), "*/kustomization.yaml")
	if err != nil || len(comps) == 0 {
		t.Fatalf("components: %v %v", comps, err)
	}
	argPath := regexp.MustCompile(`^/spec/template/spec/containers/0/args/(\d+)$`)
	for _, f := range comps {
		b, err := os.ReadFile(filepath.Join("components", f))
		if err != nil {
			t.Fatal(err)
		}
		var k struct {
			Patches []struct {
				Patch string `json:"patch"`
			} `json:"patches"`
		}
		if err := yaml.Unmarshal(b, &k); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		args := slices.Clone(base)
		patched := 0
		for _, p := range k.Patches {
			var ops []struct {
				Op    string `json:"op"`
				Path  string `json:"path"`
				Value any    `json:"value"`
			}
			if yaml.Unmarshal([]byte(p.Patch), &ops) != nil {
				continue // a strategic-merge patch, not a JSON 6902 one
			}
			for _, op := range ops {
				m := argPath.FindStringSubmatch(op.Path)
				if m == nil || (op.Op != "replace" && op.Op != "add") {
					continue
				}
				i, _ := strconv.Atoi(m[1])
				v, ok := op.Value.(string)
				if !ok || i > len(args) || (op.Op == "replace" && i == len(args)) {
					t.Fatalf("%s: patch %s = %v", f, op.Path, op.Value)
				}
				if op.Op == "add" {
					args = slices.Insert(args, i, v)
				} else {
					args[i] = v
				}
				patched++
			}
		}
		if patched == 0 {
			t.Errorf("%s patches no agent argument", f)
		}
		check("components/"+f, args)
	}
}
