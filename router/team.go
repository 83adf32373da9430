package router

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/store"
)

// Team is the hook through which routers in several processes that share
// one store work as one team (package router/team implements it; see
// "Teams" in the package doc). A router has at most one Team, plugged in
// with SetTeam; without one every task is routed among this router's
// agents and run here. The router calls a Team on its own goroutines,
// concurrently.
type Team interface {
	// Handler returns the handler of an agent hosted by another process:
	// it waits for the outcome of the attempt Dispatch sent there. It
	// returns nil for an agent that is not the team's. The router asks
	// only for agents without a handler of their own here, and does not
	// wrap the team's handlers in Options.Middleware.
	Handler(agentID string) Handler
	// Dispatch returns the event that sends attempt t to the process
	// hosting t.Agent, stored together with the attempt's
	// routing.decision and task.accept, or nil when t.Agent runs here.
	Dispatch(t TeamTask) *protocol.Message
	// Owner returns the event that records this process as the one
	// routing t's task: stored together with its task.request by Submit
	// (and with the first attempt's routing.decision and task.accept when
	// Submit decides, docs/protocol.md §5.1), or alone before Retry runs
	// the task again (retry true). Nil stores nothing.
	Owner(t TeamTask, retry bool) *protocol.Message
	// Redelivered answers a redelivered request of a task that is stored,
	// open, and not running in this router: a handle on the task's end
	// (ok), or ok false when the team handed the task to this router
	// (Member.Adopt), which then claims it again.
	Redelivered(ctx context.Context, req *protocol.Message) (h *Handle, ok bool, err error)
	// Recover is Router.Recover in a team.
	Recover(ctx context.Context) (int, error)
	// Count applies Budget.MaxTasks (max) for the whole team: it reports
	// whether t's request is past the first max task.request events of
	// its run, wherever they were routed. The router calls it, only when
	// MaxTasks is set, on the task's goroutine before its first routing,
	// and ends a task past the budget with BUDGET, as in one process; an
	// error ends the task with the error's code ("counting the run's
	// tasks").
	Count(ctx context.Context, t TeamTask, max int) (past bool, err error)
}

// TeamTask is what the router tells its Team about a task.
type TeamTask struct {
	// Request is the task's task.request.
	Request *protocol.Message
	// Seq is the store's seq of Request, 0 when not known here (a task
	// started from the log).
	Seq uint64
	// Attempt is the current attempt, Agent the agent routed to (Dispatch).
	Attempt int
	Agent   string
	// Depth is the task's delegation depth (0 for a root task), Chain the
	// agents on its delegation chain, nearest first, Sub whether a
	// handler of this router delegated it.
	Depth int
	Chain []string
	Sub   bool
	// Trace is the attempt's trace context (Task.Trace).
	Trace *protocol.Trace
}

// teamHook is the Team plugged into a router and the Member it was given.
type teamHook struct {
	team   Team
	member *Member
}

// teamTask describes ts to the team.
func (ts *taskState) teamTask() TeamTask {
	tr := ts.req.Trace
	if ob := ts.obs.Load(); ob != nil && ob.trace != nil {
		tr = ob.trace
	}
	return TeamTask{Request: ts.req, Seq: ts.reqSeq, Attempt: int(ts.attempt.Load()), Agent: ts.agentID(),
		Depth: ts.depth, Chain: ts.ancestors(), Sub: ts.parent != nil, Trace: tr}
}

// SetTeam plugs t into r: from now on r routes to the team's agents too
// and lets t own, recover and count its tasks (see Team). It returns the
// Member through which t acts on r's tasks; Member.Leave unplugs t. A
// router has one team at a time: SetTeam fails with ErrInvalidOptions
// while one is plugged in. It is how package router/team joins a router
// to a team; applications call that package's Join.
func (r *Router) SetTeam(t Team) (*Member, error) {
	if t == nil {
		return nil, wrap(ErrInvalidOptions, "nil team", nil)
	}
	m := &Member{r: r}
	if !r.team.CompareAndSwap(nil, &teamHook{team: t, member: m}) {
		return nil, wrap(ErrInvalidOptions, "the router is in a team already: leave it before joining again", nil)
	}
	return m, nil
}

