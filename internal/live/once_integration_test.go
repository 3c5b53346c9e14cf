package live

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rebootwatch/rebootwatch/internal/testenv/scalefixture"
	"github.com/rebootwatch/rebootwatch/internal/testenv/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources"
	"github.com/rebootwatch/rebootwatch/sources/kube"
	"github.com/rebootwatch/rebootwatch/sources/longhorn"
)

// Issue 14: a one-shot read (--snapshot) lists instead of running
// informers. Against a real apiserver it must give the very picture the
// informers give (nodes with full status, kured's and fleetlock's locks,
// Longhorn volumes, every source ok), page through large lists (pages of
// two here), and a user who may read nothing gets forbidden sources and no
// nodes, never "nothing found".
func TestOnceMatchesInformersRealCluster(t *testing.T) {
	tc := testcluster.SharedAlone(t)
	tc.EnsureLonghornCRD(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	t.Cleanup(func() { // the next test on the shared cluster reads volumes too
		_ = tc.Dynamic(t).Resource(testcluster.LonghornVolumeGVR).Namespace(scalefixture.LonghornNamespace).
			DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{})
	})
	fx := &scalefixture.Fixture{Client: tc.Client(t), Dynamic: tc.Dynamic(t), Config: tc.Admin}
	if err := fx.Grow(ctx, 7, 9); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	picture := func(once bool, cfgUser string) (*model.Cluster, string) {
		t.Helper()
		cfg := tc.Admin
		if cfgUser != "" {
			cfg = tc.UserConfig(cfgUser)
		}
		// Both pictures are judged at the same instant: a lock's age in a
		// blocker's reason ("held … for 2s") would otherwise differ when
		// the second picture is taken a second later.
		s, err := Open(ctx, Options{Config: cfg, Context: "itest", RequestTimeout: 10 * time.Second, Once: once,
			KuredDaemonSet: scalefixture.KuredNamespace + "/" + scalefixture.KuredName, WallNow: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		c, err := s.Collect(ctx)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.MarshalIndent(c.Snapshot(now), "", " ")
		if err != nil {
			t.Fatal(err)
		}
		return c, string(b)
	}
	_, informers := picture(false, "")
	c, once := picture(true, "")
	if once != informers {
		t.Errorf("one-shot picture differs from the informers':\n once %s\ninformers %s", once, informers)
	}
	if c.NodeCount() != 7 || c.VolumeCount() != 9 || len(c.Locks()) != 2 {
		t.Errorf("one-shot: %d nodes, %d volumes, %d locks", c.NodeCount(), c.VolumeCount(), len(c.Locks()))
	}
	for _, h := range c.Sources() {
		// Neither the system-upgrade-controller nor the Flatcar update
		// operator runs here: read by default, they are not installed.
		absent := (h.Name == "suc" || h.Name == "flatcar") && h.Status == model.StatusNotInstalled
		if h.Name != model.SourcePrometheus && h.Status != model.StatusOK && !absent {
			t.Errorf("one-shot source %s: %s %s", h.Name, h.Status, h.Message)
		}
	}

	// A user without any grant: nothing is read, and nothing reads as
	// "none found".
	c, _ = picture(true, "carol")
	if c.NodeCount() != 0 {
		t.Errorf("carol: %d nodes", c.NodeCount())
	}
	// flatcar too: without the nodes FLUO's agent labels, whether it is
	// installed is unknown (issue 32 §2), never "not installed".
	for _, name := range []model.SourceName{model.SourceNodes, model.SourceKured, model.SourceFleetlock, model.SourceLonghorn, "flatcar"} {
		if h, _ := c.Source(name); h.Status != model.StatusForbidden {
			t.Errorf("carol: source %s is %s (%s), want forbidden", name, h.Status, h.Message)
		}
	}
	if code := c.Snapshot(now).ExitCode; code != 1 {
		t.Errorf("carol: exit code %d, want 1 (could not read the cluster)", code)
	}

	// Pages of two, through the sources themselves.
	cs, err := kubernetes.NewForConfig(tc.Admin)
	if err != nil {
		t.Fatal(err)
	}
	lrest, err := longhorn.NewREST(tc.Admin)
	if err != nil {
		t.Fatal(err)
	}
	m := model.NewCluster("pages", model.Options{})
	sink := sources.Serial(func(ev model.Event) { m.Apply(ev, time.Now()) })
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	ks, err := kube.Start(sctx, kube.Options{Client: cs, Once: true, PageSize: 2}, sink)
	if err != nil {
		t.Fatal(err)
	}
	ls, err := longhorn.Start(sctx, longhorn.Options{Client: tc.Dynamic(t), REST: lrest, Once: true, PageSize: 2}, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := ks.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := ls.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	// The pods source's probe runs until the context ends (as in a
	// session, whose Close cancels it).
	stop()
	ks.Wait()
	ls.Wait()
	if m.NodeCount() != 7 || m.VolumeCount() != 9 {
		t.Errorf("pages of 2: %d nodes, %d volumes", m.NodeCount(), m.VolumeCount())
	}
}
