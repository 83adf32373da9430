package router

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/schema"
)

func TestHandlerErrorKeepsItsWords(t *testing.T) {
	e := newEnv(t, &Options{MaxAttempts: 1})
	e.register(card("agent:browser", skill("skill:browse")), func(ctx context.Context, t *Task) (*Result, error) {
		return nil, Fail(protocol.CodeToolUnavailable, "MCP server mcp:browser not responding", false, map[string]any{"tool": "mcp:browser"})
	})
	e.register(card("agent:lead", skill("skill:plan")), func(ctx context.Context, t *Task) (*Result, error) {
		sub, err := t.NewSubtask("research.query.v1", schema.ResearchQuery{Query: "competitors"})
		if err != nil {
			return nil, err
		}
		sub.Requires = []string{"skill:browse"}
		if _, err := t.Delegate(ctx, sub); err != nil {
			return nil, fmt.Errorf("research: %w", err)
		}
		return summary("x"), nil
	})
	h := e.submit(e.request("skill:plan"))
	out, err := e.wait(h)
	require.ErrorIs(t, err, protocol.CodeToolUnavailable)
	assert.Equal(t, "research: MCP server mcp:browser not responding", out.Err.Message)

	// The stored task.error says the same, with the subtask's code kept.
	ep := payloadOf[protocol.ErrorPayload](t, e, h.TaskID(), "task.error")
	assert.Equal(t, protocol.CodeToolUnavailable, ep.Code)
	assert.Equal(t, "research: MCP server mcp:browser not responding", ep.Message)
	assert.Equal(t, "mcp:browser", ep.Details["tool"])
	assert.False(t, ep.Retryable)

	// A routing failure of the subtask keeps its code (NO_MATCH) too.
	e.register(card("agent:planner", skill("skill:plan2")), func(ctx context.Context, t *Task) (*Result, error) {
		sub, err := t.NewSubtask("research.query.v1", schema.ResearchQuery{Query: "q"})
		if err != nil {
			return nil, err
		}
		sub.Requires = []string{"skill:nobody"}
		if _, err := t.Delegate(ctx, sub); err != nil {
			return nil, fmt.Errorf("planning: %w", err)
		}
		return summary("x"), nil
	})
	h = e.submit(e.request("skill:plan2"))
	_, err = e.wait(h)
	require.ErrorIs(t, err, protocol.CodeNoMatch)
	ep = payloadOf[protocol.ErrorPayload](t, e, h.TaskID(), "task.error")
	assert.Equal(t, protocol.CodeNoMatch, ep.Code)
	assert.Equal(t, "planning: no registered agent has requires[skill:nobody]", ep.Message)
}
