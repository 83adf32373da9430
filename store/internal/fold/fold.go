// Package fold is the one definition of how events fold into the run and
// thread summaries of docs/protocol.md §8.1: the backends reach it through
// store/driver, and store.Runs and store.Threads through their projection
// of a log. It imports no package of the module but protocol, so that
// package store can use it too.
package fold

import (
	"time"

	"github.com/clutchprotocol/clutch/protocol"
)

// The values of store.Summary.Status this package sets (store.Summary
// documents them; a test there keeps the two sets equal).
const (
	StatusActive    = "active"
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
	StatusTimedOut  = "timed_out"
)

// Summary has exactly the fields of store.Summary, in order, so that a
// *store.Summary converts to a *Summary.
type Summary struct {
	ID       string
	RunID    string
	Owner    string
	Channel  string
	FirstSeq uint64
	LastSeq  uint64
	Created  time.Time
	Updated  time.Time
	Events   int
	Tasks    int
	Ended    int
	Status   string
}

// TaskState is what summaries remember of a task.
type TaskState struct {
	Ended   bool
	Attempt int
}

// Delta is the change an event makes to Summary.Tasks and Summary.Ended.
type Delta struct{ Tasks, Ended int }

// Channel is the meta.ui_channel of m when it is a string, else "".
func Channel(m *protocol.Message) string {
	if len(m.Meta) > 0 {
		if ch, ok := m.Meta["ui_channel"].(string); ok {
			return ch
		}
	}
	return ""
}

// NeedsTask reports whether an event can change its task's state:
// requests, terminal events, and lifecycle events of a later attempt (a
// partial retry).
func NeedsTask(taskID string, typ protocol.Type, attempt int, ends bool) bool {
	if taskID == "" {
		return false
	}
	return typ == protocol.TypeTaskRequest || ends || (attempt > 1 && lifecycle(typ))
}

func lifecycle(t protocol.Type) bool {
	switch t {
	case protocol.TypeRoutingDecision, protocol.TypeRoutingFailure, protocol.TypeTaskAccept,
		protocol.TypeTaskProgress, protocol.TypeTaskError:
		return true
	}
	return false
}

// TaskStep is the effect of an event on its task: the new state, whether
// it differs from prev, and the change to the counts. known is false for a
// task not seen before.
func TaskStep(typ protocol.Type, attempt int, ends bool, prev TaskState, known bool) (next TaskState, changed bool, d Delta) {
	switch {
	case typ == protocol.TypeTaskRequest:
		if known {
			return prev, false, d // one request per task; a second one counts nothing
		}
		return TaskState{}, true, Delta{Tasks: 1}
	case !known:
		return prev, false, d // a task whose request is not in this store
	case ends:
		if !prev.Ended {
			d.Ended = 1
		} else if attempt <= prev.Attempt {
			return prev, false, d // a second terminal event of an ended attempt
		}
		return TaskState{Ended: true, Attempt: attempt}, true, d
	case prev.Ended && attempt > prev.Attempt && lifecycle(typ):
		return TaskState{}, true, Delta{Ended: -1} // a partial retry opens it again
	}
	return prev, false, d
}

// Event is what Fold reads of an event.
type Event struct {
	RunID   string
	AgentID string
	Channel string
	Type    protocol.Type
	Ends    bool
}

// Fold adds e, stored with seq at t, to s, the summary of id (the zero
// Summary for its first event), with d from TaskStep.
func Fold(s *Summary, id string, e Event, seq uint64, t time.Time, d Delta) {
	if s.Events == 0 {
		*s = Summary{ID: id, RunID: e.RunID, Owner: e.AgentID, FirstSeq: seq, Created: t, Status: StatusActive}
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
		s.Status = StatusRunning
	case e.Ends:
		s.Status = EndStatus(e.Type)
	}
}

// EndStatus is the status a terminal event of type t gives its task, run
// or thread.
func EndStatus(t protocol.Type) string {
	switch t {
	case protocol.TypeTaskResult:
		return StatusCompleted
	case protocol.TypeTaskCancel:
		return StatusCancelled
	case protocol.TypeTaskTimeout:
		return StatusTimedOut
	}
	return StatusFailed
}
