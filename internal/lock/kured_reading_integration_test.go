package lock

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rebootwatch/rebootwatch/internal/coord/kured"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
)

// Issue 22 §2 against the real apiserver: kured's lock is read as kured
// reads it, and a write is done only when kured's own reading of the object
// afterwards changed as intended.
func TestIntegrationKuredReading(t *testing.T) {
	t.Parallel()
	tc := testcluster.Shared(t)
	admin := tc.Client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	newIT := func(t *testing.T, prefix string) *itest {
		return &itest{t: t, tc: tc, admin: admin, ns: tc.Namespace(t, prefix), ctx: ctx, label: prefix}
	}
	created := func(d time.Duration) time.Time { return time.Now().Add(-d).UTC().Truncate(time.Second) }

	t.Run("a holder under Locks is not free, and blocks a fleetlock reap", func(t *testing.T) {
		it := newIT(t, "caselocks")
		it.node("caselocks-a", mid2, time.Now().Add(-2*time.Hour), false)
		it.node("caselocks-b", mid3, time.Now().Add(-2*time.Hour), false) // has just taken kured's lock
		it.daemonSetArgs("kured", `{"maxOwners":2,"Locks":[`+single(ent("caselocks-b", created(time.Minute), 0))+`]}`, "--concurrency=2")
		it.lease("fleetlock-default", zid1) // a ghost
		c, e := it.judge()
		kref := model.LockRef{Kind: model.LockKured, Namespace: it.ns, Name: "kured"}
		ks, err := statusFor(c.LockStatuses(), kref, "")
		if err != nil || ks.Verdict != model.VerdictUnknown || !strings.Contains(ks.Reason, `key "Locks" is not kured's "locks"`) ||
			!strings.Contains(ks.Reason, `reads it as held by "caselocks-b"`) {
			t.Fatalf("kured lock: %+v %v", ks, err)
		}
		fref := model.LockRef{Kind: model.LockFleetlock, Namespace: it.ns, Name: "fleetlock-default"}
		p, err := e.Plan(c, fref, "", model.ActionReap, time.Now())
		if err != nil || p.Allowed || !strings.Contains(p.Refusal, "other-nodes") || !strings.Contains(p.Refusal, kref.String()) {
			t.Fatalf("fleetlock reap: %+v %v", p.Refusal, err)
		}
		if r := it.actor(admin, "admin", p).Do(ctx, p, DoOptions{}); r.Outcome != model.OutcomeRefused {
			t.Fatalf("%s: %s", r.Outcome, r.Message)
		}
		if l, _ := admin.CoordinationV1().Leases(it.ns).Get(ctx, "fleetlock-default", metav1.GetOptions{}); *l.Spec.HolderIdentity != zid1 {
			t.Fatal("the lease was freed")
		}
	})

	t.Run("two locks keys: never edited without --allow-unsafe, then freed for kured", func(t *testing.T) {
		it := newIT(t, "twolocks")
		it.node("twolocks-a", mid1, time.Now().Add(-2*time.Hour), false)
		ann := `{"maxOwners":2,"locks":[` + single(ent("gone-first", created(time.Hour), 0)) + `],"locks":[` + single(ent("gone-last", created(time.Hour), 0)) + `]}`
		it.daemonSetArgs("kured", ann, "--concurrency=2")
		c, e := it.judge()
		ref := model.LockRef{Kind: model.LockKured, Namespace: it.ns, Name: "kured"}
		s, err := statusFor(c.LockStatuses(), ref, "")
		if err != nil || s.Verdict != model.VerdictUnknown || !strings.Contains(s.Reason, `duplicate key "locks"`) || !strings.Contains(s.Reason, `"gone-last"`) {
			t.Fatalf("status %+v %v", s, err)
		}
		p, err := e.Plan(c, ref, "", model.ActionReap, time.Now())
		if err != nil || p.Allowed {
			t.Fatalf("plan %+v %v", p, err)
		}
		if r := it.actor(admin, "admin", p).Do(ctx, p, DoOptions{}); r.Outcome != model.OutcomeRefused {
			t.Fatalf("without --allow-unsafe: %s: %s", r.Outcome, r.Message)
		}
		if got := it.getDS("kured"); got.Annotations[kured.Annotation] != ann {
			t.Fatal("refused reap changed the DaemonSet")
		}
		// The operator's override clears the whole value: kured then reads
		// no lock, which the re-read confirms.
		r := it.actor(admin, "admin", p).Do(ctx, p, DoOptions{AllowUnsafe: true})
		if r.Outcome != model.OutcomeDone {
			t.Fatalf("with --allow-unsafe: %s: %s", r.Outcome, r.Message)
		}
		if _, ok := it.getDS("kured").Annotations[kured.Annotation]; ok {
			t.Fatal("annotation still there")
		}
	})

	// A writer that puts the holder back between the write and the re-read
	// (kured's own Update racing, a mutating webhook): the write was made,
	// but kured still reads the holder. Never done.
	t.Run("kured still reads the holder after the write: error, not done", func(t *testing.T) {
		it := newIT(t, "putback")
		it.node("putback-a", mid1, time.Now().Add(-2*time.Hour), false)
		ann := single(ent("ghost-z", created(time.Hour), 0))
		it.daemonSet("kured", ann)
		c, e := it.judge()
		ref := model.LockRef{Kind: model.LockKured, Namespace: it.ns, Name: "kured"}
		p, err := e.Plan(c, ref, "", model.ActionReap, time.Now())
		if err != nil || !p.Allowed {
			t.Fatalf("plan %+v %v", p, err)
		}
		var putBack atomic.Int32
		cs := putBackProxy(t, tc, func(r *http.Request) {
			if r.Method != http.MethodPut || !strings.HasSuffix(r.URL.Path, "/namespaces/"+it.ns+"/daemonsets/kured") {
				return
			}
			ds := it.getDS("kured")
			ds.Annotations[kured.Annotation] = ann
			if _, err := admin.AppsV1().DaemonSets(it.ns).Update(ctx, ds, metav1.UpdateOptions{}); err != nil {
				t.Error(err)
			}
			putBack.Add(1)
		})
		r := it.actor(cs, "admin", p).Do(ctx, p, DoOptions{})
		if putBack.Load() != 1 || r.Outcome != model.OutcomeError || !strings.Contains(r.Message, `kured (--concurrency 1) reads it as held by "ghost-z"`) ||
			!strings.Contains(r.Message, "changed again since") {
			t.Fatalf("%s: %s (put back %d)", r.Outcome, r.Message, putBack.Load())
		}
		evs := it.events("kured")
		if len(evs) != 1 || !strings.Contains(evs[0].Message, "NOT EFFECTIVE") {
			t.Fatalf("events %+v", evs)
		}
	})

	t.Run("fleetlock still reads the holder after the write: error, not done", func(t *testing.T) {
		it := newIT(t, "putbackfl")
		it.node("putbackfl-a", mid2, time.Now().Add(-2*time.Hour), false)
		it.lease("fleetlock-default", zid1)
		c, e := it.judge()
		ref := model.LockRef{Kind: model.LockFleetlock, Namespace: it.ns, Name: "fleetlock-default"}
		p, err := e.Plan(c, ref, "", model.ActionReap, time.Now())
		if err != nil || !p.Allowed {
			t.Fatalf("plan %+v %v", p, err)
		}
		cs := putBackProxy(t, tc, func(r *http.Request) {
			if r.Method != http.MethodPut || !strings.HasSuffix(r.URL.Path, "/namespaces/"+it.ns+"/leases/fleetlock-default") {
				return
			}
			l, err := admin.CoordinationV1().Leases(it.ns).Get(ctx, "fleetlock-default", metav1.GetOptions{})
			if err != nil {
				t.Error(err)
				return
			}
			h := zid1
			l.Spec.HolderIdentity = &h
			if _, err := admin.CoordinationV1().Leases(it.ns).Update(ctx, l, metav1.UpdateOptions{}); err != nil {
				t.Error(err)
			}
		})
		r := it.actor(cs, "admin", p).Do(ctx, p, DoOptions{})
		if r.Outcome != model.OutcomeError || !strings.Contains(r.Message, `fleetlock reads holder "`+zid1+`"`) {
			t.Fatalf("%s: %s", r.Outcome, r.Message)
		}
	})
}

// putBackProxy is a client whose requests go through a proxy to the
// apiserver that, once a request was answered by the apiserver and before
// the answer is passed on, calls after(r).
func putBackProxy(t *testing.T, tc *testcluster.Cluster, after func(*http.Request)) kubernetes.Interface {
	t.Helper()
	rp := tc.ReverseProxy(t, tc.Admin)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		rp.ServeHTTP(rec, r)
		after(r)
		for k, vs := range rec.Header() {
			w.Header()[k] = vs
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(srv.Close)
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
