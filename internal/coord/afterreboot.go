package coord

import (
	"time"

	"github.com/rebootwatch/rebootwatch/model"
)

// AfterReboot is a lock-object kind whose coordinator keeps acting on its
// holder after the holder's reboot, on its own clock, before it releases
// the lock (kured: its pod's first tick uncordons the node, then it waits
// --lock-release-delay and releases). The lock engine judges every kind's
// rebooted, Ready holder the same way; for a driver that is an AfterReboot
// it asks, generically, the two questions only the coordinator's own
// sequence answers. A kind without one (fleetlock: nothing happens after
// the reboot until the holder itself unlocks) is judged on the engine's
// rules alone. The answers are pure functions of the holder: no I/O.
type AfterReboot interface {
	// Marks are node annotations the coordinator removes during its
	// sequence: the engine records when it saw each removed
	// (Holder.MarksRemoved).
	Marks() []string
	// StillCordoned judges a rebooted, Ready holder the coordinator has
	// not uncordoned yet (and whose entry does not leave it cordoned):
	// recovering while the coordinator may still finish, a stall past that.
	StillCordoned(h Holder) Judgement
	// ReleasesBy says whether the coordinator may still release a
	// rebooted, Ready, schedulable holder's lock on its own, until when,
	// and on what evidence.
	ReleasesBy(h Holder) Release
}

// Holder is a rebooted, Ready lock holder as the engine judged it, and
// what the engine saw happen to its node.
type Holder struct {
	Cluster *model.Cluster
	Ref     model.LockRef
	Node    *model.Node
	Entry   *Entry
	// RebootWhy says how the reboot was seen; RebootedAt is when.
	RebootWhy                   string
	RebootedAt, ReadySince, Now time.Time
	OrphanGrace                 time.Duration
	// Uncordoned is when the engine saw the node turn schedulable (zero:
	// not seen since it was last cordoned); MarksRemoved is when it saw
	// each of Marks removed from the node (absent: not seen).
	Uncordoned   time.Time
	MarksRemoved map[string]time.Time
}

// Judgement is a verdict with its reason and evidence.
type Judgement struct {
	Verdict  model.Verdict
	Reason   string
	Evidence []model.Evidence
	// Stalled: the coordinator will not finish on its own; the release
	// also uncordons the node, as the coordinator would have.
	Stalled bool
}

// Release is whether the coordinator may still release on its own.
type Release struct {
	// Evidence is what was read, said either way.
	Evidence []model.Evidence
	// Pending: it may, until By; Reason says so for a held verdict.
	Pending bool
	By      time.Time
	Reason  string
	// Stalled: it provably will not (the coordinator's own process on the
	// holder was read and is not running past its bound): the lock is
	// orphaned before the orphan grace, for StallReason, on StallEvidence.
	Stalled       bool
	StallReason   string
	StallEvidence []model.Evidence
}
