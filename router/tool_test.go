package router

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// toolEvents returns the task's tool events, in order; each must follow
// docs/protocol.md §2.3.1.
func (e *env) toolEvents(taskID string) []*protocol.Message {
	e.t.Helper()
	var out []*protocol.Message
	for ev, err := range e.st.Read(context.Background(), store.Query{TaskID: taskID, TypePrefix: "tool."}) {
		require.NoError(e.t, err)
		m, err := ev.Message()
		require.NoError(e.t, err)
		require.NoError(e.t, protocol.CheckToolCallID(m), "%s %s", m.Type, m.Payload)
		out = append(out, m)
	}
	return out
}

func payloadMap(t *testing.T, m *protocol.Message) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal(m.Payload, &v))
	return v
}

func callIDs(t *testing.T, ms []*protocol.Message) []string {
	t.Helper()
	out := make([]string, len(ms))
	for i, m := range ms {
		id, ok := protocol.ToolCallID(m)
		require.True(t, ok, "%s has no call id", m.Type)
		out[i] = id
	}
	return out
}

// TestCallTool: a call and its result are stored with one call id, the
// tool.call's own id, and CallTool returns the tool's result.
func TestCallTool(t *testing.T) {
	e := newEnv(t, nil)
	var got []string
	e.register(card("agent:ken", skill("skill:research")), func(ctx context.Context, t *Task) (*Result, error) {
		hits, err := CallTool(ctx, t, "mcp:browser", "search", map[string]string{"query": "nordic"},
			func(ctx context.Context) ([]string, error) { return []string{"a", "b"}, nil })
		if err != nil {
			return nil, err
		}
		got = hits
		// A second call of the same task gets an id of its own.
		if _, err := CallTool(ctx, t, "", "count", nil, func(ctx context.Context) (int, error) { return 2, nil }); err != nil {
			return nil, err
		}
		return summary("ok"), nil
	})
	h := e.submit(e.request("skill:research"))
	_, err := e.wait(h)
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, got)

	evs := e.toolEvents(h.TaskID())
	require.Len(t, evs, 4)
	assert.Equal(t, []protocol.Type{protocol.TypeToolCall, protocol.TypeToolResult, protocol.TypeToolCall, protocol.TypeToolResult},
		[]protocol.Type{evs[0].Type, evs[1].Type, evs[2].Type, evs[3].Type})
	ids := callIDs(t, evs)
	assert.Equal(t, evs[0].ID, ids[0], "the call id is the tool.call's id")
	assert.Equal(t, ids[0], ids[1])
	assert.Equal(t, evs[2].ID, ids[2])
	assert.Equal(t, ids[2], ids[3])
	assert.NotEqual(t, ids[0], ids[2])

	assert.Equal(t, map[string]any{"call_id": ids[0], "tool": "mcp:browser", "name": "search", "args": map[string]any{"query": "nordic"}}, payloadMap(t, evs[0]))
	assert.Equal(t, map[string]any{"call_id": ids[0], "tool": "mcp:browser", "name": "search", "content": []any{"a", "b"}}, payloadMap(t, evs[1]))
	assert.Equal(t, map[string]any{"call_id": ids[2], "name": "count"}, payloadMap(t, evs[2]), "no tool, no args: left out")
	assert.Equal(t, map[string]any{"call_id": ids[2], "name": "count", "content": 2.0}, payloadMap(t, evs[3]))
	for _, m := range evs {
		assert.Empty(t, m.To, "a tool server is not an agent")
		assert.Equal(t, "agent:ken", m.From.AgentID)
		assert.Equal(t, 1, m.Attempt)
	}
}

