package cli

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord/suc/suctest"
	"github.com/rebootwatch/rebootwatch/internal/testcluster"
	"github.com/rebootwatch/rebootwatch/model"
)

// --coordinators: --snapshot also reads system-upgrade-controller and
// names a plan it cannot validate as a fleet blocker with its evidence
// (issue 24); without the flag the snapshot does not read Plans.
func TestSnapshotCoordinatorsRealCluster(t *testing.T) {
	tc := testcluster.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := suctest.InstallCRD(ctx, tc.Dynamic(t)); err != nil {
		t.Fatal(err)
	}
	ns := tc.Namespace(t, "system-upgrade")
	spec := suctest.PlanSpec{Concurrency: 1, Version: "v1.31.4+k3s1"}
	if _, err := suctest.Create(ctx, tc.Dynamic(t), suctest.Plan(ns, "k3s-server", spec), suctest.StatusWith(spec.Version, "", nil,
		suctest.Cond("Validated", "False", "Error", "spec.window is invalid", time.Now()))); err != nil {
		t.Fatal(err)
	}
	snapshot := func(extra ...string) model.Snapshot {
		env, out, errb := multiEnv()
		args := append([]string{"--kubeconfig", kubeconfigCopy(t, tc), "--request-timeout", "5s", "--sync-timeout", "30s", "--snapshot", "-o", "json"}, extra...)
		run(ctx, args, env)
		var snap model.Snapshot
		if err := json.Unmarshal([]byte(out.String()), &snap); err != nil {
			t.Fatalf("%v:\n%s\n%s", err, out.String(), errb.String())
		}
		return snap
	}
	has := func(s model.Snapshot) bool {
		for _, b := range s.Fleet.Blockers {
			if b.Kind == "plan-not-validated" && strings.Contains(b.Reason, "spec.window is invalid") && len(b.Evidence) > 0 {
				return true
			}
		}
		return false
	}
	if s := snapshot("--coordinators"); !has(s) {
		t.Errorf("--coordinators: fleet blockers %+v", s.Fleet.Blockers)
	}
	if s := snapshot(); has(s) {
		t.Errorf("without --coordinators: %+v", s.Fleet.Blockers)
	}
}
