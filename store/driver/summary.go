package driver

import (
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// This file holds the one definition of how events fold into the run and
// thread summaries (store.Summary), so that every backend counts alike.
// A backend keeps, per task id, the TaskState of the tasks it has seen,
// and for each appended event:
//
//	if NeedsTask(e) { prev, known := lookup(e.TaskID)
//		next, changed, d := TaskStep(e, prev, known)
//		if changed { save(e.TaskID, next) } }
//	Fold(&runSummary, e.RunID, e, seq, t, d)   // when e.RunID != ""
//	Fold(&threadSummary, e.ThreadID, e, seq, t, d) // when e.ThreadID != ""

// TaskState is what summaries remember of a task.
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
	if e.TaskID == "" {
		return false
	}
	return e.Type == protocol.TypeTaskRequest || e.Ends || (e.Attempt > 1 && lifecycle(e.Type))
}

func lifecycle(t protocol.Type) bool {
	switch t {
	case protocol.TypeRoutingDecision, protocol.TypeRoutingFailure, protocol.TypeTaskAccept,
		protocol.TypeTaskProgress, protocol.TypeTaskError:
		return true
	}
	return false
}

// TaskStep is the effect of e on its task: the new state, whether it
// differs from prev (and must be saved), and the change to the counts.
// known is false for a task not seen before.
func TaskStep(e *Entry, prev TaskState, known bool) (next TaskState, changed bool, d Delta) {
	switch {
	case e.Type == protocol.TypeTaskRequest:
		if known {
			return prev, false, d // one request per task; a second one counts nothing
		}
		return TaskState{}, true, Delta{Tasks: 1}
	case !known:
		return prev, false, d // a task whose request is not in this store
	case e.Ends:
		if !prev.Ended {
			d.Ended = 1
		} else if e.Attempt <= prev.Attempt {
			return prev, false, d // a second terminal event of an ended attempt
		}
		return TaskState{Ended: true, Attempt: e.Attempt}, true, d
	case prev.Ended && e.Attempt > prev.Attempt && lifecycle(e.Type):
		return TaskState{}, true, Delta{Ended: -1} // a partial retry opens it again
	}
	return prev, false, d
}

// Fold adds the event e, stored with seq at t, to s, the summary of id
// (e's run or thread; the zero Summary for the first event), with d from
// TaskStep.
func Fold(s *store.Summary, id string, e *Entry, seq uint64, t time.Time, d Delta) {
	if s.Events == 0 {
		*s = store.Summary{ID: id, RunID: e.RunID, Owner: e.AgentID, FirstSeq: seq, Created: t, Status: store.StatusActive}
	}
	s.Events++
	s.LastSeq, s.Updated = seq, t
	if e.Channel != "" {
		s.Channel = e.Channel
	}
	s.Tasks += d.Tasks
	s.Ended = min(max(s.Ended+d.Ended, 0), s.Tasks)
	switch {
	case s.Tasks > s.Ended:
		s.Status = store.StatusRunning
	case e.Ends:
		s.Status = store.EndStatus(e.Type)
	}
}
