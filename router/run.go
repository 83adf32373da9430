package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router/internal/idem"
)

// taskState is a task the router is running.
type taskState struct {
	req      *protocol.Message
	parent   *taskState
	children []*taskState // guarded by Router.mu
	depth    int
	chain    []string                       // agents above the root task in another process (team.go)
	attempt  atomic.Int32                   // current attempt; written by the run goroutine, read by cancels too
	agent    atomic.Pointer[registry.Agent] // the agent of the current attempt

	ctx    context.Context
	cancel context.CancelCauseFunc
	base   context.Context                 // ctx's parent
	runCtx atomic.Pointer[context.Context] // the context of the running attempt
	obs    atomic.Pointer[attemptObs]      // the attempt as Options.Observer sees it (observe.go)

	finished atomic.Bool
	emu      sync.Mutex // orders the task's appends with end (appendLive)
	done     chan struct{}
	outcome  *Outcome

	routeAs *protocol.Message // the request as routed, when not req: resumed after an answer, pinned to the agent that asked (ask.go)
	resumes int               // attempts that resumed after an answer: they do not count toward MaxAttempts

	claim    atomic.Int32 // claimPending, claimTask or claimDropped (see claim)
	started  bool         // its goroutine was started; guarded by Router.mu
	storing  bool         // its request is counted in Router.storing; guarded by Router.mu
	deciding bool         // its request is in Router.deciding; guarded by Router.mu
	behind   bool         // claimed while another submission of its request id was deciding (submitNow)

	// Parts of the task allocated with it, not each on its own.
	handle    Handle                 // the handle Submit returns
	out       Outcome                // what outcome points to, once ended
	task      Task                   // the handler's view of the first attempt
	ownRun    runState               // the run's state, when this task started the run
	budgetErr *protocol.ErrorPayload // the run's budget refused the task
	reqSeq    uint64                 // the seq of the stored request, when known (TeamTask.Seq)
	counter   Team                   // counts Budget.MaxTasks for the whole team, nil when the router does
	accepted  *match                 // routed at Submit, its decision and accept stored with the request (submitNow)
	decision  *protocol.Message      // the routing.decision of accepted
	evs       [4]*protocol.Message   // events being stored by the run goroutine, or by Submit (submitNow)
	endEvs    [2]*protocol.Message   // terminal events being stored by end's caller
}

// routed is the request as routed: routeAs when set, else req.
func (ts *taskState) routed() *protocol.Message {
	if ts.routeAs != nil {
		return ts.routeAs
	}
	return ts.req
}

func (ts *taskState) agentID() string {
	if a := ts.agent.Load(); a != nil {
		return a.ID()
	}
	return ""
}

// detached returns a context with the values of ts.ctx that is never
// done, for the events that are stored whatever happened to the task.
func (ts *taskState) detached() context.Context {
	if ts.base != nil && ts.base.Done() == nil {
		return ts.base // a root task's base is detached already: no allocation
	}
	return context.WithoutCancel(ts.ctx)
}

// ancestors returns the agents on the task's delegation chain: its
// parents' agents here, then the chain of the root (a task run for
// another process carries the chain above it there; see team.go).
func (ts *taskState) ancestors() []string {
	var out []string
	p := ts
	for ; p.parent != nil; p = p.parent {
		if a := p.parent.agentID(); a != "" {
			out = append(out, a)
		}
	}
	return append(out, p.chain...)
}

// run drives one task from routing to its terminal event.
func (r *Router) run(ts *taskState) {
	defer r.forget(ts)
	// However run returns, a cancelled task that nothing ended yet ends
	// here (Cancel, Close and the AfterFunc only make it happen sooner; any
	// of them can lose the race with this goroutine's return).
	defer func() {
		if !ts.finished.Load() && ts.ctx.Err() != nil {
			r.onCancel(ts)
		}
	}()
	if ts.parent != nil {
		// A subtask's context also ends with its parent's attempt: store
		// its task.cancel then. A task without a parent is only cancelled
		// by Handle.Cancel and Close, which call goOnCancel.
		stop := context.AfterFunc(ts.ctx, func() { r.onCancel(ts) })
		defer stop()
	}
	var retry bool
	if m := ts.accepted; m != nil {
		// Routed and accepted at Submit, stored with the request
		// (docs/protocol.md §5.1): the first attempt runs at once.
		decision := ts.decision
		ts.accepted, ts.decision = nil, nil
		if ts.ctx.Err() != nil {
			// Cancelled before it ran: the deferred onCancel ends it.
			r.release(m.selected, false)
			r.freeMatch(m)
			return
		}
		retry = r.runAttempt(ts, m, decision)
		r.freeMatch(m)
	} else {
		r.startAttempt(ts)
		if ts.budgetErr == nil && ts.counter != nil {
			ep, ok := r.teamBudget(ts) // team.go
			if !ok {
				return
			}
			ts.budgetErr = ep
		}
		if ep := ts.budgetErr; ep != nil {
			r.end(ts, Outcome{Err: ep}, r.errorEvent(ts, r.opts.AgentID, ep))
			return
		}
		retry = r.routeAndRun(ts)
	}
	for retry {
		wait := time.NewTimer(r.opts.Backoff(int(ts.attempt.Load())))
		select {
		case <-wait.C:
		case <-ts.ctx.Done():
			wait.Stop()
			return
		}
		ts.attempt.Add(1)
		r.startAttempt(ts)
		retry = r.routeAndRun(ts)
	}
}