// TestCallToolError: a failing tool gives a tool.error with the same call
// id, its code, message, retryability and details; CallTool returns the
// tool's error as it is.
func TestCallToolError(t *testing.T) {
	e := newEnv(t, &Options{MaxAttempts: 1})
	var callErr error
	e.register(card("agent:ken", skill("skill:research")), func(ctx context.Context, t *Task) (*Result, error) {
		_, callErr = CallTool(ctx, t, "mcp:papers", "search", map[string]string{"query": "x"}, func(ctx context.Context) (any, error) {
			return nil, Fail(protocol.CodeToolUnavailable, "the papers index is offline", true, map[string]any{"index": "papers", "call_id": "not this one"})
		})
		return nil, callErr
	})
	h := e.submit(e.request("skill:research"))
	_, err := e.wait(h)
	require.ErrorIs(t, err, protocol.CodeToolUnavailable, "the handler returned the tool's error: the task ends with it")
	require.ErrorIs(t, callErr, protocol.CodeToolUnavailable)

	evs := e.toolEvents(h.TaskID())
	require.Len(t, evs, 2)
	assert.Equal(t, protocol.TypeToolError, evs[1].Type)
	ids := callIDs(t, evs)
	assert.Equal(t, evs[0].ID, ids[0])
	assert.Equal(t, ids[0], ids[1])
	ep, err := protocol.DecodePayload[protocol.ErrorPayload](evs[1])
	require.NoError(t, err)
	assert.Equal(t, protocol.ErrorPayload{Code: protocol.CodeToolUnavailable, Message: "the papers index is offline", Retryable: true,
		Details: map[string]any{"index": "papers", "call_id": ids[0], "tool": "mcp:papers", "name": "search"}}, ep)
}

// TestCallToolPlainError: a Go error without a code is INTERNAL; the
// error returned is the tool's own.
func TestCallToolPlainError(t *testing.T) {
	e := newEnv(t, &Options{MaxAttempts: 1})
	boom := errors.New("disk full")
	e.register(card("agent:ken", skill("skill:research")), func(ctx context.Context, t *Task) (*Result, error) {
		_, err := CallTool(ctx, t, "fs", "write", nil, func(ctx context.Context) (struct{}, error) { return struct{}{}, boom })
		if err != boom {
			return nil, errors.New("CallTool changed the tool's error")
		}
		return summary("handled"), nil
	})
	h := e.submit(e.request("skill:research"))
	_, err := e.wait(h)
	require.NoError(t, err)
	evs := e.toolEvents(h.TaskID())
	require.Len(t, evs, 2)
	ep, err := protocol.DecodePayload[protocol.ErrorPayload](evs[1])
	require.NoError(t, err)
	assert.Equal(t, protocol.CodeInternal, ep.Code)
	assert.Equal(t, "disk full", ep.Message)
	assert.Equal(t, evs[0].ID, ep.Details["call_id"])
}

// TestCallToolCancelled: a context that ended before the call stores
// nothing and runs nothing; one that ends during the call gives a
// tool.error CANCELLED of the same call, stored although ctx ended.
func TestCallToolCancelled(t *testing.T) {
	e := newEnv(t, &Options{MaxAttempts: 1})
	var before, during error
	ran := false
	e.register(card("agent:ken", skill("skill:research")), func(ctx context.Context, t *Task) (*Result, error) {
		done, cancel := context.WithCancel(ctx)
		cancel()
		_, before = CallTool(done, t, "mcp:browser", "search", nil, func(ctx context.Context) (int, error) {
			ran = true
			return 1, nil
		})
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		_, during = CallTool(cctx, t, "mcp:browser", "fetch", nil, func(ctx context.Context) (int, error) {
			cancel() // the caller gives up while the tool runs
			<-ctx.Done()
			return 0, ctx.Err()
		})
		return summary("ok"), nil
	})
	h := e.submit(e.request("skill:research"))
	_, err := e.wait(h)
	require.NoError(t, err)
	assert.ErrorIs(t, before, context.Canceled)
	assert.False(t, ran, "the tool ran with an ended context")
	assert.ErrorIs(t, during, context.Canceled)

	evs := e.toolEvents(h.TaskID())
	require.Len(t, evs, 2, "only the second call was made")
	assert.Equal(t, "fetch", payloadMap(t, evs[0])["name"])
	ids := callIDs(t, evs)
	assert.Equal(t, ids[0], ids[1])
	ep, err := protocol.DecodePayload[protocol.ErrorPayload](evs[1])
	require.NoError(t, err)
	assert.Equal(t, protocol.CodeCancelled, ep.Code)
}

