package router

// The hosting side of a team spread over processes: a node runs the
// attempts other processes dispatch to the agents it hosts, and stores
// their outcomes for the dispatcher (node.go has the node itself).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router/internal/idem"
	"github.com/clutchprotocol/clutch/store"
)

// runRemote claims the attempt m dispatches and, when the claim wins,
// runs it with the agent's handler here, then stores its outcome.
func (n *Node) runRemote(m *protocol.Message) {
	r := n.r
	agentID := m.To[0].AgentID
	ctx := n.ctx
	claim := r.ids.Reply(m, TypeClaim, agentID) // to the dispatcher
	claim.Attempt = m.Attempt
	claim.IdempotencyKey = idem.Claim(m.TaskID, m.Attempt)
	r.setPayload(claim, map[string]string{"host": n.opts.Host})
	res, err := r.st.Append(ctx, claim)
	if err != nil {
		if ctx.Err() == nil {
			n.r.opts.Logger.Warn("router: node claim", "task", m.TaskID, "err", err)
		}
		return
	}
	if res[0].Duplicate {
		return // another process runs it
	}
	var dp dispatchPayload
	if json.Unmarshal(m.Payload, &dp) != nil || dp.Depth < 0 {
		dp = dispatchPayload{} // the dispatcher's payload is not ours to trust blindly
	}
	req, err := n.request(ctx, m.TaskID)
	a, ok := r.reg.Get(agentID)
	h := r.handler(agentID)
	var out donePayload
	switch {
	case err != nil:
		out.Error = &protocol.ErrorPayload{Code: protocol.CodeInternal, Message: "reading the task's request: " + err.Error(), Retryable: true}
	case !ok || h == nil:
		out.Error = &protocol.ErrorPayload{Code: protocol.CodeNotFound, Message: "agent " + agentID + " is not hosted here any more", Retryable: true}
	default:
		out = n.execute(req, a, h, m.Attempt, dp)
	}
	if out.Result == nil && out.Error == nil {
		return // the task ended in the process that routed it: nothing to answer
	}
	done := r.ids.Reply(m, TypeDone, agentID)
	done.Attempt = m.Attempt
	done.IdempotencyKey = idem.Done(m.TaskID, m.Attempt)
	if err := done.SetPayload(out); err != nil {
		ep := &protocol.ErrorPayload{Code: protocol.CodeInternal, Message: "encoding the outcome: " + err.Error()}
		r.setPayload(done, donePayload{Error: ep})
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := r.st.Append(sctx, done); err != nil {
		n.r.opts.Logger.Error("router: node: storing an outcome", "task", m.TaskID, "err", err)
	}
}

// request reads the task.request of task.
func (n *Node) request(ctx context.Context, task string) (*protocol.Message, error) {
	for ev, err := range n.r.st.Read(ctx, store.Query{TaskID: task, TypePrefix: string(protocol.TypeTaskRequest), Limit: 1}) {
		if err != nil {
			return nil, err
		}
		return ev.Message()
	}
	return nil, wrap(ErrUnknownTask, task, nil)
}

// remoteTimeoutGrace is how long past max_runtime_sec a hosting process lets
// a handler run before its own deadline ends it (see execute).
const remoteTimeoutGrace = 2 * time.Second

// execute runs one attempt here: the handler gets a Task like any other
// (Progress, Emit, Delegate, PutArtifact), whose subtasks are routed by
// this router, with the depth and delegation chain of the dispatch. The
// agent's max_concurrency holds for all the processes' attempts: one
// waits here for a slot, up to Options.QueueTimeout.
func (n *Node) execute(req *protocol.Message, a *registry.Agent, h Handler, attempt int, dp dispatchPayload) donePayload {
	r := n.r
	ts := r.newTask(context.Background(), req, nil)
	ts.attempt.Store(int32(attempt))
	ts.agent.Store(a)
	ts.depth, ts.chain = dp.Depth, dp.Chain
	defer ts.cancel(nil)
	n.mu.Lock()
	if n.ctx.Err() != nil {
		n.mu.Unlock()
		return donePayload{Error: n.leftError()}
	}
	n.running[req.TaskID] = &remoteRun{attempt: attempt, ts: ts}
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		if rr := n.running[req.TaskID]; rr != nil && rr.ts == ts {
			delete(n.running, req.TaskID)
		}
		n.mu.Unlock()
	}()
	if !n.acquire(ts, a) {
		if errors.Is(context.Cause(ts.ctx), errNodeLeft) {
			return donePayload{Error: n.leftError()}
		}
		if ts.ctx.Err() != nil {
			return donePayload{}
		}
		return donePayload{Error: &protocol.ErrorPayload{Code: protocol.CodeCapacity, Retryable: true,
			Message: fmt.Sprintf("agent %s stayed at its max_concurrency for %s", a.ID(), r.opts.QueueTimeout)}}
	}
	ctx := ts.ctx
	if card := a.Card(); card.Limits != nil && card.Limits.MaxRuntimeSec > 0 {
		// The routing process stores the timeout, and its cancel ends the
		// handler here. This deadline is only the backstop for a routing
		// process that is gone: it ends remoteTimeoutGrace later, so that
		// the handler's own deadline error does not race the routing
		// process's task.timeout and end the attempt as a task.error.
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(card.Limits.MaxRuntimeSec)*time.Second+remoteTimeoutGrace)
		defer cancel()
	}
	ts.runCtx.Store(&ctx)
	t := &Task{r: r, ts: ts, agent: a, attempt: attempt}
	res, err := r.call(ctx, h, t)
	r.release(a, err == nil)
	ts.emu.Lock()
	ts.finished.Store(true) // later Progress and Emit calls fail with ErrTaskEnded
	ts.emu.Unlock()
	switch {
	case errors.Is(context.Cause(ts.ctx), errNodeLeft):
		return donePayload{Error: n.leftError()}
	case ts.ctx.Err() != nil:
		return donePayload{} // ended by the routing process
	case err != nil:
		ep := wireError(err)
		return donePayload{Error: &ep}
	}
	if res == nil {
		res = &Result{}
	}
	tmp := &protocol.Message{}
	if err := tmp.SetPayload(res.Payload); err != nil {
		return donePayload{Error: &protocol.ErrorPayload{Code: protocol.CodeValidation, Message: "result payload is not JSON: " + err.Error()}}
	}
	return donePayload{Result: &doneResult{PayloadType: res.PayloadType, Payload: tmp.Payload, Attachments: res.Attachments}}
}

func (n *Node) leftError() *protocol.ErrorPayload {
	return &protocol.ErrorPayload{Code: protocol.CodeInterrupted, Message: "the process hosting the agent left the team while the task ran", Retryable: true}
}

// acquire takes a concurrency slot of a for an attempt run here, waiting
// up to Options.QueueTimeout; false when none came or ts was cancelled.
func (n *Node) acquire(ts *taskState, a *registry.Agent) bool {
	r := n.r
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
