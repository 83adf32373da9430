package telemetry_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"testing"

	noopmetric "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	nooptrace "go.opentelemetry.io/otel/trace/noop"

	"github.com/clutchprotocol/clutch/internal/benchcpu"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/clutchprotocol/clutch/telemetry"
)

// discardExporter is a span exporter that drops what it is given.
type discardExporter struct{}

func (discardExporter) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardExporter) Shutdown(context.Context) error                             { return nil }

// BenchmarkEndToEnd measures the cost of telemetry per task: tasks
// submitted by 64 goroutines, each waiting for its outcome (request,
// decision, accept, a tool call and its result, result, all stored in a
// memstore or a boltstore), with
//
//   - off: no Observer and an unwrapped store;
//   - noprovider: Telemetry on the global providers with no SDK installed
//     (what a library user gets before configuring OpenTelemetry);
//   - sdk: Telemetry on the SDK — every span sampled and batched to an
//     exporter that drops it, every metric aggregated by a reader;
//   - sdk-traces, sdk-metrics: the SDK for one signal, a no-op for the other;
//   - sdk-sampled10pct: the SDK with a parent-based 10 % trace sampler;
//   - sdk-floor: no Telemetry, but an Observer that starts and ends the
//     two spans of a task (the attempt and its tool call) on the same SDK
//     setup, bare: no attributes, event, metrics or trace context on the
//     events — what the SDK itself costs for the spans any tracing of
//     such a task makes.
//
// Compare cpu-µs/task (CPU of the whole process per task) between the
// sub-benchmarks of one run.
func BenchmarkEndToEnd(b *testing.B) {
	for _, backend := range []string{"memstore", "boltstore"} {
		b.Run(backend, func(b *testing.B) { benchVariants(b, backend) })
	}
}

func benchVariants(b *testing.B, backend string) {
	sdk := func(b *testing.B, sampler sdktrace.Sampler, traces, metrics bool) *telemetry.Telemetry {
		o := &telemetry.Options{TracerProvider: nooptrace.NewTracerProvider(), MeterProvider: noopmetric.NewMeterProvider(), Logger: slog.New(slog.DiscardHandler)}
		if traces {
			tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}), sdktrace.WithSampler(sampler))
			b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
			o.TracerProvider = tp
		}
		if metrics {
			mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
			b.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
			o.MeterProvider = mp
		}
		tel, err := telemetry.New(o)
		if err != nil {
			b.Fatal(err)
		}
		return tel
	}
	b.Run("off", func(b *testing.B) { benchEndToEnd(b, backend, nil) })
	b.Run("noprovider", func(b *testing.B) {
		tel, err := telemetry.New(&telemetry.Options{Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		benchEndToEnd(b, backend, tel)
	})
	b.Run("sdk", func(b *testing.B) { benchEndToEnd(b, backend, sdk(b, sdktrace.AlwaysSample(), true, true)) })
	b.Run("sdk-traces", func(b *testing.B) { benchEndToEnd(b, backend, sdk(b, sdktrace.AlwaysSample(), true, false)) })
	b.Run("sdk-metrics", func(b *testing.B) { benchEndToEnd(b, backend, sdk(b, nil, false, true)) })
	b.Run("sdk-sampled10pct", func(b *testing.B) {
		benchEndToEnd(b, backend, sdk(b, sdktrace.ParentBased(sdktrace.TraceIDRatioBased(0.1)), true, true))
	})
	b.Run("sdk-floor", func(b *testing.B) {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discardExporter{}))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		benchEndToEndObs(b, backend, nil, bareSpans{tp.Tracer("bench")})
	})
}

// bareSpans is an Observer that makes a task's spans and nothing else: an
// attempt span from StartAttempt to StepEnd, and a span for each tool.call
// event, ended at once.
type bareSpans struct{ tr trace.Tracer }

func (o bareSpans) StartAttempt(ctx context.Context, _ *protocol.Message, _ int) (context.Context, *protocol.Trace) {
	ctx, _ = o.tr.Start(ctx, telemetry.OpInvokeAgent)
	return ctx, nil
}

func (o bareSpans) Observe(ctx context.Context, s router.Step) {
	switch {
	case s.Kind == router.StepEvent && s.Event.Type == protocol.TypeToolCall:
		_, span := o.tr.Start(ctx, telemetry.OpExecuteTool)
		span.End()
	case s.Kind == router.StepRetry || s.Kind == router.StepEnd:
		trace.SpanFromContext(ctx).End()
	}
}

func benchEndToEnd(b *testing.B, backend string, tel *telemetry.Telemetry) {
	if tel == nil {
		benchEndToEndObs(b, backend, nil, nil)
		return
	}
	benchEndToEndObs(b, backend, tel, tel)
}

// benchEndToEndObs runs the tasks with tel measuring the store (when not
// nil) and obs as the router's Observer (when not nil).
func benchEndToEndObs(b *testing.B, backend string, tel *telemetry.Telemetry, obs router.Observer) {
	ctx := context.Background()
	var base store.Store
	var err error
	if backend == "boltstore" {
		base, err = boltstore.Open(filepath.Join(b.TempDir(), "events.db"), nil)
	} else {
		base, err = memstore.New(nil)
	}
	if err != nil {
		b.Fatal(err)
	}
	st := base
	opts := &router.Options{Logger: slog.New(slog.DiscardHandler)}
	if tel != nil {
		st = tel.WrapStore(base)
	}
	if obs != nil {
		opts.Observer = obs
	}
	reg, err := registry.Open(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	sch, err := schema.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	if opts.Validator == nil {
		opts.Validator = sch
	}
	r, err := router.New(st, reg, opts)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	defer r.Close()
	result := &router.Result{PayloadType: schema.PayloadResearchSummary, Payload: schema.ResearchSummary{
		Title: "Market analysis complete", Findings: []string{"Three incumbents hold 70% of volume"},
		Citations: []string{"https://example.com/reports/nordic-payments-2026"}}}
	for i := range 2 {
		card := &protocol.AgentCard{V: protocol.Version, AgentID: fmt.Sprintf("agent:research-%d", i),
			Capabilities: []protocol.Capability{{ID: "skill:research", Tags: []string{"fintech"}}}}
		if err := r.Register(ctx, card, func(ctx context.Context, t *router.Task) (*router.Result, error) {
			call, err := t.Emit(ctx, protocol.TypeToolCall, "", map[string]any{"tool": "mcp:search", "name": "search", "args": map[string]any{"q": "nordic"}})
			if err != nil {
				return nil, err
			}
			if _, err := t.Emit(ctx, protocol.TypeToolResult, "", map[string]any{"tool": "mcp:search", "name": "search", "call_id": call.ID, "content": []any{}}); err != nil {
				return nil, err
			}
			return result, nil
		}); err != nil {
			b.Fatal(err)
		}
	}
	const submitters = 64
	runtime.GC() // what an earlier sub-benchmark left is not collected on this one's time
	benchcpu.Tasks(b, submitters, func() error {
		req, err := r.NewRequest("agent:ui", schema.PayloadResearchQuery, schema.ResearchQuery{Query: "nordic payments"})
		if err != nil {
			return err
		}
		req.Requires = []string{"skill:research"}
		h, err := r.Submit(ctx, req)
		if err != nil {
			return err
		}
		_, err = h.Wait(ctx)
		return err
	})
}
