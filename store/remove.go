package store

import (
	"context"
	"iter"
	"strconv"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
)

// Remover is the upgrade interface of a Store that can remove whole runs
// that have ended, leaving a [Tombstone] for each (docs/protocol.md §8.3):
// the store side of retention. A policy (by age, size or count) chooses
// the runs and may archive them first; Remover only removes, and proves it.
// [RemoverOf] finds it; the in-tree stores implement it, and storetest
// checks every store that does.
//
// What a removal does, in one atomic step (one transaction where the
// store has them):
//
//   - every event whose run_id is one of the runs goes, with its index
//     entries and its dedup entries: its id and its (run_id,
//     idempotency_key) are forgotten, so the dedup window of an event
//     ends when its run is removed. Events without a run_id (the
//     registry's) are never removed;
//   - the run's summary goes, so [Runs] no longer lists it, and each
//     thread that held its events is summarized again from the events
//     that stay (a thread left with none goes), as is any run or thread
//     holding events of a task that also had events in a removed run
//     (the summaries are those the projection of the log that stays
//     gives);
//   - a Tombstone per run records what went, when (the store's clock)
//     and why.
//
// Seqs are never reused: LastSeq stays the seq of the newest event ever
// appended, and the next append gets the one after it, so Read and Follow
// see a gap where the run was and step over it (Event.Seq increases,
// no longer by exactly one). Read of Query{RunID: r} for a removed run r
// yields one [*RemovedError] and nothing else; Get of a removed event's id
// gives ErrNotFound (ids are not kept); a Follow that was reading the run
// when it went sees no more of its events.
//
// The dedup window of an event ends with its run's removal: a message of
// a removed run appended again is stored again, with a new seq, and the
// run has events again. Its tombstone stays (Tombstone, Tombstones), reads
// of it return its new events, and removing it again removes those and
// replaces the tombstone with one of that removal.
type Remover interface {
	// RemoveRuns removes the runs and returns their tombstones, one per
	// distinct run, in the order of runs. Only a run that has ended may
	// go: its summary's Status is neither StatusRunning nor StatusActive
	// and its Waiting is 0, and, when why.Through is set, it has no event
	// past Through ([Removal.Allows]). For any other run the call fails
	// with a [*RunActiveError] naming it and nothing is removed; for a run with
	// no events and no tombstone with a [*RunNotFoundError]; an empty
	// run id gives ErrInvalidQuery. A run removed before, and not appended
	// to since, is not an error: its tombstone, as it was, is returned (the
	// call is idempotent).
	// RemoveRuns with no runs returns (nil, nil).
	RemoveRuns(ctx context.Context, runs []string, why Removal) ([]Tombstone, error)

	// Tombstone returns the tombstone of a removed run, or a
	// *RunNotFoundError.
	Tombstone(ctx context.Context, runID string) (Tombstone, error)

	// Tombstones lists the tombstones newest first, by the LastSeq of the
	// removed run, descending, paged like [Runs] (ListQuery.Before is the
	// LastSeq of the last tombstone of a page). A malformed q yields one
	// ErrInvalidQuery.
	Tombstones(ctx context.Context, q ListQuery) iter.Seq2[Tombstone, error]
}

// Removal says who removes runs and why, for their tombstones.
type Removal struct {
	// Policy names the rule that chose the runs, e.g. "max_age=720h" or
	// "manual".
	Policy string
	// Note is free text for people, e.g. who asked.
	Note string
	// Archive names where the runs were archived before removal (a file,
	// a URL); "" when they were not.
	Archive string
	// Through, when not 0, is the store's LastSeq when the caller chose
	// the runs (before it listed or archived them): a run with an event
	// past it has changed since, and the call refuses it with a
	// *RunActiveError, as it does a run that has not ended, so that an
	// event appended after an archive was written never goes with a run
	// the archive is said to hold. 0 removes each run as it is.
	Through uint64
}

// Tombstone records the removal of one run.
type Tombstone struct {
	RunID   string    `json:"run_id"`
	Removed time.Time `json:"removed"` // from the store's clock, UTC
	Policy  string    `json:"policy,omitempty"`
	Note    string    `json:"note,omitempty"`
	Archive string    `json:"archive,omitempty"`
	// Events counts the events removed; FirstSeq and LastSeq are the
	// seqs of the first and the last of them.
	Events   int    `json:"events"`
	FirstSeq uint64 `json:"first_seq"`
	LastSeq  uint64 `json:"last_seq"`
	// Bytes is the size of the removed events' messages (Event.Raw).
	Bytes int64 `json:"bytes"`
}

// RemoverOf returns the Remover of s, or of a store it wraps (through a
// chain of wrappers that each have a method Unwrap() Store), or nil when
// there is none.
func RemoverOf(s Store) Remover {
	r, _ := upgrade[Remover](s)
	return r
}

