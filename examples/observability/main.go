// Command observability runs the quickstart's research team with
// OpenTelemetry on: every task attempt is a span (invoke_agent, with its
// routing decision as an event and an execute_tool child per tool call),
// the router's metrics go to an exporter and to a Prometheus registry,
// and the task lifecycle is logged with slog, trace ids included.
//
// By default it prints a short summary: each task's spans and log
// records, and the clutch metrics as Prometheus reads them. -export also
// prints the spans, metrics and logs as the stdout exporters write them
// (JSON). -serve serves the Prometheus scrape endpoint (/metrics on
// -listen, 127.0.0.1:9464) until interrupted; without it no port is
// opened. With OTEL_EXPORTER_OTLP_ENDPOINT set (http://localhost:4318 for
// a local collector or Jaeger), traces and metrics are sent over
// OTLP/HTTP, configured by the standard OTEL_EXPORTER_OTLP_* variables.
//
//	go run ./examples/observability
//	go run ./examples/observability -export  # the exporters' JSON too
//	go run ./examples/observability -serve   # keep /metrics up until Ctrl-C
//	OTEL_EXPORTER_OTLP_ENDPOINT=http://localhost:4318 go run ./examples/observability
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/exporters/stdout/stdoutmetric"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/clutchprotocol/clutch/telemetry"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9464", "address of the Prometheus scrape endpoint (/metrics), with -serve")
	serve := flag.Bool("serve", false, "serve /metrics on -listen after the tasks, until interrupted")
	export := flag.Bool("export", false, "also print the spans, metrics and logs as the stdout exporters write them (JSON)")
	tasks := flag.Int("tasks", 3, "how many research tasks to run")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg := config{listen: *listen, serve: *serve, export: *export, tasks: *tasks, otlp: os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""}
	if err := run(ctx, os.Stdout, cfg); err != nil {
		log.Fatal(err)
	}
}

type config struct {
	listen string
	serve  bool // serve /metrics on listen until ctx ends
	export bool // print what the stdout exporters write
	tasks  int
	otlp   bool      // export over OTLP/HTTP (OTEL_EXPORTER_OTLP_* variables)
	out    io.Writer // where the stdout exporters and the logs write; the run's writer when nil
}

