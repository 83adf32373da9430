package memstore

import (
	"cmp"
	"context"
	"iter"
	"slices"
	"time"

	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/internal/driver"
)

// summarize folds the event e, stored with seq at t, into the summaries
// of its run and thread; mu is held.
func (s *Store) summarize(e *driver.Entry, seq uint64, t time.Time) {
	s.sums.Add(e, seq, t)
}

// Runs implements store.Store.
func (s *Store) Runs(ctx context.Context, q store.ListQuery) iter.Seq2[store.Summary, error] {
	return s.list(ctx, q, func() map[string]*store.Summary { return s.sums.Runs })
}

// Threads implements store.Store.
func (s *Store) Threads(ctx context.Context, q store.ListQuery) iter.Seq2[store.Summary, error] {
	return s.list(ctx, q, func() map[string]*store.Summary { return s.sums.Threads })
}

// list copies the selected summaries out under the read lock, newest
// first, and yields them with no lock held.
func (s *Store) list(ctx context.Context, q store.ListQuery, all func() map[string]*store.Summary) iter.Seq2[store.Summary, error] {
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
		for _, sum := range all() {
			if q.Before == 0 || sum.LastSeq < q.Before {
				out = append(out, *sum)
			}
		}
		s.mu.RUnlock()
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
