package telemetry_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/telemetry"
)

// emitTool records a tool call of t: tool.call, then tool.result, or
// tool.error with code when code is not "".
func emitTool(ctx context.Context, t *router.Task, server, name string, code protocol.Code) error {
	call, err := t.Emit(ctx, protocol.TypeToolCall, "", map[string]any{"tool": server, "name": name, "args": map[string]any{"q": "x"}})
	if err != nil {
		return err
	}
	if code != "" {
		_, err = t.Emit(ctx, protocol.TypeToolError, "", &protocol.ErrorPayload{Code: code, Message: "the page is gone",
			Details: map[string]any{"tool": server, "name": name, "call_id": call.ID}})
		return err
	}
	_, err = t.Emit(ctx, protocol.TypeToolResult, "", map[string]any{"tool": server, "name": name, "call_id": call.ID, "content": []any{}})
	return err
}

func TestDelegatedTaskWithToolCalls(t *testing.T) {
	e := newEnv(t, nil)
	e.agent("agent:lead", []string{"skill:lead"}, nil, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		if err := emitTool(ctx, t, "mcp:search", "search", ""); err != nil {
			return nil, err
		}
		sub, err := t.NewSubtask("", map[string]any{"q": "details"})
		if err != nil {
			return nil, err
		}
		sub.Requires = []string{"skill:research"}
		if _, err := t.Delegate(ctx, sub); err != nil {
			return nil, err
		}
		return &router.Result{Payload: map[string]any{"ok": true}}, nil
	})
	e.agent("agent:ken", []string{"skill:research"}, nil, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		if err := emitTool(ctx, t, "mcp:web", "fetch", protocol.CodeToolFailed); err != nil {
			return nil, err
		}
		return &router.Result{Payload: map[string]any{"found": 1}}, nil
	})
	req := e.request("skill:lead")
	out, err := e.run(req)
	require.NoError(t, err)

	assert.Equal(t, ""+
		"invoke_agent agent:lead result\n"+
		"  execute_tool search\n"+
		"  invoke_agent agent:ken result\n"+
		"    execute_tool fetch error TOOL_FAILED\n", e.tree())

	lead, ken := e.span("invoke_agent agent:lead"), e.span("invoke_agent agent:ken")
	search, fetch := e.span("execute_tool search"), e.span("execute_tool fetch")
	assert.False(t, lead.Parent.IsValid(), "a request without trace ids starts a new trace")
	for _, s := range []string{"gen_ai.operation.name=invoke_agent", "gen_ai.agent.id=agent:lead",
		"clutch.task.id=" + req.TaskID, "clutch.run.id=" + req.RunID, "gen_ai.conversation.id=" + req.ThreadID, "clutch.task.attempt=1"} {
		assert.Contains(t, attrList(lead), s)
	}
	assert.Contains(t, attrList(ken), "clutch.task.parent_id="+req.TaskID)
	assert.Contains(t, attrList(fetch), "gen_ai.operation.name=execute_tool")
	assert.Contains(t, attrList(fetch), "clutch.tool.server=mcp:web")
	assert.Contains(t, attrList(fetch), "gen_ai.tool.name=fetch")
	assert.NotContains(t, strings.Join(attrList(lead), " "), "gen_ai.agent.name", "a card without a display name has its id only")
	assert.Equal(t, codes.Error, fetch.Status.Code)
	assert.Equal(t, codes.Unset, lead.Status.Code)
	require.Len(t, lead.Events, 1)
	assert.Equal(t, "clutch.routing.decision", lead.Events[0].Name)
	assert.Contains(t, eventAttrs(lead.Events[0].Attributes), "clutch.routing.selected=agent:lead")
	assert.Contains(t, eventAttrs(lead.Events[0].Attributes), "clutch.routing.candidates=1")

	// Every event of a task carries its span; tool events their call's;
	// the subtask's request the delegating attempt's.
	traceID := lead.SpanContext.TraceID().String()
	var subID string
	for _, m := range e.events(req.TaskID)[1:] { // the request keeps what its sender gave it
		require.NotNil(t, m.Trace, "%s has no trace", m.Type)
		assert.Equal(t, traceID, m.Trace.TraceID, m.Type)
		want := lead.SpanContext.SpanID().String()
		if m.Type.Family() == "tool" {
			want = search.SpanContext.SpanID().String()
		}
		assert.Equal(t, want, m.Trace.SpanID, "span of %s", m.Type)
	}
	for ev, err := range e.st.Read(context.Background(), store.Query{RunID: req.RunID}) {
		require.NoError(t, err)
		m, _ := ev.Message()
		if m.Type == protocol.TypeTaskRequest && m.ParentTaskID == req.TaskID {
			subID = m.TaskID
		}
	}
	require.NotEmpty(t, subID)
	evs := e.events(subID)
	require.Equal(t, protocol.TypeTaskRequest, evs[0].Type)
	assert.Equal(t, lead.SpanContext.SpanID().String(), evs[0].Trace.SpanID, "the subtask's request carries the delegating span")
	for _, m := range evs[1:] {
		want := ken.SpanContext.SpanID().String()
		if m.Type.Family() == "tool" {
			want = fetch.SpanContext.SpanID().String()
		}
		assert.Equal(t, traceID, m.Trace.TraceID)
		assert.Equal(t, want, m.Trace.SpanID, "span of %s", m.Type)
	}
	tc := evs[3] // request, decision, accept, tool.call
	require.Equal(t, protocol.TypeToolCall, tc.Type)
	assert.Equal(t, ken.SpanContext.SpanID().String(), tc.Trace.ParentSpanID)
	assert.Equal(t, protocol.TypeTaskResult, out.Type)
}