func run(ctx context.Context, w io.Writer, cfg config) error {
	// The OpenTelemetry SDK: the host application's choice, not Clutch's.
	// spans keeps the ended spans for the summary.
	spans := tracetest.NewSpanRecorder()
	tp, mp, reg, err := setup(ctx, w, cfg, spans)
	if err != nil {
		return err
	}
	shutdown := func() {
		// Flush what is left: the spans batched, a last metrics export.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(sctx)
		_ = mp.Shutdown(sctx)
	}
	defer shutdown() // a no-op after the first

	// The lifecycle records go to the exporters' output with -export, and
	// are kept for the summary in any case.
	records := newLogRecords()
	var handler slog.Handler = records
	if cfg.export {
		handler = fanout{records, slog.NewTextHandler(exportOut(w, cfg), &slog.HandlerOptions{Level: slog.LevelDebug})}
	}
	logs := slog.New(handler)

	// Clutch: the telemetry observes the router and measures the store.
	tel, err := telemetry.New(&telemetry.Options{TracerProvider: tp, MeterProvider: mp, Logger: logs})
	if err != nil {
		return err
	}
	mem, err := memstore.New(nil)
	if err != nil {
		return err
	}
	st := tel.WrapStore(mem)
	defer st.Close()
	agents, err := registry.Open(ctx, st, nil)
	if err != nil {
		return err
	}
	schemas, err := schema.New(nil)
	if err != nil {
		return err
	}
	r, err := router.New(st, agents, &router.Options{Validator: schemas, Observer: tel, Logger: logs})
	if err != nil {
		return err
	}
	defer r.Close()
	if err := team(ctx, r); err != nil {
		return err
	}

	var outs []*router.Outcome
	for i := range cfg.tasks {
		req, err := r.NewRequest("agent:ui", "research.query.v1", schema.ResearchQuery{Query: fmt.Sprintf("Nordic payments, question %d", i+1), MaxSources: 5})
		if err != nil {
			return err
		}
		req.Requires = []string{"skill:research"}
		req.Prefers = []string{"tool:browser", "domain:fintech"}
		h, err := r.Submit(ctx, req)
		if err != nil {
			return err
		}
		out, err := h.Wait(ctx)
		if err != nil {
			return fmt.Errorf("task %d: %w", i+1, err)
		}
		outs = append(outs, out)
	}

	// What a Prometheus server scraping /metrics sees now: over the
	// network with -serve, else from the same handler in process.
	metrics := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	var ln net.Listener
	var body string
	if cfg.serve {
		if ln, err = net.Listen("tcp", cfg.listen); err != nil {
			return err
		}
		srv := &http.Server{Handler: metrics, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
		body, err = scrape(ctx, "http://"+ln.Addr().String()+"/metrics")
	} else {
		rec := httptest.NewRecorder()
		metrics.ServeHTTP(rec, httptest.NewRequestWithContext(ctx, http.MethodGet, "/metrics", nil))
		body = rec.Body.String()
	}
	if err != nil {
		return err
	}
	if !cfg.serve {
		shutdown() // the exporters' last output comes before the summary
	}

	summary(w, outs, spans.Ended(), records, body)
	switch {
	case cfg.serve:
		fmt.Fprintf(w, "\nserving http://%s/metrics until interrupted\n", ln.Addr())
		<-ctx.Done()
	case !cfg.export:
		fmt.Fprintf(w, "\n-export prints the spans, metrics and logs as the exporters write them; -serve serves /metrics on %s.\n", cfg.listen)
	}
	return nil
}

// summary prints each task with its spans and log records, then the
// clutch metrics of the Prometheus exposition body (histogram buckets
// and sums left out).
func summary(w io.Writer, outs []*router.Outcome, spans []sdktrace.ReadOnlySpan, records *logRecords, body string) {
	tasks := "research tasks"
	if len(outs) == 1 {
		tasks = "research task"
	}
	fmt.Fprintf(w, "%d %s, traced, measured and logged with OpenTelemetry:\n", len(outs), tasks)
	for i, out := range outs {
		traceID := out.Message.Trace.TraceID
		fmt.Fprintf(w, "\ntask %d: %s by %s (%s)\n", i+1, out.Type, out.Message.From.AgentID, out.TaskID)
		fmt.Fprintf(w, "  trace %s\n", traceID)
		var mine []sdktrace.ReadOnlySpan
		for _, s := range spans {
			if s.SpanContext().TraceID().String() == traceID {
				mine = append(mine, s)
			}
		}
		printSpans(w, mine)
		fmt.Fprintf(w, "  logs: %s\n", strings.Join(records.messages(traceID), ", "))
	}
	fmt.Fprintf(w, "\nclutch metrics, as Prometheus reads them:\n")
	for line := range strings.Lines(body) {
		line = strings.TrimSpace(line)
		name, _, _ := strings.Cut(line, "{")
		name, _, _ = strings.Cut(name, " ")
		if strings.HasPrefix(name, "clutch_") && !strings.HasSuffix(name, "_bucket") && !strings.HasSuffix(name, "_sum") {
			fmt.Fprintln(w, "  "+line)
		}
	}
}

// printSpans prints a trace's spans as a tree, children under their
// parent, each with its duration and the names of its events.
func printSpans(w io.Writer, spans []sdktrace.ReadOnlySpan) {
	slices.SortFunc(spans, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
	under := func(s sdktrace.ReadOnlySpan, parent trace.SpanID) bool {
		if parent.IsValid() {
			return s.Parent().SpanID() == parent
		}
		// A root: no parent, or one outside these spans.
		return !slices.ContainsFunc(spans, func(p sdktrace.ReadOnlySpan) bool { return p.SpanContext().SpanID() == s.Parent().SpanID() })
	}
	var walk func(parent trace.SpanID, indent string)
	walk = func(parent trace.SpanID, indent string) {
		for _, s := range spans {
			if !under(s, parent) {
				continue
			}
			line := fmt.Sprintf("%sspan %s, %s", indent, s.Name(), s.EndTime().Sub(s.StartTime()).Round(time.Microsecond))
			var events []string
			for _, e := range s.Events() {
				events = append(events, e.Name)
			}
			if len(events) > 0 {
				line += "; events: " + strings.Join(events, ", ")
			}
			fmt.Fprintln(w, line)
			walk(s.SpanContext().SpanID(), indent+"  ")
		}
	}
	walk(trace.SpanID{}, "  ")
}

// logRecords is a slog.Handler that keeps each record's message with its
// trace_id attribute, for the summary.
type logRecords struct {
	kept  *keptRecords
	attrs []slog.Attr // from WithAttrs
}

type keptRecords struct {
	mu   sync.Mutex
	recs []logRecord
}

type logRecord struct{ msg, trace string }

func newLogRecords() *logRecords { return &logRecords{kept: &keptRecords{}} }

func (h *logRecords) Enabled(context.Context, slog.Level) bool { return true }

func (h *logRecords) Handle(_ context.Context, r slog.Record) error {
	rec := logRecord{msg: r.Message}
	find := func(a slog.Attr) bool {
		if a.Key == "trace_id" {
			rec.trace = a.Value.String()
		}
		return true
	}
	for _, a := range h.attrs {
		find(a)
	}
	r.Attrs(find)
	h.kept.mu.Lock()
	h.kept.recs = append(h.kept.recs, rec)
	h.kept.mu.Unlock()
	return nil
}

func (h *logRecords) WithAttrs(as []slog.Attr) slog.Handler {
	return &logRecords{kept: h.kept, attrs: append(slices.Clip(h.attrs), as...)}
}

func (h *logRecords) WithGroup(string) slog.Handler { return h }

// messages returns the messages of the records of a trace, in order.
func (h *logRecords) messages(traceID string) []string {
	h.kept.mu.Lock()
	defer h.kept.mu.Unlock()
	var out []string
	for _, r := range h.kept.recs {
		if r.trace == traceID {
			out = append(out, r.msg)
		}
	}
	return out
}

// fanout sends each record to both handlers.
type fanout [2]slog.Handler

func (f fanout) Enabled(ctx context.Context, l slog.Level) bool {
	return f[0].Enabled(ctx, l) || f[1].Enabled(ctx, l)
}

func (f fanout) Handle(ctx context.Context, r slog.Record) error {
	return errors.Join(f[0].Handle(ctx, r.Clone()), f[1].Handle(ctx, r))
}

func (f fanout) WithAttrs(as []slog.Attr) slog.Handler {
	return fanout{f[0].WithAttrs(as), f[1].WithAttrs(as)}
}

func (f fanout) WithGroup(name string) slog.Handler {
	return fanout{f[0].WithGroup(name), f[1].WithGroup(name)}
}

// exportOut is where the stdout exporters and the logs write.
func exportOut(w io.Writer, cfg config) io.Writer {
	if cfg.out != nil {
		return cfg.out
	}
	return w
}

// setup makes the tracer and meter providers: with the stdout exporters
// when cfg.export, OTLP/HTTP ones when cfg.otlp, and a Prometheus reader
// and the span recorder rec in any case.
func setup(ctx context.Context, w io.Writer, cfg config, rec *tracetest.SpanRecorder) (*sdktrace.TracerProvider, *metric.MeterProvider, *prometheus.Registry, error) {
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName("clutch-observability-example")))
	if err != nil {
		return nil, nil, nil, err
	}
	tpOpts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res), sdktrace.WithSpanProcessor(rec)}
	mpOpts := []metric.Option{metric.WithResource(res)}
	switch {
	case cfg.otlp:
		spans, err := otlptracehttp.New(ctx)
		if err != nil {
			return nil, nil, nil, err
		}
		metrics, err := otlpmetrichttp.New(ctx)
		if err != nil {
			return nil, nil, nil, err
		}
		// Batched for a backend.
		tpOpts = append(tpOpts, sdktrace.WithBatcher(spans))
		mpOpts = append(mpOpts, metric.WithReader(metric.NewPeriodicReader(metrics, metric.WithInterval(30*time.Second))))
	case cfg.export:
		out := exportOut(w, cfg)
		spans, err := stdouttrace.New(stdouttrace.WithWriter(out), stdouttrace.WithPrettyPrint())
		if err != nil {
			return nil, nil, nil, err
		}
		metrics, err := stdoutmetric.New(stdoutmetric.WithWriter(out), stdoutmetric.WithPrettyPrint())
		if err != nil {
			return nil, nil, nil, err
		}
		// Printed as each span ends.
		tpOpts = append(tpOpts, sdktrace.WithSyncer(spans))
		mpOpts = append(mpOpts, metric.WithReader(metric.NewPeriodicReader(metrics, metric.WithInterval(30*time.Second))))
	}
	reg := prometheus.NewRegistry()
	prom, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, nil, nil, err
	}
	mpOpts = append(mpOpts, metric.WithReader(prom))
	return sdktrace.NewTracerProvider(tpOpts...), metric.NewMeterProvider(mpOpts...), reg, nil
}

