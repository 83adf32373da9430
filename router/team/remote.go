package team

// The hosting side of a team: a node runs the attempts other processes
// dispatch to the agents it hosts, and stores their outcomes for the
// dispatcher (node.go has the node itself).

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/internal/idem"
	"github.com/clutchprotocol/clutch/store"
)

// runRemote claims the attempt m dispatches and, when the claim wins,
// runs it with the agent's handler here, then stores its outcome.
func (n *Node) runRemote(m *protocol.Message) {
	agentID := m.To[0].AgentID
	ctx := n.ctx
	claim := n.ids.Reply(m, TypeClaim, agentID) // to the dispatcher
	claim.Attempt = m.Attempt
	claim.IdempotencyKey = idem.Claim(m.TaskID, m.Attempt)
	setPayload(claim, map[string]string{"host": n.opts.Host})
	res, err := n.st.Append(ctx, claim)
	if err != nil {
		if ctx.Err() == nil {
			n.log.Warn("team: node claim", "task", m.TaskID, "err", err)
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
	var out donePayload
	if req, err := n.request(ctx, m.TaskID); err != nil {
		out.Error = &protocol.ErrorPayload{Code: protocol.CodeInternal, Message: "reading the task's request: " + err.Error(), Retryable: true}
	} else {
		out = n.execute(req, agentID, m.Attempt, dp)
	}
	if out.Result == nil && out.Error == nil {
		return // the task ended in the process that routed it: nothing to answer
	}
	done := n.ids.Reply(m, TypeDone, agentID)
	done.Attempt = m.Attempt
	done.IdempotencyKey = idem.Done(m.TaskID, m.Attempt)
	if err := done.SetPayload(out); err != nil {
		ep := &protocol.ErrorPayload{Code: protocol.CodeInternal, Message: "encoding the outcome: " + err.Error()}
		setPayload(done, donePayload{Error: ep})
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if _, err := n.st.Append(sctx, done); err != nil {
		n.log.Error("team: node: storing an outcome", "task", m.TaskID, "err", err)
	}
}

// request reads the task.request of task.
func (n *Node) request(ctx context.Context, task string) (*protocol.Message, error) {
	for ev, err := range n.st.Read(ctx, store.Query{TaskID: task, TypePrefix: string(protocol.TypeTaskRequest), Limit: 1}) {
		if err != nil {
			return nil, err
		}
		return ev.Message()
	}
	return nil, unknownTask(task)
}

// remoteTimeoutGrace is how long past max_runtime_sec a hosting process lets
// a handler run before its own deadline ends it: the routing process
// stores the timeout, and its cancel ends the handler here; this deadline
// is only the backstop for a routing process that is gone, late enough
// that the handler's own deadline error does not race the routing
// process's task.timeout and end the attempt as a task.error.
const remoteTimeoutGrace = 2 * time.Second

// execute runs one attempt here (router.Member.Execute): the handler's
// subtasks are routed by this router, with the depth and delegation chain
// of the dispatch, and the agent's max_concurrency holds for all the
// processes' attempts. The attempt stops when the routing process ends
// it (stopRun) or the node leaves.
func (n *Node) execute(req *protocol.Message, agentID string, attempt int, dp dispatchPayload) donePayload {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	n.mu.Lock()
	if n.ctx.Err() != nil {
		n.mu.Unlock()
		return donePayload{Error: leftError()}
	}
	rr := &remoteRun{attempt: attempt, cancel: cancel}
	n.running[req.TaskID] = rr
	n.mu.Unlock()
	defer func() {
		n.mu.Lock()
		if n.running[req.TaskID] == rr {
			delete(n.running, req.TaskID)
		}
		n.mu.Unlock()
	}()
	res, ep := n.m.Execute(ctx, req, agentID, attempt, dp.Depth, dp.Chain, remoteTimeoutGrace)
	switch {
	case errors.Is(context.Cause(ctx), errNodeLeft):
		return donePayload{Error: leftError()}
	case ctx.Err() != nil:
		return donePayload{} // ended by the routing process
	case ep != nil:
		return donePayload{Error: ep}
	case res == nil:
		res = &router.Result{}
	}
	tmp := &protocol.Message{}
	if err := tmp.SetPayload(res.Payload); err != nil {
		return donePayload{Error: &protocol.ErrorPayload{Code: protocol.CodeValidation, Message: "result payload is not JSON: " + err.Error()}}
	}
	return donePayload{Result: &doneResult{PayloadType: res.PayloadType, Payload: tmp.Payload, Attachments: res.Attachments}}
}

func leftError() *protocol.ErrorPayload {
	return &protocol.ErrorPayload{Code: protocol.CodeInterrupted, Message: "the process hosting the agent left the team while the task ran", Retryable: true}
}
