package memstore

import (
	"cmp"
	"context"
	"iter"
	"slices"

	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/driver"
)

var _ store.Remover = (*Store)(nil)

// RemoveRuns implements store.Remover, under the store's lock, the plain
// way: each run's summary is folded from its events (driver.Summarize) to
// tell whether it has ended; a removed event keeps its slot, so seqs are
// not reused, but is skipped by reads, and its dedup keys are dropped.
func (s *Store) RemoveRuns(ctx context.Context, runs []string, why store.Removal) ([]store.Tombstone, error) {
	runs, err := store.CheckRemoval(runs)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(runs) == 0 {
		return nil, nil
	}
	now := s.opts.Clock().UTC()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, store.ErrClosed
	}
	for _, run := range runs {
		evs, err := s.stored(func(r *record) bool { return r.run == run })
		if err != nil {
			return nil, err
		}
		if len(evs) == 0 {
			if _, ok := s.graves[run]; ok {
				continue // removed before, and not appended to since
			}
			return nil, &store.RunNotFoundError{RunID: run}
		}
		sum, err := driver.Summarize(run, evs, func(task string) ([]driver.Stored, error) {
			return s.stored(func(r *record) bool { return r.task == task })
		})
		if err != nil {
			return nil, err
		}
		if err := why.Allows(*sum); err != nil {
			return nil, err
		}
	}
	if s.graves == nil {
		s.graves = map[string]store.Tombstone{}
	}
	out := make([]store.Tombstone, len(runs))
	for i, run := range runs {
		seqs := s.seqsOf(run)
		if len(seqs) == 0 {
			out[i] = s.graves[run]
			continue
		}
		ts := store.Tombstone{RunID: run, Removed: now, Policy: why.Policy, Note: why.Note, Archive: why.Archive,
			Events: len(seqs), FirstSeq: seqs[0], LastSeq: seqs[len(seqs)-1]}
		for _, seq := range seqs {
			r := &s.events[seq-1]
			ts.Bytes += int64(len(r.raw))
			r.gone, r.raw = true, nil
			delete(s.byID, r.id) // a duplicate id is never stored: the id is this event's
			if r.idem != "" {
				delete(s.byIdem, idemKey{r.run, r.idem}) // so is a (run, key) pair
			}
		}
		s.graves[run], out[i] = ts, ts
	}
	return out, nil
}

// seqsOf returns the seqs of run's stored events, ascending; mu is held.
func (s *Store) seqsOf(run string) []uint64 {
	var seqs []uint64
	for i := range s.events {
		if r := &s.events[i]; !r.gone && r.run == run {
			seqs = append(seqs, uint64(i+1))
		}
	}
	return seqs
}

// stored returns the stored events that match, in seq order, as
// driver.Summarize reads them; mu is held.
func (s *Store) stored(match func(*record) bool) ([]driver.Stored, error) {
	var out []driver.Stored
	for i := range s.events {
		if r := &s.events[i]; r.gone || !match(r) {
			continue
		}
		ev := s.event(uint64(i + 1))
		m, err := ev.Message()
		if err != nil {
			return nil, err
		}
		out = append(out, driver.Stored{Seq: ev.Seq, Time: ev.Time, Entry: driver.EntryOf(m, ev.Raw)})
	}
	return out, nil
}

// Tombstone implements store.Remover.
func (s *Store) Tombstone(ctx context.Context, runID string) (store.Tombstone, error) {
	if err := ctx.Err(); err != nil {
		return store.Tombstone{}, err
	}
	ts, _, err := s.tombstone(runID)
	if err == nil && ts.RunID == "" {
		err = &store.RunNotFoundError{RunID: runID}
	}
	return ts, err
}

// tombstone returns the tombstone of runID (zero when there is none), and
// whether the run is gone: removed, and not appended to since
// (driver.Gone).
func (s *Store) tombstone(runID string) (store.Tombstone, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.Tombstone{}, false, store.ErrClosed
	}
	ts, ok := s.graves[runID]
	return ts, ok && len(s.seqsOf(runID)) == 0, nil
}

// Tombstones implements store.Remover: a copy of the page, taken under
// the read lock.
func (s *Store) Tombstones(ctx context.Context, q store.ListQuery) iter.Seq2[store.Tombstone, error] {
	return func(yield func(store.Tombstone, error) bool) {
		if err := q.Validate(); err != nil {
			yield(store.Tombstone{}, err)
			return
		}
		if err := ctx.Err(); err != nil {
			yield(store.Tombstone{}, err)
			return
		}
		s.mu.RLock()
		closed := s.closed
		var page []store.Tombstone
		for _, ts := range s.graves {
			if q.Before == 0 || ts.LastSeq < q.Before {
				page = append(page, ts)
			}
		}
		s.mu.RUnlock()
		if closed {
			yield(store.Tombstone{}, store.ErrClosed)
			return
		}
		slices.SortFunc(page, func(a, b store.Tombstone) int { return cmp.Compare(b.LastSeq, a.LastSeq) })
		if q.Limit > 0 && len(page) > q.Limit {
			page = page[:q.Limit]
		}
		for _, ts := range page {
			if !yield(ts, nil) {
				return
			}
		}
	}
}