func TestRequestTraceIsContinued(t *testing.T) {
	e := newEnv(t, nil)
	e.agent("agent:ken", []string{"skill:research"}, nil, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		// The handler's context carries the attempt's span.
		if got := trace.SpanContextFromContext(ctx).SpanID().String(); got != t.Trace().SpanID {
			return nil, errors.New("the handler's span is " + got + ", the events' " + t.Trace().SpanID)
		}
		return &router.Result{}, nil
	})
	req := e.request("skill:research")
	req.Trace = &protocol.Trace{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7"}
	_, err := e.run(req)
	require.NoError(t, err)
	s := e.span("invoke_agent agent:ken")
	assert.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", s.SpanContext.TraceID().String())
	assert.Equal(t, "00f067aa0ba902b7", s.Parent.SpanID().String())
	assert.True(t, s.Parent.IsRemote())
	evs := e.events(req.TaskID)
	assert.Equal(t, &protocol.Trace{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: s.SpanContext.SpanID().String(), ParentSpanID: "00f067aa0ba902b7"}, evs[len(evs)-1].Trace)

	// No trace ids, but a context with the caller's span (telemetry.Extract
	// of an HTTP request): the task continues the caller's trace.
	e.spans.Reset()
	h := make(map[string][]string)
	h["Traceparent"] = []string{"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
	ctx := telemetry.Extract(context.Background(), h)
	hd, err := e.r.Submit(ctx, e.request("skill:research"))
	require.NoError(t, err)
	_, err = hd.Wait(context.Background())
	require.NoError(t, err)
	s = e.span("invoke_agent agent:ken")
	assert.Equal(t, "0af7651916cd43dd8448eb211c80319c", s.SpanContext.TraceID().String())
	assert.Equal(t, "b7ad6b7169203331", s.Parent.SpanID().String())
}

func TestRetriedTask(t *testing.T) {
	e := newEnv(t, nil)
	calls := 0
	e.agent("agent:flaky", []string{"skill:research"}, nil, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		calls++
		if calls == 1 {
			return nil, router.Fail(protocol.CodeToolUnavailable, "the search server is down", true, nil)
		}
		return &router.Result{}, nil
	})
	_, err := e.run(e.request("skill:research"))
	require.NoError(t, err)
	// The first attempt started the trace: the retry is its child.
	assert.Equal(t, ""+
		"invoke_agent agent:flaky retry TOOL_UNAVAILABLE\n"+
		"  invoke_agent agent:flaky result\n", e.tree())

	// With a parent, the attempts are siblings under it.
	e.spans.Reset()
	calls = 0
	req := e.request("skill:research")
	req.Trace = &protocol.Trace{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7"}
	_, err = e.run(req)
	require.NoError(t, err)
	spans := e.spans.GetSpans()
	require.Len(t, spans, 2)
	for i, s := range spans {
		assert.Equal(t, "00f067aa0ba902b7", s.Parent.SpanID().String())
		assert.Contains(t, attrList(s), "clutch.task.attempt="+[]string{"1", "2"}[i])
	}
	// Each attempt's events carry its own span.
	spanByAttempt := map[int]string{1: spans[0].SpanContext.SpanID().String(), 2: spans[1].SpanContext.SpanID().String()}
	for _, m := range e.events(req.TaskID)[1:] {
		assert.Equal(t, spanByAttempt[m.Attempt], m.Trace.SpanID, "%s of attempt %d", m.Type, m.Attempt)
	}
}

func TestTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		e.agent("agent:slow", []string{"skill:research"}, &protocol.Limits{MaxRuntimeSec: 2}, func(ctx context.Context, t *router.Task) (*router.Result, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
		out, err := e.run(e.request("skill:research"))
		require.ErrorIs(t, err, protocol.CodeTimeout)
		assert.Equal(t, protocol.TypeTaskTimeout, out.Type)
		assert.Equal(t, "invoke_agent agent:slow timeout TIMEOUT\n", e.tree())
		s := e.span("invoke_agent agent:slow")
		assert.Equal(t, codes.Error, s.Status.Code)
		assert.Equal(t, 2*time.Second, s.EndTime.Sub(s.StartTime), "the span ends at the deadline")
		assert.Contains(t, e.logs.records("task", "agent", "code"), "WARN task timed out task="+out.TaskID+" agent=agent:slow code=TIMEOUT")
	})
}