// routeAndRun routes ts's attempt and runs it; it reports whether the
// task should be tried again.
func (r *Router) routeAndRun(ts *taskState) (retry bool) {
	m := r.routeTask(ts)
	if m == nil {
		return false
	}
	retry = r.attempt(ts, m)
	r.freeMatch(m)
	return retry
}

// routeTask finds an agent and takes one of its concurrency slots, waiting
// in the bounded queue while every matching agent is busy. It returns nil
// when the task ended (a routing.failure was stored, or it was cancelled).
func (r *Router) routeTask(ts *taskState) *match {
	defer ts.dequeued()
	var deadline <-chan time.Time
	for {
		if ts.ctx.Err() != nil {
			return nil
		}
		m := r.route(ts.routed(), ts.ancestors())
		if m.selected != nil {
			if r.reg.TryAcquire(m.selected) {
				return m
			}
			r.freeMatch(m)
			continue // lost a race for the last slot: route again
		}
		if !m.onlyBusy() {
			r.routingFailure(ts, m, "")
			r.freeMatch(m)
			return nil
		}
		if deadline == nil {
			t := time.NewTimer(r.opts.QueueTimeout)
			defer t.Stop()
			deadline = t.C
		}
		if n := r.waiting.Add(1); n > int64(r.opts.MaxQueued) {
			r.waiting.Add(-1)
			r.routingFailure(ts, m, fmt.Sprintf("the wait queue is full (%d tasks)", r.opts.MaxQueued))
			r.freeMatch(m)
			return nil
		}
		r.queued(ts)
		wake := r.slots.C()
		// Re-check after registering as a waiter: a slot may have freed in
		// between.
		again := r.route(ts.routed(), ts.ancestors())
		retry := again.selected != nil || !again.onlyBusy()
		r.freeMatch(again)
		if retry {
			r.waiting.Add(-1)
			r.freeMatch(m)
			continue
		}
		select {
		case <-wake:
			r.waiting.Add(-1)
			r.freeMatch(m)
		case <-deadline:
			r.waiting.Add(-1)
			r.routingFailure(ts, m, "no capacity within the queue timeout of "+r.opts.QueueTimeout.String())
			r.freeMatch(m)
			return nil
		case <-ts.ctx.Done():
			r.waiting.Add(-1)
			r.freeMatch(m)
			return nil
		}
	}
}

// routingFailure stores routing.failure and the task.error that ends the
// task (docs/protocol.md §2.5, §4.2).
func (r *Router) routingFailure(ts *taskState, m *match, detail string) {
	code, msg := m.failure(capabilityRequires(ts.req.Requires))
	if detail != "" {
		msg += ": " + detail
	}
	details := map[string]any{"requires": nonNilStrings(ts.req.Requires)}
	if len(m.rejected) > 0 {
		rej := make(map[string]any, len(m.rejected))
		for k, v := range m.rejected {
			rej[k] = v
		}
		details["rejected"] = rej
	}
	ep := &protocol.ErrorPayload{Code: code, Message: msg, Retryable: code.Retryable(), Details: details}
	fail := r.event(ts, protocol.TypeRoutingFailure, r.opts.AgentID, nil)
	r.setPayload(fail, ep)
	r.observe(ts, Step{Kind: StepUnrouted, Event: fail, Err: ep})
	r.end(ts, Outcome{Err: ep}, fail, r.errorEvent(ts, r.opts.AgentID, ep))
}

