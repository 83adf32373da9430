package router

import (
	"context"
	"slices"

	"github.com/clutchprotocol/clutch/protocol"
)

// Shutdown stops the router, like http.Server.Shutdown: it refuses new
// submissions (ErrClosed), cancels the context of every running handler,
// stores for each running task a retryable task.error of code INTERRUPTED
// (unless the task ended first), and waits until every handler has
// returned or ctx ends. It does not close the store.
//
// When every handler returned, Shutdown returns nil. When ctx ends first,
// it abandons the handlers still running — a handler that ignores its
// context, or one past its max_runtime_sec — and returns a
// *ShutdownError naming their tasks, which matches ErrAbandoned and ctx's
// error (errors.Is(err, context.DeadlineExceeded)). Each abandoned task
// has its terminal event stored already; its goroutine cannot be killed
// and lives on until its handler returns, and events the handler tries to
// store after that are refused with ErrTaskEnded. Call Shutdown again to
// wait for them.
func (r *Router) Shutdown(ctx context.Context) error {
	r.mu.Lock()
	var running []*taskState
	if !r.closed {
		r.closed = true
		for id, w := range r.asking { // waiting tasks stay waiting in the log: Recover arms them again
			if w.timer != nil {
				w.timer.Stop()
			}
			delete(r.asking, id)
		}
		for _, ts := range r.tasks {
			if ts.started {
				running = append(running, ts)
			}
		}
		for ts := range r.stale { // ended, handler still running
			running = append(running, ts)
		}
	}
	r.mu.Unlock()
	for _, ts := range running {
		ts.cancel(errRouterClosed)
	}
	if len(running) > 0 {
		r.mu.Lock()
		for _, ts := range running {
			if ts.parent == nil && !ts.finished.Load() { // subtasks: their AfterFunc stores it
				r.goOnCancel(ts)
			}
		}
		r.mu.Unlock()
	}
	if err := r.waitDrained(ctx); err != nil {
		return r.abandon(err)
	}
	r.pool.close()
	return nil
}

// Close is Shutdown with a deadline of DefaultCloseTimeout: it cancels
// every running task, ending each with a retryable INTERRUPTED
// task.error, waits up to DefaultCloseTimeout for the handlers to return,
// and refuses new submissions. Handlers still running then are abandoned
// and reported in a *ShutdownError. It does not close the store.
func (r *Router) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), DefaultCloseTimeout)
	defer cancel()
	return r.Shutdown(ctx)
}

// waitDrained waits until no goroutine of the router runs, or ctx ends.
func (r *Router) waitDrained(ctx context.Context) error {
	r.mu.Lock()
	if r.live == 0 {
		r.mu.Unlock()
		return nil
	}
	if r.drained == nil {
		r.drained = make(chan struct{})
	}
	ch := r.drained
	r.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// abandon ends what is left running when Shutdown's context ended with
// err, and reports it.
func (r *Router) abandon(err error) error {
	r.mu.Lock()
	var left []*taskState
	for _, ts := range r.tasks {
		if ts.started {
			left = append(left, ts)
		}
	}
	for ts := range r.stale {
		left = append(left, ts)
	}
	r.mu.Unlock()
	ids := make([]string, 0, len(left))
	for _, ts := range left {
		ids = append(ids, ts.req.TaskID)
		if !ts.finished.Load() {
			// Normally ended already by the cancel; this one is not
			// waited for.
			ep := &protocol.ErrorPayload{Code: protocol.CodeInterrupted, Message: "the router shut down while the task ran", Retryable: true}
			r.end(ts, Outcome{Err: ep}, r.errorEvent(ts, r.opts.AgentID, ep))
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	r.pool.stop()
	return &ShutdownError{TaskIDs: ids, Err: err}
}
