package telemetry_test

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/clutchprotocol/clutch/adapters/a2a"
	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/egress"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/telemetry"
)

// TestA2ARoundTripIsOneTrace runs two Clutch routers, each with its own
// store and its own tracer provider, as two processes would: B serves its
// agent over A2A on a real HTTP listener, A forwards a task to it through
// a Remote. The only link between them is the traceparent header, and the
// spans both export form one trace.
func TestA2ARoundTripIsOneTrace(t *testing.T) {
	spans := tracetest.NewInMemoryExporter() // the tracing backend both export to
	newTel := func() *telemetry.Telemetry {
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
		t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		tel, err := telemetry.New(&telemetry.Options{TracerProvider: tp, Logger: slog.New(slog.DiscardHandler)})
		require.NoError(t, err)
		return tel
	}
	ctx := context.Background()

	// B: agent:ken, served over A2A.
	telB := newTel()
	rB := newRouter(t, telB, telB, &router.Options{MaxAttempts: 1})
	card := &protocol.AgentCard{V: protocol.Version, AgentID: "agent:ken", Display: &protocol.Display{Name: "ken"},
		Capabilities: []protocol.Capability{{ID: "skill:research"}}}
	require.NoError(t, rB.Register(ctx, card, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		if err := emitTool(ctx, t, "mcp:web", "fetch", ""); err != nil {
			return nil, err
		}
		return &router.Result{PayloadType: a2a.PayloadContent, Payload: a2a.Content{Text: "found it"}}, nil
	}))
	const key = "a-key-0123456789abcdef0123"
	keys, err := auth.APIKeys(map[string]auth.Caller{key: {AgentID: "agent:a", Scopes: []string{auth.ScopeSubmit, auth.ScopeAgents}}})
	require.NoError(t, err)
	srv, err := a2a.NewServer(rB, &a2a.ServerOptions{Auth: keys, Expose: []string{"agent:ken"}, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)

	// A: the remote agent, and a lead that delegates to it.
	telA := newTel()
	rA := newRouter(t, telA, telA, &router.Options{MaxAttempts: 1})
	loopback, err := egress.New(&egress.Options{Allow: []string{"127.0.0.1"}})
	require.NoError(t, err)
	rm, err := a2a.Register(ctx, rA, hs.URL+"/agents/ken", &a2a.RemoteOptions{AgentID: "agent:remote-ken", BearerToken: key,
		Egress: loopback, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	t.Cleanup(func() { rm.Close() })
	require.NoError(t, rA.Register(ctx, &protocol.AgentCard{V: protocol.Version, AgentID: "agent:lead",
		Capabilities: []protocol.Capability{{ID: "skill:lead"}}}, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		sub, err := t.NewSubtask(a2a.PayloadContent, a2a.Content{Text: "find it"})
		if err != nil {
			return nil, err
		}
		sub.To = []protocol.Participant{{AgentID: "agent:remote-ken"}}
		out, err := t.Delegate(ctx, sub)
		if err != nil {
			return nil, err
		}
		return &router.Result{Payload: out.Message.Payload}, nil
	}))

	req, err := rA.NewRequest("agent:ui", "", map[string]any{"q": "x"})
	require.NoError(t, err)
	req.Requires = []string{"skill:lead"}
	h, err := rA.Submit(ctx, req)
	require.NoError(t, err)
	_, err = h.Wait(ctx)
	require.NoError(t, err)
	require.NoError(t, rB.Shutdown(ctx)) // B's spans have ended too

	assert.Equal(t, ""+
		"invoke_agent agent:lead result\n"+
		"  invoke_agent ken result\n"+ // A's attempt of the forwarded task (the remote card's name)
		"    invoke_agent ken result\n"+ // B's task, through traceparent
		"      execute_tool fetch\n", renderTree(spans.GetSpans()))
	got := spans.GetSpans()
	for _, s := range got {
		assert.Equal(t, got[0].SpanContext.TraceID(), s.SpanContext.TraceID(), "%s is in another trace", s.Name)
	}
	// B's task.request carries A's span as its trace (the caller's).
	remoteSpan := "none"
	for _, s := range got {
		if id, _ := attr(s, "gen_ai.agent.id"); id == "agent:remote-ken" {
			remoteSpan = s.SpanContext.SpanID().String()
		}
	}
	n := 0
	for ev, err := range rB.Store().Read(ctx, store.Query{TypePrefix: "task.request"}) {
		require.NoError(t, err)
		m, _ := ev.Message()
		require.NotNil(t, m.Trace)
		assert.Equal(t, got[0].SpanContext.TraceID().String(), m.Trace.TraceID)
		assert.Equal(t, remoteSpan, m.Trace.SpanID)
		n++
	}
	assert.Equal(t, 1, n)
}