func TestCancel(t *testing.T) {
	ended := make(chan string, 2)
	e := newEnvWith(t, nil, func(tel *telemetry.Telemetry) router.Observer { return &tap{Telemetry: tel, ended: ended} })
	running := make(chan struct{})
	e.agent("agent:lead", []string{"skill:lead"}, nil, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		sub, err := t.NewSubtask("", map[string]any{"q": "details"})
		if err != nil {
			return nil, err
		}
		sub.Requires = []string{"skill:research"}
		_, err = t.Delegate(ctx, sub)
		return nil, err
	})
	e.agent("agent:ken", []string{"skill:research"}, nil, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		close(running)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	h, err := e.r.Submit(context.Background(), e.request("skill:lead"))
	require.NoError(t, err)
	<-running
	h.Cancel("the user changed their mind")
	out, err := h.Wait(context.Background())
	require.ErrorIs(t, err, protocol.CodeCancelled)
	assert.Equal(t, protocol.TypeTaskCancel, out.Type)
	// The subtask ends on a goroutine of its own, when its parent's
	// attempt is cancelled: wait until both ends are observed.
	<-ended
	<-ended
	assert.Equal(t, ""+
		"invoke_agent agent:lead cancel CANCELLED\n"+
		"  invoke_agent agent:ken cancel CANCELLED\n", e.tree())
	assert.Equal(t, codes.Unset, e.span("invoke_agent agent:lead").Status.Code, "a cancel is not an error")
	assert.Contains(t, e.logs.records("task", "code"), "WARN task cancelled task="+h.TaskID()+" code=CANCELLED")
}

// attrList returns a span's attributes as "key=value" strings.
func attrList(s tracetest.SpanStub) []string {
	return eventAttrs(s.Attributes)
}

func eventAttrs(kvs []attribute.KeyValue) []string {
	out := make([]string, len(kvs))
	for i, kv := range kvs {
		out[i] = string(kv.Key) + "=" + kv.Value.Emit()
	}
	return out
}

