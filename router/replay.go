package router

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// taskLog is what the store holds about one task.
type taskLog struct {
	req      *protocol.Message
	terminal *protocol.Message // last terminal event, nil while open
	attempt  int               // highest attempt seen
	accepted bool

	// Questions and answers (ask.go).
	lastQ       *protocol.Message  // the last task.question
	pending     *protocol.Message  // lastQ while it waits for its answer
	pendingQ    *protocol.Question // pending's payload
	values      []json.RawMessage  // the answers' values, in the order asked
	answeredIDs map[string]bool    // the questions answered
	answered    int                // len(values)
	answeredQ   *protocol.Question // the last question answered
	resumeDue   bool               // the last question was answered and no attempt started since
}

func (l *taskLog) add(m *protocol.Message) {
	if m.Attempt > l.attempt {
		l.attempt = m.Attempt
	}
	switch {
	case m.Type == protocol.TypeTaskRequest:
		if l.req == nil {
			l.req = m
		}
	case m.Type == protocol.TypeTaskAccept:
		l.accepted = true
		l.terminal = nil // a new attempt reopens the task
		l.resumeDue = false
	case m.Type == protocol.TypeRoutingDecision:
		l.terminal = nil
		l.resumeDue = false
	case m.Type == protocol.TypeTaskQuestion:
		q, err := protocol.DecodePayload[protocol.Question](m)
		if err != nil || q.Index != l.answered {
			return // not a question this router asked in turn
		}
		l.lastQ, l.pending, l.pendingQ, l.resumeDue = m, m, &q, false
	case m.Type == protocol.TypeTaskAnswer:
		a, err := protocol.DecodePayload[protocol.Answer](m)
		if err != nil || l.pendingQ == nil || a.QuestionID != l.pendingQ.ID {
			return // an answer to no waiting question: not taken
		}
		if l.answeredIDs == nil {
			l.answeredIDs = map[string]bool{}
		}
		l.answeredIDs[a.QuestionID] = true
		l.values = append(l.values, a.Value)
		l.answered++
		l.answeredQ = l.pendingQ
		l.pending, l.pendingQ, l.resumeDue = nil, nil, true
	case protocol.EndsTask(m):
		l.terminal = m
		l.pending, l.pendingQ, l.resumeDue = nil, nil, false
	}
}

func (r *Router) readTask(ctx context.Context, taskID string) (*taskLog, error) {
	l := &taskLog{}
	for ev, err := range r.st.Read(ctx, store.Query{TaskID: taskID}) {
		if err != nil {
			return nil, err
		}
		m, err := ev.Message()
		if err != nil {
			return nil, fmt.Errorf("router: event %d: %w", ev.Seq, err)
		}
		l.add(m)
	}
	if l.req == nil {
		return nil, wrap(ErrUnknownTask, taskID, nil)
	}
	return l, nil
}

func outcomeOf(m *protocol.Message) *Outcome {
	out := &Outcome{TaskID: m.TaskID, Type: m.Type, Message: m}
	if m.Type != protocol.TypeTaskResult {
		ep, err := protocol.DecodePayload[protocol.ErrorPayload](m)
		if err != nil || ep.Code == "" {
			ep = protocol.ErrorPayload{Code: protocol.CodeInternal, Message: string(m.Type)}
		}
		out.Err = &ep
	}
	return out
}

// storedOutcome returns the stored outcome of an ended task, nil if it has
// not ended.
func (r *Router) storedOutcome(ctx context.Context, taskID string) (*Outcome, error) {
	l, err := r.readTask(ctx, taskID)
	if err != nil {
		return nil, err
	}
	if l.terminal == nil {
		return nil, nil
	}
	return outcomeOf(l.terminal), nil
}

// goOnAsked goes on with the claimed task ts whose log l says it asked
// (ask.go): one that waits goes on waiting here (its deadline armed) and
// ts resolves with its question; one answered but not run on since (its
// process stopped first) is resumed. ok is false, and ts left claimed,
// for any other task.
func (r *Router) goOnAsked(ts *taskState, l *taskLog) (h *Handle, resumed, ok bool, err error) {
	switch {
	case l.pending != nil:
		r.await(ts.req.TaskID, l.pendingQ)
		out := questionOutcome(l.pending, l.pendingQ)
		ts.resolve(&out)
		r.unclaim(ts, claimTask)
		return &ts.handle, false, true, nil
	case l.resumeDue:
		if err := r.roomFor(ts); err != nil {
			r.unclaim(ts, claimDropped)
			return nil, false, true, err
		}
		return r.resume(ts, l), true, true, nil
	}
	return nil, false, false, nil
}