// Member is a router as a member of a team: what its Team (package
// router/team) does with the router's tasks — run attempts that other
// processes dispatched to its agents, and take over the tasks of
// processes that died. Applications do not use it.
type Member struct {
	r *Router
}

// Leave unplugs the member's team from the router: tasks routed from now
// on run here only. It does not end what the team started.
func (m *Member) Leave() {
	r := m.r
	if h := r.team.Load(); h != nil && h.member == m {
		r.team.CompareAndSwap(h, nil)
	}
}

// Store returns the store the router appends to: Router.Store, signing
// the events of the agents of Options.Signers.
func (m *Member) Store() store.Store { return m.r.st }

// Options returns the router's options, with their defaults.
func (m *Member) Options() Options { return m.r.opts }

// Handles reports whether agentID has a handler of its own in the router
// (Register or Attach), not one of the team's.
func (m *Member) Handles(agentID string) bool { return m.r.handlerMap()[agentID] != nil }

// Running reports whether the task is claimed or running in the router
// and has not ended.
func (m *Member) Running(taskID string) bool { return m.r.running(taskID) }

// Execute runs here, with agentID's handler, an attempt of req that
// another process routed: the handler gets a Task like any other
// (Progress, Emit, Delegate, PutArtifact), whose subtasks are routed by
// this router with delegation depth depth+1 and chain above them. The
// agent's max_concurrency holds: the attempt waits for a slot up to
// Options.QueueTimeout (then a retryable CAPACITY error). Past the
// agent's max_runtime_sec plus grace its context ends, a backstop for a
// routing process that is gone. The attempt's context ends with ctx.
//
// It returns the handler's result or its wire error; both nil when ctx
// ended first (the caller knows why). No event of the attempt's end is
// stored: the routing process stores it.
func (m *Member) Execute(ctx context.Context, req *protocol.Message, agentID string, attempt, depth int, chain []string, grace time.Duration) (*Result, *protocol.ErrorPayload) {
	r := m.r
	a, ok := r.reg.Get(agentID)
	h := r.handlerMap()[agentID]
	if !ok || h == nil {
		return nil, &protocol.ErrorPayload{Code: protocol.CodeNotFound, Message: "agent " + agentID + " is not hosted here any more", Retryable: true}
	}
	ts := r.newTask(context.Background(), req, nil)
	ts.attempt.Store(int32(attempt))
	ts.agent.Store(a)
	ts.depth, ts.chain = depth, chain
	defer ts.cancel(nil)
	stop := context.AfterFunc(ctx, func() { ts.cancel(context.Cause(ctx)) })
	defer stop()
	if !r.acquireRemote(ts, a) {
		if ts.ctx.Err() != nil {
			return nil, nil
		}
		return nil, &protocol.ErrorPayload{Code: protocol.CodeCapacity, Retryable: true,
			Message: fmt.Sprintf("agent %s stayed at its max_concurrency for %s", a.ID(), r.opts.QueueTimeout)}
	}
	actx := ts.ctx
	if card := a.Card(); card.Limits != nil && card.Limits.MaxRuntimeSec > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(actx, time.Duration(card.Limits.MaxRuntimeSec)*time.Second+grace)
		defer cancel()
	}
	ts.runCtx.Store(&actx)
	t := &Task{r: r, ts: ts, agent: a, attempt: attempt}
	res, err := r.call(actx, h, t)
	r.release(a, err == nil)
	ts.emu.Lock()
	ts.finished.Store(true) // later Progress and Emit calls fail with ErrTaskEnded
	ts.emu.Unlock()
	if t.pending != nil {
		// It asked: the routing process makes the task wait (Member.Wait).
		r.unawait(req.TaskID)
		if ts.ctx.Err() == nil {
			ep := wireError(wrap(ErrWaiting, t.pending.ID, nil))
			ep.Details = map[string]any{"question_id": t.pending.ID}
			return nil, &ep
		}
	}
	switch {
	case ts.ctx.Err() != nil:
		return nil, nil
	case err != nil:
		ep := wireError(err)
		return nil, &ep
	}
	if res == nil {
		res = &Result{}
	}
	return res, nil
}

