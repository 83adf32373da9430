package store

import (
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store/internal/fold"
)

// Summary describes one run or one thread: what a UI lists before it
// reads any event ([Runs], [Threads]). It is a projection of the log: a
// [Lister] keeps it as it appends, in the same transaction, and a store
// without one has it computed from its events, by the same rules.
type Summary struct {
	// ID is the run id (Runs) or the thread id (Threads).
	ID string `json:"id"`
	// RunID is the run of the first event: ID itself for a run, the
	// run_id of the thread's first event for a thread.
	RunID string `json:"run_id"`
	// Owner is the from.agent_id of the first event: the caller that
	// started the run or thread (a run's first event is its first
	// task.request). Surfaces show a caller without a read-all scope only
	// what it owns.
	Owner string `json:"owner"`
	// Channel is meta.ui_channel (a string) of the latest event that set
	// one; "" when none did. UIs group threads by it.
	Channel string `json:"channel,omitempty"`
	// Title names the run or thread for people: the title of the first
	// event, in seq order, that gives one. Only a task.request or a
	// chat.message gives one: its payload when that is a JSON string,
	// else the first of the string members "title", "text", "query",
	// "message", "content", "summary", "prompt", "goal" of its payload
	// (in that order, blank strings skipped), else its payload_type —
	// with each run of white space and control characters collapsed to
	// one space, trimmed, and cut at a UTF-8 boundary to at most 120
	// bytes ending in "…" when it is cut; a text that leaves nothing
	// gives the payload_type. "" while no event gave one; once set it
	// does not change.
	Title string `json:"title,omitempty"`
	// FirstSeq and LastSeq are the seqs of the first and the last event.
	FirstSeq uint64 `json:"first_seq"`
	LastSeq  uint64 `json:"last_seq"`
	// Created and Updated are the Times of the first and the last event.
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	// Events counts the events.
	Events int `json:"events"`
	// Bytes is the stored size of the events: the sum of the lengths of
	// their bytes ([Event.Raw]), which is what removing them takes away
	// from the log ([Tombstone.Bytes] counts the same for a run).
	Bytes int64 `json:"bytes"`
	// Tasks counts the tasks: task.request events of task ids not seen
	// before in the store.
	Tasks int `json:"tasks"`
	// Ended counts the tasks whose latest attempt has ended (see
	// [protocol.EndsTask]): a task.error that announces a retry does not
	// end one, and a partial retry (a lifecycle event of a later attempt
	// after the task ended) opens it again. 0 ≤ Ended ≤ Tasks.
	Ended int `json:"ended"`
	// Waiting counts the tasks that wait for an answer (docs/protocol.md
	// §2.7): a task.question of a task whose task.request is in the
	// store and that has not ended makes it wait; a task.answer, a
	// lifecycle event of a later attempt (a routing.decision,
	// routing.failure, task.accept, task.progress or task.error) or the
	// event that ends the task stops it. A task waits once however many
	// questions it asks.
	Waiting int `json:"waiting,omitempty"`
	// Status is one of the Status constants.
	Status string `json:"status"`
	// Agents are the agents that accepted tasks (the from.agent_id of
	// each task.accept), each once, in the order of their first
	// acceptance: at most 8. AgentsMore counts the others; a summary
	// remembers 64 agents, so AgentsMore is at most 56.
	Agents     []string `json:"agents,omitempty"`
	AgentsMore int      `json:"agents_more,omitempty"`
	// Failure is what failed: set by every event that ends its task with
	// a task.error or a task.timeout (the latest one wins), and cleared
	// when Status is StatusCompleted after an event. So a run or thread
	// that failed or timed out has one, and one that is running, or was
	// cancelled after a failure, keeps the last. nil when none.
	Failure *Failure `json:"failure,omitempty"`
}

// Failure is what failed in a run or thread ([Summary.Failure]), from the
// task.error or task.timeout that ended a task:
//
//   - TaskID (task_id) is the task;
//   - AgentID (agent_id) is the agent: the error payload's details.agent
//     when it is a non-empty string of at most 256 bytes (a timeout the
//     router records names the agent that ran out of time), else the
//     event's from.agent_id;
//   - Code (code) and Message (message, omitted when empty) are those of
//     the error payload (docs/protocol.md §5.4), each cut at a UTF-8
//     boundary to at most 256 and 200 bytes, ending in "…" when it is
//     cut. A payload that is not an error payload gives an empty code and
//     message.
type Failure = fold.Failure

// The values of Summary.Status.
//
// A run or thread is StatusRunning while some of its tasks have not ended
// (Tasks > Ended). Otherwise its status comes from its most recent
// terminal event: StatusCompleted (task.result), StatusFailed (a
// task.error that ends its task), StatusCancelled (task.cancel) or
// StatusTimedOut (task.timeout). One with neither tasks nor terminal
// events (a chat thread) is StatusActive.
const (
	StatusActive    = "active"
	StatusRunning   = "running"
	StatusCompleted = "completed"
	StatusFailed    = "failed"
	StatusCancelled = "cancelled"
	StatusTimedOut  = "timed_out"
)

// StatusPending is the status of one task (see [TaskStatus]) that no agent
// has accepted yet, and StatusWaiting that of one that asked a question
// and waits for its answer (docs/protocol.md §2.7). A Summary never has
// them.
const (
	StatusPending = "pending"
	StatusWaiting = "waiting"
)

// EndStatus is the status a terminal event of type t gives its task, run
// or thread: StatusCompleted for task.result, StatusCancelled for
// task.cancel, StatusTimedOut for task.timeout and StatusFailed for
// anything else (a task.error that ends its task).
func EndStatus(t protocol.Type) string { return fold.EndStatus(t) }

// TaskStatus is the status of one task whose latest lifecycle event has
// type state: EndStatus(end) when the task has ended, end being the type
// of the event that ended it ("" while it is open); StatusPending while
// state is task.request, routing.decision or routing.failure; StatusWaiting
// while it is task.question; StatusRunning otherwise.
func TaskStatus(state, end protocol.Type) string {
	switch {
	case end != "":
		return EndStatus(end)
	case state == protocol.TypeTaskRequest || state == protocol.TypeRoutingDecision || state == protocol.TypeRoutingFailure:
		return StatusPending
	case state == protocol.TypeTaskQuestion:
		return StatusWaiting
	}
	return StatusRunning
}

// ListQuery selects summaries for [Runs] and [Threads]. The
// zero ListQuery selects all of them.
type ListQuery struct {
	// Before, when not 0, selects the summaries with LastSeq < Before: pass
	// the LastSeq of the last summary of a page to get the next page.
	Before uint64
	// Limit is the most summaries returned; 0 means no limit.
	Limit int
}

// Validate reports whether q is well formed: ErrInvalidQuery for a
// negative Limit.
func (q ListQuery) Validate() error {
	if q.Limit < 0 {
		return &QueryError{Field: "Limit", Detail: "must not be negative"}
	}
	return nil
}
