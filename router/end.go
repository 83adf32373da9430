package router

import (
	"context"
	"errors"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
)

// cancelCause is the cause of a cancellation asked for through a Handle.
type cancelCause struct{ reason string }

func (c *cancelCause) Error() string { return "cancelled: " + c.reason }

// timeoutCause is the cause of an attempt passing its max_runtime_sec;
// one per attempt, so a subtask can tell its own timeout from its parent's.
type timeoutCause struct{ limit time.Duration }

func (c *timeoutCause) Error() string { return "max_runtime_sec of " + c.limit.String() + " passed" }

// end stores the terminal event(s) of a task exactly once and resolves its
// handle. It reports whether this call ended the task.
func (r *Router) end(ts *taskState, out Outcome, events ...*protocol.Message) bool {
	if !ts.finished.CompareAndSwap(false, true) {
		return false
	}
	last := events[len(events)-1]
	// Terminal events are stored even when the task's context is done.
	// They go through a buffer of the task, which only the caller that
	// ended the task uses, so that events does not escape (the callers'
	// arrays stay on their stacks).
	evs := append(ts.endEvs[:0], events...)
	_, err := r.st.Append(ts.detached(), evs...)
	clear(ts.endEvs[:])
	if err != nil {
		r.opts.Logger.Error("router: storing the terminal event failed", "task", ts.req.TaskID, "type", last.Type, "err", err)
		if out.Err == nil {
			out.Err = &protocol.ErrorPayload{Code: protocol.CodeInternal, Message: "storing the result failed: " + err.Error(), Retryable: true}
		}
	}
	out.TaskID = ts.req.TaskID
	out.Type = last.Type
	out.Message = last
	ts.out = out
	ts.outcome = &ts.out
	close(ts.done)
	return true
}

// storeFailed ends a task whose events could not be stored. When the
// append failed because the task was cancelled meanwhile, the task ends as
// cancelled: the cancellation is the cause, not the store.
func (r *Router) storeFailed(ts *taskState, err error) {
	if ts.ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		r.onCancel(ts)
		return
	}
	ep := &protocol.ErrorPayload{Code: protocol.CodeInternal, Message: "storing task events failed: " + err.Error(), Retryable: true}
	r.end(ts, Outcome{Err: ep}, r.errorEvent(ts, r.opts.AgentID, ep))
}

// cancelled stores the task.cancel of a task without a parent whose
// context was just cancelled, on a goroutine of its own so that the caller
// does not wait for the store, as context.AfterFunc would (subtasks use
// that; a context per task for it cost more than the rest of starting a
// task). Close does the same for the tasks it cancels.
func (r *Router) cancelled(ts *taskState) {
	if ts.parent != nil {
		return // its AfterFunc does it
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// While the task is in r.tasks its goroutine holds r.wg, so Add cannot
	// race with Close's Wait; once Close has begun, it ends the task.
	if r.closed || r.tasks[ts.req.TaskID] != ts || ts.finished.Load() {
		return
	}
	r.goOnCancel(ts)
}

// goOnCancel runs onCancel(ts) on a goroutine counted in r.wg. The caller
// makes sure the Add cannot race Close's Wait: the task's own goroutine
// still holds r.wg, or the caller is Close before its Wait.
func (r *Router) goOnCancel(ts *taskState) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		r.onCancel(ts)
	}()
}

// onCancel runs when the task's context ends before the task did.
func (r *Router) onCancel(ts *taskState) {
	if ts.finished.Load() {
		return
	}
	cause := context.Cause(ts.ctx)
	if errors.Is(cause, errRouterClosed) {
		ep := &protocol.ErrorPayload{Code: protocol.CodeInterrupted, Message: "the router closed while the task ran", Retryable: true}
		r.end(ts, Outcome{Err: ep}, r.errorEvent(ts, r.opts.AgentID, ep))
		return
	}
	reason := "cancelled"
	var cc *cancelCause
	var tc *timeoutCause
	switch {
	case errors.As(cause, &cc):
		reason = cc.reason
	case errors.As(cause, &tc):
		reason = "the parent task timed out"
	case cause != nil && !errors.Is(cause, context.Canceled):
		reason = cause.Error()
	case ts.parent != nil:
		reason = "the parent task ended"
	}
	ep := &protocol.ErrorPayload{Code: protocol.CodeCancelled, Message: reason}
	m := r.event(ts, protocol.TypeTaskCancel, r.opts.AgentID, nil)
	r.setPayload(m, ep)
	r.end(ts, Outcome{Err: ep}, m)
}

// onTimeout runs when an attempt passes the agent's max_runtime_sec.
func (r *Router) onTimeout(ts *taskState, cause *timeoutCause) {
	ep := &protocol.ErrorPayload{Code: protocol.CodeTimeout, Message: cause.Error(), Retryable: true,
		Details: map[string]any{"agent": ts.agentID(), "max_runtime_sec": int(cause.limit / time.Second)}}
	m := r.event(ts, protocol.TypeTaskTimeout, r.opts.AgentID, nil)
	r.setPayload(m, ep)
	r.end(ts, Outcome{Err: ep}, m)
}

// forget removes a task that has returned from the router's maps.
func (r *Router) forget(ts *taskState) {
	ts.cancel(nil)
	r.mu.Lock()
	if r.tasks[ts.req.TaskID] == ts {
		delete(r.tasks, ts.req.TaskID)
	}
	if rs := r.runs[ts.req.RunID]; rs != nil {
		rs.open--
		if rs.open <= 0 {
			delete(r.runs, ts.req.RunID)
		}
	}
	if p := ts.parent; p != nil {
		for i, c := range p.children {
			if c == ts {
				p.children = append(p.children[:i], p.children[i+1:]...)
				break
			}
		}
	}
	r.mu.Unlock()
}