// Wait is the routing process's side of an attempt that asked in the
// process hosting its agent (Execute returned an INPUT_REQUIRED error
// whose details name question_id): the task t waits here for the answer
// to questionID, as if t's handler had asked, and Wait returns the error
// the handler returns. When the question is not waiting any more (a
// cancel ended the task meanwhile), it returns ErrTaskEnded.
func (m *Member) Wait(ctx context.Context, t *Task, questionID string) error {
	r := m.r
	l, err := r.readTask(ctx, t.ID())
	if err != nil {
		return err
	}
	if l.pending == nil || l.pendingQ.ID != questionID {
		return wrap(ErrTaskEnded, "question "+questionID+" does not wait", nil)
	}
	r.await(t.ID(), l.pendingQ)
	t.pending, t.pendingEv = l.pendingQ, l.pending
	return wrap(ErrWaiting, questionID, nil)
}

// Settled forgets that the task waits here on questionID (on any
// question when it is ""): another process of the team answered it or
// ended the task, so this one's deadline timer must not fire.
func (m *Member) Settled(taskID, questionID string) { m.r.unawaitQuestion(taskID, questionID) }

// acquireRemote takes a concurrency slot of a for an attempt run for
// another process, waiting up to Options.QueueTimeout; false when none
// came or ts was cancelled.
func (r *Router) acquireRemote(ts *taskState, a *registry.Agent) bool {
	if r.reg.TryAcquire(a) {
		return true
	}
	deadline := time.NewTimer(r.opts.QueueTimeout)
	defer deadline.Stop()
	r.waiting.Add(1)
	defer r.waiting.Add(-1)
	for {
		wake := r.slots.C()
		if r.reg.TryAcquire(a) {
			return true
		}
		select {
		case <-wake:
		case <-deadline.C:
			return false
		case <-ts.ctx.Done():
			return false
		}
	}
}

// Follow returns a handle on req's task, which runs in another process,
// and the function that ends the handle: with the task's terminal event
// end, or, when end is nil, with a retryable INTERRUPTED outcome saying
// that this process stopped following the task (nothing is stored).
func (m *Member) Follow(req *protocol.Message) (*Handle, func(end *protocol.Message)) {
	r := m.r
	w := r.newTask(context.Background(), req, nil)
	w.claim.Store(claimTask)
	return &w.handle, func(end *protocol.Message) {
		if end != nil {
			w.resolve(outcomeOf(end))
			return
		}
		ep := &protocol.ErrorPayload{Code: protocol.CodeInterrupted, Retryable: true,
			Message: "this process left the team before the task ended in the process routing it"}
		w.resolve(&Outcome{TaskID: w.req.TaskID, Type: protocol.TypeTaskError, Message: r.errorEvent(w, r.opts.AgentID, ep), Err: ep})
	}
}

// Adopt claims in the router the stored task of req, which another
// process routed, to end or run it here: depth and chain are the task's
// delegation depth and chain, attempt its last attempt and agentID the
// agent of that attempt ("" when never routed). It returns nil when the
// task runs here already. The Adoption must be settled with exactly one
// of its methods.
func (m *Member) Adopt(ctx context.Context, req *protocol.Message, depth int, chain []string, attempt int, agentID string) (*Adoption, error) {
	r := m.r
	ts, old, err := r.claim(ctx, req, nil, claimStored)
	if err != nil {
		return nil, err
	}
	if old != nil {
		return nil, nil
	}
	ts.depth, ts.chain = depth, chain
	ts.attempt.Store(int32(attempt))
	if a, ok := r.reg.Get(agentID); ok {
		ts.agent.Store(a)
	}
	return &Adoption{r: r, ts: ts}, nil
}

