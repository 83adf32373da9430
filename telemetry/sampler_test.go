package telemetry_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/telemetry"
)

// seenSampler samples every span and keeps the attributes it was shown.
type seenSampler struct {
	mu   sync.Mutex
	seen map[string][]attribute.KeyValue // by span name
}

func (s *seenSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	s.mu.Lock()
	s.seen[p.Name] = append([]attribute.KeyValue(nil), p.Attributes...)
	s.mu.Unlock()
	return sdktrace.AlwaysSample().ShouldSample(p)
}

func (*seenSampler) Description() string { return "seen" }

// A sampler sees gen_ai.operation.name when a span starts (the GenAI
// conventions ask for it there); the span ends with all its attributes.
func TestSamplerSeesOperationName(t *testing.T) {
	sampler := &seenSampler{seen: map[string][]attribute.KeyValue{}}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(sampler))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tel, err := telemetry.New(&telemetry.Options{TracerProvider: tp, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)

	req := &protocol.Message{V: protocol.Version, ID: "m1", TaskID: "t1", RunID: "r1", ThreadID: "th1", Type: protocol.TypeTaskRequest, Attempt: 1}
	card := &protocol.AgentCard{V: protocol.Version, AgentID: "agent:a"}
	ctx, _ := tel.StartAttempt(context.Background(), req, 1)
	tel.Observe(ctx, router.Step{Kind: router.StepRouted, Request: req, Attempt: 1, Agent: card})
	call := &protocol.Message{ID: "c1", Type: protocol.TypeToolCall, Payload: []byte(`{"tool":"mcp:s","name":"find"}`)}
	tel.Observe(ctx, router.Step{Kind: router.StepEvent, Request: req, Attempt: 1, Agent: card, Event: call})
	res := &protocol.Message{ID: "c2", Type: protocol.TypeToolResult, Payload: []byte(`{"tool":"mcp:s","name":"find","call_id":"c1"}`)}
	tel.Observe(ctx, router.Step{Kind: router.StepEvent, Request: req, Attempt: 1, Agent: card, Event: res})
	tel.Observe(ctx, router.Step{Kind: router.StepEnd, Request: req, Attempt: 1, Agent: card, Event: &protocol.Message{Type: protocol.TypeTaskResult}})

	sampler.mu.Lock()
	defer sampler.mu.Unlock()
	assert.Equal(t, []attribute.KeyValue{telemetry.KeyOperation.String(telemetry.OpInvokeAgent)}, sampler.seen[telemetry.OpInvokeAgent])
	assert.Equal(t, []attribute.KeyValue{telemetry.KeyOperation.String(telemetry.OpExecuteTool)}, sampler.seen[telemetry.OpExecuteTool+" find"])
	spans := exp.GetSpans()
	require.Len(t, spans, 2)
	for _, s := range spans {
		got := map[attribute.Key]string{}
		for _, kv := range s.Attributes {
			got[kv.Key] = kv.Value.Emit()
		}
		if s.Name == telemetry.OpExecuteTool+" find" {
			assert.Equal(t, map[attribute.Key]string{telemetry.KeyOperation: telemetry.OpExecuteTool, telemetry.KeyToolName: "find",
				telemetry.KeyToolServer: "mcp:s", telemetry.KeyToolCallID: "c1"}, got)
			continue
		}
		assert.Equal(t, telemetry.OpInvokeAgent+" agent:a", s.Name)
		assert.Equal(t, map[attribute.Key]string{telemetry.KeyOperation: telemetry.OpInvokeAgent, telemetry.KeyTask: "t1", telemetry.KeyRun: "r1",
			telemetry.KeyConversationID: "th1", telemetry.KeyAttempt: "1", telemetry.KeyOutcome: telemetry.OutcomeResult, telemetry.KeyAgentID: "agent:a"}, got)
	}
}
