package team

import (
	"context"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/internal/idem"
)

// hook is a Node as the router's router.Team: the methods the router
// calls, kept off Node's own API.
type hook Node

var _ router.Team = (*hook)(nil)

func (h *hook) node() *Node { return (*Node)(h) }

// Handler is the dispatching handler of an agent of another process.
func (h *hook) Handler(agentID string) router.Handler { return h.node().handler(agentID) }

// Dispatch is the dispatch event of an attempt on an agent of another
// process (node.go).
func (h *hook) Dispatch(t router.TeamTask) *protocol.Message { return h.node().dispatch(t) }

// Owner is the owner event naming this node as the one routing t's task
// (adopt.go).
func (h *hook) Owner(t router.TeamTask, retry bool) *protocol.Message {
	n := h.node()
	if retry {
		return n.ownerEvent(t.Request, ownerPayload{Node: n.id})
	}
	o := n.ownerEvent(t.Request, ownerPayload{Node: n.id, Depth: t.Depth, Chain: t.Chain, Sub: t.Sub})
	o.IdempotencyKey = idem.Owner(t.Request.TaskID)
	return o
}

// Redelivered follows, or adopts, an open task routed elsewhere (adopt.go).
func (h *hook) Redelivered(ctx context.Context, req *protocol.Message) (*router.Handle, bool, error) {
	return h.node().redelivered(ctx, req)
}

// Recover adopts the open tasks of dead nodes (adopt.go).
func (h *hook) Recover(ctx context.Context) (int, error) { return h.node().recoverTeam(ctx) }

// Count counts a run's tasks in the store (budget.go).
func (h *hook) Count(ctx context.Context, t router.TeamTask, max int) (bool, error) {
	return h.node().count(ctx, t, max)
}
