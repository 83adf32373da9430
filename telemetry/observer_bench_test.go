package telemetry_test

import (
	"context"
	"log/slog"
	"testing"

	noopmetric "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	nooptrace "go.opentelemetry.io/otel/trace/noop"

	"github.com/clutchprotocol/clutch/internal/benchcpu"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/telemetry"
)

// nopStore is a store whose appends do nothing, to measure the wrapper.
type nopStore struct{ store.Store }

func (nopStore) Append(_ context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	return nil, nil
}

// BenchmarkObserver measures what Telemetry adds to one task without the
// router: the observer's steps of a task with one tool call (as the
// router gives them) and five store appends through WrapStore, on the SDK
// (every span sampled, batched to a discarding exporter; metrics
// aggregated by a reader) and on no-op providers.
func BenchmarkObserver(b *testing.B) {
	for _, name := range []string{"noop", "sdk", "sdk-traces", "sdk-metrics"} {
		o := &telemetry.Options{TracerProvider: nooptrace.NewTracerProvider(), MeterProvider: noopmetric.NewMeterProvider(), Logger: slog.New(slog.DiscardHandler)}
		if name == "sdk" || name == "sdk-traces" {
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}))
			b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			o.TracerProvider = tp
		}
		if name == "sdk" || name == "sdk-metrics" {
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
			o.MeterProvider = mp
		}
		b.Run(name, func(b *testing.B) {
			tel, err := telemetry.New(o)
			if err != nil {
				b.Fatal(err)
			}
			st := tel.WrapStore(nopStore{})
			card := &protocol.AgentCard{V: protocol.Version, AgentID: "agent:research-0"}
			req := &protocol.Message{V: protocol.Version, ID: "m1", TaskID: "t1", RunID: "r1", ThreadID: "th1",
				Type: protocol.TypeTaskRequest, PayloadType: "research.query", Attempt: 1}
			dec := &protocol.RoutingDecision{Selected: card.AgentID, Candidates: []string{card.AgentID}, Reason: "best", Eligible: 2, Considered: 2}
			decEv := &protocol.Message{Type: protocol.TypeRoutingDecision}
			call := &protocol.Message{ID: "c1", Type: protocol.TypeToolCall,
				Payload: []byte(`{"tool":"mcp:search","name":"search","args":{"q":"nordic"}}`)}
			res := &protocol.Message{ID: "c2", Type: protocol.TypeToolResult,
				Payload: []byte(`{"tool":"mcp:search","name":"search","call_id":"c1","content":[]}`)}
			end := &protocol.Message{Type: protocol.TypeTaskResult, PayloadType: "research.summary"}
			ctx := context.Background()
			b.ReportAllocs()
			cpu := benchcpu.Process()
			for b.Loop() {
				actx, _ := tel.StartAttempt(ctx, req, 1)
				_, _ = st.Append(actx, req)
				tel.Observe(actx, router.Step{Kind: router.StepRouted, Request: req, Attempt: 1, Agent: card, Event: decEv, Decision: dec})
				_, _ = st.Append(actx, decEv, decEv)
				call.Trace, res.Trace = nil, nil
				tel.Observe(actx, router.Step{Kind: router.StepEvent, Request: req, Attempt: 1, Agent: card, Event: call})
				_, _ = st.Append(actx, call)
				tel.Observe(actx, router.Step{Kind: router.StepEvent, Request: req, Attempt: 1, Agent: card, Event: res})
				_, _ = st.Append(actx, res)
				tel.Observe(actx, router.Step{Kind: router.StepEnd, Request: req, Attempt: 1, Agent: card, Event: end})
				_, _ = st.Append(actx, end)
			}
			b.ReportMetric(float64((benchcpu.Process()-cpu).Nanoseconds())/1e3/float64(b.N), "cpu-µs/task")
		})
	}
}

// BenchmarkSDKSpans measures the SDK alone doing what a task's spans
// need, without Telemetry: an invoke_agent span with a routing event
// (three attributes) and nine attributes, an execute_tool child with
// four, batched to an exporter that drops them — the floor of the
// traces' cost per task (bare: the two spans without attributes or
// event).
func BenchmarkSDKSpans(b *testing.B) {
	for _, bare := range []bool{true, false} {
		name := "attributes"
		if bare {
			name = "bare"
		}
		b.Run(name, func(b *testing.B) {
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}))
			b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			tr := tp.Tracer("bench")
			ctx := context.Background()
			b.ReportAllocs()
			cpu := benchcpu.Process()
			for b.Loop() {
				if bare {
					c, s := tr.Start(ctx, "invoke_agent")
					_, s2 := tr.Start(c, "execute_tool")
					s2.End()
					s.End()
					continue
				}
				c, s := tr.Start(ctx, "invoke_agent", startOp...)
				s.SetName("invoke_agent agent:research-0")
				s.AddEvent("clutch.routing.decision", trace.WithAttributes(telemetry.KeyRoutingSelected.String("agent:research-0"),
					telemetry.KeyRoutingEligible.Int(2), telemetry.KeyRoutingReason.String("best")))
				_, s2 := tr.Start(c, "execute_tool search", startOp...)
				s2.SetAttributes(telemetry.KeyToolName.String("search"), telemetry.KeyToolServer.String("mcp:search"), telemetry.KeyToolCallID.String("c1"))
				s2.End()
				s.SetAttributes(telemetry.KeyTask.String("t1"), telemetry.KeyRun.String("r1"), telemetry.KeyConversationID.String("th1"),
					telemetry.KeyAttempt.Int(1), telemetry.KeyPayloadType.String("research.query"), telemetry.KeyOutcome.String("result"),
					telemetry.KeyAgentID.String("agent:research-0"), telemetry.KeyResultPayloadType.String("research.summary"))
				s.End()
			}
			b.ReportMetric(float64((benchcpu.Process()-cpu).Nanoseconds())/1e3/float64(b.N), "cpu-µs/task")
		})
	}
}

var startOp = []trace.SpanStartOption{trace.WithAttributes(telemetry.KeyOperation.String("op"))}