// TestCallToolPanic: a panicking tool leaves a tool.error INTERNAL of its
// call; the panic goes on and ends the attempt with INTERNAL.
func TestCallToolPanic(t *testing.T) {
	e := newEnv(t, &Options{MaxAttempts: 1})
	e.register(card("agent:ken", skill("skill:research")), func(ctx context.Context, t *Task) (*Result, error) {
		return nil, func() error {
			_, err := CallTool(ctx, t, "mcp:browser", "search", nil, func(ctx context.Context) (int, error) { panic("index out of range") })
			return err
		}()
	})
	h := e.submit(e.request("skill:research"))
	_, err := e.wait(h)
	require.ErrorIs(t, err, protocol.CodeInternal)
	evs := e.toolEvents(h.TaskID())
	require.Len(t, evs, 2)
	ep, err := protocol.DecodePayload[protocol.ErrorPayload](evs[1])
	require.NoError(t, err)
	assert.Equal(t, protocol.CodeInternal, ep.Code)
	assert.Contains(t, ep.Message, "index out of range")
	assert.Equal(t, evs[0].ID, ep.Details["call_id"])
}

// TestCallToolResultRefused: a result the store refuses (too large) is
// replaced by a tool.error of the same call; CallTool returns the result
// with the store's error.
func TestCallToolResultRefused(t *testing.T) {
	st, err := memstore.New(&memstore.Options{MaxEventSize: 4 << 10})
	require.NoError(t, err)
	e := newEnvOn(t, st, &Options{MaxAttempts: 1})
	var out string
	var callErr error
	e.register(card("agent:ken", skill("skill:research")), func(ctx context.Context, t *Task) (*Result, error) {
		out, callErr = CallTool(ctx, t, "mcp:browser", "fetch", nil, func(ctx context.Context) (string, error) {
			return strings.Repeat("x", 8<<10), nil
		})
		return summary("ok"), nil
	})
	h := e.submit(e.request("skill:research"))
	_, err = e.wait(h)
	require.NoError(t, err)
	assert.Len(t, out, 8<<10)
	assert.ErrorIs(t, callErr, protocol.CodeTooLarge)
	evs := e.toolEvents(h.TaskID())
	require.Len(t, evs, 2)
	assert.Equal(t, protocol.TypeToolError, evs[1].Type)
	ids := callIDs(t, evs)
	assert.Equal(t, ids[0], ids[1])
	ep, err := protocol.DecodePayload[protocol.ErrorPayload](evs[1])
	require.NoError(t, err)
	assert.Equal(t, protocol.CodeTooLarge, ep.Code)
}

// TestCallToolInvalid: no task, func or name is refused before anything
// is stored.
func TestCallToolInvalid(t *testing.T) {
	e := newEnv(t, nil)
	var errs []error
	e.register(card("agent:ken", skill("skill:research")), func(ctx context.Context, t *Task) (*Result, error) {
		f := func(ctx context.Context) (int, error) { return 1, nil }
		_, err1 := CallTool(ctx, t, "mcp:browser", "", nil, f)
		_, err2 := CallTool(ctx, t, "mcp:browser", "search", nil, (func(context.Context) (int, error))(nil))
		_, err3 := CallTool(ctx, nil, "mcp:browser", "search", nil, f)
		_, err4 := CallTool(ctx, t, "mcp:browser", "search", func() {}, f)
		errs = []error{err1, err2, err3, err4}
		return summary("ok"), nil
	})
	h := e.submit(e.request("skill:research"))
	_, err := e.wait(h)
	require.NoError(t, err)
	for i, err := range errs[:3] {
		assert.ErrorIs(t, err, ErrInvalidRequest, "case %d", i)
	}
	assert.ErrorIs(t, errs[3], protocol.CodeWrongType, "args that do not encode")
	assert.Empty(t, e.toolEvents(h.TaskID()))
}

