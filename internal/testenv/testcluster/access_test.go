package testcluster

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestWaitAllowedAndDenied: on the shared cluster, WaitAllowed keeps asking
// while carol has no grant and returns once a ClusterRoleBinding gives her
// the node list, and her own list of nodes right after it succeeds;
// WaitDenied keeps asking while she has it and returns once the binding is
// deleted, and her list right after it is refused. Each wait starts before
// the change and must not return before it: it asks through a proxy that
// counts the reviews, and three asked with no return come first, so a wait
// that returned at once (or did not ask) fails, whatever the authorizer's
// lag on this machine.
func TestWaitAllowedAndDenied(t *testing.T) {
	t.Parallel()
	c := Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	admin := c.Client(t)
	carol, err := kubernetes.NewForConfig(c.UserConfig("carol"))
	if err != nil {
		t.Fatal(err)
	}
	const name = "testcluster-wait-carol"
	rules := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"list"}}}
	attrs := RuleAttributes("", rules)[0]
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for what, err := range map[string]error{
			"ClusterRoleBinding": admin.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{}),
			"ClusterRole":        admin.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{}),
		} {
			if err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("clean-up: %s %s: %v", what, name, err)
			}
		}
	})

	// The waits ask as the admin through a proxy that counts the reviews,
	// each before it is passed on (so before the wait can see its answer).
	reviews := make(chan struct{}, 10000)
	rp := c.ReverseProxy(t, c.Admin)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/subjectaccessreviews") {
			reviews <- struct{}{}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	counted := &Cluster{URL: srv.URL, Admin: &rest.Config{Host: srv.URL, QPS: -1, Timeout: 30 * time.Second}}

	// start runs wait in a goroutine and returns once it has asked three
	// times without returning; done then gives its failure ("" for none)
	// when it returns.
	start := func(what string, wait func(testing.TB)) (done <-chan string) {
		t.Helper()
		for len(reviews) > 0 {
			<-reviews // the last wait's
		}
		ch := make(chan string, 1)
		go func() {
			gt := &goroutineTB{TB: t}
			defer func() { ch <- gt.failure }()
			wait(gt)
		}()
		for asked := 0; asked < 3; {
			select {
			case <-reviews:
				asked++
			case f := <-ch:
				t.Fatalf("%s returned before the change, having asked %d times (%s)", what, asked, f)
			case <-ctx.Done():
				t.Fatalf("%s: %v", what, ctx.Err())
			}
		}
		return ch
	}
	finish := func(what string, done <-chan string) {
		t.Helper()
		if f := <-done; f != "" {
			t.Fatalf("%s: %s", what, f)
		}
	}

	done := start("WaitAllowed", func(tb testing.TB) { counted.WaitAllowed(tb, "carol", attrs) })
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "carol"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	finish("WaitAllowed", done)
	if _, err := carol.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1}); err != nil {
		t.Fatalf("carol's node list right after WaitAllowed: %v", err)
	}

	done = start("WaitDenied", func(tb testing.TB) { counted.WaitDenied(tb, "carol", attrs) })
	if err := admin.RbacV1().ClusterRoleBindings().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	finish("WaitDenied", done)
	if _, err := carol.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1}); !apierrors.IsForbidden(err) {
		t.Fatalf("carol's node list right after WaitDenied: %v, want forbidden", err)
	}
}

// goroutineTB is a test's testing.TB for a goroutine of its own: Fatal and
// Fatalf keep the failure and end the goroutine, not the test (FailNow
// must be called from the test's goroutine).
type goroutineTB struct {
	testing.TB
	failure string
}

func (g *goroutineTB) Fatal(args ...any) { g.failure = fmt.Sprint(args...); runtime.Goexit() }

func (g *goroutineTB) Fatalf(format string, args ...any) {
	g.failure = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestRuleAttributes(t *testing.T) {
	got := RuleAttributes("ns", []rbacv1.PolicyRule{
		{APIGroups: []string{"apps", "extensions"}, Resources: []string{"daemonsets", "deployments"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"pods/log"}, Verbs: []string{"get"}, ResourceNames: []string{"web-0", "web-1"}},
		{NonResourceURLs: []string{"/healthz"}, Verbs: []string{"get"}},
	})
	want := []authorizationv1.ResourceAttributes{
		{Namespace: "ns", Verb: "get", Group: "apps", Resource: "daemonsets"},
		{Namespace: "ns", Verb: "get", Group: "", Resource: "pods", Subresource: "log", Name: "web-0"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("RuleAttributes:\n got %+v\nwant %+v", got, want)
	}
	if u := ServiceAccountUser("rebootwatch", "rebootwatch-agent"); u != "system:serviceaccount:rebootwatch:rebootwatch-agent" {
		t.Errorf("ServiceAccountUser %q", u)
	}
}
