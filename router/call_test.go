package router

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/protocol"
)

// TestCall: from a handler, Call delegates a subtask of the running task
// (same run, parent_task_id set); elsewhere it submits a root task from
// the agent named; a task that fails gives its wire error with the
// outcome; a caller that stops waiting cancels its root task.
func TestCall(t *testing.T) {
	e := newEnv(t, nil)
	block := make(chan struct{})
	e.register(card("agent:echo", skill("skill:echo")), func(ctx context.Context, t *Task) (*Result, error) {
		s, err := Input[string](t)
		if err != nil {
			return nil, err
		}
		switch s {
		case "fail":
			return nil, Fail(protocol.CodeToolFailed, "no route", false, nil)
		case "block":
			close(block)
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return &Result{Payload: "echo: " + s}, nil
	})
	var sub *Outcome
	e.register(card("agent:boss", skill("skill:boss")), func(ctx context.Context, t *Task) (*Result, error) {
		out, err := e.r.Call(ctx, "agent:ignored", "skill:echo", "", "from a task")
		if err != nil {
			return nil, err
		}
		sub = out
		return &Result{Payload: "ok"}, nil
	})
	h := e.submit(e.request("skill:boss"))
	_, err := e.wait(h)
	require.NoError(t, err)
	require.NotNil(t, sub)
	assert.Equal(t, h.TaskID(), sub.Message.ParentTaskID)
	assert.Equal(t, h.Request().RunID, sub.Message.RunID)
	assert.Equal(t, `"echo: from a task"`, string(sub.Message.Payload))

	ctx := context.Background()
	out, err := e.r.Call(ctx, "agent:ui", "skill:echo", "", "root")
	require.NoError(t, err)
	assert.Empty(t, out.Message.ParentTaskID)
	assert.Equal(t, []string{"task.request", "routing.decision", "task.accept", "task.result"}, e.types(out.TaskID))

	out, err = e.r.Call(ctx, "agent:ui", "skill:echo", "", "fail")
	require.Error(t, err)
	assert.Equal(t, protocol.CodeToolFailed, protocol.CodeOf(err))
	require.NotNil(t, out)
	assert.Equal(t, protocol.TypeTaskError, out.Type)

	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := e.r.Call(cctx, "agent:ui", "skill:echo", "", "block")
		done <- err
	}()
	<-block
	cancel()
	assert.ErrorIs(t, <-done, context.Canceled)

	_, err = e.r.Call(ctx, "agent:ui", "", "", "x")
	assert.ErrorIs(t, err, ErrInvalidRequest)
}

// A capability id becomes a tool name of letters, digits, '_' and '-'.
func TestToolName(t *testing.T) {
	for in, want := range map[string]string{
		"skill:research":     "skill_research",
		"domain:fin-tech/eu": "domain_fin-tech_eu",
		"skill:été":          "skill___t__", // each byte of a non-ASCII rune
		"plain_name-2":       "plain_name-2",
	} {
		if got := ToolName(in); got != want {
			t.Errorf("ToolName(%q) = %q, want %q", in, got, want)
		}
	}
}
