package store

import (
	"cmp"
	"context"
	"iter"
	"slices"

	"github.com/clutchprotocol/clutch/store/internal/fold"
)

// Lister is the upgrade interface of a Store that keeps its own run and
// thread summaries, up to date in the same transaction as each append, so
// that listing them costs a page of summaries rather than a read of the
// log. [Runs] and [Threads] use it when the store has it; the in-tree
// durable stores and memstore do. A backend that implements it must list
// exactly what the projection of its log gives (storetest checks that).
type Lister interface {
	// Runs returns the summary of every run (events with a run_id),
	// newest first: by LastSeq, descending. Like Read it yields a page at
	// a time and holds nothing between pages; a run that gets new events
	// while the loop runs moves to the front and may be skipped by later
	// pages (it is newer than the page's cursor). See [Summary] for the
	// counts and the status. A malformed q yields one ErrInvalidQuery.
	Runs(ctx context.Context, q ListQuery) iter.Seq2[Summary, error]

	// Threads is Runs for threads (events with a thread_id).
	Threads(ctx context.Context, q ListQuery) iter.Seq2[Summary, error]
}

// Runs lists the run summaries of s, newest first, as [Lister.Runs]
// describes. When s implements Lister (directly, or through a chain of
// wrappers that each have a method Unwrap() Store) it is the store's own
// listing. Otherwise Runs projects the summaries from the log: it reads
// every event of s, once per call, however small q.Limit is — correct,
// but O(events) in time and O(runs) in memory, which suits tests and small
// stores; a store meant to serve a UI implements Lister.
func Runs(ctx context.Context, s Store, q ListQuery) iter.Seq2[Summary, error] {
	if l := listerOf(s); l != nil {
		return l.Runs(ctx, q)
	}
	return projection(ctx, s, q, false)
}

// Threads is [Runs] for threads (events with a thread_id).
func Threads(ctx context.Context, s Store, q ListQuery) iter.Seq2[Summary, error] {
	if l := listerOf(s); l != nil {
		return l.Threads(ctx, q)
	}
	return projection(ctx, s, q, true)
}

// listerOf returns the Lister of s or of a store it wraps, or nil.
func listerOf(s Store) Lister {
	l, _ := upgrade[Lister](s)
	return l
}

// upgrade returns s, or the first store down its chain of wrappers (each
// with a method Unwrap() Store), that implements T.
func upgrade[T any](s Store) (T, bool) {
	for s != nil {
		if t, ok := s.(T); ok {
			return t, true
		}
		u, ok := s.(interface{ Unwrap() Store })
		if !ok {
			break
		}
		s = u.Unwrap()
	}
	var zero T
	return zero, false
}

// projection lists the run summaries (threads false) or the thread
// summaries (threads true) of s by folding its log in one pass, as it is
// when the loop starts; it holds every summary until the loop ends.
func projection(ctx context.Context, s Store, q ListQuery, threads bool) iter.Seq2[Summary, error] {
	return func(yield func(Summary, error) bool) {
		if err := q.Validate(); err != nil {
			yield(Summary{}, err)
			return
		}
		sums := map[string]*Summary{}
		tasks := map[string]fold.TaskState{}
		for ev, err := range s.Read(ctx, Query{}) {
			if err == nil {
				err = foldEvent(ev, threads, sums, tasks)
			}
			if err != nil {
				yield(Summary{}, err)
				return
			}
		}
		out := make([]*Summary, 0, len(sums))
		for _, sum := range sums {
			if q.Before == 0 || sum.LastSeq < q.Before {
				out = append(out, sum)
			}
		}
		slices.SortFunc(out, func(a, b *Summary) int { return cmp.Compare(b.LastSeq, a.LastSeq) })
		if q.Limit > 0 && len(out) > q.Limit {
			out = out[:q.Limit]
		}
		for _, sum := range out {
			fold.Listed((*fold.Summary)(sum))
			if !yield(*sum, nil) {
				return
			}
		}
	}
}

// foldEvent folds ev into sums, keeping the task states in tasks, as a
// backend does with store/driver's TaskStep and Fold.
func foldEvent(ev Event, threads bool, sums map[string]*Summary, tasks map[string]fold.TaskState) error {
	m, err := ev.Message()
	if err != nil {
		return err
	}
	e := fold.EventOf(m)
	e.Size = len(ev.Raw)
	var d fold.Delta
	if fold.NeedsTask(m.TaskID, m.Type, m.Attempt, e.Ends) {
		prev, known := tasks[m.TaskID]
		next, changed, delta := fold.TaskStep(m.Type, m.Attempt, e.Ends, prev, known)
		if changed {
			tasks[m.TaskID] = next
		}
		d = delta
	}
	id := m.RunID
	if threads {
		id = m.ThreadID
	}
	if id == "" {
		return nil
	}
	sum := sums[id]
	if sum == nil {
		sum = &Summary{}
		sums[id] = sum
	}
	fold.Fold((*fold.Summary)(sum), id, e, ev.Seq, ev.Time, d)
	return nil
}
