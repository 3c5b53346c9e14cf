package deploy

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/rebootwatch/rebootwatch/internal/agent"
)

// kuredPools is the chart installed for kured as three DaemonSets (node
// pools) in two namespaces: kured.daemonSets.
var kuredPools = valueSet{name: "kured pools", release: "rw", namespace: "ops", valuesFile: "testdata/default-values.yaml", set: []string{
	"kured.daemonSets[0].namespace=kube-system", "kured.daemonSets[0].name=kured-a",
	"kured.daemonSets[1].namespace=kured-b", "kured.daemonSets[1].name=kured-b",
	"kured.daemonSets[2].namespace=kube-system", "kured.daemonSets[2].name=kured-c",
}}

// Issue 33 §2 follow-up: with kured.daemonSets the agent is told every
// DaemonSet (one --kured-daemonset, comma-separated, as its own parser
// reads it) and granted exactly those: a Role per namespace naming its
// DaemonSets by resourceNames, with the Events of its releases there, and
// nothing on any other DaemonSet.
func TestHelmKuredDaemonSets(t *testing.T) {
	objs := render(t, kuredPools)
	const sa, ns = "rw-rebootwatch-agent", "ops"
	var ds []string
	for _, g := range grantsOf(t, objs, ns, sa) {
		if strings.Contains(g, "apps/daemonsets") || strings.Contains(g, "/events in kube-system") || strings.Contains(g, "/events in kured-b") {
			ds = append(ds, g)
		}
	}
	want := []string{
		"get apps/daemonsets/kured-a in kube-system", "list apps/daemonsets/kured-a in kube-system",
		"watch apps/daemonsets/kured-a in kube-system", "update apps/daemonsets/kured-a in kube-system",
		"get apps/daemonsets/kured-c in kube-system", "list apps/daemonsets/kured-c in kube-system",
		"watch apps/daemonsets/kured-c in kube-system", "update apps/daemonsets/kured-c in kube-system",
		"create /events in kube-system", "list /events in kube-system",
		"get apps/daemonsets/kured-b in kured-b", "list apps/daemonsets/kured-b in kured-b",
		"watch apps/daemonsets/kured-b in kured-b", "update apps/daemonsets/kured-b in kured-b",
		"create /events in kured-b", "list /events in kured-b",
	}
	sort.Strings(want)
	if !slices.Equal(ds, want) {
		t.Errorf("kured grants:\n%s\nwant:\n%s", strings.Join(ds, "\n"), strings.Join(want, "\n"))
	}
	roles := map[string][]string{}
	for _, o := range objs {
		if r, ok := o.Object.(*rbacv1.Role); ok && strings.HasSuffix(r.Name, "-kured") {
			for _, rule := range r.Rules {
				roles[r.Namespace] = append(roles[r.Namespace], rule.ResourceNames...)
			}
		}
	}
	if len(roles) != 2 || !slices.Equal(roles["kube-system"], []string{"kured-a", "kured-c"}) || !slices.Equal(roles["kured-b"], []string{"kured-b"}) {
		t.Errorf("kured Roles (namespace: resourceNames): %v", roles)
	}
	for _, o := range objs {
		d, ok := o.Object.(*appsv1.Deployment)
		if !ok {
			continue
		}
		cfg, err := agent.ParseFlags(d.Spec.Template.Spec.Containers[0].Args, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if cfg.KuredDaemonSet != "kube-system/kured-a,kured-b/kured-b,kube-system/kured-c" {
			t.Errorf("--kured-daemonset %q, want the three DaemonSets", cfg.KuredDaemonSet)
		}
	}

	// The same DaemonSet twice, or one without its name, fails the render.
	for _, bad := range [][]string{
		{"kured.daemonSets[0].namespace=kube-system", "kured.daemonSets[0].name=kured-a", "kured.daemonSets[1].namespace=kube-system", "kured.daemonSets[1].name=kured-a"},
		{"kured.daemonSets[0].namespace=kube-system"},
	} {
		v := defaultValues
		v.set = bad
		if out, err := runHelm(t, append([]string{"template", v.release, chartDir}, v.args()...)...); err == nil {
			t.Errorf("--set %v rendered:\n%s", bad, out)
		}
	}
}

// The notes name every DaemonSet the agent reads and may write.
func TestHelmNotesNameKuredDaemonSets(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\ncontexts: [{name: c, context: {cluster: c}}]\ncurrent-context: c\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"install", kuredPools.release, chartDir, "--dry-run=client", "--kubeconfig", kc}, kuredPools.args()...)
	out, err := runHelm(t, args...)
	if err != nil {
		t.Fatalf("helm %v: %v\n%s", args, err, out)
	}
	if !strings.Contains(out, "kured: the lock annotations of DaemonSets kube-system/kured-a, kured-b/kured-b, kube-system/kured-c (one per node pool), read, and updated to release or reap.") {
		t.Errorf("notes:\n%s", out[strings.Index(out, "NOTES:"):])
	}
}
