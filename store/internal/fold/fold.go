// Package fold is the one definition of how events fold into the run and
// thread summaries of docs/protocol.md §8.1: the backends reach it through
// store/driver, and store.Runs and store.Threads through their projection
// of a log. It imports no package of the module but protocol, so that
// package store can use it too.
package fold

import (
	"slices"
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
	ID         string
	RunID      string
	Owner      string
	Channel    string
	Title      string
	FirstSeq   uint64
	LastSeq    uint64
	Created    time.Time
	Updated    time.Time
	Events     int
	Bytes      int64
	Tasks      int
	Ended      int
	Waiting    int
	Status     string
	Agents     []string
	AgentsMore int
	Failure    *Failure
}

// Failure is the type of store.Failure (an alias of this one), which
// documents it. A Summary's Failure is never changed in place, only
// replaced, so copies of a Summary may share it.
type Failure struct {
	TaskID  string        `json:"task_id"`
	AgentID string        `json:"agent_id"`
	Code    protocol.Code `json:"code"`
	Message string        `json:"message,omitempty"`
}

// TaskState is what summaries remember of a task. Ended and Waiting are
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
// requests, terminal events, questions and answers, and lifecycle events
// of a later attempt (a partial retry, or the attempt that resumes after
// an answer).
func NeedsTask(taskID string, typ protocol.Type, attempt int, ends bool) bool {
	if taskID == "" {
		return false
	}
	return typ == protocol.TypeTaskRequest || ends || typ == protocol.TypeTaskQuestion ||
		typ == protocol.TypeTaskAnswer || (attempt > 1 && lifecycle(typ))
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
		if prev.Waiting {
			d.Waiting = -1 // an end answers nothing, but nobody waits any more
		}
		return TaskState{Ended: true, Attempt: attempt}, true, d
	case prev.Ended && attempt > prev.Attempt && lifecycle(typ):
		return TaskState{}, true, Delta{Ended: -1} // a partial retry opens it again
	case prev.Ended:
		return prev, false, d // a question or an answer of an ended task
	case typ == protocol.TypeTaskQuestion:
		if prev.Waiting {
			if attempt <= prev.Attempt {
				return prev, false, d // a second question of the attempt: still one task waiting
			}
			return TaskState{Waiting: true, Attempt: attempt}, true, d
		}
		return TaskState{Waiting: true, Attempt: attempt}, true, Delta{Waiting: 1}
	case prev.Waiting && (typ == protocol.TypeTaskAnswer || attempt > prev.Attempt && lifecycle(typ)):
		return TaskState{}, true, Delta{Waiting: -1} // answered, or a new attempt runs
	}
	return prev, false, d
}

// Event is what Fold reads of an event.
type Event struct {
	RunID       string
	AgentID     string
	Channel     string
	Type        protocol.Type
	Ends        bool
	PayloadType string
	Payload     []byte   // read only for a title (see Titles)
	Failure     *Failure // FailureOf the event
	Size        int      // the event's stored bytes: len(store.Event.Raw)
	// Title, when Titled, is Title(Type, PayloadType, Payload), computed
	// beforehand (by a caller that keeps it for a second summary, or that
	// computes it outside a lock).
	Title  string
	Titled bool
}

// EventOf returns what Fold reads of m, but Size: the caller sets it from
// the bytes the store keeps of m.
func EventOf(m *protocol.Message) Event {
	ends := protocol.EndsTask(m)
	return Event{
		RunID: m.RunID, AgentID: m.From.AgentID, Channel: Channel(m), Type: m.Type, Ends: ends,
		PayloadType: m.PayloadType, Payload: m.Payload, Failure: FailureOf(m, ends),
	}
}

// Fold adds e, stored with seq at t, to s, the summary of id (the zero
// Summary for its first event), with d from TaskStep. s.Agents holds up to
// TrackedAgents agents; Listed makes the summary a listing shows.
func Fold(s *Summary, id string, e Event, seq uint64, t time.Time, d Delta) {
	if s.Events == 0 {
		*s = Summary{ID: id, RunID: e.RunID, Owner: e.AgentID, FirstSeq: seq, Created: t, Status: StatusActive}
	}
	s.Events++
	s.Bytes += int64(e.Size)
	s.LastSeq, s.Updated = seq, t
	if e.Channel != "" {
		s.Channel = e.Channel
	}
	if s.Title == "" && Titles(e.Type) {
		if !e.Titled {
			e.Title = Title(e.Type, e.PayloadType, e.Payload) // decoded only while there is no title
		}
		s.Title = e.Title
	}
	if e.Type == protocol.TypeTaskAccept && e.AgentID != "" && len(s.Agents) < TrackedAgents && !slices.Contains(s.Agents, e.AgentID) {
		// A new array each time: copies of s (listings) share the old one.
		s.Agents = append(slices.Clip(s.Agents), e.AgentID)
	}
	if e.Failure != nil {
		s.Failure = e.Failure
	}
	s.Tasks += d.Tasks
	s.Ended = min(max(s.Ended+d.Ended, 0), s.Tasks)
	s.Waiting = max(s.Waiting+d.Waiting, 0)
	switch {
	case s.Tasks > s.Ended:
		s.Status = StatusRunning
	case e.Ends:
		s.Status = EndStatus(e.Type)
	}
	if s.Status == StatusCompleted {
		s.Failure = nil
	}
}

// ListedAgents is the most agents a listed Summary names, and
// TrackedAgents the most a summary remembers (so AgentsMore is at most
// TrackedAgents-ListedAgents).
const (
	ListedAgents  = 8
	TrackedAgents = 64
)

// Listed turns s, as Fold keeps it, into the summary a listing shows: the
// first ListedAgents agents, and AgentsMore counting the others.
func Listed(s *Summary) {
	if n := len(s.Agents); n > ListedAgents {
		s.Agents, s.AgentsMore = s.Agents[:ListedAgents:ListedAgents], n-ListedAgents
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