// RunActiveError reports a run that RemoveRuns refused because it has not
// ended, or has changed since its caller chose it (Removal.Through). It
// matches ErrRunActive and protocol.CodeConflict.
type RunActiveError struct {
	RunID   string
	Status  string // the run's Summary.Status
	Waiting int    // its tasks waiting for an answer
	// LastSeq, when not 0, is the seq of the run's last event, past the
	// Through of the removal that refused it.
	LastSeq, Through uint64
}

// Error names the run and why it may not go.
func (e *RunActiveError) Error() string {
	if e.LastSeq != 0 {
		return "store: run " + strconv.Quote(e.RunID) + " has an event (seq " + strconv.FormatUint(e.LastSeq, 10) +
			") past the seq " + strconv.FormatUint(e.Through, 10) + " it was chosen at: not removed"
	}
	s := "store: run " + strconv.Quote(e.RunID) + " has not ended (status " + e.Status
	if e.Waiting > 0 {
		s += ", " + strconv.Itoa(e.Waiting) + " task(s) waiting for an answer"
	}
	return s + "): not removed"
}

// Is matches ErrRunActive and protocol.CodeConflict.
func (e *RunActiveError) Is(target error) bool {
	return target == ErrRunActive || target == protocol.CodeConflict
}

// ClutchCode returns protocol.CodeConflict, for protocol.CodeOf.
func (e *RunActiveError) ClutchCode() protocol.Code { return protocol.CodeConflict }

// RunNotFoundError reports a run that has neither events nor a tombstone.
// It matches ErrNotFound.
type RunNotFoundError struct{ RunID string }

// Error names the run.
func (e *RunNotFoundError) Error() string {
	return "store: run " + strconv.Quote(e.RunID) + " not found"
}

// Is matches ErrNotFound and protocol.CodeNotFound.
func (e *RunNotFoundError) Is(target error) bool {
	return target == ErrNotFound || target == protocol.CodeNotFound
}

// ClutchCode returns protocol.CodeNotFound, for protocol.CodeOf.
func (e *RunNotFoundError) ClutchCode() protocol.Code { return protocol.CodeNotFound }

// RemovedError is what a read of a removed run yields: its tombstone. It
// matches ErrRemoved and protocol.CodeNotFound (not ErrNotFound: the run
// existed, and the tombstone says what became of it).
type RemovedError struct{ Tombstone Tombstone }

// Error names the run, when it was removed and by which policy.
func (e *RemovedError) Error() string {
	return "store: run " + strconv.Quote(e.Tombstone.RunID) + " " + e.Tombstone.Describe()
}

// Is matches ErrRemoved and protocol.CodeNotFound.
func (e *RemovedError) Is(target error) bool {
	return target == ErrRemoved || target == protocol.CodeNotFound
}

// ClutchCode returns protocol.CodeNotFound, for protocol.CodeOf.
func (e *RemovedError) ClutchCode() protocol.Code { return protocol.CodeNotFound }

// ErrorDetails is {"removed": the tombstone}: the details of the error a
// surface answers with (the gateway's), so that a client can say what
// became of the run as a local reader does.
func (e *RemovedError) ErrorDetails() map[string]any {
	return map[string]any{"removed": e.Tombstone}
}

// Describe says what became of the run, in the words every reader uses
// (the store's errors, the CLI, the gateway's answers): "was removed at
// <RFC 3339 time>", then " by policy <policy>" and "; archived in
// <archive>" when the tombstone has them (each quoted).
func (t Tombstone) Describe() string {
	s := "was removed at " + t.Removed.UTC().Format(time.RFC3339)
	if t.Policy != "" {
		s += " by policy " + strconv.Quote(t.Policy)
	}
	if t.Archive != "" {
		s += "; archived in " + strconv.Quote(t.Archive)
	}
	return s
}

// Removable reports whether a run with summary sum may be removed: nil
// when it has ended, else a *RunActiveError. Backends call it for each run
// of a RemoveRuns call before they remove anything.
func Removable(sum Summary) error {
	if sum.Status == StatusRunning || sum.Status == StatusActive || sum.Waiting > 0 {
		return &RunActiveError{RunID: sum.ID, Status: sum.Status, Waiting: sum.Waiting}
	}
	return nil
}

// Allows reports whether the removal why may remove the run with summary
// sum: Removable(sum), then a *RunActiveError when why.Through is set and
// the run has an event past it. Backends call it for each run of a
// RemoveRuns call, in the transaction that removes them, before they
// remove anything.
func (why Removal) Allows(sum Summary) error {
	if err := Removable(sum); err != nil {
		return err
	}
	if why.Through != 0 && sum.LastSeq > why.Through {
		return &RunActiveError{RunID: sum.ID, Status: sum.Status, LastSeq: sum.LastSeq, Through: why.Through}
	}
	return nil
}

// CheckRemoval returns the distinct run ids of runs, in order, or
// ErrInvalidQuery when one is empty. Backends call it first in RemoveRuns.
func CheckRemoval(runs []string) ([]string, error) {
	seen := make(map[string]bool, len(runs))
	out := make([]string, 0, len(runs))
	for _, r := range runs {
		if r == "" {
			return nil, &QueryError{Field: "runs", Detail: "holds an empty run id"}
		}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out, nil
}
