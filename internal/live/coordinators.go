package live

import (
	"context"
	"fmt"
	"time"

	"github.com/rebootwatch/rebootwatch/internal/coord"
	"github.com/rebootwatch/rebootwatch/internal/coord/kinds"
	"github.com/rebootwatch/rebootwatch/internal/lock"
	"github.com/rebootwatch/rebootwatch/model"
	"github.com/rebootwatch/rebootwatch/sources/kube"
)

// defaultCoordinatorInterval is how often a dashboard reads the
// coordinator kinds again; the demo, whose clock runs faster, reads them
// every demoCoordinatorInterval.
const (
	defaultCoordinatorInterval = 10 * time.Second
	demoCoordinatorInterval    = time.Second
)

// leftCordonedNow reads every coordinator kind now (bounded by ctx) and
// returns the nodes they left cordoned: the fresh read an uncordon resting
// on their reading makes before it writes (lock.FreshReaders.LeftCordoned).
// A kind installed but not judged is an error: its answer is unknown.
func (s *Session) leftCordonedNow(ctx context.Context) (lock.Cordons, error) {
	rs := s.opts.Kinds.ReadAll(ctx, s.coordClients(), s.Clock())
	for _, r := range rs {
		if r.Installed && r.Unknown != "" {
			return lock.Cordons{}, fmt.Errorf("%s: %s", r.Kind, r.Unknown)
		}
	}
	return cordons(rs), nil
}

func (s *Session) coordClients() coord.Clients {
	return coord.Clients{Kube: s.Client, Dynamic: s.Dynamic, Names: s.opts.CoordinatorNames, Drain: kube.DrainRead(s.Client)}
}

// cordons are the nodes the installed kinds allow the uncordon of, with
// the reason of the blocker that says so, and those whose cordon a kind
// says is not its own, with whose it is.
func cordons(rs []kinds.Result) lock.Cordons {
	left, not, kind := map[string]string{}, map[string]string{}, map[string]model.LockKind{}
	for _, r := range rs {
		if !r.Installed {
			continue
		}
		for n, why := range r.NotOwned {
			not[n] = string(r.Kind) + ": " + why
		}
		for _, n := range r.Uncordon {
			why := ""
			for _, b := range r.Blockers {
				if b.Node == n && (why == "" || b.Action == model.ActionUncordon) {
					why = b.Reason
				}
			}
			left[n] = string(r.Kind) + ": " + why
			kind[n] = r.Kind
		}
	}
	return lock.Cordons{Left: left, NotOwned: not, Kinds: kind}
}

// readCoordinators reads every coordinator kind once (bounded by the
// request timeout: a read that does not answer makes the kind unknown,
// never "none"), keeps the result for Explain and tells the engine which
// nodes they left cordoned. It runs outside the model's owner: Explain
// only takes the last result under coordMu.
func (s *Session) readCoordinators(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, s.opts.RequestTimeout)
	defer cancel()
	at := s.Clock()
	rs := s.opts.Kinds.ReadAll(rctx, s.coordClients(), at)
	if ctx.Err() != nil {
		return // the session closed mid-read: keep the last reading
	}
	cs := cordons(rs)
	s.coordMu.Lock()
	s.coordinators, s.coordinatorsAt = rs, at
	s.coordMu.Unlock()
	s.engine.SetCordons(cs)
}

// watchCoordinators reads the coordinator kinds again every interval
// until the session closes, and sends each kind's health as a source and
// its slots and nodes' cycle (kinds.Result.Cycle) to the model.
func (s *Session) watchCoordinators(ctx context.Context) {
	every := s.opts.CoordinatorInterval
	if every <= 0 {
		every = defaultCoordinatorInterval
		if s.Demo {
			every = demoCoordinatorInterval
		}
	}
	sink := s.sink(ctx)
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.readCoordinators(ctx)
				// Each kind's health as a source, to the model's owner.
				rs, at := s.coordinatorsRead()
				for _, r := range rs {
					sink(model.SourceChanged{Health: r.Health(at)})
					sink(r.Cycle())
				}
			}
		}
	}()
}

// coordinatorBlockers are the blockers of the coordinator kinds as last
// read (Explain: no I/O).
func (s *Session) coordinatorBlockers() []model.Blocker {
	s.coordMu.Lock()
	defer s.coordMu.Unlock()
	return kinds.Blockers(s.coordinators)
}

// coordinatorsRead are the coordinator kinds as last read, and when (nil
// when they are not read: Options.Kinds).
func (s *Session) coordinatorsRead() ([]kinds.Result, time.Time) {
	s.coordMu.Lock()
	defer s.coordMu.Unlock()
	return append([]kinds.Result(nil), s.coordinators...), s.coordinatorsAt
}
