package longhorn_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources/longhorn"
)

// recordingProxy sits between the one-shot read and the real apiserver and
// records each volume request: "Table " before a Table's, then the path
// and query.
type recordingProxy struct {
	proxy *httputil.ReverseProxy
	mu    sync.Mutex
	calls []string
}

func newRecordingProxy(t *testing.T, c *testcluster.Cluster, cfg *rest.Config) (*recordingProxy, *rest.Config) {
	t.Helper()
	p := &recordingProxy{proxy: c.ReverseProxy(t, cfg)}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return p, &rest.Config{Host: srv.URL, QPS: -1}
}

func (p *recordingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	call := r.URL.Path + "?" + r.URL.RawQuery
	if strings.Contains(r.Header.Get("Accept"), "as=Table") {
		call = "Table " + call
	}
	p.mu.Lock()
	p.calls = append(p.calls, call)
	p.mu.Unlock()
	p.proxy.ServeHTTP(w, r)
}

// take returns the calls so far, sorted, and forgets them.
func (p *recordingProxy) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := slices.Sorted(slices.Values(p.calls))
	p.calls = nil
	return c
}

// setVolume creates a Volume with the given status (nil: none) and
// numberOfReplicas.
func setVolume(t testing.TB, dyn dynamic.Interface, ns, name string, replicas int64, status map[string]any) {
	t.Helper()
	ctx := context.Background()
	ri := dyn.Resource(testcluster.LonghornVolumeGVR).Namespace(ns)
	u, err := ri.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "longhorn.io/v1beta2", "kind": "Volume",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec":     map[string]any{"numberOfReplicas": replicas, "size": "1073741824", "dataEngine": "v1"},
	}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if status == nil {
		return
	}
	u.Object["status"] = status
	if _, err := ri.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// readOnce runs the one-shot read and returns its health and volumes.
