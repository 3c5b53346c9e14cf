package live

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/rebootwatch/rebootwatch/internal/coord/kinds"
	"github.com/rebootwatch/rebootwatch/internal/coord/suc"
	"github.com/rebootwatch/rebootwatch/internal/coord/suc/suctest"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
)

// Issue 24 §4: a dashboard's session reads the coordinator kinds again
// while it runs (against a real apiserver): a SUC wedge written after it
// opened is named and its uncordon offered; when the Plans stop answering,
// SUC is unknown (its blocker says so) and the uncordon is no longer
// offered on the old reading.
func TestDashboardRereadsCoordinatorsRealCluster(t *testing.T) {
	testcluster.Require(t, "etcd", "kube-apiserver")
	tc := testcluster.SharedAlone(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sucInstalled(t, tc)
	ns := coordinatorNamespace(t, tc, "system-upgrade")
	// A proxy whose Plans can stop answering (503), as an overloaded
	// apiserver or a broken aggregation layer does.
	var broken atomic.Bool
	rp := tc.ReverseProxy(t, tc.Admin)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if broken.Load() && strings.Contains(r.URL.Path, "/plans") {
			http.Error(w, "the Plans stopped answering", http.StatusServiceUnavailable)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	defer srv.Close()
	s, err := Open(ctx, Options{Config: &rest.Config{Host: srv.URL, QPS: -1}, Context: "itest", RequestTimeout: 2 * time.Second,
		CoordinatorInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, b := range s.coordinatorBlockers() {
		t.Errorf("before the wedge: %+v", b)
	}
	node, _, err := suctest.Wedge(ctx, tc.Client(t), tc.Dynamic(t), ns, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the wedge named and its uncordon offered", func() bool {
		_, left := s.Engine().LeftCordoned(node)
		return left && hasBlocker(s.coordinatorBlockers(), suc.BlockerJobFailed, node, "BackoffLimitExceeded")
	})
	broken.Store(true)
	waitFor(t, "SUC unknown once its Plans do not answer", func() bool {
		_, left := s.Engine().LeftCordoned(node)
		return !left && hasBlocker(s.coordinatorBlockers(), kinds.UnknownKind, "", "its wedges are unknown")
	})
	for _, b := range s.coordinatorBlockers() {
		if b.Kind == suc.BlockerJobFailed || strings.Contains(b.Reason, "nothing") {
			t.Errorf("unread SUC still claims %+v", b)
		}
	}
}
