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

// The kinds of summary, the indexes of Store.sums.
const (
	runs = iota
	threads
)

// summarize folds e, stored with seq at t, into the summaries of its run
// and its thread, by the rules every backend shares (driver.TaskStep,
// driver.Fold); mu is held for writing.
func (s *Store) summarize(e *driver.Entry, seq uint64, t time.Time) {
	var d driver.Delta
	if driver.NeedsTask(e) {
		prev, known := s.tasks[e.TaskID]
		var next driver.TaskState
		var changed bool
		if next, changed, d = driver.TaskStep(e, prev, known); changed {
			s.tasks[e.TaskID] = next
		}
	}
	for kind, id := range [...]string{runs: e.RunID, threads: e.ThreadID} {
		if id == "" {
			continue
		}
		sum := s.sums[kind][id]
		if sum == nil {
			sum = new(store.Summary)
			s.sums[kind][id] = sum
		}
		driver.Fold(sum, id, e, seq, t, d)
	}
}

// Runs implements store.Lister.
func (s *Store) Runs(ctx context.Context, q store.ListQuery) iter.Seq2[store.Summary, error] {
	return s.list(ctx, q, runs)
}

// Threads implements store.Lister.
func (s *Store) Threads(ctx context.Context, q store.ListQuery) iter.Seq2[store.Summary, error] {
	return s.list(ctx, q, threads)
}

// list copies the summaries of kind that q selects under the read lock,
// and sorts and yields them, newest first, with no lock held.
func (s *Store) list(ctx context.Context, q store.ListQuery, kind int) iter.Seq2[store.Summary, error] {
	return func(yield func(store.Summary, error) bool) {
		if err := q.Validate(); err != nil {
			yield(store.Summary{}, err)
			return
		}
		if err := ctx.Err(); err != nil {
			yield(store.Summary{}, err)
			return
		}
		s.mu.RLock()
		if s.closed {
			s.mu.RUnlock()
			yield(store.Summary{}, store.ErrClosed)
			return
		}
		var out []store.Summary
		for _, sum := range s.sums[kind] {
			if q.Before == 0 || sum.LastSeq < q.Before {
				out = append(out, *sum)
			}
		}
		s.mu.RUnlock()
		// No two summaries of a kind share a LastSeq: an event has one run
		// and one thread.
		slices.SortFunc(out, func(a, b store.Summary) int { return cmp.Compare(b.LastSeq, a.LastSeq) })
		if q.Limit > 0 && len(out) > q.Limit {
			out = out[:q.Limit]
		}
		for _, sum := range out {
			if !yield(sum, nil) {
				return
			}
		}
	}
}