// Adoption is a task Member.Adopt claimed in the router. Exactly one of
// Resolve, Finish, Interrupt, Route, Recover settles it; Hold keeps it
// claimed while its attempt runs elsewhere, and Finish settles it then.
type Adoption struct {
	r  *Router
	ts *taskState
}

// Asked settles an adopted task that asked a question (docs/protocol.md
// §2.7) and reports true: one that waits goes on waiting here (any
// process may answer it; this one arms its deadline), one answered but
// not run on since is resumed here. False for any other task, which the
// caller settles.
func (a *Adoption) Asked(ctx context.Context) bool {
	r, ts := a.r, a.ts
	l, err := r.readTask(ctx, ts.req.TaskID)
	if err != nil || l.terminal != nil {
		return false
	}
	if _, _, ok, err := r.goOnAsked(ts, l); ok {
		if err != nil {
			r.opts.Logger.Warn("router: resuming an adopted task that was answered", "task", ts.req.TaskID, "err", err)
		}
		return true
	}
	return false
}

// Resolve settles a task that ended meanwhile, end its terminal event.
func (a *Adoption) Resolve(end *protocol.Message) {
	a.ts.resolve(outcomeOf(end))
	a.r.unclaim(a.ts, claimTask)
}

// Hold makes the adoption the task in the router (a redelivery follows
// it) while its attempt runs in another process; it returns the task's
// context, which ends when the task is cancelled. Finish settles it.
func (a *Adoption) Hold() context.Context {
	a.r.settle(a.ts, claimTask)
	return a.ts.ctx
}

// Finish ends attempt attempt of agentID with its outcome, as the routing
// process would have: res (validated as a local result would be), or ep;
// a retryable ep with attempts left starts the next attempt unless
// noRetry. Neither (the task was cancelled) stores the task's
// task.cancel.
func (a *Adoption) Finish(agentID string, attempt int, res *Result, ep *protocol.ErrorPayload, noRetry bool) {
	r, ts := a.r, a.ts
	ts.attempt.Store(int32(attempt))
	switch {
	case ts.ctx.Err() != nil:
		r.onCancel(ts)
	case ep != nil:
		e := protocol.NewErrorPayload(ep)
		if e.Retryable && attempt < r.opts.MaxAttempts && !noRetry {
			retryEP := e
			retryEP.Details = mergeDetails(e.Details, map[string]any{"will_retry": true, "next_attempt": attempt + 1})
			if err := r.appendLive(ts.detached(), ts, r.errorEvent(ts, agentID, &retryEP)); err == nil {
				r.start(ts, attempt+1)
				return
			}
		}
		r.end(ts, Outcome{Err: &e}, r.errorEvent(ts, agentID, &e))
	case res != nil:
		result, verr := r.resultEvent(ts, agentID, res)
		if verr != nil {
			r.end(ts, Outcome{Err: verr}, r.errorEvent(ts, agentID, verr))
		} else {
			r.end(ts, Outcome{}, result)
		}
	default:
		r.onCancel(ts)
	}
	r.unclaim(ts, claimTask)
}

// Interrupt ends the task with a task.cancel giving why: a subtask whose
// delegating handler died with its process, cancelled as a subtask is
// when its parent's attempt ends.
func (a *Adoption) Interrupt(why string) {
	r, ts := a.r, a.ts
	ep := &protocol.ErrorPayload{Code: protocol.CodeCancelled, Message: why}
	m := r.event(ts, protocol.TypeTaskCancel, r.opts.AgentID, nil)
	r.setPayload(m, ep)
	r.end(ts, Outcome{Err: ep}, m)
	r.unclaim(ts, claimTask)
}

