// Command observability runs the quickstart's research team with
// OpenTelemetry on: every task attempt is a span (invoke_agent, with its
// routing decision as an event and an execute_tool child per tool call),
// the router's metrics go to an exporter and to a Prometheus scrape
// endpoint, and the task lifecycle is logged with slog, trace ids
// included.
//
// Traces and metrics are printed to standard output by default. With
// OTEL_EXPORTER_OTLP_ENDPOINT set (http://localhost:4318 for a local
// collector or Jaeger), they are sent over OTLP/HTTP instead, configured by
// the standard OTEL_EXPORTER_OTLP_* variables.
//
//	go run ./examples/observability
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
	"os"
	"os/signal"
	"strings"
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
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/clutchprotocol/clutch/telemetry"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9464", "address of the Prometheus scrape endpoint (/metrics)")
	serve := flag.Bool("serve", false, "keep serving /metrics after the tasks, until interrupted")
	tasks := flag.Int("tasks", 3, "how many research tasks to run")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg := config{listen: *listen, serve: *serve, tasks: *tasks, otlp: os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""}
	if err := run(ctx, os.Stdout, cfg); err != nil {
		log.Fatal(err)
	}
}

type config struct {
	listen string
	serve  bool
	tasks  int
	otlp   bool      // export over OTLP/HTTP (OTEL_EXPORTER_OTLP_* variables)
	out    io.Writer // where the stdout exporters write; the run's writer when nil
}

func run(ctx context.Context, w io.Writer, cfg config) error {
	// The OpenTelemetry SDK: the host application's choice, not Clutch's.
	tp, mp, reg, err := setup(ctx, w, cfg)
	if err != nil {
		return err
	}
	defer func() {
		// Flush what is left: the spans batched, a last metrics export.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(sctx)
		_ = mp.Shutdown(sctx)
	}()

	// The Prometheus scrape endpoint.
	ln, err := net.Listen("tcp", cfg.listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	fmt.Fprintf(w, "Prometheus metrics on http://%s/metrics\n\n", ln.Addr())

	// Clutch: the telemetry observes the router and measures the store.
	logs := slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
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
		fmt.Fprintf(w, "task %s: %s by %s, trace %s\n\n", out.TaskID, out.Type, out.Message.From.AgentID, out.Message.Trace.TraceID)
	}

	// What a Prometheus server scraping the endpoint sees now.
	body, err := scrape(ctx, "http://"+ln.Addr().String()+"/metrics")
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "clutch metrics scraped from /metrics:\n")
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "clutch_") && !strings.Contains(line, "_bucket{") {
			fmt.Fprintln(w, "  "+line)
		}
	}
	fmt.Fprintln(w)
	if cfg.serve {
		fmt.Fprintf(w, "serving /metrics until interrupted\n")
		<-ctx.Done()
	}
	return nil
}

// setup makes the tracer and meter providers: stdout exporters, or
// OTLP/HTTP ones when cfg.otlp, and a Prometheus reader in any case.
func setup(ctx context.Context, w io.Writer, cfg config) (*sdktrace.TracerProvider, *metric.MeterProvider, *prometheus.Registry, error) {
	out := cfg.out
	if out == nil {
		out = w
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(semconv.ServiceName("clutch-observability-example")))
	if err != nil {
		return nil, nil, nil, err
	}
	var spans sdktrace.SpanExporter
	var metrics metric.Exporter
	if cfg.otlp {
		if spans, err = otlptracehttp.New(ctx); err != nil {
			return nil, nil, nil, err
		}
		if metrics, err = otlpmetrichttp.New(ctx); err != nil {
			return nil, nil, nil, err
		}
	} else {
		if spans, err = stdouttrace.New(stdouttrace.WithWriter(out), stdouttrace.WithPrettyPrint()); err != nil {
			return nil, nil, nil, err
		}
		if metrics, err = stdoutmetric.New(stdoutmetric.WithWriter(out), stdoutmetric.WithPrettyPrint()); err != nil {
			return nil, nil, nil, err
		}
	}
	reg := prometheus.NewRegistry()
	prom, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithoutScopeInfo())
	if err != nil {
		return nil, nil, nil, err
	}
	// Batched for a backend; printed as each span ends otherwise.
	export := sdktrace.WithSyncer(spans)
	if cfg.otlp {
		export = sdktrace.WithBatcher(spans)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithResource(res), export)
	mp := metric.NewMeterProvider(metric.WithResource(res), metric.WithReader(prom),
		metric.WithReader(metric.NewPeriodicReader(metrics, metric.WithInterval(30*time.Second))))
	return tp, mp, reg, nil
}

// team registers the quickstart's two research agents; Ken has a browser
// tool, whose calls become execute_tool spans.
func team(ctx context.Context, r *router.Router) error {
	ken := &protocol.AgentCard{
		V: protocol.Version, AgentID: "agent:ken",
		Display: &protocol.Display{Name: "Ken", Desc: "Research specialist"},
		Capabilities: []protocol.Capability{{ID: "skill:research", Version: "1.0", Tags: []string{"market", "fintech"},
			Tools: []string{"mcp:browser"}}},
		Limits: &protocol.Limits{MaxConcurrency: 2, MaxRuntimeSec: 600},
	}
	other := &protocol.AgentCard{
		V: protocol.Version, AgentID: "agent:research-2",
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
