package telemetry_test

import (
	"context"
	"fmt"
	"log/slog"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/clutchprotocol/clutch/telemetry"
)

// A router observed by a Telemetry: each task attempt is a span, its
// events carry the span's ids, and the metrics count it. The host picks
// the SDK and the exporters; here an in-memory exporter and a manual
// reader stand in for a tracing backend and a Prometheus scrape.
func Example() {
	ctx := context.Background()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	tel, _ := telemetry.New(&telemetry.Options{TracerProvider: tp, MeterProvider: mp, Logger: slog.New(slog.DiscardHandler)})

	mem, _ := memstore.New(nil)
	st := tel.WrapStore(mem)
	reg, _ := registry.Open(ctx, st, nil)
	schemas, _ := schema.New(nil)
	r, _ := router.New(st, reg, &router.Options{Validator: schemas, Observer: tel, Logger: slog.New(slog.DiscardHandler)})
	defer r.Close()
	card := &protocol.AgentCard{V: protocol.Version, AgentID: "agent:ken", Display: &protocol.Display{Name: "Ken"},
		Capabilities: []protocol.Capability{{ID: "skill:research"}}}
	_ = r.Register(ctx, card, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		return &router.Result{Payload: map[string]string{"answer": "42"}}, nil
	})

	req, _ := r.NewRequest("agent:ui", "", map[string]string{"q": "?"})
	req.Requires = []string{"skill:research"}
	h, _ := r.Submit(ctx, req)
	out, _ := h.Wait(ctx)

	s := spans.GetSpans()[0]
	fmt.Println(s.Name)
	fmt.Println("result carries the span:", out.Message.Trace.SpanID == s.SpanContext.SpanID().String())

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(ctx, &rm)
	for _, m := range rm.ScopeMetrics[0].Metrics {
		if m.Name == telemetry.MetricTaskFinished {
			p := m.Data.(metricdata.Sum[int64]).DataPoints[0]
			outcome, _ := p.Attributes.Value(telemetry.KeyOutcome)
			fmt.Println(m.Name, outcome.AsString(), p.Value)
		}
	}
	// Output:
	// invoke_agent Ken
	// result carries the span: true
	// clutch.task.finished result 1
}
