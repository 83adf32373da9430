package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/adapters/mcp"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

const (
	traceID  = "4bf92f3577b34da6a3ce929d0e0e4736"
	callerID = "00f067aa0ba902b7"
)

// TestTraceparentAcrossHTTP: a call from a task whose trace is known
// sends it as traceparent, in the header and in _meta, and the Server's
// submit_task continues it: the task.request it submits carries the
// caller's trace.
func TestTraceparentAcrossHTTP(t *testing.T) {
	tm := newTeam(t)
	h := tm.srv.Handler()
	var mu sync.Mutex
	var headers []string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		headers = append(headers, r.Header.Get("traceparent"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	c := newClient(t, []mcp.ServerConfig{{Name: "team", URL: hs.URL, Headers: map[string]string{"Authorization": "Bearer " + ideKey}}}, nil)
	tr := newTaskRunner(t, "mcp:team")
	var callEv *protocol.Message
	tr.mu.Lock()
	tr.next = func(ctx context.Context, t *router.Task) (*router.Result, error) {
		res, err := c.Call(ctx, t, "team", mcp.ToolSubmitTask, map[string]any{
			"payload_type": "research.query.v1", "payload": map[string]any{"query": "q"}, "requires": []string{"skill:research"}}, nil)
		if res != nil {
			callEv = res.CallEvent
		}
		return &router.Result{Payload: map[string]any{}}, err
	}
	tr.mu.Unlock()
	req := tr.env.Request("", map[string]any{}, "skill:call")
	req.Trace = &protocol.Trace{TraceID: traceID, SpanID: callerID}
	_, err := tr.env.Run(req)
	require.NoError(t, err)
	require.NotNil(t, callEv)
	require.NotNil(t, callEv.Trace, "the tool.call carries the task's trace")
	want := "00-" + traceID + "-" + callEv.Trace.SpanID + "-01"

	mu.Lock()
	assert.Contains(t, headers, want, "the tools/call request had the traceparent header")
	mu.Unlock()
	reqs := tm.env.Events(store.Query{TypePrefix: "task.request"})
	require.Len(t, reqs, 1)
	assert.Equal(t, &protocol.Trace{TraceID: traceID, SpanID: callEv.Trace.SpanID}, reqs[0].Trace)
}

// TestTraceparentInMeta: over a transport without headers, submit_task
// reads _meta.traceparent; a malformed one is ignored.
func TestTraceparentInMeta(t *testing.T) {
	tm := newTeam(t)
	cs, _ := tm.connect(t)
	for _, v := range []string{"00-" + traceID + "-" + callerID + "-01", "00-not-a-trace"} {
		p := &sdk.CallToolParams{Name: mcp.ToolSubmitTask, Arguments: map[string]any{
			"payload_type": "research.query.v1", "payload": map[string]any{"query": "q"}, "requires": []string{"skill:research"}}}
		p.Meta = sdk.Meta{"traceparent": v}
		res, err := cs.CallTool(context.Background(), p)
		require.NoError(t, err)
		require.False(t, res.IsError)
	}
	reqs := tm.env.Events(store.Query{TypePrefix: "task.request"})
	require.Len(t, reqs, 2)
	assert.Equal(t, &protocol.Trace{TraceID: traceID, SpanID: callerID}, reqs[0].Trace)
	assert.Nil(t, reqs[1].Trace)
}