func readOnce(t *testing.T, o longhorn.Options) (model.SourceHealth, []model.Volume) {
	t.Helper()
	o.Once = true
	var mu sync.Mutex
	var vols []model.Volume
	sink := func(e model.Event) {
		mu.Lock()
		defer mu.Unlock()
		if b, ok := e.(model.Batch); ok {
			for _, x := range b {
				if u, ok := x.(model.VolumeUpserted); ok {
					vols = append(vols, u.Volume)
				}
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	src, err := longhorn.Start(ctx, o, sink)
	if err != nil {
		t.Fatal(err)
	}
	src.Wait()
	mu.Lock()
	defer mu.Unlock()
	slices.SortFunc(vols, func(a, b model.Volume) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	return src.Health(), vols
}

// createNamespace creates the namespace name unless it exists: on the
// shared cluster an earlier test may have made it.
func createNamespace(t *testing.T, c *testcluster.Cluster, name string) {
	t.Helper()
	_, err := c.Client(t).CoreV1().Namespaces().Create(context.Background(),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// sharedWithoutVolumes returns the shared cluster, with the Longhorn CRD,
// for a test that reads the volumes of every namespace or all of
// longhorn-system, and so must run alone (not in parallel) on a cluster
// without volumes: it deletes every volume now (those the parallel tests
// of an earlier -count round left) and when the test ends.
func sharedWithoutVolumes(t *testing.T) *testcluster.Cluster {
	t.Helper()
	c := testcluster.Shared(t)
	c.EnsureLonghornCRD(t)
	clearVolumes(t, c.Dynamic(t))
	t.Cleanup(func() { clearVolumes(t, c.Dynamic(t)) })
	return c
}

// withoutLonghornCRD returns the shared cluster without the Longhorn CRD,
// for a test that installs or removes a Longhorn CRD itself (its own
// printer columns, or none; not-installed first). Every test of the
// package would see that CRD, so the test runs alone (SharedAlone: no
// t.Parallel, before the parallel tests) and leaves the cluster as it found
// it: the CRD an earlier test's EnsureLonghornCRD installed is removed now
// and installed again when the test ends (without volumes, as
// sharedWithoutVolumes leaves it), after whatever CRD the test left is
// removed.
func withoutLonghornCRD(t *testing.T) *testcluster.Cluster {
	t.Helper()
	c := testcluster.SharedAlone(t)
	had := longhornCRDPresent(t, c)
	if had {
		c.RemoveLonghornCRD(t)
	}
	t.Cleanup(func() {
		if longhornCRDPresent(t, c) {
			c.RemoveLonghornCRD(t)
		}
		if had {
			c.InstallLonghornCRD(t)
		}
	})
	return c
}

// longhornCRDPresent reports whether volumes.longhorn.io exists.
func longhornCRDPresent(t *testing.T, c *testcluster.Cluster) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	_, err := c.Dynamic(t).Resource(crds).Get(ctx, testcluster.LonghornCRDName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false
	}
	if err != nil {
		t.Fatalf("read the Longhorn CRD: %v", err)
	}
	return true
}

// clearVolumes deletes every volume of every namespace; without Longhorn's
// finalizers a delete is immediate.
func clearVolumes(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ri := dyn.Resource(testcluster.LonghornVolumeGVR)
	l, err := ri.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range l.Items {
		if err := ri.Namespace(v.GetNamespace()).Delete(ctx, v.GetName(), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
	}
}

// TestTableAgainstRealAPIServer: on the same volumes of a real apiserver
// (the CRD with Longhorn's printer columns), the one-shot read through the
// Table gives the same model volumes as the full unstructured list (the
// dynamic path, VolumeToModel): every robustness, attached without a
// currentNodeID, no status at all, odd values, a volume in another
// namespace; it asks for longhorn-system's Table (no full list there), the
// other namespaces' JSON list and a GET per volume degraded or faulted.
// Past MaxFollowUps such volumes, it asks no GET and those say no replicas.
func TestTableAgainstRealAPIServer(t *testing.T) {
	c := sharedWithoutVolumes(t)
	dyn := c.Dynamic(t)
	createNamespace(t, c, longhorn.LonghornNamespace)
	createNamespace(t, c, "storage")
	lh := longhorn.LonghornNamespace
	st := func(state, robustness, node, owner string) map[string]any {
		return map[string]any{"state": state, "robustness": robustness, "currentNodeID": node, "ownerID": owner}
	}
	setVolume(t, dyn, lh, "pvc-healthy", 3, st("attached", "healthy", "w-1", "w-1"))
	setVolume(t, dyn, lh, "pvc-degraded", 3, st("attached", "degraded", "w-2", "w-2"))
	setVolume(t, dyn, lh, "pvc-faulted", 2, st("detached", "faulted", "", "w-3"))
	setVolume(t, dyn, lh, "pvc-unknown", 1, st("detached", "unknown", "", ""))
	setVolume(t, dyn, lh, "pvc-upper", 1, st("attached", "Degraded", "w-1", "w-1"))
	setVolume(t, dyn, lh, "pvc-owner", 2, st("attached", "healthy", "", "w-4"))
	setVolume(t, dyn, lh, "pvc-fresh", 3, nil)
	setVolume(t, dyn, lh, "pvc-odd", 3, map[string]any{"state": "attached", "robustness": "rebuilding", "currentNodeID": "w-\u00e9\x1b[31m"})
	setVolume(t, dyn, "storage", "pvc-elsewhere", 2, st("attached", "degraded", "w-5", "w-5"))

	proxy, cfg := newRecordingProxy(t, c, c.Admin)
	rc, err := longhorn.NewREST(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// compare compares with the full list's volumes, less what the Table
	// does not say (adjust).
	compare := func(t *testing.T, adjust func(*model.Volume)) {
		t.Helper()
		refHealth, want := readOnce(t, longhorn.Options{Client: dyn})
		if refHealth.Status != model.StatusOK || len(want) == 0 {
			t.Fatalf("the dynamic path: %+v, %d volumes", refHealth, len(want))
		}
		for i := range want {
			if want[i].Namespace == lh {
				adjust(&want[i])
			}
		}
		h, got := readOnce(t, longhorn.Options{Client: dyn, REST: rc})
		if h.Status != model.StatusOK {
			t.Fatalf("health %+v", h)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("the Table path differs from the full list:\n got %+v\nwant %+v", got, want)
		}
	}

	t.Run("follow-ups", func(t *testing.T) {
		// The healthy and unknown volumes come from the Table alone: no
		// replica count. The degraded and faulted ones, and pvc-owner
		// (attached without a currentNodeID), were fetched whole.
		compare(t, func(v *model.Volume) {
			bad := v.Robustness == model.RobustnessDegraded || v.Robustness == model.RobustnessFaulted
			if !bad && v.Name != "pvc-owner" {
				v.Replicas = 0
			}
		})
		calls := proxy.take()
		want := []string{"/apis/longhorn.io/v1beta2/volumes?fieldSelector=metadata.namespace%21%3Dlonghorn-system",
			"Table /apis/longhorn.io/v1beta2/namespaces/longhorn-system/volumes?includeObject=None"}
		for _, n := range []string{"pvc-degraded", "pvc-faulted", "pvc-owner", "pvc-upper"} {
			want = append(want, "/apis/longhorn.io/v1beta2/namespaces/longhorn-system/volumes/"+n+"?")
		}
		slices.Sort(want)
		if !reflect.DeepEqual(calls, want) {
			t.Errorf("requests\n%q\nwant\n%q", calls, want)
		}
	})

	t.Run("pages", func(t *testing.T) {
		_, want := readOnce(t, longhorn.Options{Client: dyn, REST: rc})
		h, got := readOnce(t, longhorn.Options{Client: dyn, REST: rc, PageSize: 3})
		if h.Status != model.StatusOK || !reflect.DeepEqual(got, want) {
			t.Errorf("in pages of 3: %+v\n got %+v\nwant %+v", h, got, want)
		}
		var tables int
		for _, c := range proxy.take() {
			if strings.HasPrefix(c, "Table ") && strings.Contains(c, "limit=3") {
				tables++
			}
		}
		if tables != 3 { // 8 volumes in longhorn-system
			t.Errorf("%d Table pages, want 3", tables)
		}
	})

	t.Run("past the cap", func(t *testing.T) {
		for i := range longhorn.MaxFollowUps {
			setVolume(t, dyn, lh, fmt.Sprintf("pvc-many-%03d", i), 3, st("attached", "degraded", "w-6", "w-6"))
		}
		// Every volume of the Table says no replicas (the one in another
		// namespace came whole); the one attached without a currentNodeID
		// says no node.
		compare(t, func(v *model.Volume) {
			v.Replicas = 0
			if v.Name == "pvc-owner" {
				v.Node = ""
			}
		})
		if calls := proxy.take(); len(calls) != 2 {
			t.Errorf("requests %q, want the two lists", calls)
		}
	})
}

// TestTableCaptured: what the real apiserver answers for a Table of volumes
// with Longhorn's columns is what testdata/table.json holds (bar the Age
// cells), which the unit tests decode; REBOOTWATCH_UPDATE_TABLE=1 writes
// it anew.
func TestTableCaptured(t *testing.T) {
	c := sharedWithoutVolumes(t)
	dyn := c.Dynamic(t)
	createNamespace(t, c, longhorn.LonghornNamespace)
	lh := longhorn.LonghornNamespace
	setVolume(t, dyn, lh, "pvc-healthy", 3, map[string]any{"state": "attached", "robustness": "healthy", "currentNodeID": "w-1",
		"conditions": []any{map[string]any{"type": "Schedulable", "status": "True"}}})
	setVolume(t, dyn, lh, "pvc-degraded", 3, map[string]any{"state": "attached", "robustness": "degraded", "currentNodeID": "w-2"})
	setVolume(t, dyn, lh, "pvc-faulted", 2, map[string]any{"state": "detached", "robustness": "faulted", "currentNodeID": ""})
	setVolume(t, dyn, lh, "pvc-fresh", 1, nil)
	setVolume(t, dyn, lh, "pvc-number", 1, map[string]any{"state": 7, "robustness": true, "currentNodeID": map[string]any{"a": 1}})
	rc, err := longhorn.NewREST(c.Admin)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body, err := rc.Get().Namespace(lh).Resource("volumes").SetHeader("Accept", longhorn.TableAccept).
		Param("includeObject", "None").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv("REBOOTWATCH_UPDATE_TABLE") != "" {
		if err := os.WriteFile("testdata/table.json", body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile("testdata/table.json")
	if err != nil {
		t.Fatal(err)
	}
	if a, b := withoutAge(string(body)), withoutAge(string(want)); a != b {
		t.Errorf("the apiserver's Table differs from testdata/table.json:\n%s\n%s", a, b)
	}
}

// withoutAge blanks the Age cells (the last of each row) and the
// resourceVersion.
func withoutAge(s string) string {
	var out strings.Builder
	for line := range strings.SplitSeq(s, `"]`) {
		if i := strings.LastIndex(line, `,"`); i >= 0 && strings.Contains(line, `"cells":[`) {
			line = line[:i] + `,"AGE`
		}
		out.WriteString(line + `"]`)
	}
	r := out.String()
	if i := strings.Index(r, `"resourceVersion":"`); i >= 0 {
		j := strings.Index(r[i+19:], `"`)
		r = r[:i+19] + r[i+19+j:]
	}
	return r
}

// TestTableFallbackAgainstRealAPIServer: with a CRD that declares no
// printer columns (a Table of Name and Age), the read asks for the Table,
// then reads the full list instead, and gives what the dynamic path gives.
func TestTableFallbackAgainstRealAPIServer(t *testing.T) {
	c := withoutLonghornCRD(t) // a CRD of its own, without columns
	dyn := c.Dynamic(t)
	c.InstallLonghornCRDWithoutColumns(t)
	createNamespace(t, c, longhorn.LonghornNamespace)
	lh := longhorn.LonghornNamespace
	setVolume(t, dyn, lh, "pvc-a", 3, map[string]any{"state": "attached", "robustness": "degraded", "currentNodeID": "w-1"})
	setVolume(t, dyn, lh, "pvc-b", 2, map[string]any{"state": "attached", "robustness": "healthy", "currentNodeID": "w-2"})
	proxy, cfg := newRecordingProxy(t, c, c.Admin)
	rc, err := longhorn.NewREST(cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, want := readOnce(t, longhorn.Options{Client: dyn})
	h, got := readOnce(t, longhorn.Options{Client: dyn, REST: rc, PageSize: 1})
	if h.Status != model.StatusOK || !reflect.DeepEqual(got, want) || len(got) != 2 {
		t.Errorf("%+v:\n got %+v\nwant %+v", h, got, want)
	}
	wantCalls := []string{
		"/apis/longhorn.io/v1beta2/namespaces/longhorn-system/volumes?limit=1",
		"/apis/longhorn.io/v1beta2/volumes?fieldSelector=metadata.namespace%21%3Dlonghorn-system&limit=1",
		"Table /apis/longhorn.io/v1beta2/namespaces/longhorn-system/volumes?includeObject=None&limit=1",
	}
	calls := proxy.take()
	// The full list's second page carries the apiserver's continue token.
	if len(calls) != 4 || !reflect.DeepEqual(slices.DeleteFunc(calls, func(s string) bool { return strings.Contains(s, "continue=") }), wantCalls) {
		t.Errorf("requests %q, want %q and a continue page", calls, wantCalls)
	}
}

// TestTableErrorsAgainstRealAPIServer: the one-shot read through the Table
// reports a missing CRD as not-installed and a forbidden list as
// forbidden, as the full list did: never as no volumes.
func TestTableErrorsAgainstRealAPIServer(t *testing.T) {
	c := withoutLonghornCRD(t) // without the CRD first
	rc, err := longhorn.NewREST(c.Admin)
	if err != nil {
		t.Fatal(err)
	}
	if h, vols := readOnce(t, longhorn.Options{Client: c.Dynamic(t), REST: rc}); h.Status != model.StatusNotInstalled || len(vols) != 0 {
		t.Errorf("no CRD: %+v, %d volumes", h, len(vols))
	}
	c.InstallLonghornCRD(t)
	carol, err := dynamic.NewForConfig(c.UserConfig("carol"))
	if err != nil {
		t.Fatal(err)
	}
	carolREST, err := longhorn.NewREST(c.UserConfig("carol"))
	if err != nil {
		t.Fatal(err)
	}
	for ns, msg := range map[string]string{"": "cannot list volumes.longhorn.io (RBAC)",
		longhorn.LonghornNamespace: `cannot list volumes.longhorn.io in namespace "longhorn-system" (RBAC)`} {
		h, vols := readOnce(t, longhorn.Options{Client: carol, REST: carolREST, Namespace: ns})
		if h.Status != model.StatusForbidden || h.Message != msg || len(vols) != 0 {
			t.Errorf("namespace %q: forbidden: %+v, %d volumes", ns, h, len(vols))
		}
	}
}

// TestTableRBACAgainstRealAPIServer: a user who may list volumes but not get
// them reads them all (the follow-up GETs fail and the Table's rows stay);
// a user who may list them only in longhorn-system is forbidden, as for
// the full list across namespaces.
func TestTableRBACAgainstRealAPIServer(t *testing.T) {
	c := sharedWithoutVolumes(t)
	dyn := c.Dynamic(t)
	createNamespace(t, c, longhorn.LonghornNamespace)
	lh := longhorn.LonghornNamespace
	setVolume(t, dyn, lh, "pvc-a", 3, map[string]any{"state": "attached", "robustness": "degraded", "currentNodeID": "w-1"})
	setVolume(t, dyn, lh, "pvc-b", 3, map[string]any{"state": "attached", "robustness": "healthy", "currentNodeID": "w-2"})
	ctx := context.Background()
	cs := c.Client(t)
	rule := []rbacv1.PolicyRule{{APIGroups: []string{"longhorn.io"}, Resources: []string{"volumes"}, Verbs: []string{"list"}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "list-volumes"}, Rules: rule},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.RbacV1().ClusterRoles().Delete(ctx, "list-volumes", metav1.DeleteOptions{}) })
	ref := rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "list-volumes"}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}}, RoleRef: ref}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.RbacV1().ClusterRoleBindings().Delete(ctx, "alice", metav1.DeleteOptions{}) })
	if _, err := cs.RbacV1().RoleBindings(lh).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bob"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "bob"}}, RoleRef: ref}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.RbacV1().RoleBindings(lh).Delete(ctx, "bob", metav1.DeleteOptions{}) })
	// RBAC authorizes from a cache that can lag the bindings just made.
	for user, ns := range map[string]string{"alice": "", "bob": lh} {
		for _, a := range testcluster.RuleAttributes(ns, rule) {
			c.WaitAllowed(t, user, a)
		}
	}
	read := func(user string) (model.SourceHealth, []model.Volume) {
		t.Helper()
		d, err := dynamic.NewForConfig(c.UserConfig(user))
		if err != nil {
			t.Fatal(err)
		}
		rc, err := longhorn.NewREST(c.UserConfig(user))
		if err != nil {
			t.Fatal(err)
		}
		return readOnce(t, longhorn.Options{Client: d, REST: rc})
	}
	h, got := read("alice")
	want := []model.Volume{
		{Namespace: lh, Name: "pvc-a", Robustness: model.RobustnessDegraded, State: "attached", Node: "w-1"},
		{Namespace: lh, Name: "pvc-b", Robustness: model.RobustnessHealthy, State: "attached", Node: "w-2"},
	}
	if h.Status != model.StatusOK || !reflect.DeepEqual(got, want) {
		t.Errorf("list without get: %+v\n got %+v\nwant %+v", h, got, want)
	}
	if h, got := read("bob"); h.Status != model.StatusForbidden || h.Message != "cannot list volumes.longhorn.io (RBAC)" || len(got) != 0 {
		t.Errorf("list in longhorn-system only: %+v, %d volumes", h, len(got))
	}
}
