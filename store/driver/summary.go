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
// store.Runs and store.Threads fold a log the same way when a store does
// not implement Lister, so both agree by construction.

// TaskState is what summaries remember of one task.
type TaskState struct {
	Ended   bool // its latest attempt has ended
	Attempt int  // the attempt of its last terminal event, when Ended
}

// Delta is the change an event makes to Summary.Tasks and Summary.Ended.
type Delta struct{ Tasks, Ended int }

// NeedsTask reports whether e can change its task's state, so that a
// backend looks the state up only for these events: requests, terminal
// events, and lifecycle events of a later attempt (a partial retry).
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
// TaskStep (the zero Delta when NeedsTask(e) is false).
func Fold(s *store.Summary, id string, e *Entry, seq uint64, t time.Time, d Delta) {
	fold.Fold((*fold.Summary)(s), id, fold.Event{RunID: e.RunID, AgentID: e.AgentID, Channel: e.Channel, Type: e.Type, Ends: e.Ends}, seq, t, fold.Delta(d))
}
