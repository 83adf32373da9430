package router

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router/internal/idem"
	"github.com/clutchprotocol/clutch/store"
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
//
// The terminal event is always storable: when the store refuses events
// (a result over its event size limit, say), end stores in their place a
// small task.error — TOO_LARGE for an event over the limit, INTERNAL
// (retryable) for any other failure — so that the log ends the task and
// the outcome is what the log holds. Only when the store refuses that too
// (closed, failing) does the task end without a terminal event in the
// log; its outcome then says so, and Recover ends it after a restart.
func (r *Router) end(ts *taskState, out Outcome, events ...*protocol.Message) bool {
	ts.emu.Lock()
	defer ts.emu.Unlock()
	if !ts.finished.CompareAndSwap(false, true) {
		return false
	}
	last := events[len(events)-1]
	if last.IdempotencyKey == "" {
		last.IdempotencyKey = idem.End(ts.req.TaskID, last.Attempt) // fencing: one end per attempt (team.go)
		last.Reset()                                                // bytes encoded without the key
	}
	// Terminal events are stored even when the task's context is done.
	// They go through a buffer of the task, which only the caller that
	// ended the task uses, so that events does not escape (the callers'
	// arrays stay on their stacks).
	evs := append(ts.endEvs[:0], events...)
	res, err := r.st.Append(ts.detached(), evs...)
	clear(ts.endEvs[:])
	switch {
	case err != nil:
		last, out.Err = r.storeFallback(ts, last, err)
	case res[len(res)-1].Duplicate:
		last, out = r.endedElsewhere(ts, res[len(res)-1].Seq, last, out) // team.go
	}
	out.TaskID = ts.req.TaskID
	out.Type = last.Type
	out.Message = last
	ts.out = out
	ts.outcome = &ts.out
	r.observe(ts, Step{Kind: StepEnd, Event: last, Err: out.Err})
	close(ts.done)
	return true
}

// appendLive stores events of a task that has not ended, and refuses them
// with ErrTaskEnded once it has: ordered with end, so that no event of an
// attempt follows the task's terminal event in the log.
func (r *Router) appendLive(ctx context.Context, ts *taskState, msgs ...*protocol.Message) error {
	ts.emu.Lock()
	defer ts.emu.Unlock()
	if ts.finished.Load() {
		return ErrTaskEnded
	}
	_, err := r.st.Append(ctx, msgs...)
	return err
}

// maxStoreErrorText bounds the store's error text in a fallback
// task.error, which must stay small.
const maxStoreErrorText = 256

// storeFallback stores the task.error that ends a task whose terminal
// event last the store refused with err, and returns it and its error.
func (r *Router) storeFallback(ts *taskState, last *protocol.Message, err error) (*protocol.Message, *protocol.ErrorPayload) {
	r.opts.Logger.Error("router: storing the terminal event failed", "task", ts.req.TaskID, "type", last.Type, "err", err)
	ep := &protocol.ErrorPayload{Code: protocol.CodeInternal, Retryable: true,
		Details: map[string]any{"event": string(last.Type)}}
	var tl *store.TooLargeError
	switch {
	case errors.As(err, &tl):
		ep.Code, ep.Retryable = protocol.CodeTooLarge, false
		ep.Message = fmt.Sprintf("the %s event is %d bytes, over the store's limit of %d", last.Type, tl.Size, tl.Limit)
		ep.Details["size"], ep.Details["limit"] = tl.Size, tl.Limit
	case errors.Is(err, store.ErrTooLarge):
		ep.Code, ep.Retryable = protocol.CodeTooLarge, false
		ep.Message = fmt.Sprintf("the %s event is over the store's size limit", last.Type)
	default:
		msg := err.Error()
		if len(msg) > maxStoreErrorText {
			msg = strings.ToValidUTF8(msg[:maxStoreErrorText], "") + "..."
		}
		ep.Message = "storing the " + string(last.Type) + " event failed: " + msg
	}
	fb := r.errorEvent(ts, r.opts.AgentID, ep)
	fb.IdempotencyKey = idem.End(ts.req.TaskID, fb.Attempt)
	if res, err := r.st.Append(ts.detached(), fb); err == nil && res[0].Duplicate {
		// The first append was stored after all (a commit whose answer
		// was lost), or another process ended the attempt.
		m, o := r.endedElsewhere(ts, res[0].Seq, fb, Outcome{Err: ep})
		return m, o.Err
	} else if err != nil {
		r.opts.Logger.Error("router: storing the fallback task.error failed; the log holds no terminal event for the task", "task", ts.req.TaskID, "err", err)
		return fb, &protocol.ErrorPayload{Code: protocol.CodeInternal, Retryable: true,
			Message: "no terminal event could be stored: " + ep.Message}
	}
	return fb, ep
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
// task). Shutdown does the same for the tasks it cancels.
func (r *Router) cancelled(ts *taskState) {
	if ts.parent != nil {
		return // its AfterFunc does it
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// Once Shutdown has begun, it ends the task.
	if r.closed || r.tasks[ts.req.TaskID] != ts || !ts.started || ts.finished.Load() {
		return
	}
	r.goOnCancel(ts)
}

// goOnCancel runs onCancel(ts) on a goroutine counted in r.live; r.mu is
// held.
func (r *Router) goOnCancel(ts *taskState) {
	r.live++
	go func() {
		defer r.doneLive()
		r.onCancel(ts)
	}()
}

// doneLive counts a goroutine of the router out, and tells Shutdown when
// none is left.
func (r *Router) doneLive() {
	r.mu.Lock()
	r.doneLiveLocked()
	r.mu.Unlock()
}

func (r *Router) doneLiveLocked() {
	r.live--
	if r.live == 0 && r.drained != nil {
		close(r.drained)
		r.drained = nil
	}
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

// forget removes a task whose goroutine is returning from the router's
// maps and counts.
func (r *Router) forget(ts *taskState) {
	ts.cancel(nil)
	r.mu.Lock()
	if r.tasks[ts.req.TaskID] == ts {
		delete(r.tasks, ts.req.TaskID)
	} else {
		delete(r.stale, ts)
	}
	r.inFlight--
	r.doneLiveLocked()
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
