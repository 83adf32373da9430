package memstore

import (
	"cmp"
	"context"
	"iter"
	"slices"
	"time"

	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/driver"
)

var _ store.Remover = (*Store)(nil)

// RemoveRuns implements store.Remover, under the store's lock: a removed
// event keeps its slot (so seqs are not reused) but is skipped by reads,
// and its id, idempotency key and index entries are dropped. The runs'
// summaries are folded from the log to tell whether they have ended.
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
	sums, err := s.summaries(runs)
	if err != nil {
		return nil, err
	}
	for _, run := range runs {
		sum, ok := sums[run]
		if !ok {
			if _, ok := s.graves[run]; ok {
				continue // removed before, and not appended to since
			}
			return nil, &store.RunNotFoundError{RunID: run}
		}
		if err := store.Removable(*sum); err != nil {
			return nil, err
		}
	}
	out := make([]store.Tombstone, len(runs))
	for i, run := range runs {
		if _, ok := sums[run]; ok {
			out[i] = s.remove(run, why, now)
		} else {
			out[i] = s.graves[run]
		}
	}
	return out, nil
}

// summaries folds the summaries of runs from the log, as store.Runs
// would; mu is held.
func (s *Store) summaries(runs []string) (map[string]*store.Summary, error) {
	sums := map[string]*store.Summary{}
	for _, run := range runs {
		if len(s.index[driver.RunIndex][run]) > 0 {
			sums[run] = &store.Summary{}
		}
	}
	tasks := map[string]driver.TaskState{}
	for i := range s.events {
		r := &s.events[i]
		if r.gone {
			continue
		}
		m, err := s.event(uint64(i + 1)).Message()
		if err != nil {
			return nil, err
		}
		e := driver.EntryOf(m, r.raw)
		var d driver.Delta
		if driver.NeedsTask(&e) {
			prev, known := tasks[e.TaskID]
			next, changed, delta := driver.TaskStep(&e, prev, known)
			if changed {
				tasks[e.TaskID] = next
			}
			d = delta
		}
		if sum := sums[e.RunID]; sum != nil {
			driver.Fold(sum, e.RunID, &e, uint64(i+1), r.time, d)
		}
	}
	return sums, nil
}

// remove removes the events of run, which has some, and returns its
// tombstone; mu is held for writing.
func (s *Store) remove(run string, why store.Removal, now time.Time) store.Tombstone {
	seqs := s.index[driver.RunIndex][run]
	ts := store.Tombstone{
		RunID: run, Removed: now, Policy: why.Policy, Note: why.Note, Archive: why.Archive,
		Events: len(seqs), FirstSeq: seqs[0], LastSeq: seqs[len(seqs)-1],
	}
	drop := map[driver.Index]map[string]bool{}
	for _, seq := range seqs {
		r := &s.events[seq-1]
		ts.Bytes += int64(len(r.raw))
		m, err := s.event(seq).Message()
		if err == nil {
			delete(s.byID, m.ID)
			if m.IdempotencyKey != "" {
				delete(s.byIdem, idemKey{m.RunID, m.IdempotencyKey})
			}
		}
		for ix, value := range [...]string{driver.TaskIndex: r.task, driver.ThreadIndex: r.thread, driver.AgentIndex: r.agent} {
			if value != "" {
				if drop[driver.Index(ix)] == nil {
					drop[driver.Index(ix)] = map[string]bool{}
				}
				drop[driver.Index(ix)][value] = true
			}
		}
		r.gone, r.raw = true, nil
	}
	delete(s.index[driver.RunIndex], run)
	for ix, values := range drop {
		for value := range values {
			left := slices.DeleteFunc(s.index[ix][value], func(seq uint64) bool { return s.events[seq-1].gone })
			if len(left) == 0 {
				delete(s.index[ix], value)
			} else {
				s.index[ix][value] = left
			}
		}
	}
	if s.graves == nil {
		s.graves = map[string]store.Tombstone{}
	}
	s.graves[run] = ts
	return ts
}

// Tombstone implements store.Remover.
func (s *Store) Tombstone(ctx context.Context, runID string) (store.Tombstone, error) {
	if err := ctx.Err(); err != nil {
		return store.Tombstone{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.Tombstone{}, store.ErrClosed
	}
	ts, ok := s.graves[runID]
	if !ok {
		return store.Tombstone{}, &store.RunNotFoundError{RunID: runID}
	}
	return ts, nil
}

// tombstone returns the tombstone of runID, and whether the run is gone:
// removed, and not appended to since (driver.Gone).
func (s *Store) tombstone(runID string) (store.Tombstone, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.Tombstone{}, false, store.ErrClosed
	}
	ts, ok := s.graves[runID]
	return ts, ok && len(s.index[driver.RunIndex][runID]) == 0, nil
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