// recoverStored follows or ends the task of a stored request req: the
// task running here, else its stored outcome, else — stored, never ended,
// not running here: the process that ran it stopped — the recovery
// policy (Options.Recovery). It holds the task's claim while it reads the
// log and stores, so that two redeliveries, or a redelivery and Recover,
// never end a task twice. recovered reports that the policy was applied.
func (r *Router) recoverStored(ctx context.Context, req *protocol.Message) (h *Handle, recovered bool, err error) {
	for {
		ts, old, err := r.claim(ctx, req, nil, claimStored)
		if err != nil {
			return nil, false, err
		}
		if old != nil {
			// Running, or ending right now: its handle gives the outcome.
			h, err := r.follow(ctx, old)
			if err != nil || h != nil {
				return h, false, err
			}
			continue
		}
		l, err := r.readTask(ctx, req.TaskID)
		if err != nil {
			r.unclaim(ts, claimDropped)
			return nil, false, err
		}
		if l.terminal != nil {
			ts.resolve(outcomeOf(l.terminal))
			r.unclaim(ts, claimTask)
			return &ts.handle, false, nil
		}
		if h, resumed, ok, err := r.goOnAsked(ts, l); ok || err != nil {
			return h, resumed, err
		}
		if t := r.team.Load(); t != nil {
			// In a team: the process routing it ends it (Team.Redelivered).
			r.unclaim(ts, claimDropped)
			h, ok, err := t.team.Redelivered(ctx, req)
			if err != nil || ok {
				return h, false, err
			}
			continue
		}
		if r.opts.Recovery == RecoverRedispatch {
			if err := r.roomFor(ts); err != nil {
				r.unclaim(ts, claimDropped)
				return nil, false, err
			}
			return r.start(ts, max(l.attempt, l.req.Attempt)+1), true, nil
		}
		ts.attempt.Store(int32(max(l.attempt, 1)))
		ep := &protocol.ErrorPayload{Code: protocol.CodeInterrupted, Message: "the process running the task stopped before it ended", Retryable: true}
		r.end(ts, Outcome{Err: ep}, r.errorEvent(ts, r.opts.AgentID, ep))
		r.unclaim(ts, claimTask)
		return &ts.handle, true, nil
	}
}

// roomFor checks Options.MaxInFlight for a claim of a stored request
// about to run again (claims of stored requests are counted, not refused).
func (r *Router) roomFor(ts *taskState) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.opts.MaxInFlight > 0 && r.inFlight > r.opts.MaxInFlight {
		return capacityError(r.opts.MaxInFlight)
	}
	return nil
}

// resolve ends a claim that does not run with a known outcome.
func (ts *taskState) resolve(out *Outcome) {
	ts.finished.Store(true)
	ts.out = *out
	ts.outcome = &ts.out
	close(ts.done)
}

// running reports whether a task is claimed or running and has not ended.
func (r *Router) running(taskID string) bool {
	r.mu.Lock()
	ts := r.tasks[taskID]
	r.mu.Unlock()
	return ts != nil && (!ts.finished.Load() || ts.claim.Load() == claimPending)
}

// Recover finds the tasks that were running when a previous process
// stopped — stored, not ended, not running in this router — and applies
// Options.Recovery to each: RecoverFail (the default) ends it with a
// retryable INTERRUPTED task.error, RecoverRedispatch routes it again as a
// new attempt. Call it once after registering the agents. It scans the
// task events of the whole log and returns how many tasks it recovered.
// With RecoverRedispatch it stops with ErrCapacity when the router holds
// Options.MaxInFlight tasks; calling it again later goes on.
func (r *Router) Recover(ctx context.Context) (int, error) {
	if t := r.team.Load(); t != nil {
		return t.team.Recover(ctx) // in a team: only the tasks of dead processes
	}
	logs := map[string]*taskLog{}
	var order []string
	for ev, err := range r.st.Read(ctx, store.Query{TypePrefix: "task."}) {
		if err != nil {
			return 0, err
		}
		m, err := ev.Message()
		if err != nil {
			return 0, fmt.Errorf("router: event %d: %w", ev.Seq, err)
		}
		l := logs[m.TaskID]
		if l == nil {
			l = &taskLog{}
			logs[m.TaskID] = l
			order = append(order, m.TaskID)
		}
		l.add(m)
	}
	n := 0
	for _, id := range order {
		l := logs[id]
		if l.req == nil || l.terminal != nil {
			continue
		}
		if r.running(id) {
			continue
		}
		if l.pending != nil {
			r.await(id, l.pendingQ) // it asked: it goes on waiting, its deadline armed again
			continue
		}
		_, recovered, err := r.recoverStored(ctx, l.req) // resumes one answered but not run on
		if err != nil {
			return n, err
		}
		if recovered {
			n++
		}
	}
	return n, nil
}