// TestHandler: a task submitted by an HTTP handler served through Handler
// continues the trace of the caller's traceparent header.
func TestHandler(t *testing.T) {
	e := newEnv(t, nil)
	e.agent("agent:ken", []string{"skill:research"}, nil, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		return &router.Result{}, nil
	})
	srv := httptest.NewServer(telemetry.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, err := e.r.Submit(r.Context(), e.request("skill:research"))
		if err == nil {
			_, err = h.Wait(r.Context())
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})))
	defer srv.Close()
	req, err := http.NewRequest(http.MethodPost, srv.URL, nil)
	require.NoError(t, err)
	req.Header.Set("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	s := e.span("invoke_agent agent:ken")
	assert.Equal(t, "0af7651916cd43dd8448eb211c80319c", s.SpanContext.TraceID().String())
	assert.Equal(t, "b7ad6b7169203331", s.Parent.SpanID().String())
	assert.True(t, s.Parent.IsRemote())
}

// TestToolSpansByCallID: a span per tool call, paired by call id
// (docs/protocol.md §2.3.1) — CallTool's calls, calls whose id comes from
// the tool's own protocol, interleaved, and an old call without one.
func TestToolSpansByCallID(t *testing.T) {
	e := newEnv(t, nil)
	e.agent("agent:ken", []string{"skill:research"}, nil, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		if _, err := router.CallTool(ctx, t, "mcp:search", "search", nil, func(ctx context.Context) (int, error) { return 3, nil }); err != nil {
			return nil, err
		}
		if _, err := router.CallTool(ctx, t, "mcp:web", "fetch", nil, func(ctx context.Context) (int, error) {
			return 0, router.Fail(protocol.CodeToolFailed, "gone", false, nil)
		}); err == nil {
			return nil, errors.New("the failing tool did not fail")
		}
		// Two calls with the ids of their own protocol, answered in the
		// other order.
		for _, c := range [][2]string{{"lc_1", "alpha"}, {"lc_2", "beta"}} {
			if _, err := t.Emit(ctx, protocol.TypeToolCall, "", map[string]any{"call_id": c[0], "tool": "langgraph:agent", "name": c[1]}); err != nil {
				return nil, err
			}
		}
		if _, err := t.Emit(ctx, protocol.TypeToolError, "", &protocol.ErrorPayload{Code: protocol.CodeToolFailed, Message: "beta broke",
			Details: map[string]any{"call_id": "lc_2"}}); err != nil {
			return nil, err
		}
		if _, err := t.Emit(ctx, protocol.TypeToolResult, "", map[string]any{"call_id": "lc_1", "content": 1}); err != nil {
			return nil, err
		}
		return &router.Result{Payload: map[string]any{"ok": true}}, nil
	})
	req := e.request("skill:research")
	_, err := e.run(req)
	require.NoError(t, err)
	assert.Equal(t, ""+
		"invoke_agent agent:ken result\n"+
		"  execute_tool search\n"+
		"  execute_tool fetch error TOOL_FAILED\n"+
		"  execute_tool alpha\n"+
		"  execute_tool beta error TOOL_FAILED\n", e.tree())

	// Each call's span carries its call id, and each event its call's span.
	spans := map[string]string{} // call id → span id
	for _, m := range e.events(req.TaskID) {
		id, ok := protocol.ToolCallID(m)
		if !ok {
			continue
		}
		if m.Type == protocol.TypeToolCall {
			spans[id] = m.Trace.SpanID
			continue
		}
		assert.Equal(t, spans[id], m.Trace.SpanID, "the %s of call %s carries the call's span", m.Type, id)
	}
	require.Len(t, spans, 4)
	assert.Contains(t, attrList(e.span("execute_tool alpha")), "gen_ai.tool.call.id=lc_1")
	assert.Contains(t, attrList(e.span("execute_tool beta")), "gen_ai.tool.call.id=lc_2")
	for _, name := range []string{"search", "fetch"} {
		s := e.span("execute_tool " + name)
		id, _ := attr(s, "gen_ai.tool.call.id")
		assert.Equal(t, spans[id], s.SpanContext.SpanID().String(), "the span of %s names its call", name)
	}
}
