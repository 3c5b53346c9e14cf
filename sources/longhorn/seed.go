package longhorn

import (
	"context"

	"k8s.io/client-go/tools/cache"

	"github.com/rebootwatch/rebootwatch/model"
)

// This file is the seed of the informer (Options.Seed, issue 35 §1): the
// one-shot report's read of the volumes (listREST: longhorn-system's as a
// Table without objects, the other namespaces' as JSON, then the few
// unhealthy ones fetched whole), made at the same time as the informer
// starts. The apiserver serves that read several times faster than the
// informer's JSON list of every volume (docs/performance.md), so the
// picture is complete at the snapshot's speed; the informer's list, when
// it arrives, overwrites it volume by volume.
//
// The rules, all decided under the source's lock (mu), against the
// running informer (run):
//   - only a complete, successful read is sent (runInformer);
//   - it is dropped once the informer delivered anything (an upsert or a
//     delete): what the informer says is never older than the seed, whose
//     read began with it;
//   - it is dropped once the informer's registration synced (closeSeed),
//     and at that sync every volume the seed sent that the informer's
//     store does not hold is deleted: the store is the truth from then on
//     (a volume deleted between the seed's read and the informer's list
//     goes).
// Health and freshness: the seed may make the source ok (runInformer), but
// the stall audit and the staleness watch start from the informer's sync
// only, and a seed's ok does not stop the source from saying that the
// informer has not synced within the request timeout.

// sendSeed sends vols, the seed of the informer of generation gen, as one
// batch and remembers their keys, unless that informer is no longer the
// running one, delivered anything, or synced (then it reports false).
func (s *Source) sendSeed(ctx context.Context, gen int, vols []model.Volume) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if gen != s.run || s.informed || s.seedShut || ctx.Err() != nil {
		s.log.Debug("longhorn seed dropped: the informer spoke first, or its run ended", "volumes", len(vols))
		return false
	}
	s.seeded = make(map[string]bool, len(vols))
	batch := make(model.Batch, 0, len(vols))
	for _, v := range vols {
		k := v.Key()
		s.seeded[k] = true
		s.known[k] = true
		batch = append(batch, model.VolumeUpserted{Volume: v})
	}
	if len(batch) > 0 {
		s.sink(batch)
	}
	s.log.Debug("longhorn seed sent", "volumes", len(vols))
	return true
}

// closeSeed is called when the registration of the informer of generation
// gen has synced: no seed is sent from now on, and each volume the seed
// sent that the informer's store does not hold is deleted from the model.
func (s *Source) closeSeed(gen int, store cache.Store) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if gen != s.run {
		return
	}
	s.seedShut = true
	var gone model.Batch
	for k := range s.seeded {
		if _, ok, err := store.GetByKey(k); (err == nil && ok) || !s.known[k] {
			continue // the informer holds it, or already deleted it
		}
		delete(s.known, k)
		ns, name := splitKey(k)
		gone = append(gone, model.VolumeDeleted{Namespace: ns, Name: name})
	}
	s.seeded = nil
	if len(gone) > 0 {
		s.log.Debug("longhorn seed: volumes the informer does not hold deleted", "volumes", len(gone))
		s.sink(gone)
	}
}