// Retry runs one ended task of a run again from the log (partial retry,
// docs/protocol.md "Task DAGs ... with partial retry"): a task that ended with
// task.error or task.timeout is routed again as a new attempt, with its
// stored request. The rest of the run is not touched. It fails with
// ErrNotRetryable for a task that is running or did not fail, and with
// ErrCapacity when the router holds Options.MaxInFlight tasks.
func (r *Router) Retry(ctx context.Context, taskID string) (*Handle, error) {
	if r.running(taskID) {
		return nil, wrap(ErrNotRetryable, taskID+" is running", nil)
	}
	l, err := r.readTask(ctx, taskID)
	if err != nil {
		return nil, err
	}
	ts, old, err := r.claim(ctx, l.req, nil, claimRetry)
	if err != nil {
		return nil, err
	}
	if old != nil {
		return nil, wrap(ErrNotRetryable, taskID+" is running", nil)
	}
	// Read again under the claim: the task may have been retried meanwhile.
	if l, err = r.readTask(ctx, taskID); err != nil {
		r.unclaim(ts, claimDropped)
		return nil, err
	}
	if l.terminal == nil || (l.terminal.Type != protocol.TypeTaskError && l.terminal.Type != protocol.TypeTaskTimeout) {
		r.unclaim(ts, claimDropped)
		state := "has not ended"
		if l.terminal != nil {
			state = "ended with " + string(l.terminal.Type)
		}
		return nil, wrap(ErrNotRetryable, taskID+" "+state, nil)
	}
	if err := r.ownRetry(ctx, ts); err != nil { // in a team: this process routes it now (team.go)
		r.unclaim(ts, claimDropped)
		return nil, err
	}
	return r.start(ts, max(l.attempt, l.req.Attempt)+1), nil
}

// TaskNode is one task of a replayed run.
type TaskNode struct {
	TaskID       string
	ParentTaskID string
	Agent        string        // agent of the last attempt, "" if never routed
	State        protocol.Type // last lifecycle event: task.request ... task.timeout
	Attempts     int
	Request      *protocol.Message
	Decisions    []protocol.RoutingDecision
	Outcome      *Outcome // nil while the task is open
	Children     []*TaskNode
}

// Tree is a run's task tree rebuilt from the store (docs/protocol.md §1.3, §8.1
// "replay by run_id").
type Tree struct {
	RunID string
	Roots []*TaskNode
	Tasks map[string]*TaskNode
}

// Replay rebuilds the task tree of a run from the events in st: tasks,
// parents, states, attempts, routing decisions and outcomes. It needs no
// router and works on any store, for debugging a past run.
func Replay(ctx context.Context, st store.Store, runID string) (*Tree, error) {
	t := &Tree{RunID: runID, Tasks: map[string]*TaskNode{}}
	var order []string
	logs := map[string]*taskLog{}
	for ev, err := range st.Read(ctx, store.Query{RunID: runID}) {
		if err != nil {
			return nil, err
		}
		m, err := ev.Message()
		if err != nil {
			return nil, fmt.Errorf("router: event %d: %w", ev.Seq, err)
		}
		if m.Type.Family() != "task" && m.Type.Family() != "routing" {
			continue
		}
		n := t.Tasks[m.TaskID]
		if n == nil {
			n = &TaskNode{TaskID: m.TaskID, ParentTaskID: m.ParentTaskID}
			t.Tasks[m.TaskID] = n
			logs[m.TaskID] = &taskLog{}
			order = append(order, m.TaskID)
		}
		logs[m.TaskID].add(m)
		switch m.Type {
		case protocol.TypeRoutingDecision:
			if d, err := protocol.DecodePayload[protocol.RoutingDecision](m); err == nil {
				n.Decisions = append(n.Decisions, d)
				n.Agent = d.Selected
			}
			n.State = protocol.TypeTaskRequest
		case protocol.TypeRoutingFailure:
		default:
			n.State = m.Type
		}
	}
	for _, id := range order {
		n, l := t.Tasks[id], logs[id]
		n.Request, n.Attempts = l.req, l.attempt
		if l.req != nil {
			n.ParentTaskID = l.req.ParentTaskID
		}
		if l.terminal != nil {
			n.Outcome = outcomeOf(l.terminal)
			n.State = l.terminal.Type
		}
		if p := t.Tasks[n.ParentTaskID]; p != nil && n.ParentTaskID != "" {
			p.Children = append(p.Children, n)
		} else {
			t.Roots = append(t.Roots, n)
		}
	}
	return t, nil
}

// Tree replays a run of the router's store; see Replay.
func (r *Router) Tree(ctx context.Context, runID string) (*Tree, error) {
	return Replay(ctx, r.st, runID)
}

// String draws the tree, one task a line.
func (t *Tree) String() string {
	var b strings.Builder
	var walk func(n *TaskNode, indent string)
	walk = func(n *TaskNode, indent string) {
		fmt.Fprintf(&b, "%s%s  %s", indent, n.TaskID, n.State)
		if n.Agent != "" {
			fmt.Fprintf(&b, "  by %s", n.Agent)
		}
		if n.Attempts > 1 {
			fmt.Fprintf(&b, "  (%d attempts)", n.Attempts)
		}
		if n.Outcome != nil && n.Outcome.Err != nil {
			fmt.Fprintf(&b, "  %s", n.Outcome.Err.Code)
		}
		b.WriteByte('\n')
		for _, c := range n.Children {
			walk(c, indent+"  ")
		}
	}
	for _, n := range t.Roots {
		walk(n, "")
	}
	return b.String()
}