// team registers the quickstart's two research agents; Ken has a browser
// tool, whose calls become execute_tool spans.
func team(ctx context.Context, r *router.Router) error {
	ken := &protocol.AgentCard{
		AgentID: "agent:ken",
		Display: &protocol.Display{Name: "Ken", Desc: "Research specialist"},
		Capabilities: []protocol.Capability{{ID: "skill:research", Version: "1.0", Tags: []string{"market", "fintech"},
			Tools: []string{"mcp:browser"}}},
		Limits: &protocol.Limits{MaxConcurrency: 2, MaxRuntimeSec: 600},
	}
	other := &protocol.AgentCard{
		AgentID:      "agent:research-2",
		Capabilities: []protocol.Capability{{ID: "skill:research", Version: "1.0", Tags: []string{"market", "health"}}},
		Limits:       &protocol.Limits{MaxConcurrency: 2, MaxRuntimeSec: 600},
	}
	if err := r.Register(ctx, ken, researcher(true)); err != nil {
		return err
	}
	return r.Register(ctx, other, researcher(false))
}

// researcher searches with the (local, fake) browser tool when it has one
// and returns a research.summary.v1.
func researcher(browser bool) router.Handler {
	return func(ctx context.Context, t *router.Task) (*router.Result, error) {
		q, err := router.Input[schema.ResearchQuery](t)
		if err != nil {
			return nil, err
		}
		var citations []string
		if browser {
			// One execute_tool span: CallTool records the call and its
			// result with one call id.
			hits, err := router.CallTool(ctx, t, "mcp:browser", "search", map[string]any{"query": q.Query}, func(ctx context.Context) ([]map[string]string, error) {
				return []map[string]string{{"url": "https://example.com/reports/nordic-payments-2026", "title": "Nordic payments 2026"}}, nil
			})
			if err != nil {
				return nil, err
			}
			citations = append(citations, hits[0]["url"])
		}
		return &router.Result{PayloadType: "research.summary.v1", Payload: schema.ResearchSummary{
			Title: "Market analysis complete", Findings: []string{"Real-time rails adoption doubled in 2026"}, Citations: citations,
		}}, nil
	}
}

func scrape(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", errors.New("scrape: " + resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}
