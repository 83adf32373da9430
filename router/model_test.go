package router

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// TestTaskFrom: a handler's context, and contexts derived from it, carry
// the handler's Task; other contexts carry none.
func TestTaskFrom(t *testing.T) {
	e := newEnv(t, nil)
	assert.Nil(t, TaskFrom(context.Background()))
	var same bool
	e.register(card("agent:ken", skill("skill:research")), func(ctx context.Context, t *Task) (*Result, error) {
		sub, cancel := context.WithCancel(ctx)
		defer cancel()
		same = TaskFrom(sub) == t
		return summary("ok"), nil
	})
	_, err := e.wait(e.submit(e.request("skill:research")))
	require.NoError(t, err)
	assert.True(t, same, "TaskFrom of a context derived from the handler's gives its Task")
}

// TestStartTool: a call started and ended in two steps is stored as a
// tool.call and one outcome under one call id; a second outcome is
// refused and stores nothing.
func TestStartTool(t *testing.T) {
	e := newEnv(t, nil)
	var second, third error
	e.register(card("agent:ken", skill("skill:research")), func(ctx context.Context, t *Task) (*Result, error) {
		ok, err := t.StartTool(ctx, "eino", "search", map[string]string{"q": "x"})
		if err != nil {
			return nil, err
		}
		if err := ok.Done(ctx, []string{"hit"}); err != nil {
			return nil, err
		}
		second = ok.Done(ctx, "again")
		bad, err := t.StartTool(ctx, "eino", "fetch", nil)
		if err != nil {
			return nil, err
		}
		bad.Fail(ctx, Fail(protocol.CodeToolFailed, "no route to host", true, nil))
		bad.Fail(ctx, errors.New("twice")) // dropped: the call has its outcome
		third = bad.Done(ctx, "late")
		_, err = t.StartTool(ctx, "eino", "", nil)
		assert.ErrorIs(e.t, err, ErrInvalidRequest)
		return summary("ok"), nil
	})
	h := e.submit(e.request("skill:research"))
	_, err := e.wait(h)
	require.NoError(t, err)
	assert.ErrorIs(t, second, ErrInvalidRequest)
	assert.ErrorIs(t, third, ErrInvalidRequest)

	evs := e.toolEvents(h.TaskID())
	require.Len(t, evs, 4)
	assert.Equal(t, []protocol.Type{protocol.TypeToolCall, protocol.TypeToolResult, protocol.TypeToolCall, protocol.TypeToolError},
		[]protocol.Type{evs[0].Type, evs[1].Type, evs[2].Type, evs[3].Type})
	ids := callIDs(t, evs)
	assert.Equal(t, []string{evs[0].ID, evs[0].ID, evs[2].ID, evs[2].ID}, ids)
	assert.Equal(t, []any{"hit"}, payloadMap(t, evs[1])["content"])
	ep, err := protocol.DecodePayload[protocol.ErrorPayload](evs[3])
	require.NoError(t, err)
	assert.Equal(t, protocol.CodeToolFailed, ep.Code)
	assert.Equal(t, "no route to host", ep.Message)
	assert.Equal(t, "fetch", ep.Details["name"])
}

// TestRecordModelCall: a model call is one x.clutch.model_call event of
// the task with the usage it was given; a call without a model is refused.
func TestRecordModelCall(t *testing.T) {
	e := newEnv(t, nil)
	var refused error
	e.register(card("agent:ken", skill("skill:research")), func(ctx context.Context, t *Task) (*Result, error) {
		if _, err := t.RecordModelCall(ctx, ModelCall{Model: "fake-1", Provider: "fake", InputTokens: 12, OutputTokens: 3, TotalTokens: 15, FinishReason: "stop", DurationMS: 4}); err != nil {
			return nil, err
		}
		_, refused = t.RecordModelCall(ctx, ModelCall{})
		return summary("ok"), nil
	})
	h := e.submit(e.request("skill:research"))
	_, err := e.wait(h)
	require.NoError(t, err)
	assert.ErrorIs(t, refused, ErrInvalidRequest)
	var got []ModelCall
	for ev, err := range e.st.Read(context.Background(), store.Query{TaskID: h.TaskID(), TypePrefix: string(TypeModelCall)}) {
		require.NoError(t, err)
		m, err := ev.Message()
		require.NoError(t, err)
		assert.Equal(t, "agent:ken", m.From.AgentID)
		mc, err := protocol.DecodePayload[ModelCall](m)
		require.NoError(t, err)
		got = append(got, mc)
	}
	assert.Equal(t, []ModelCall{{Model: "fake-1", Provider: "fake", InputTokens: 12, OutputTokens: 3, TotalTokens: 15, FinishReason: "stop", DurationMS: 4}}, got)
}
