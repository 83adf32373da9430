package driver

import (
	"cmp"
	"context"
	"errors"
	"iter"
	"slices"
	"time"

	"github.com/clutchprotocol/clutch/store"
)

// Removal (store.Remover). A backend that keeps summaries (store.Lister)
// and removes runs must leave the summaries the projection of the log
// that stays would give. The events of a removed run change more than its
// own summary: a thread that held some of them, and, when a task had
// events in a removed run and in another one, every run and thread
// holding the task's other events (its state is a fold of all of them).
// Refold computes all of these from the events that stay, which the
// backend reads back through its indexes in the removal's transaction.

// Stored is an event as a backend reads it back: its seq, time and entry
// (see EntryOf).
type Stored struct {
	Seq   uint64
	Time  time.Time
	Entry Entry
}

// Refolded is what a removal does to the summaries and task states: the
// new summary of each run and thread it changes, and the new state of
// each task. A nil value means the summary or task state is to be
// deleted (nothing of it stays). The summaries of the removed runs
// themselves are not in Runs: the backend deletes them.
type Refolded struct {
	Runs, Threads map[string]*store.Summary
	Tasks         map[string]*TaskState
}

// Refold returns what removing the events removed does to the summaries.
// read returns, in seq order, the events that stay (none of removed) with
// the given value of an index (RunIndex, ThreadIndex or TaskIndex).
func Refold(removed []Entry, read func(ix Index, value string) ([]Stored, error)) (Refolded, error) {
	out := Refolded{Runs: map[string]*store.Summary{}, Threads: map[string]*store.Summary{}, Tasks: map[string]*TaskState{}}
	byTask := map[string][]Stored{}
	readTask := func(id string) ([]Stored, error) {
		if evs, ok := byTask[id]; ok {
			return evs, nil
		}
		evs, err := read(TaskIndex, id)
		byTask[id] = evs
		return evs, err
	}
	gone := map[string]bool{}
	threads := map[string]bool{}
	var tasks []string
	for i := range removed {
		e := &removed[i]
		gone[e.RunID] = true
		if e.ThreadID != "" {
			threads[e.ThreadID] = true
		}
		if e.TaskID != "" && !slices.Contains(tasks, e.TaskID) {
			tasks = append(tasks, e.TaskID)
		}
	}
	runs := map[string]bool{}
	for _, id := range tasks {
		evs, err := readTask(id)
		if err != nil {
			return Refolded{}, err
		}
		var st TaskState
		known := false
		for j := range evs {
			e := &evs[j].Entry
			if e.RunID != "" && !gone[e.RunID] {
				runs[e.RunID] = true
			}
			if e.ThreadID != "" {
				threads[e.ThreadID] = true
			}
			if NeedsTask(e) {
				if next, changed, _ := TaskStep(e, st, known); changed {
					st, known = next, true
				}
			}
		}
		if known {
			out.Tasks[id] = &st
		} else {
			out.Tasks[id] = nil
		}
	}
	for kind, ids := range [2]map[string]bool{runs, threads} {
		ix, dst := RunIndex, out.Runs
		if kind == 1 {
			ix, dst = ThreadIndex, out.Threads
		}
		for id := range ids {
			evs, err := read(ix, id)
			if err != nil {
				return Refolded{}, err
			}
			if len(evs) == 0 {
				dst[id] = nil
				continue
			}
			sum, err := refold(id, evs, readTask)
			if err != nil {
				return Refolded{}, err
			}
			dst[id] = sum
		}
	}
	return out, nil
}

// Summarize folds the summary of id, a run or thread, from its events
// evs (in seq order), counting each task from all of its events, which
// readTask returns in seq order: the summary the projection of the log
// gives. A backend uses it to tell whether a run has ended before it
// removes it, where it keeps no summaries of its own.
func Summarize(id string, evs []Stored, readTask func(taskID string) ([]Stored, error)) (*store.Summary, error) {
	return refold(id, evs, readTask)
}

// refold folds the summary of id (a run or thread) from its events
// evs, counting each task from all of its events that stay.
func refold(id string, evs []Stored, readTask func(string) ([]Stored, error)) (*store.Summary, error) {
	all := map[uint64]*Stored{}
	mine := map[uint64]bool{}
	for i := range evs {
		all[evs[i].Seq], mine[evs[i].Seq] = &evs[i], true
		if t := evs[i].Entry.TaskID; t != "" {
			tevs, err := readTask(t)
			if err != nil {
				return nil, err
			}
			for j := range tevs {
				if _, ok := all[tevs[j].Seq]; !ok {
					all[tevs[j].Seq] = &tevs[j]
				}
			}
		}
	}
	merged := make([]*Stored, 0, len(all))
	for _, ev := range all {
		merged = append(merged, ev)
	}
	slices.SortFunc(merged, func(a, b *Stored) int { return cmp.Compare(a.Seq, b.Seq) })
	states := map[string]TaskState{}
	sum := &store.Summary{}
	for _, ev := range merged {
		e := &ev.Entry
		var d Delta
		if NeedsTask(e) {
			prev, known := states[e.TaskID]
			var next TaskState
			var changed bool
			if next, changed, d = TaskStep(e, prev, known); changed {
				states[e.TaskID] = next
			}
		}
		if mine[ev.Seq] {
			Fold(sum, id, e, ev.Seq, ev.Time, d)
		}
	}
	return sum, nil
}

// Gone wraps evs, a Follow of q: when q.RunID names a run that is gone —
// tombstone returns its tombstone and true when it was removed and has had
// no events appended since — the loop yields one *store.RemovedError and
// nothing else; when tombstone fails, its error (but for a context error:
// then evs runs, and ends as it does for that context). The tombstone is
// looked up when the loop starts, since a follow of a run that is gone
// would otherwise wait for events that never come. A Read uses GoneRead.
func Gone(q store.Query, tombstone func(runID string) (store.Tombstone, bool, error), evs iter.Seq2[store.Event, error]) iter.Seq2[store.Event, error] {
	if q.RunID == "" {
		return evs
	}
	return func(yield func(store.Event, error) bool) {
		ts, ok, err := tombstone(q.RunID)
		if err == nil && ok {
			err = &store.RemovedError{Tombstone: ts}
		}
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			yield(store.Event{}, err)
			return
		}
		// A lookup cut short by the loop's context: evs ends as its
		// contract says for that context (a Follow without an error).
		evs(yield)
	}
}

// GoneRead is Gone for evs, a Read of q: the tombstone is looked up only
// when the read has yielded nothing (a run with events is not gone), so a
// read of a run that exists costs no lookup.
func GoneRead(q store.Query, tombstone func(runID string) (store.Tombstone, bool, error), evs iter.Seq2[store.Event, error]) iter.Seq2[store.Event, error] {
	if q.RunID == "" {
		return evs
	}
	return func(yield func(store.Event, error) bool) {
		seen := false
		for ev, err := range evs {
			if err != nil {
				yield(ev, err)
				return
			}
			seen = true
			if !yield(ev, nil) {
				return
			}
		}
		if seen {
			return
		}
		ts, ok, err := tombstone(q.RunID)
		switch {
		case err != nil:
			yield(store.Event{}, err)
		case ok:
			yield(store.Event{}, &store.RemovedError{Tombstone: ts})
		}
	}
}