func nonNilStrings(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// attempt runs one attempt on the selected agent. It reports whether the
// task should be tried again.
func (r *Router) attempt(ts *taskState, m *match) (retry bool) {
	a := m.selected
	decision, accept := r.acceptEvents(ts, m)
	ts.evs = [4]*protocol.Message{decision, accept}
	evs := ts.evs[:2]
	if t := r.team.Load(); t != nil {
		// An agent of another process: its dispatch too (team.go).
		if d := t.team.Dispatch(ts.teamTask()); d != nil {
			evs = append(evs, d)
		}
	}
	err := r.appendLive(ts.ctx, ts, evs...)
	ts.evs = [4]*protocol.Message{}
	if err != nil {
		r.release(a, false)
		if !errors.Is(err, ErrTaskEnded) {
			r.storeFailed(ts, err)
		}
		return false
	}
	return r.runAttempt(ts, m, decision)
}

// acceptEvents returns the routing.decision and task.accept of ts's
// attempt on the agent m selected, and makes it the agent of the attempt.
func (r *Router) acceptEvents(ts *taskState, m *match) (decision, accept *protocol.Message) {
	a := m.selected
	ts.agent.Store(a)
	decision = r.event(ts, protocol.TypeRoutingDecision, r.opts.AgentID, []string{a.ID()})
	r.setPayload(decision, m.decision())
	accept = r.event(ts, protocol.TypeTaskAccept, a.ID(), nil)
	return decision, accept
}

// runAttempt runs the handler of an attempt whose routing.decision and
// task.accept are stored, on the agent m selected, whose slot it holds,
// and ends the attempt. It reports whether the task should be tried
// again.
func (r *Router) runAttempt(ts *taskState, m *match, decision *protocol.Message) (retry bool) {
	a := m.selected
	dp := &m.dec // as acceptEvents filled it (match.decision)
	// Subtasks live inside the attempt that delegated them (runCtx).
	ctx, rc := ts.ctx, &ts.ctx // ts.ctx is set before the task runs and never changes
	if ob := ts.obs.Load(); ob != nil {
		ob.agent.Store(a.Card())
		r.observe(ts, Step{Kind: StepRouted, Event: decision, Decision: dp, Agent: a.Card()})
		ctx, rc = ob.ctx, &ob.ctx // the observer's values, same cancellation
	}
	var cause *timeoutCause
	if card := a.Card(); card.Limits != nil && card.Limits.MaxRuntimeSec > 0 {
		var cleanup func()
		ctx, cause, cleanup = r.limit(ts, ctx, time.Duration(card.Limits.MaxRuntimeSec)*time.Second)
		defer cleanup()
	} else {
		ts.runCtx.Store(rc)
	}
	t := &ts.task
	if t.r != nil {
		t = new(Task) // a retry: the first attempt's Task may still be referenced
	}
	*t = Task{r: r, ts: ts, agent: a, attempt: int(ts.attempt.Load())}
	res, err := r.call(ctx, r.handler(a.ID()), t)
	// A timeout or cancellation wins over what the handler returned after
	// it; end() stores whichever comes first, once.
	switch {
	case cause != nil && context.Cause(ctx) == cause:
		r.onTimeout(ts, cause)
	case ts.ctx.Err() != nil:
		r.onCancel(ts)
	}
	if ts.finished.Load() {
		r.release(a, false)
		if t.pending != nil {
			r.unawait(ts.req.TaskID) // it asked, but a cancel or timeout ended it
		}
		return false
	}
	if t.pending != nil {
		// The handler asked: the task waits for the answer, whatever it
		// returned after (ask.go).
		r.release(a, true)
		r.park(ts, t)
		return false
	}
	if err != nil {
		wire := wireError(err)
		ep := &wire
		r.release(a, false)
		if n := int(ts.attempt.Load()) - ts.resumes; ep.Retryable && n < r.opts.MaxAttempts {
			if ts.ctx.Err() != nil {
				// It would be retried but for the cancel, which wins.
				r.onCancel(ts)
				return false
			}
			retryEP := *ep
			retryEP.Details = mergeDetails(ep.Details, map[string]any{"will_retry": true, "next_attempt": int(ts.attempt.Load()) + 1})
			ev := r.errorEvent(ts, a.ID(), &retryEP)
			if err := r.appendLive(ts.ctx, ts, ev); err != nil {
				if !errors.Is(err, ErrTaskEnded) {
					r.storeFailed(ts, err)
				}
				return false
			}
			r.observe(ts, Step{Kind: StepRetry, Event: ev, Err: &retryEP})
			return true
		}
		r.end(ts, Outcome{Err: ep}, r.errorEvent(ts, a.ID(), ep))
		return false
	}
	result, verr := r.resultEvent(ts, a.ID(), res)
	if verr != nil {
		r.release(a, false)
		r.end(ts, Outcome{Err: verr}, r.errorEvent(ts, a.ID(), verr))
		return false
	}
	r.release(a, true)
	r.end(ts, Outcome{}, result)
	return false
}

// limit gives an attempt its max_runtime_sec: the attempt's context, the
// cause its deadline sets, and what to call when the attempt is over.
func (r *Router) limit(ts *taskState, parent context.Context, limit time.Duration) (context.Context, *timeoutCause, func()) {
	cause := &timeoutCause{limit}
	// Real time, not the router's clock: tests may freeze that one.
	ctx, cancel := context.WithTimeoutCause(parent, limit, cause)
	// Store task.timeout at the deadline even if the handler ignores its
	// context.
	stop := context.AfterFunc(ctx, func() {
		if context.Cause(ctx) == cause {
			r.onTimeout(ts, cause)
		}
	})
	ts.runCtx.Store(&ctx)
	return ctx, cause, func() { stop(); cancel() }
}

func (r *Router) release(a *registry.Agent, ok bool) {
	r.reg.Release(a, ok)
	if r.waiting.Load() > 0 {
		r.slots.Broadcast()
	}
}

// call runs the handler; a panic becomes an INTERNAL error (docs/protocol.md §5.4: a
// panicking handler never crashes the host).
func (r *Router) call(ctx context.Context, h Handler, t *Task) (res *Result, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.opts.Logger.Error("router: handler panicked", "agent", t.agent.ID(), "task", t.ID(), "panic", p, "stack", string(debug.Stack()))
			res, err = nil, &protocol.ErrorPayload{Code: protocol.CodeInternal, Message: fmt.Sprintf("handler panicked: %v", p), Retryable: true}
		}
	}()
	if h == nil {
		return nil, &protocol.ErrorPayload{Code: protocol.CodeNotFound, Message: "agent " + t.agent.ID() + " has no handler"}
	}
	return h(context.WithValue(ctx, taskKey{}, t), t)
}

