package lock

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rebootwatch/rebootwatch/model"
)

// want is the expected judgement of one (lock, holder).
type want struct {
	ref     model.LockRef
	holder  string
	verdict model.Verdict
	nodes   []string       // HolderNodes; nil means "none"
	actions []model.Action // nil means none
	reason  string         // substring of Reason
	evid    string         // substring of some Evidence value
	entry   int            // the entry's position, checked for a duplicated holder
}

func TestVerdicts(t *testing.T) {
	R, P := model.ActionRelease, model.ActionReap
	now := at(time.Hour)
	h := func(d time.Duration) time.Time { return now.Add(d) }
	type tc struct {
		name  string
		grace time.Duration
		steps []step
		want  []want
		count int // expected number of statuses (0: len(want))
	}
	cases := []tc{
		// ---------------- kured ----------------
		{name: "kured annotation absent is free",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1")), lockEv(kuredAbsent())}}},
			want:  []want{{ref: kuredRef, verdict: model.VerdictFree}}},
		{name: "kured held by a Ready node that has not rebooted",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1")), up(node("n2")), lockEv(kuredLock(single(ent("n1", h(-5*time.Minute), 0))))}}},
			want:  []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictHeld, nodes: []string{"n1"}, reason: "not rebooted"}}},
		{name: "kured held by a cordoned node draining",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1", cordoned())), lockEv(kuredLock(single(ent("n1", h(-5*time.Minute), 0))))}}},
			want:  []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictHeld, nodes: []string{"n1"}, reason: "draining"}}},
		{name: "kured held by a NotReady node rebooting",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1", notReady(h(-2*time.Minute)), cordoned())), lockEv(kuredLock(single(ent("n1", h(-9*time.Minute), 0))))}}},
			want:  []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictHeld, nodes: []string{"n1"}, reason: "NotReady"}}},
		{name: "kured held by a node of unknown readiness",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1", noReady())), lockEv(kuredLock(single(ent("n1", h(-9*time.Minute), 0))))}}},
			want:  []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictHeld, nodes: []string{"n1"}, reason: "unknown"}}},
		{name: "kured holder matches no node: ghost, reap allowed",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1")), up(node("n2")), lockEv(kuredLock(single(ent("n9", h(-time.Hour), 0))))}}},
			want:  []want{{ref: kuredRef, holder: "n9", verdict: model.VerdictGhost, actions: []model.Action{P}, reason: "matches none"}}},
		{name: "kured ghost but node list stale is unknown (rule 1)",
			steps: []step{{now, []model.Event{source(model.SourceNodes, model.StatusStale), up(node("n1")), lockEv(kuredLock(single(ent("n9", h(-time.Hour), 0))))}}},
			want:  []want{{ref: kuredRef, holder: "n9", verdict: model.VerdictUnknown, reason: "node list is stale"}}},
		{name: "kured ghost with an errored empty node list is unknown (rule 1)",
			steps: []step{{now, []model.Event{source(model.SourceNodes, model.StatusError), lockEv(kuredLock(single(ent("n9", h(-time.Hour), 0))))}}},
			want:  []want{{ref: kuredRef, holder: "n9", verdict: model.VerdictUnknown, reason: "node list is error"}}},
		{name: "kured ghost with a forbidden node list is unknown (rule 1)",
			steps: []step{{now, []model.Event{source(model.SourceNodes, model.StatusForbidden), lockEv(kuredLock(single(ent("n9", h(-time.Hour), 0))))}}},
			want:  []want{{ref: kuredRef, holder: "n9", verdict: model.VerdictUnknown, reason: "forbidden"}}},
		{name: "kured with node source never reported is unknown",
			steps: []step{{now, []model.Event{up(node("n1")), lockEv(kuredLock(single(ent("n9", h(-time.Hour), 0))))}}},
			want:  []want{{ref: kuredRef, holder: "n9", verdict: model.VerdictUnknown, reason: "not synced"}}},
		{name: "kured TTL passed is expired",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1")), up(node("n2")), lockEv(kuredLock(single(ent("n1", h(-2*time.Hour), time.Hour))))}}},
			want:  []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictExpired, nodes: []string{"n1"}, actions: []model.Action{P}, reason: "passed"}}},
		{name: "kured TTL exactly at expiry is expired (kured: age >= TTL)",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1")), lockEv(kuredLock(single(ent("n1", h(-time.Hour), time.Hour))))}}},
			want:  []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictExpired, nodes: []string{"n1"}, actions: []model.Action{P}}}},
		{name: "kured TTL one nanosecond before expiry is not expired",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1")), lockEv(kuredLock(single(ent("n1", h(-time.Hour+time.Nanosecond), time.Hour))))}}},
			want:  []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictHeld, nodes: []string{"n1"}}}},
		{name: "kured TTL 0 never expires",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1")), lockEv(kuredLock(single(ent("n1", h(-2*time.Hour), 0))))}}},
			want:  []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictHeld, nodes: []string{"n1"}}}},
		{name: "kured TTL without created is expired, like kured",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1")), lockEv(kuredLock(`{"nodeID":"n1","TTL":3600000000000}`))}}},
			want:  []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictExpired, nodes: []string{"n1"}, actions: []model.Action{P}, reason: "no created time"}}},
		{name: "kured expired lock of a ghost holder is expired (TTL checked first; both allow reap)",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1")), lockEv(kuredLock(single(ent("n9", h(-3*time.Hour), time.Hour))))}}},
			want:  []want{{ref: kuredRef, holder: "n9", verdict: model.VerdictExpired, actions: []model.Action{P}}}},
		// Issue 11 §3: an impossible lock time proves nothing either way;
		// it is never "held 0s, has not rebooted".
		{name: "kured created in the future: unknown naming the skew, not has-not-rebooted",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1", readySince(h(-time.Hour)))), lockEv(kuredLock(single(ent("n1", h(2*time.Hour), 0))))}}},
			want:  []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictUnknown, nodes: []string{"n1"}, evid: "in the future", reason: "2h in the future"}}},
		{name: "kured created in the future with a TTL is not expired",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1")), lockEv(kuredLock(single(ent("n1", h(2*time.Hour), time.Minute))))}}},
			want:  []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictUnknown, nodes: []string{"n1"}}}},
		{name: "kured created in the future: the node's boot id change wins",
			steps: []step{
				{at(0), []model.Event{nodesOK(), up(node("n1", cordoned())), up(node("n2")), lockEv(kuredLock(single(ent("n1", now.Add(3*time.Hour), 0))))}},
				{at(2 * time.Minute), []model.Event{up(node("n1", cordoned(), notReady(at(2*time.Minute))))}},
				{at(5 * time.Minute), []model.Event{up(node("n1", boot("n1-b2"), readySince(at(5*time.Minute))))}},
				{now, nil}},
			want: []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictOrphaned, nodes: []string{"n1"}, actions: []model.Action{R}, evid: "in the future", reason: "boot id changed"}}},
		{name: "fleetlock holder with no lock time: unknown wording, never has-not-rebooted",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1", machine(mid1), readySince(h(-time.Hour)))), lockEv(fleet(zid1))}}},
			want:  []want{{ref: fleetRef, holder: zid1, verdict: model.VerdictHeld, nodes: []string{"n1"}, reason: "is unknown"}}},
		{name: "kured orphaned: Ready since after created, schedulable (managedFields) and steady past grace",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1", readySince(h(-25*time.Minute)), schedAt(h(-24*time.Minute)))), up(node("n2")), lockEv(kuredLock(single(ent("n1", h(-40*time.Minute), 0))))}}},
			want:  []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictOrphaned, nodes: []string{"n1"}, actions: []model.Action{R}, reason: "Ready since after", evid: "managedFields"}}},
		{name: "kured orphaned: the uncordon seen by this engine, steady past grace",
			steps: []step{{h(-26 * time.Minute), []model.Event{nodesOK(), up(node("n1", readySince(h(-26*time.Minute)), cordoned())), up(node("n2")), lockEv(kuredLock(single(ent("n1", h(-40*time.Minute), 0))))}},
				{h(-25 * time.Minute), []model.Event{up(node("n1", readySince(h(-26*time.Minute))))}},
				{now, nil}},
			want: []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictOrphaned, nodes: []string{"n1"}, actions: []model.Action{R}, evid: "the uncordon, seen at"}}},
		// Issue 27 §3: a fresh engine cannot tell since when a holder is
		// schedulable (kubectl's and kured's uncordon remove the field:
		// no managedFields entry dates it): unknown, the grace not passed.
		{name: "kured rebooted and schedulable since an unknown time: held, steady unknown",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1", readySince(h(-25*time.Minute)))), up(node("n2")), lockEv(kuredLock(single(ent("n1", h(-40*time.Minute), 0))))}}},
			want:  []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictHeld, nodes: []string{"n1"}, reason: "since when is unknown", evid: "unknown: at least 0s"}}},
		{name: "kured schedulable since an unknown time: orphaned once this engine saw it so past the grace",
			steps: []step{{h(-11 * time.Minute), []model.Event{nodesOK(), up(node("n1", readySince(h(-25*time.Minute)))), up(node("n2")), lockEv(kuredLock(single(ent("n1", h(-40*time.Minute), 0))))}},
				{now, nil}},
			want: []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictOrphaned, nodes: []string{"n1"}, actions: []model.Action{R}, evid: "unknown: at least 11m"}}},
		{name: "kured rebooted but steady less than grace is held",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1", readySince(h(-4*time.Minute)), schedAt(h(-4*time.Minute)))), lockEv(kuredLock(single(ent("n1", h(-40*time.Minute), 0))))}}},
			want:  []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictHeld, nodes: []string{"n1"}, reason: "orphaned after"}}},
		{name: "kured orphan grace option shortens the wait",
			grace: 3 * time.Minute,
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1", readySince(h(-4*time.Minute)), schedAt(h(-4*time.Minute)))), lockEv(kuredLock(single(ent("n1", h(-40*time.Minute), 0))))}}},
			want:  []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictOrphaned, nodes: []string{"n1"}, actions: []model.Action{R}}}},
		{name: "kured rebooted and still cordoned within kured's bound is recovering, held",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1", readySince(h(-5*time.Minute)), cordoned())), lockEv(kuredLock(single(ent("n1", h(-40*time.Minute), 0))))}}},
			want:  []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictHeld, nodes: []string{"n1"}, reason: "still cordoned"}}},
		// Issue 27 §1: kured's pod never came back after the reboot; past
		// the first tick + delay + grace the holder's kured has stalled.
		{name: "kured holder still cordoned past kured's bound, its pod in CrashLoopBackOff: orphaned, release",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1", readySince(h(-30*time.Minute)), cordoned())), up(node("n2")),
				kuredPods("n1", crashLooping(h(-time.Minute))), lockEv(kuredLock(single(ent("n1", h(-40*time.Minute), 0))))}}},
			want: []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictOrphaned, nodes: []string{"n1"}, actions: []model.Action{R},
				reason: "kured on n1 has not finished its cycle 30m after the reboot", evid: "CrashLoopBackOff"}}},
		{name: "kured holder still cordoned past kured's bound, its pod missing: orphaned",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1", readySince(h(-30*time.Minute)), cordoned())), up(node("n2")),
				kuredPods("n1"), lockEv(kuredLock(single(ent("n1", h(-40*time.Minute), 0))))}}},
			want: []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictOrphaned, nodes: []string{"n1"}, actions: []model.Action{R},
				reason: "kured's pod on n1 is missing", evid: "missing"}}},
		{name: "kured holder still cordoned, its pod started late and within its bound: held",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1", readySince(h(-30*time.Minute)), cordoned())), up(node("n2")),
				kuredPods("n1", runningSince(h(-time.Minute))), lockEv(kuredLock(single(ent("n1", h(-40*time.Minute), 0))))}}},
			want: []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictHeld, nodes: []string{"n1"}, reason: "still cordoned (recovering)"}}},
		{name: "kured rebooted, cordoned before kured (metadata.unschedulable) is orphaned",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1", readySince(h(-30*time.Minute)), cordoned())),
				lockEv(kuredLock(`{"nodeID":"n1","metadata":{"unschedulable":true},"created":"` + h(-40*time.Minute).Format(time.RFC3339) + `","TTL":0}`))}}},
			want: []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictOrphaned, nodes: []string{"n1"}, actions: []model.Action{R}, evid: "cordoned before kured"}}},
		{name: "kured legacy lock, boot id changed after it was seen: orphaned",
			steps: []step{
				{at(0), []model.Event{nodesOK(), up(node("n1", cordoned())), up(node("n2")), lockEv(kuredLock(`{"nodeID":"n1","metadata":{"unschedulable":false}}`))}},
				{at(5 * time.Minute), []model.Event{up(node("n1", boot("n1-b2"), readySince(at(5*time.Minute)), cordoned()))}},
				{at(8 * time.Minute), []model.Event{up(node("n1", boot("n1-b2"), readySince(at(5*time.Minute))))}},
				{now, nil}},
			want: []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictOrphaned, nodes: []string{"n1"}, actions: []model.Action{R}, reason: "boot id changed", evid: "n1-b2"}}},
		{name: "kured legacy lock without a reboot is held",
			steps: []step{{at(0), []model.Event{nodesOK(), up(node("n1")), lockEv(kuredLock(`{"nodeID":"n1"}`))}}, {now, nil}},
			want:  []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictHeld, nodes: []string{"n1"}, evid: "not recorded"}}},
		{name: "kured uncordon seen recently restarts the steady clock",
			steps: []step{
				{at(0), []model.Event{nodesOK(), up(node("n1", cordoned(), readySince(at(-30*time.Minute)))), lockEv(kuredLock(single(ent("n1", at(-40*time.Minute), 0))))}},
				{h(-2 * time.Minute), []model.Event{up(node("n1", readySince(at(-30*time.Minute))))}},
				{now, nil}},
			want: []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictHeld, nodes: []string{"n1"}, reason: "for 2m"}}},
		{name: "kured holder name case differs: maps to the node, never a ghost",
			steps: []step{{now, []model.Event{nodesOK(), up(node("node-1")), lockEv(kuredLock(single(ent("Node-1", h(-5*time.Minute), 0))))}}},
			want:  []want{{ref: kuredRef, holder: "Node-1", verdict: model.VerdictHeld, nodes: []string{"node-1"}, evid: "case-insensitively"}}},
		{name: "kured manual lock is held by an operator",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1")), lockEv(kuredLock(`{"nodeID":"manual"}`))}}},
			want:  []want{{ref: kuredRef, holder: "manual", verdict: model.VerdictHeld, reason: "manual lock"}}},
		{name: "kured malformed JSON is unknown with the parse error",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1")), lockEv(kuredLock(`{"nodeID":`))}}},
			want:  []want{{ref: kuredRef, verdict: model.VerdictUnknown, reason: "malformed"}}},
		{name: "kured lock without nodeID is unknown",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1")), lockEv(kuredLock(`{"created":"2026-01-01T00:00:00Z"}`))}}},
			want:  []want{{ref: kuredRef, verdict: model.VerdictUnknown, reason: "no nodeID"}}},
		{name: "kured TTL of the wrong type is unknown",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1")), lockEv(kuredLock(`{"nodeID":"n1","TTL":"1h"}`))}}},
			want:  []want{{ref: kuredRef, verdict: model.VerdictUnknown, reason: "TTL"}}},
		{name: "kured multi-lock with one ghost and one live entry",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1", cordoned())), up(node("n2")),
				lockEv(kuredLock(multi(2, ent("n1", h(-5*time.Minute), 0), ent("gone", h(-3*time.Hour), 0))))}}},
			want: []want{
				{ref: kuredRef, holder: "n1", verdict: model.VerdictHeld, nodes: []string{"n1"}},
				// n1 is mid-cycle, so reaping the ghost entry is not recommended.
				{ref: kuredRef, holder: "gone", verdict: model.VerdictGhost}}},
		{name: "kured multi-lock with two ghosts: each reapable",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1")), lockEv(kuredLock(multi(3, ent("g1", h(-5*time.Minute), 0), ent("g2", h(-3*time.Hour), 0))))}}},
			want: []want{
				{ref: kuredRef, holder: "g1", verdict: model.VerdictGhost, actions: []model.Action{P}},
				{ref: kuredRef, holder: "g2", verdict: model.VerdictGhost, actions: []model.Action{P}}}},
		{name: "kured multi-lock with no entries is free",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1")), lockEv(kuredLock(multi(2)))}}},
			want:  []want{{ref: kuredRef, verdict: model.VerdictFree}}},
		// kured appends a second entry for a node whose own entry expired
		// (daemonsetlock.go canAcquireMultiple): each entry is judged alone,
		// and a ghost next to them is still seen.
		{name: "kured multi-lock listing a node twice: judged per entry, ghost beside it reapable",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1", cordoned())), up(node("n2")), lockEv(kuredLock(multi(3,
				ent("n1", h(-3*time.Hour), time.Hour), ent("gone", h(-2*time.Hour), 0), ent("n1", h(-5*time.Minute), time.Hour))))}}},
			want: []want{
				{ref: kuredRef, holder: "n1", entry: 0, verdict: model.VerdictExpired, nodes: []string{"n1"}, evid: "more than once"},
				{ref: kuredRef, holder: "gone", entry: 1, verdict: model.VerdictGhost},
				{ref: kuredRef, holder: "n1", entry: 2, verdict: model.VerdictHeld, nodes: []string{"n1"}, reason: "draining"}}},
		{name: "kured node deleted while its lock is judged becomes a ghost",
			steps: []step{
				{at(0), []model.Event{nodesOK(), up(node("n1", cordoned())), up(node("n2")), lockEv(kuredLock(single(ent("n1", at(-time.Minute), 0))))}},
				{now, []model.Event{gone("n1")}}},
			want: []want{{ref: kuredRef, holder: "n1", verdict: model.VerdictGhost, actions: []model.Action{P}}}},
		{name: "kured source stale makes the lock unknown",
			steps: []step{{now, []model.Event{nodesOK(), source(model.SourceKured, model.StatusStale), up(node("n1")), lockEv(kuredLock(single(ent("n9", h(-time.Hour), 0))))}}},
			want:  []want{{ref: kuredRef, holder: "n9", verdict: model.VerdictUnknown, reason: "kured source is stale"}}},
		{name: "kured ghost with a degraded Longhorn volume: no action recommended",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1")), model.VolumeUpserted{Volume: model.Volume{Namespace: "longhorn-system", Name: "pvc-1", Robustness: model.RobustnessDegraded}},
				lockEv(kuredLock(single(ent("n9", h(-time.Hour), 0))))}}},
			want: []want{{ref: kuredRef, holder: "n9", verdict: model.VerdictGhost}}},
		{name: "kured ghost with another node down: no action recommended",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1", notReady(h(-time.Hour)))), lockEv(kuredLock(single(ent("n9", h(-time.Hour), 0))))}}},
			want:  []want{{ref: kuredRef, holder: "n9", verdict: model.VerdictGhost}}},

		// ---------------- fleetlock ----------------
		{name: "fleetlock empty holder is free",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1", machine(mid1))), lockEv(fleet(""))}}},
			want:  []want{{ref: fleetRef, verdict: model.VerdictFree}}},
		{name: "fleetlock holder is the Zincati id of a Ready node: held",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1", machine(mid1))), up(node("n2", machine(mid2))), lockEv(fleet(zid1))}}},
			want:  []want{{ref: fleetRef, holder: zid1, verdict: model.VerdictHeld, nodes: []string{"n1"}, evid: "Zincati id"}}},
		{name: "fleetlock holder id in upper case still maps",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1", machine(mid1))), lockEv(fleet(strings.ToUpper(zid1)))}}},
			want:  []want{{ref: fleetRef, holder: strings.ToUpper(zid1), verdict: model.VerdictHeld, nodes: []string{"n1"}}}},
		{name: "fleetlock two nodes share the machine id: ambiguous",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1", machine(mid1))), up(node("n2", machine(mid1))), lockEv(fleet(zid1))}}},
			want:  []want{{ref: fleetRef, holder: zid1, verdict: model.VerdictAmbiguous, nodes: []string{"n1", "n2"}, reason: "share one machine id"}}},
		{name: "fleetlock holder matches no node's machine id: ghost",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n2", machine(mid2))), up(node("n3", machine(mid3))), lockEv(fleet(zid1))}}},
			want:  []want{{ref: fleetRef, holder: zid1, verdict: model.VerdictGhost, actions: []model.Action{P}}}},
		{name: "fleetlock no match but a node lacks a machine id: unknown",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n2", machine(mid2))), up(node("n3")), lockEv(fleet(zid1))}}},
			want:  []want{{ref: fleetRef, holder: zid1, verdict: model.VerdictUnknown, reason: "no usable machine id"}}},
		{name: "fleetlock holder of unknown form: unknown",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n2", machine(mid2))), lockEv(fleet("some-client"))}}},
			want:  []want{{ref: fleetRef, holder: "some-client", verdict: model.VerdictUnknown, reason: "neither a Zincati"}}},
		{name: "fleetlock holder given as a node name maps to it",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n2", machine(mid2))), lockEv(fleet("n2"))}}},
			want:  []want{{ref: fleetRef, holder: "n2", verdict: model.VerdictHeld, nodes: []string{"n2"}}}},
		{name: "fleetlock orphaned: boot changed after the lease was seen taken",
			steps: []step{
				{at(0), []model.Event{nodesOK(), up(node("n1", machine(mid1))), up(node("n2", machine(mid2))), lockEv(fleet(zid1))}},
				{at(3 * time.Minute), []model.Event{up(node("n1", machine(mid1), boot("n1-b2"), notReady(at(3*time.Minute))))}},
				{at(6 * time.Minute), []model.Event{up(node("n1", machine(mid1), boot("n1-b2"), readySince(at(6*time.Minute))))}},
				{now, nil}},
			want: []want{{ref: fleetRef, holder: zid1, verdict: model.VerdictOrphaned, nodes: []string{"n1"}, actions: []model.Action{R}}}},
		{name: "fleetlock with acquireTime and Ready since after it: orphaned",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1", machine(mid1), readySince(h(-20*time.Minute)), cordoned())),
				lockEv(func() model.LockObject { l := fleet(zid1); fspec(&l).AcquireTime = h(-30 * time.Minute); return l }())}}},
			want: []want{{ref: fleetRef, holder: zid1, verdict: model.VerdictOrphaned, nodes: []string{"n1"}, actions: []model.Action{R}}}},
		{name: "fleetlock nodes not fresh: unknown, never ghost",
			steps: []step{{now, []model.Event{source(model.SourceNodes, model.StatusError), lockEv(fleet(zid1))}}},
			want:  []want{{ref: fleetRef, holder: zid1, verdict: model.VerdictUnknown}}},
		{name: "fleetlock source forbidden: unknown",
			steps: []step{{now, []model.Event{nodesOK(), source(model.SourceFleetlock, model.StatusForbidden), up(node("n2", machine(mid2))), lockEv(fleet(zid1))}}},
			want:  []want{{ref: fleetRef, holder: zid1, verdict: model.VerdictUnknown, reason: "fleetlock source is forbidden"}}},
		{name: "fleetlock holder NotReady: held",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1", machine(mid1), notReady(h(-time.Minute)))), lockEv(fleet(zid1))}}},
			want:  []want{{ref: fleetRef, holder: zid1, verdict: model.VerdictHeld, nodes: []string{"n1"}, reason: "NotReady"}}},
		{name: "fleetlock node deleted: ghost",
			steps: []step{
				{at(0), []model.Event{nodesOK(), up(node("n1", machine(mid1))), up(node("n2", machine(mid2))), lockEv(fleet(zid1))}},
				{now, []model.Event{gone("n1")}}},
			want: []want{{ref: fleetRef, holder: zid1, verdict: model.VerdictGhost, actions: []model.Action{P}}}},
		{name: "both kinds at once are judged independently",
			steps: []step{{now, []model.Event{nodesOK(), up(node("n1", machine(mid1))), lockEv(fleet("")), lockEv(kuredLock(single(ent("n9", h(-time.Hour), 0))))}}},
			want: []want{
				{ref: fleetRef, verdict: model.VerdictFree},
				{ref: kuredRef, holder: "n9", verdict: model.VerdictGhost, actions: []model.Action{P}}}},
	}
	if len(cases) < 30 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := New(Options{OrphanGrace: tc.grace})
			c := build(e, tc.steps...)
			got := c.LockStatuses()
			n := tc.count
			if n == 0 {
				n = len(tc.want)
			}
			if len(got) != n {
				t.Fatalf("got %d statuses, want %d: %+v", len(got), n, got)
			}
			for _, w := range tc.want {
				s, err := statusForEntry(got, w.ref, w.holder, w.entry)
				if err != nil {
					t.Fatal(err)
				}
				if s.Verdict != w.verdict {
					t.Errorf("%s %q: verdict %s (%s), want %s", w.ref, w.holder, s.Verdict, s.Reason, w.verdict)
				}
				if !slices.Equal(s.HolderNodes, w.nodes) && (w.nodes != nil || len(s.HolderNodes) != 0) {
					t.Errorf("%s %q: holder nodes %v, want %v", w.ref, w.holder, s.HolderNodes, w.nodes)
				}
				if !slices.Equal(s.Actions, w.actions) {
					t.Errorf("%s %q: actions %v, want %v (reason %s)", w.ref, w.holder, s.Actions, w.actions, s.Reason)
				}
				if s.Reason == "" {
					t.Errorf("%s %q: empty reason", w.ref, w.holder)
				}
				if w.reason != "" && !strings.Contains(s.Reason, w.reason) {
					t.Errorf("%s %q: reason %q does not contain %q", w.ref, w.holder, s.Reason, w.reason)
				}
				if w.evid != "" && !hasEvidence(s, w.evid) {
					t.Errorf("%s %q: evidence %v does not contain %q", w.ref, w.holder, s.Evidence, w.evid)
				}
				if s.UID == "" || s.ResourceVersion == "" {
					t.Errorf("%s %q: status lacks UID/resourceVersion", w.ref, w.holder)
				}
			}
		})
	}
}

func hasEvidence(s model.LockStatus, sub string) bool {
	for _, e := range s.Evidence {
		if strings.Contains(e.Value, sub) || strings.Contains(e.Key, sub) {
			return true
		}
	}
	return false
}
