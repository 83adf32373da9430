package router

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
)

// Observer watches the attempts of every task a router runs, for
// telemetry: package telemetry implements it with OpenTelemetry traces,
// metrics and slog records. Set it in Options.Observer. A middleware sees
// only the handler; an Observer also sees what happens before and around
// it — routing, queueing, retries, timeouts, cancellations — and chooses
// the trace context the task's events carry.
//
// Its methods are called synchronously on the router's goroutines, some
// while the task's state is locked: they must return quickly and must not
// call into the router for the same task. What they are given is valid
// during the call only (the router reuses the routing decision).
type Observer interface {
	// StartAttempt is called when an attempt of a task begins, before
	// it is routed (and before a run budget may refuse it). ctx carries
	// the values of the context the task was submitted with — for a
	// subtask, of the attempt that delegated it — or, for a later
	// attempt, is the context the previous attempt's StartAttempt
	// returned. It returns the attempt's context, which must be ctx or
	// derived from it: the handler's context and the contexts of its
	// subtasks inherit its values, and it is the context Observe is
	// called with for the attempt. It also returns the trace context stamped on every event
	// the router stores for the attempt (routing events, task.accept,
	// task.progress, tool events, the terminal event, delegated
	// requests), or nil to leave them the request's.
	StartAttempt(ctx context.Context, req *protocol.Message, attempt int) (context.Context, *protocol.Trace)
	// Observe is told each later step of an attempt, in order, with the
	// context StartAttempt returned. A task that ends without having
	// started an attempt (refused because the router closed, failed by
	// Recover after a restart) is observed with its submission context,
	// StepEnd only.
	Observe(ctx context.Context, s Step)
}

// StepKind says what happened to an attempt (see Step).
type StepKind uint8

// The steps of an attempt, in the order they can happen.
const (
	// StepQueued: every matching agent is at its max_concurrency, and
	// the task waits in the router's queue.
	StepQueued StepKind = iota + 1
	// StepRouted: the routing.decision and task.accept are stored
	// (Event is the decision, Decision its payload, Agent the selected
	// agent's card, QueueWait the time spent queued).
	StepRouted
	// StepUnrouted: no agent could take the task; a routing.failure is
	// about to end it (Err, QueueWait). StepEnd follows.
	StepUnrouted
	// StepEvent: the handler is about to store Event (Task.Progress,
	// Task.Emit: tool calls and results among others). The observer may
	// set Event.Trace: the router encodes the event after this call.
	StepEvent
	// StepRetry: the attempt failed with a retryable error (Err) and
	// the task will be tried again; Event is the task.error stored.
	StepRetry
	// StepEnd: the task's terminal event (Event: task.result,
	// task.error, task.cancel or task.timeout) is stored — or could not
	// be — and Err is its error (nil for task.result). It is the last
	// step of the task.
	StepEnd
)

// Step is one step of an attempt, given to Observer.Observe.
type Step struct {
	Kind     StepKind
	Request  *protocol.Message // the task.request
	Attempt  int
	Agent    *protocol.AgentCard // the agent running the attempt; nil before routing
	Event    *protocol.Message   // see the step kinds
	Decision *protocol.RoutingDecision
	Err      *protocol.ErrorPayload
	// QueueWait is how long the attempt waited for an agent's capacity
	// (StepRouted, StepUnrouted, and StepEnd of an attempt cancelled
	// while queued).
	QueueWait time.Duration
}

// attemptObs is what the router keeps of an observed attempt.
type attemptObs struct {
	ctx     context.Context
	trace   *protocol.Trace
	attempt int
	agent   atomic.Pointer[protocol.AgentCard] // the card of the agent routed to, once routed
	// When the attempt began to wait (UnixNano, 0 when it does not) and
	// how long it waited: set by the task's goroutine, read by whichever
	// goroutine ends the task.
	queuedAt atomic.Int64
	waited   atomic.Int64
}

// startAttempt tells the observer that an attempt of ts begins.
func (r *Router) startAttempt(ts *taskState) {
	o := r.opts.Observer
	if o == nil {
		return
	}
	n := int(ts.attempt.Load())
	base := ts.ctx
	if prev := ts.obs.Load(); prev != nil {
		base = prev.ctx // a retry: the observer finds the first attempt's state there
	}
	ctx, tr := o.StartAttempt(base, ts.req, n)
	if ctx == nil {
		ctx = ts.ctx
	}
	ts.obs.Store(&attemptObs{ctx: ctx, trace: tr, attempt: n})
}

// observe tells the observer of a step of ts's current attempt.
func (r *Router) observe(ts *taskState, s Step) {
	o := r.opts.Observer
	if o == nil {
		return
	}
	s.Request = ts.req
	ctx := ts.ctx
	if ob := ts.obs.Load(); ob != nil {
		ctx = ob.ctx
		if s.Attempt == 0 {
			s.Attempt = ob.attempt
		}
		if s.QueueWait == 0 {
			s.QueueWait = ob.queueWait()
		}
	}
	if s.Attempt == 0 {
		s.Attempt = int(ts.attempt.Load())
	}
	if s.Agent == nil {
		if ob := ts.obs.Load(); ob != nil {
			s.Agent = ob.agent.Load() // nil before this attempt was routed
		} else if a := ts.agent.Load(); a != nil {
			s.Agent = a.Card()
		}
	}
	o.Observe(ctx, s)
}

// queueWait is how long the attempt waited, or has waited so far.
func (ob *attemptObs) queueWait() time.Duration {
	if at := ob.queuedAt.Load(); at != 0 {
		return time.Duration(time.Now().UnixNano() - at)
	}
	return time.Duration(ob.waited.Load())
}

// queued records that ts's attempt waits for capacity from now.
func (r *Router) queued(ts *taskState) {
	if ob := ts.obs.Load(); ob != nil && ob.queuedAt.Load() == 0 {
		ob.queuedAt.Store(time.Now().UnixNano())
		r.observe(ts, Step{Kind: StepQueued})
	}
}

// dequeued records that ts's attempt stopped waiting.
func (ts *taskState) dequeued() {
	if ob := ts.obs.Load(); ob != nil {
		if at := ob.queuedAt.Swap(0); at != 0 {
			ob.waited.Add(time.Now().UnixNano() - at)
		}
	}
}

// attemptCtx returns the context of ts's current attempt: the task's
// context, with the observer's values when there is one.
func (ts *taskState) attemptCtx() context.Context {
	if ob := ts.obs.Load(); ob != nil {
		return ob.ctx
	}
	return ts.ctx
}

// stamp sets the trace context of ts's current attempt on m.
func (ts *taskState) stamp(m *protocol.Message) {
	if ob := ts.obs.Load(); ob != nil && ob.trace != nil {
		m.Trace = ob.trace
	}
}

// Trace returns the trace context of the attempt: the one its events
// carry (see Observer), or the request's when no Observer set one. It is
// what an adapter forwarding the task to another process propagates (a
// W3C traceparent, see protocol.Trace.Traceparent). Do not modify it.
func (t *Task) Trace() *protocol.Trace {
	if ob := t.ts.obs.Load(); ob != nil && ob.trace != nil {
		return ob.trace
	}
	return t.ts.req.Trace
}
