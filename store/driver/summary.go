package driver

import (
	"time"

	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/internal/fold"
)

// The summary fold: how events count into a [store.Summary]. A backend
// that implements [store.Lister] keeps, per task id, the TaskState of the
// tasks it has seen and, for each event it appends, in the same
// transaction:
//
//	var d driver.Delta
//	if driver.NeedsTask(e) {
//		prev, known := lookup(e.TaskID)
//		next, changed, delta := driver.TaskStep(e, prev, known)
//		if changed {
//			save(e.TaskID, next)
//		}
//		d = delta
//	}
//	driver.Fold(&runSummary, e.RunID, e, seq, t, d)       // when e.RunID != ""
//	driver.Fold(&threadSummary, e.ThreadID, e, seq, t, d) // when e.ThreadID != ""
//
// and, for each summary it yields from Runs or Threads:
//
//	driver.Listed(&sum)
//
// store.Runs and store.Threads fold a log the same way when a store does
// not implement Lister, so both agree by construction.
//
// Fold reads the payload of an event (Entry.Payload) only for a summary's
// title, and only while the summary has none and the event is of a type
// that gives one, once per entry (Entry.Title); Entry.Failure is computed
// once, when the entry is built (Prepare, EntryOf), and only for the
// errors that end a task. A summary
// as Fold keeps it remembers more agents than a listing names: store it
// whole, and list it through Listed.

// TaskState is what summaries remember of one task. Ended and Waiting are
// never both true.
type TaskState struct {
	Ended   bool // its latest attempt has ended
	Waiting bool // it asked a question that has no answer yet
	// Attempt is the attempt of its last terminal event when Ended, of its
	// unanswered question when Waiting, else 0.
	Attempt int
}

// Delta is the change an event makes to Summary.Tasks, Summary.Ended and
// Summary.Waiting.
type Delta struct{ Tasks, Ended, Waiting int }

// NeedsTask reports whether e can change its task's state, so that a
// backend looks the state up only for these events: requests, terminal
// events, questions and answers, and lifecycle events of a later attempt
// (a partial retry, or the attempt that resumes after an answer).
func NeedsTask(e *Entry) bool {
	return fold.NeedsTask(e.TaskID, e.Type, e.Attempt, e.Ends)
}

// TaskStep is the effect of e on its task: the new state, whether it
// differs from prev (and must be saved), and the change to the counts.
// known is false for a task not seen before.
func TaskStep(e *Entry, prev TaskState, known bool) (next TaskState, changed bool, d Delta) {
	n, changed, fd := fold.TaskStep(e.Type, e.Attempt, e.Ends, fold.TaskState(prev), known)
	return TaskState(n), changed, Delta(fd)
}

// Fold adds the event e, stored with seq at t, to s, the summary of id
// (e's run or thread; the zero Summary for the first event), with d from
// TaskStep (the zero Delta when NeedsTask(e) is false). It adds len(e.Raw)
// to s.Bytes: an entry of an event read back (EntryOf) needs the event's
// stored bytes as its raw.
func Fold(s *store.Summary, id string, e *Entry, seq uint64, t time.Time, d Delta) {
	fe := fold.Event{
		RunID: e.RunID, AgentID: e.AgentID, Channel: e.Channel, Type: e.Type, Ends: e.Ends,
		PayloadType: e.PayloadType, Payload: e.Payload, Failure: e.Failure, Size: len(e.Raw),
	}
	if s.Title == "" {
		fe.Title, fe.Titled = e.Title(), true // kept in e for its other summary
	}
	fold.Fold((*fold.Summary)(s), id, fe, seq, t, fold.Delta(d))
}

// Listed turns s, a summary as Fold keeps it, into the one a listing
// yields: it names at most 8 agents and counts the others in AgentsMore.
// A Lister calls it on each summary it yields, never on one it folds
// into.
func Listed(s *store.Summary) { fold.Listed((*fold.Summary)(s)) }
