package router

import (
	"context"

	"github.com/clutchprotocol/clutch/protocol"
)

// A task id is claimed in Router.tasks before anything of the task is
// stored, and stays there until the task's goroutine returns (or, for a
// task that does not run here, until its outcome is known): whoever holds
// the claim is the only one who may store the task's request, start it or
// store its terminal event in this router. A redelivery that arrives
// while the claim is pending waits for it to settle (follow) instead of
// reading a log that does not say yet whether the task runs — the window
// in which a duplicate used to fail a task that then succeeded.

// The states of a claim (taskState.claim).
const (
	claimPending int32 = iota // the claimer is storing the request or reading the log
	claimTask                 // the claim is the task: its handle follows it
	claimDropped              // the claim came to nothing: claim again
)

// claimMode says what a claim is for, and so what an existing entry of
// the task id means.
type claimMode int

const (
	claimSubmit claimMode = iota // a request to store and run
	claimStored                  // a stored request: a redelivery, Recover
	claimRetry                   // a new attempt of an ended task
	claimEnd                     // the end of a task that waits for an answer (ask.go): as claimRetry, never refused for capacity
)

// claim registers req's task id. It returns the new claim, or the entry
// that holds the task id already (old), or an error: ErrClosed, or
// ErrCapacity when the router holds Options.MaxInFlight tasks (claims of
// stored requests are not refused: they follow or end a task that
// exists; restart checks the limit before it runs one again).
//
// An entry that is pending or running always holds the id. An ended one
// holds it for a stored request and for a redelivery of its own request
// (its handle has the outcome); otherwise — a new attempt, or a new
// request reusing the id — it is replaced.
func (r *Router) claim(ctx context.Context, req *protocol.Message, parent *taskState, mode claimMode) (ts, old *taskState, err error) {
	ts = r.newTask(ctx, req, parent)
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		ts.cancel(ErrClosed)
		return nil, nil, ErrClosed
	}
	if o := r.tasks[req.TaskID]; o != nil {
		if o.claim.Load() == claimPending || !o.finished.Load() || mode == claimStored || (mode == claimSubmit && sameRequest(o.req, req)) {
			r.mu.Unlock()
			ts.cancel(nil)
			return nil, o, nil
		}
		if o.started {
			r.stale[o] = true // its goroutine runs until the handler returns
		}
	}
	if mode != claimStored && mode != claimEnd && r.opts.MaxInFlight > 0 && r.inFlight >= r.opts.MaxInFlight {
		r.mu.Unlock()
		ts.cancel(nil)
		return nil, nil, capacityError(r.opts.MaxInFlight)
	}
	r.inFlight++
	r.tasks[req.TaskID] = ts
	if mode == claimSubmit {
		// Until its request is stored or dropped (storedLocked), no other
		// submission of the same request id decides at Submit (submitNow).
		r.storing[req.ID]++
		ts.storing = true
		ts.behind = r.deciding[req.ID]
	}
	r.mu.Unlock()
	return ts, nil, nil
}

// storedLocked marks the request of ts, claimed by Submit, as stored or
// dropped; r.mu is held.
func (r *Router) storedLocked(ts *taskState) {
	if !ts.storing {
		return
	}
	ts.storing = false
	if ts.deciding {
		ts.deciding = false
		delete(r.deciding, ts.req.ID)
	}
	if n := r.storing[ts.req.ID]; n > 1 {
		r.storing[ts.req.ID] = n - 1
	} else {
		delete(r.storing, ts.req.ID)
	}
}

// newTask returns the state of a task about to be claimed.
func (r *Router) newTask(ctx context.Context, req *protocol.Message, parent *taskState) *taskState {
	ts := &taskState{req: req, parent: parent, done: make(chan struct{})}
	ts.handle = Handle{r: r, ts: ts}
	if parent != nil {
		ts.depth = parent.depth + 1
	}
	base := ctx
	if base.Done() != nil {
		base = context.WithoutCancel(ctx)
	}
	if rc := parentRunCtx(parent); rc != nil {
		// A subtask ends with the attempt that delegated it, whatever
		// context the handler passed to Delegate (§1.3: cancelling a task
		// cancels its subtree).
		base = rc
	}
	ts.base = base
	ts.ctx, ts.cancel = context.WithCancelCause(base)
	return ts
}

// unclaim removes a claim that did not start a task: dropped (nothing
// was stored) or settled as the task with its outcome already known.
func (r *Router) unclaim(ts *taskState, state int32) {
	r.mu.Lock()
	r.storedLocked(ts)
	if r.tasks[ts.req.TaskID] == ts {
		delete(r.tasks, ts.req.TaskID)
	}
	r.inFlight--
	r.mu.Unlock()
	ts.cancel(nil)
	r.settle(ts, state)
}

// settle sets the state of a claim and wakes the callers following it.
func (r *Router) settle(ts *taskState, state int32) {
	ts.claim.Store(state)
	if r.claimWaiters.Load() > 0 {
		r.claims.Broadcast()
	}
}

// follow waits until the claim ts settles. It returns ts's handle when ts
// is the task, nil when the claim was dropped, or ctx's error.
func (r *Router) follow(ctx context.Context, ts *taskState) (*Handle, error) {
	if ts.claim.Load() == claimTask {
		return &ts.handle, nil
	}
	r.claimWaiters.Add(1)
	defer r.claimWaiters.Add(-1)
	for {
		wake := r.claims.C()
		// Checked after taking the channel: a settle in between has
		// closed it.
		switch ts.claim.Load() {
		case claimTask:
			return &ts.handle, nil
		case claimDropped:
			return nil, nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}