// wireError is the wire error of a handler's error. An error that wraps
// a *protocol.ErrorPayload (a failed delegation returned as
// fmt.Errorf("research: %w", err)) keeps that payload's code,
// retryability and details, and the handler's own words: the message is
// the whole error's text, with the payload's message in place of the
// payload's "CODE: message" form.
func wireError(err error) protocol.ErrorPayload {
	wire := protocol.NewErrorPayload(err)
	var inner *protocol.ErrorPayload
	if errors.As(err, &inner) && err != error(inner) {
		wire.Message = strings.Replace(err.Error(), inner.Error(), inner.Message, 1)
	}
	return wire
}

func mergeDetails(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// resultEvent builds the task.result of a handler's Result and validates it
// (docs/protocol.md §3). An invalid result gives a VALIDATION error whose details
// keep the result for audit.
func (r *Router) resultEvent(ts *taskState, from string, res *Result) (*protocol.Message, *protocol.ErrorPayload) {
	if res == nil {
		res = &Result{}
	}
	m := r.event(ts, protocol.TypeTaskResult, from, nil)
	m.IdempotencyKey = idem.End(ts.req.TaskID, m.Attempt) // before it is encoded (end.go)
	m.PayloadType = res.PayloadType
	m.SchemaRef = protocol.SchemaRefFor(res.PayloadType)
	m.Attachments = res.Attachments
	if err := m.SetPayload(res.Payload); err != nil {
		return nil, &protocol.ErrorPayload{Code: protocol.CodeValidation, Message: "result payload is not JSON: " + err.Error()}
	}
	if step, ok := ts.req.Meta[protocol.MetaStep]; ok {
		// The request named its workflow step; the result answers it.
		m.Meta = map[string]any{protocol.MetaStep: step}
	}
	_, err := protocol.Encode(m) // validated and encoded once, before the schema check
	if err == nil {
		err = r.validate(m)
	}
	if err != nil {
		details := map[string]any{"payload_type": res.PayloadType, "result": json.RawMessage(m.Payload)}
		addErrorDetails(details, err)
		return nil, &protocol.ErrorPayload{Code: protocol.CodeValidation, Message: "result rejected: " + err.Error(), Details: details}
	}
	return m, nil
}

// event returns a new message of the task: same thread, run, task and
// parent, the current attempt, from "from", to the given agents or the
// requester.
func (r *Router) event(ts *taskState, t protocol.Type, from string, to []string) *protocol.Message {
	req := ts.req
	m := r.ids.Reply(req, t, from) // id and ts under one lock of the id source
	m.Attempt = int(ts.attempt.Load())
	ts.stamp(m)
	switch {
	case len(to) == 1:
		m.To[0].AgentID = to[0] // Reply's one recipient, readdressed
	case to != nil:
		m.To = make([]protocol.Participant, len(to))
		for i, id := range to {
			m.To[i].AgentID = id
		}
	}
	return m
}

func (r *Router) setPayload(m *protocol.Message, v any) {
	if err := m.SetPayload(v); err != nil {
		// Only the router's own types go through here.
		panic(fmt.Sprintf("router: encoding %s payload: %v", m.Type, err))
	}
}

func (r *Router) errorEvent(ts *taskState, from string, ep *protocol.ErrorPayload) *protocol.Message {
	m := r.event(ts, protocol.TypeTaskError, from, nil)
	r.setPayload(m, ep)
	return m
}