// Route routes the task here as attempt attempt.
func (a *Adoption) Route(attempt int) { a.r.start(a.ts, attempt) }

// Recover applies Options.Recovery to a task whose attempt died with its
// process (retrying: whose next attempt had not started):
// RecoverRedispatch routes attempt+1, RecoverFail ends the task with a
// retryable INTERRUPTED task.error.
func (a *Adoption) Recover(attempt int, retrying bool) {
	r, ts := a.r, a.ts
	if r.opts.Recovery == RecoverRedispatch {
		r.start(ts, attempt+1)
		return
	}
	ep := &protocol.ErrorPayload{Code: protocol.CodeInterrupted, Message: "the process routing the task stopped before it ended", Retryable: true}
	if retrying {
		ep.Message = "the process routing the task stopped before its next attempt"
	}
	r.end(ts, Outcome{Err: ep}, r.errorEvent(ts, r.opts.AgentID, ep))
	r.unclaim(ts, claimTask)
}

// endedElsewhere is end's answer when the store already holds an end of
// the attempt (stored by another process that adopted the task, or by an
// earlier append whose answer was lost): the stored event is the outcome.
func (r *Router) endedElsewhere(ts *taskState, seq uint64, last *protocol.Message, out Outcome) (*protocol.Message, Outcome) {
	ev, err := r.eventAt(ts.detached(), seq)
	if err != nil {
		r.opts.Logger.Warn("router: reading the stored end of a task", "task", ts.req.TaskID, "err", err)
		return last, out
	}
	m, err := ev.Message()
	if err != nil {
		return last, out
	}
	o := outcomeOf(m)
	o.TaskID = ts.req.TaskID
	return m, *o
}

// storeRequest stores a task's request; in a team, with the event of the
// team that names this process as the one routing it — on a
// store.Conditional only if the request is new, so that a redelivery
// under another task id leaves no owner event of a task that does not
// exist.
func (r *Router) storeRequest(ctx context.Context, ts *taskState) ([]store.AppendResult, error) {
	if h := r.team.Load(); h != nil {
		if o := h.team.Owner(ts.teamTask(), false); o != nil {
			if r.cond != nil {
				return r.cond.AppendIfNew(ctx, ts.req, o)
			}
			return r.st.Append(ctx, ts.req, o)
		}
	}
	// Through the task's buffer (its run goroutine has not started), so
	// that the argument list is not an allocation of its own.
	ts.evs[0] = ts.req
	res, err := r.st.Append(ctx, ts.evs[:1]...)
	ts.evs[0] = nil
	return res, err
}

// ownRetry stores, in a team, the event that says this process routes a
// task Retry runs again here.
func (r *Router) ownRetry(ctx context.Context, ts *taskState) error {
	h := r.team.Load()
	if h == nil {
		return nil
	}
	o := h.team.Owner(ts.teamTask(), true)
	if o == nil {
		return nil
	}
	_, err := r.st.Append(ctx, o)
	return err
}

// teamBudget applies Budget.MaxTasks through the team that counts ts
// (TeamTask.Count); a failed count ends the task.
func (r *Router) teamBudget(ts *taskState) (ep *protocol.ErrorPayload, ok bool) {
	max := r.opts.Budget.MaxTasks
	past, err := ts.counter.Count(ts.ctx, ts.teamTask(), max)
	if err == nil {
		if past {
			return tasksBudgetError(max), true
		}
		return nil, true
	}
	if ts.ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		r.onCancel(ts)
		return nil, false
	}
	e := protocol.NewErrorPayload(err)
	e.Message = "counting the run's tasks for its budget: " + e.Message
	r.end(ts, Outcome{Err: &e}, r.errorEvent(ts, r.opts.AgentID, &e))
	return nil, false
}