// TestEmitToolCallID: Emit gives a tool.call without call_id its own id,
// keeps a call id it is given, refuses a malformed one, and stores an
// outcome without one as it is (docs/protocol.md §2.3.1).
func TestEmitToolCallID(t *testing.T) {
	e := newEnv(t, nil)
	var refused []error
	e.register(card("agent:ken", skill("skill:research")), func(ctx context.Context, t *Task) (*Result, error) {
		call, err := t.Emit(ctx, protocol.TypeToolCall, "", map[string]any{"tool": "mcp:x", "name": "y"})
		if err != nil {
			return nil, err
		}
		if _, err := t.Emit(ctx, protocol.TypeToolResult, "", map[string]any{"call_id": call.ID, "content": 1}); err != nil {
			return nil, err
		}
		for _, p := range []any{map[string]any{}, json.RawMessage(" { } ")} {
			if _, err := t.Emit(ctx, protocol.TypeToolCall, "", p); err != nil {
				return nil, err
			}
		}
		if _, err := t.Emit(ctx, protocol.TypeToolCall, "", map[string]any{"call_id": "lc_1", "name": "z"}); err != nil {
			return nil, err
		}
		if _, err := t.Emit(ctx, protocol.TypeToolResult, "", map[string]any{"name": "z", "content": 2}); err != nil {
			return nil, err
		}
		for _, p := range []any{
			map[string]any{"call_id": 7},
			map[string]any{"call_id": ""},
			map[string]any{"call_id": strings.Repeat("x", protocol.MaxIDLength+1)},
		} {
			_, err := t.Emit(ctx, protocol.TypeToolCall, "", p)
			refused = append(refused, err)
		}
		_, err = t.Emit(ctx, protocol.TypeToolError, "", &protocol.ErrorPayload{Code: protocol.CodeToolFailed, Message: "m", Details: map[string]any{"call_id": false}})
		refused = append(refused, err)
		return summary("ok"), nil
	})
	h := e.submit(e.request("skill:research"))
	_, err := e.wait(h)
	require.NoError(t, err)
	for i, err := range refused {
		assert.Error(t, err, "case %d", i)
		assert.True(t, errors.Is(err, protocol.CodeWrongType) || errors.Is(err, protocol.CodeInvalidField), "case %d: %v", i, err)
	}

	var evs []*protocol.Message
	for ev, err := range e.st.Read(context.Background(), store.Query{TaskID: h.TaskID(), TypePrefix: "tool."}) {
		require.NoError(t, err)
		m, err := ev.Message()
		require.NoError(t, err)
		evs = append(evs, m)
	}
	require.Len(t, evs, 6, "nothing of the refused events was stored")
	assert.Equal(t, map[string]any{"call_id": evs[0].ID, "tool": "mcp:x", "name": "y"}, payloadMap(t, evs[0]))
	assert.Equal(t, map[string]any{"call_id": evs[0].ID, "content": 1.0}, payloadMap(t, evs[1]))
	assert.Equal(t, map[string]any{"call_id": evs[2].ID}, payloadMap(t, evs[2]))
	assert.Equal(t, map[string]any{"call_id": evs[3].ID}, payloadMap(t, evs[3]))
	assert.Equal(t, map[string]any{"call_id": "lc_1", "name": "z"}, payloadMap(t, evs[4]))
	assert.Equal(t, map[string]any{"name": "z", "content": 2.0}, payloadMap(t, evs[5]), "an outcome of the old shape is stored as it is")
	_, ok := protocol.ToolCallID(evs[5])
	assert.False(t, ok)
}
