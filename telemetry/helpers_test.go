package telemetry_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.uber.org/goleak"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/clutchprotocol/clutch/telemetry"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is a router over a measured in-memory store, observed by a
// Telemetry whose spans go to an in-memory exporter, metrics to a manual
// reader and records to a capturing slog handler.
type env struct {
	t      testing.TB
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
	logs   *capture
	tel    *telemetry.Telemetry
	st     store.Store
	r      *router.Router
}

func newEnv(t testing.TB, ro *router.Options) *env {
	t.Helper()
	return newEnvWith(t, ro, nil)
}

// newEnvWith is newEnv with the router observed through observer(tel)
// when observer is not nil.
func newEnvWith(t testing.TB, ro *router.Options, observer func(*telemetry.Telemetry) router.Observer) *env {
	t.Helper()
	e := &env{t: t, spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader(), logs: &capture{}}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(e.spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(e.reader))
	t.Cleanup(func() {
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})
	tel, err := telemetry.New(&telemetry.Options{TracerProvider: tp, MeterProvider: mp, Logger: slog.New(e.logs)})
	require.NoError(t, err)
	e.tel = tel
	var obs router.Observer = tel
	if observer != nil {
		obs = observer(tel)
	}
	e.r = newRouter(t, tel, obs, ro)
	e.st = e.r.Store()
	return e
}

// newRouter returns a router over a new memstore measured by tel,
// observed by obs.
func newRouter(t testing.TB, tel *telemetry.Telemetry, obs router.Observer, ro *router.Options) *router.Router {
	t.Helper()
	ctx := context.Background()
	mem, err := memstore.New(nil)
	require.NoError(t, err)
	st := tel.WrapStore(mem)
	reg, err := registry.Open(ctx, st, nil)
	require.NoError(t, err)
	sch, err := schema.New(nil)
	require.NoError(t, err)
	var o router.Options
	if ro != nil {
		o = *ro
	}
	o.Observer = obs
	o.Logger = slog.New(slog.DiscardHandler)
	if o.Backoff == nil {
		o.Backoff = func(int) time.Duration { return time.Millisecond }
	}
	if o.Validator == nil {
		o.Validator = sch
	}
	r, err := router.New(st, reg, &o)
	require.NoError(t, err)
	t.Cleanup(func() {
		r.Close()
		st.Close()
	})
	return r
}

func (e *env) agent(id string, caps []string, limits *protocol.Limits, h router.Handler) {
	e.t.Helper()
	card := &protocol.AgentCard{V: protocol.Version, AgentID: id, Limits: limits}
	for _, c := range caps {
		card.Capabilities = append(card.Capabilities, protocol.Capability{ID: c})
	}
	require.NoError(e.t, e.r.Register(context.Background(), card, h))
}

func (e *env) request(requires ...string) *protocol.Message {
	e.t.Helper()
	m, err := e.r.NewRequest("agent:ui", "", map[string]any{"q": "nordic payments"})
	require.NoError(e.t, err)
	m.Requires = requires
	return m
}

func (e *env) run(req *protocol.Message) (*router.Outcome, error) {
	e.t.Helper()
	h, err := e.r.Submit(context.Background(), req)
	require.NoError(e.t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := h.Wait(ctx)
	require.NotNil(e.t, out, "the task did not end: %v", err)
	return out, err
}

// tree renders the recorded spans as an indented tree, one span a line:
// its name, clutch.outcome and error.type; children in start order.
func (e *env) tree() string {
	return renderTree(e.spans.GetSpans())
}

func renderTree(spans tracetest.SpanStubs) string {
	byParent := map[string][]tracetest.SpanStub{}
	ids := map[string]bool{}
	for _, s := range spans {
		ids[s.SpanContext.SpanID().String()] = true
	}
	for _, s := range spans {
		p := s.Parent.SpanID().String()
		if !s.Parent.IsValid() || !ids[p] {
			p = ""
		}
		byParent[p] = append(byParent[p], s)
	}
	var b strings.Builder
	var walk func(parent string, depth int)
	walk = func(parent string, depth int) {
		kids := byParent[parent]
		slices.SortStableFunc(kids, func(a, b tracetest.SpanStub) int { return a.StartTime.Compare(b.StartTime) })
		for _, s := range kids {
			line := s.Name
			for _, k := range []string{"clutch.outcome", "error.type"} {
				if v, ok := attr(s, k); ok {
					line += " " + v
				}
			}
			fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", depth), line)
			walk(s.SpanContext.SpanID().String(), depth+1)
		}
	}
	walk("", 0)
	return b.String()
}

func attr(s tracetest.SpanStub, key string) (string, bool) {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.Emit(), true
		}
	}
	return "", false
}

// span returns the one recorded span whose name is name.
func (e *env) span(name string) tracetest.SpanStub {
	e.t.Helper()
	var found []tracetest.SpanStub
	for _, s := range e.spans.GetSpans() {
		if s.Name == name {
			found = append(found, s)
		}
	}
	require.Len(e.t, found, 1, "spans named %q", name)
	return found[0]
}

// events returns the events of a task in store order.
func (e *env) events(taskID string) []*protocol.Message {
	e.t.Helper()
	var out []*protocol.Message
	for ev, err := range e.st.Read(context.Background(), store.Query{TaskID: taskID}) {
		require.NoError(e.t, err)
		m, err := ev.Message()
		require.NoError(e.t, err)
		out = append(out, m)
	}
	return out
}

// metrics collects the metrics and returns them by name.
func (e *env) metrics() map[string]metricdata.Metrics {
	e.t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(e.t, e.reader.Collect(context.Background(), &rm))
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// capture is a slog.Handler that keeps every record.
type capture struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (c *capture) Enabled(context.Context, slog.Level) bool { return true }
func (c *capture) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	c.recs = append(c.recs, r.Clone())
	c.mu.Unlock()
	return nil
}
func (c *capture) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *capture) WithGroup(string) slog.Handler      { return c }

// records returns the captured records as "LEVEL message k=v ..." lines
// of the given keys, in order.
func (c *capture) records(keys ...string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, r := range c.recs {
		line := r.Level.String() + " " + r.Message
		vals := map[string]string{}
		r.Attrs(func(a slog.Attr) bool { vals[a.Key] = a.Value.String(); return true })
		for _, k := range keys {
			if v, ok := vals[k]; ok {
				line += " " + k + "=" + v
			}
		}
		out = append(out, line)
	}
	return out
}

// attrsOf returns the attributes of the first record with message msg.
func (c *capture) attrsOf(msg string) map[string]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range c.recs {
		if r.Message == msg {
			vals := map[string]string{}
			r.Attrs(func(a slog.Attr) bool { vals[a.Key] = a.Value.String(); return true })
			return vals
		}
	}
	return nil
}
