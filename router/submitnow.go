package router

import (
	"context"
	"errors"
	"fmt"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// submitNow routes the task ts, claimed by Submit and not stored yet, when
// the decision can be made at Submit: the selected agent runs in this
// router and has room. The request, the routing.decision and the
// task.accept are then stored as one atomic batch (docs/protocol.md §5.1),
// with the team's owner event in a team (Team.Owner), so that a durable
// task costs two commits (this one and its end) instead of three. It
// reports ok false, having changed nothing, when the task must take the
// usual way — its request stored alone (with its owner event in a team),
// then routed by its goroutine: for a request with an idempotency_key
// when the batch cannot be dropped for a duplicate (see below), in a team
// that counts Budget.MaxTasks (a task's place in its run is known only
// once its request is stored), for one whose id the store holds already
// (a redelivery: the usual way follows it) or that another submission of
// this router is storing, for a task the run's budget refuses, when the
// selected agent runs in another process of the team, and when no agent
// is free (it queues, or fails).
//
// The batch must never add a decision and an accept to a request the
// store takes for a duplicate (docs/protocol.md §5.2). A store that
// implements store.Conditional drops the whole batch then (AppendIfNew):
// the submission gives back what it held and follows the stored request,
// as the usual way does. That is what lets a request with an
// idempotency_key take this way, whose dedup by key only the store can
// check. It is used so only when a dropped batch leaves no trace
// (dropOK): no Options.Observer was told of the attempt, and the run's
// Budget.MaxTasks, which counts the task while it is decided, cannot have
// refused another task of the run meanwhile. Otherwise — and on a store
// without the upgrade — the request's id is looked up first, a keyed
// request takes the usual way, and no other submission of that id in this
// router stores its request meanwhile: one claimed before cannot be
// passed (Router.storing), one claimed after waits (Router.deciding,
// waitDecided). A process that stores the same id in between, outside
// this router, makes a plain Append's batch fail rather than run the task
// twice; AppendIfNew's is dropped and the stored request followed.
func (r *Router) submitNow(ctx context.Context, ts *taskState) (h *Handle, ok bool, err error) {
	req := ts.req
	hook := r.team.Load()
	cond := r.cond
	dropOK := cond != nil && r.opts.Observer == nil && r.opts.Budget.MaxTasks == 0
	if (req.IdempotencyKey != "" && !dropOK) || (hook != nil && r.opts.Budget.MaxTasks > 0) {
		return nil, false, nil
	}
	if !r.reserve(ts) {
		return nil, false, nil
	}
	if !dropOK {
		if _, err := r.st.Get(ctx, req.ID); !errors.Is(err, store.ErrNotFound) {
			r.unreserve(ts)
			return nil, false, nil
		}
	}
	m := r.route(req, ts.ancestors())
	if m.selected == nil || (hook != nil && r.handlerMap()[m.selected.ID()] == nil) || !r.reg.TryAcquire(m.selected) {
		r.freeMatch(m)
		r.unreserve(ts)
		return nil, false, nil
	}
	// From here the task takes this way, whatever happens.
	ts.attempt.Store(int32(req.Attempt))
	r.startAttempt(ts)
	decision, accept := r.acceptEvents(ts, m)
	ts.evs = [4]*protocol.Message{req, decision, accept}
	evs := ts.evs[:3]
	if hook != nil {
		if o := hook.team.Owner(ts.teamTask(), false); o != nil {
			// In the order of the usual way: the owner event with the
			// request, then the decision and accept.
			ts.evs = [4]*protocol.Message{req, o, decision, accept}
			evs = ts.evs[:4]
		}
	}
	var res []store.AppendResult
	if cond != nil {
		res, err = cond.AppendIfNew(ctx, evs...)
	} else {
		res, err = r.st.Append(ctx, evs...)
	}
	ts.evs = [4]*protocol.Message{}
	dropped := err == nil && res[0].Duplicate && cond != nil
	if err == nil && res[0].Duplicate && cond == nil {
		// Stored meanwhile by another process: the decision and accept
		// went in with it. Nothing in this router follows them.
		r.opts.Logger.Error("router: a request stored with its routing decision was a duplicate", "task", req.TaskID, "id", req.ID, "seq", res[0].Seq)
		err = fmt.Errorf("the request is a duplicate of event %d", res[0].Seq)
	}
	if err != nil || dropped {
		r.release(m.selected, false)
		r.freeMatch(m)
		r.unreserve(ts)
		if r.opts.Observer != nil {
			// The attempt the Observer was told of ends unstored (a drop
			// reaches here only when another process stored the id
			// between the lookup and the batch).
			msg := "the request was stored meanwhile; this submission follows the stored task"
			if err != nil {
				msg = "storing the request failed: " + err.Error()
			}
			ep := &protocol.ErrorPayload{Code: protocol.CodeInternal, Message: msg, Retryable: true}
			r.observe(ts, Step{Kind: StepEnd, Event: r.errorEvent(ts, r.opts.AgentID, ep), Err: ep})
		}
		r.unclaim(ts, claimDropped)
		if err != nil {
			return nil, true, fmt.Errorf("router: storing the request: %w", err)
		}
		// Nothing of the batch is stored: a redelivery (§5.2), which
		// follows the stored request's task as the usual way does.
		h, err := r.redelivered(ctx, req, res[0].Seq)
		return h, true, err
	}
	ts.reqSeq = res[0].Seq
	r.mu.Lock()
	r.storedLocked(ts)
	if r.closed {
		// Closed since the reservation: the task is stored and accepted,
		// so it ends here, as start ends it.
		r.mu.Unlock()
		r.release(m.selected, false)
		r.freeMatch(m)
		r.unreserve(ts)
		ep := &protocol.ErrorPayload{Code: protocol.CodeInterrupted, Message: "the router closed before the task started", Retryable: true}
		r.end(ts, Outcome{Err: ep}, r.errorEvent(ts, r.opts.AgentID, ep))
		r.unclaim(ts, claimTask)
		return &ts.handle, true, nil
	}
	ts.accepted, ts.decision = m, decision
	r.launchLocked(ts)
	return &ts.handle, true, nil
}

// reserve counts ts in its run as start does, unless the router is
// closed, another submission is storing a request with ts's id, or the
// run's budget refuses ts; it reports whether it did. unreserve undoes it.
func (r *Router) reserve(ts *taskState) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed || r.storing[ts.req.ID] > 1 {
		return false
	}
	rs := r.runs[ts.req.RunID]
	if rs == nil {
		rs = &ts.ownRun
	}
	if r.checkBudget(rs, ts) != nil {
		return false
	}
	r.runs[ts.req.RunID] = rs
	rs.tasks++
	rs.open++
	r.deciding[ts.req.ID], ts.deciding = true, true
	return true
}

// unreserve undoes reserve.
func (r *Router) unreserve(ts *taskState) {
	r.mu.Lock()
	rs := r.runs[ts.req.RunID]
	rs.tasks--
	if rs.open--; rs.open <= 0 {
		delete(r.runs, ts.req.RunID)
	}
	if ts.deciding {
		ts.deciding = false
		delete(r.deciding, ts.req.ID)
	}
	r.mu.Unlock()
	if r.claimWaiters.Load() > 0 {
		r.claims.Broadcast() // waitDecided
	}
}

// waitDecided waits until no submission of this router is storing a
// request of this id with its decision, or ctx ends: a submission of
// the same id that stored its request meanwhile would make that batch's
// request a duplicate, and its decision and accept strays.
func (r *Router) waitDecided(ctx context.Context, id string) error {
	r.claimWaiters.Add(1)
	defer r.claimWaiters.Add(-1)
	for {
		wake := r.claims.C()
		r.mu.Lock()
		deciding := r.deciding[id]
		r.mu.Unlock()
		if !deciding {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
