package telemetry

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
)

// ScopeName is the instrumentation scope of the tracer and the meter.
const ScopeName = "github.com/clutchprotocol/clutch/telemetry"

// Options configures a Telemetry. Nil means defaults.
type Options struct {
	// TracerProvider makes the spans; the global one
	// (otel.GetTracerProvider) when nil, which records nothing until an
	// SDK is installed with otel.SetTracerProvider.
	TracerProvider trace.TracerProvider
	// MeterProvider makes the instruments; the global one
	// (otel.GetMeterProvider) when nil.
	MeterProvider metric.MeterProvider
	// Logger receives the task lifecycle records; slog.Default() when
	// nil. Give it a handler at slog.LevelDebug to see the happy path.
	Logger *slog.Logger
}

// Telemetry turns what a router does into OpenTelemetry spans and metrics
// and slog records. It implements router.Observer: put it in
// router.Options.Observer. It is safe for concurrent use and may observe
// several routers.
type Telemetry struct {
	tracer trace.Tracer
	log    *slog.Logger
	meter  metric.Meter // for ObserveStore (usage.go)

	duration    metric.Float64Histogram
	queueWait   metric.Float64Histogram
	toolDur     metric.Float64Histogram
	appendDur   metric.Float64Histogram
	appendBatch metric.Int64Histogram
	// The counters and up-down counters are tallies: an atomic per
	// attribute set, added to on the hot path and reported by these
	// observable instruments when the meter collects.
	tallies [nTallies]metric.Int64Observable

	sets   sync.Map // setKey → *attrs: the attribute sets of the hot path, made once
	nsets  atomic.Int32
	agents sync.Map // agent id → *agentTallies

	// The sets of every append, by standard event type (read only).
	appendOK *attrs
	eventSet map[protocol.Type]*attrs
}

var _ router.Observer = (*Telemetry)(nil)

// Names of the instruments (see the package doc for their attributes).
const (
	MetricTaskStarted     = "clutch.task.started"
	MetricTaskFinished    = "clutch.task.finished"
	MetricTaskDuration    = "clutch.task.duration"
	MetricTaskQueueWait   = "clutch.task.queue.wait"
	MetricTaskActive      = "clutch.task.active"
	MetricTaskQueued      = "clutch.task.queued"
	MetricRoutingDecision = "clutch.routing.decisions"
	MetricToolDuration    = "clutch.tool.duration"
	MetricStoreAppendDur  = "clutch.store.append.duration"
	MetricStoreBatchSize  = "clutch.store.append.batch_size"
	MetricStoreEvents     = "clutch.store.events"
	MetricSubscribers     = "clutch.stream.subscribers"
)

// Attribute keys. The gen_ai.* and error.type keys are those of the
// OpenTelemetry semantic conventions (GenAI agent and tool spans); the
// clutch.* ones are Clutch's. Ids (task, run, thread, call) go on spans
// only, never on metrics.
const (
	KeyOperation      = attribute.Key("gen_ai.operation.name")
	KeyAgentID        = attribute.Key("gen_ai.agent.id")
	KeyAgentName      = attribute.Key("gen_ai.agent.name")
	KeyConversationID = attribute.Key("gen_ai.conversation.id")
	KeyToolName       = attribute.Key("gen_ai.tool.name")
	KeyToolCallID     = attribute.Key("gen_ai.tool.call.id")
	KeyErrorType      = attribute.Key("error.type")

	KeyTask              = attribute.Key("clutch.task.id")
	KeyRun               = attribute.Key("clutch.run.id")
	KeyParentTask        = attribute.Key("clutch.task.parent_id")
	KeyAttempt           = attribute.Key("clutch.task.attempt")
	KeyPayloadType       = attribute.Key("clutch.request.payload_type")
	KeyResultPayloadType = attribute.Key("clutch.result.payload_type")
	KeyOutcome           = attribute.Key("clutch.outcome")
	KeyRoutingResult     = attribute.Key("clutch.routing.result")
	KeyRoutingReason     = attribute.Key("clutch.routing.reason")
	KeyRoutingSelected   = attribute.Key("clutch.routing.selected")
	KeyRoutingEligible   = attribute.Key("clutch.routing.candidates")
	KeyQueueWait         = attribute.Key("clutch.queue.wait_ms")
	KeyToolServer        = attribute.Key("clutch.tool.server")
	KeyEventType         = attribute.Key("clutch.event.type")
	KeyStream            = attribute.Key("clutch.stream")
)

// Operation names (gen_ai.operation.name) and span names.
const (
	OpInvokeAgent = "invoke_agent"
	OpExecuteTool = "execute_tool"
)

// Outcomes (clutch.outcome) of a task attempt or a tool call.
const (
	OutcomeResult  = "result"  // task.result, tool.result
	OutcomeError   = "error"   // task.error, tool.error
	OutcomeRetry   = "retry"   // the attempt failed and the task is tried again
	OutcomeTimeout = "timeout" // task.timeout
	OutcomeCancel  = "cancel"  // task.cancel
)

// otherValue stands for a value outside the bounded set of an attribute,
// as in the OpenTelemetry conventions for error.type.
const otherValue = "_OTHER"

// maxSets bounds the cached attribute sets, and so the values an attribute
// taken from outside (an agent id, an extension event type) can have.
const maxSets = 4096

// New returns a Telemetry with its instruments made. opts may be nil.
func New(opts *Options) (*Telemetry, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.TracerProvider == nil {
		o.TracerProvider = otel.GetTracerProvider()
	}
	if o.MeterProvider == nil {
		o.MeterProvider = otel.GetMeterProvider()
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	t := &Telemetry{tracer: o.TracerProvider.Tracer(ScopeName), log: o.Logger}
	m := o.MeterProvider.Meter(ScopeName)
	t.meter = m
	durations := metric.WithExplicitBucketBoundaries(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)
	fast := metric.WithExplicitBucketBoundaries(0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1)
	var err error
	mk := func(f func() error) {
		if err == nil {
			err = f()
		}
	}
	counter := func(i int, name, unit, desc string) {
		mk(func() (e error) {
			t.tallies[i], e = m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
			return
		})
	}
	updown := func(i int, name, unit, desc string) {
		mk(func() (e error) {
			t.tallies[i], e = m.Int64ObservableUpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
			return
		})
	}
	counter(tallyStarted, MetricTaskStarted, "{task}", "Task attempts accepted by an agent.")
	counter(tallyFinished, MetricTaskFinished, "{task}", "Task attempts ended, by outcome and error code (a retried attempt has outcome retry).")
	updown(tallyActive, MetricTaskActive, "{task}", "Task attempts running on an agent.")
	updown(tallyQueued, MetricTaskQueued, "{task}", "Tasks waiting for an agent's capacity.")
	counter(tallyRouting, MetricRoutingDecision, "{decision}", "Routing passes, selected or failed (with the failure code).")
	counter(tallyEvents, MetricStoreEvents, "{event}", "Events appended to the store, by type (duplicates not counted).")
	updown(tallySubscribers, MetricSubscribers, "{subscriber}", "Live stream subscribers.")
	mk(func() (e error) {
		t.duration, e = m.Float64Histogram(MetricTaskDuration, metric.WithUnit("s"), durations,
			metric.WithDescription("Duration of task attempts, from routing to their end."))
		return
	})
	mk(func() (e error) {
		t.queueWait, e = m.Float64Histogram(MetricTaskQueueWait, metric.WithUnit("s"), durations,
			metric.WithDescription("Time task attempts waited for an agent's capacity before routing ended (0 when they did not wait)."))
		return
	})
	mk(func() (e error) {
		t.toolDur, e = m.Float64Histogram(MetricToolDuration, metric.WithUnit("s"), durations,
			metric.WithDescription("Duration of tool calls, by server, tool and outcome; its count is the number of calls."))
		return
	})
	mk(func() (e error) {
		t.appendDur, e = m.Float64Histogram(MetricStoreAppendDur, metric.WithUnit("s"), fast,
			metric.WithDescription("Latency of event store appends."))
		return
	})
	mk(func() (e error) {
		t.appendBatch, e = m.Int64Histogram(MetricStoreBatchSize, metric.WithUnit("{event}"),
			metric.WithExplicitBucketBoundaries(1, 2, 3, 4, 8, 16, 32, 64, 128, 256),
			metric.WithDescription("Messages per event store append."))
		return
	})
	if err == nil {
		insts := make([]metric.Observable, 0, nTallies)
		for _, in := range t.tallies[1:] {
			insts = append(insts, in)
		}
		_, err = m.RegisterCallback(t.observe, insts...)
	}
	if err != nil {
		return nil, wrap(ErrInvalidOptions, "making the instruments", err)
	}
	t.appendOK = t.set(setKey{kind: kindAppend})
	t.eventSet = make(map[protocol.Type]*attrs, len(protocol.Types()))
	for _, typ := range protocol.Types() {
		t.eventSet[typ] = t.set(setKey{tally: tallyEvents, kind: kindEvent, a: string(typ)})
	}
	return t, nil
}

// Subscribed counts a live stream subscriber of kind stream (a small
// fixed set such as "sse", "ws" or "agui": it is a metric attribute) until
// the returned func is called; calling it again does nothing. Surfaces
// that stream events (the gateway) call it for each subscriber:
//
//	defer tel.Subscribed("sse")()
func (t *Telemetry) Subscribed(stream string) (done func()) {
	set := t.set(setKey{tally: tallySubscribers, kind: kindStream, a: stream})
	set.n.Add(1)
	var once sync.Once
	return func() { once.Do(func() { set.n.Add(-1) }) }
}

// The tallies (Telemetry.tallies).
const (
	tallyNone = iota // a set for a synchronous instrument
	tallyStarted
	tallyFinished
	tallyActive
	tallyQueued
	tallyRouting
	tallyEvents
	tallySubscribers
	nTallies
)

// observe reports the tallies (a metric.Callback).
func (t *Telemetry) observe(_ context.Context, o metric.Observer) error {
	t.sets.Range(func(k, v any) bool {
		if i := k.(setKey).tally; i != tallyNone {
			a := v.(*attrs)
			n := a.n.Load()
			if n == 0 && i != tallyActive && i != tallyQueued && i != tallySubscribers {
				return true // a counter never added to (the sets made in advance)
			}
			o.ObserveInt64(t.tallies[i], n, a.obs...)
		}
		return true
	})
	return nil
}

// setKey names a cached attribute set: of a tally, or of a synchronous
// instrument (tally 0).
type setKey struct {
	tally   int
	kind    uint8
	a, b, c string
}

const (
	kindNone   uint8 = iota // no attribute
	kindAgent               // a: agent
	kindEnd                 // a: agent, b: outcome, c: code
	kindRouted              // a: agent
	kindFailed              // a: code
	kindEvent               // a: event type
	kindStream              // a: stream
	kindAppend              // a: code ("" on success)
	kindTool                // a: server, b: tool, c: code ("" on success)
)

// attrs is an attribute set as the options of a measurement, made once
// (passing them allocates nothing), and the value of a tally.
type attrs struct {
	rec []metric.RecordOption
	obs []metric.ObserveOption
	n   atomic.Int64
	// The execute_tool span name of a tool set, and the tool it names
	// (not the tool of the set once the sets are bounded).
	tool, name string
	// finished is the clutch.task.finished tally of an attempt's end set.
	finished *attrs
}

// spanName returns the execute_tool span name of tool, made once per set.
func (a *attrs) spanName(tool string) string {
	if a.tool == tool && a.name != "" {
		return a.name
	}
	return OpExecuteTool + " " + tool
}

// set returns the attribute set of k, made once. Past maxSets distinct
// sets, values from outside are replaced by _OTHER so that the metrics
// stay bounded whatever the input.
func (t *Telemetry) set(k setKey) *attrs {
	if s, ok := t.sets.Load(k); ok {
		return s.(*attrs)
	}
	if t.nsets.Load() >= maxSets {
		k = setKey{tally: k.tally, kind: k.kind, a: otherValue, b: k.b, c: k.c}
		if k.kind == kindTool {
			k.b = otherValue
		}
		if s, ok := t.sets.Load(k); ok {
			return s.(*attrs)
		}
	}
	var kv []attribute.KeyValue
	switch k.kind {
	case kindAgent, kindRouted:
		kv = []attribute.KeyValue{KeyAgentID.String(k.a)}
		if k.kind == kindRouted {
			kv = append(kv, KeyRoutingResult.String("selected"))
		}
	case kindEnd:
		kv = []attribute.KeyValue{KeyOutcome.String(k.b)}
		if k.a != "" {
			kv = append(kv, KeyAgentID.String(k.a))
		}
		if k.c != "" {
			kv = append(kv, KeyErrorType.String(k.c))
		}
	case kindFailed:
		kv = []attribute.KeyValue{KeyRoutingResult.String("failed"), KeyErrorType.String(k.a)}
	case kindEvent:
		kv = []attribute.KeyValue{KeyEventType.String(k.a)}
	case kindStream:
		kv = []attribute.KeyValue{KeyStream.String(k.a)}
	case kindAppend:
		if k.a != "" {
			kv = []attribute.KeyValue{KeyErrorType.String(k.a)}
		}
	case kindTool:
		kv = []attribute.KeyValue{KeyToolServer.String(k.a), KeyToolName.String(k.b)}
		if k.c != "" {
			kv = append(kv, KeyOutcome.String(OutcomeError), KeyErrorType.String(k.c))
		} else {
			kv = append(kv, KeyOutcome.String(OutcomeResult))
		}
	}
	a := &attrs{}
	if len(kv) > 0 {
		// A set without attributes is no option at all: the SDK's
		// measurements are cheaper without one.
		opt := metric.WithAttributeSet(attribute.NewSet(kv...))
		a.rec, a.obs = []metric.RecordOption{opt}, []metric.ObserveOption{opt}
	}
	switch {
	case k.kind == kindTool:
		a.tool, a.name = k.b, OpExecuteTool+" "+k.b
	case k.kind == kindEnd && k.tally == tallyNone:
		a.finished = t.set(setKey{tally: tallyFinished, kind: kindEnd, a: k.a, b: k.b, c: k.c})
	}
	got, loaded := t.sets.LoadOrStore(k, a)
	if !loaded {
		t.nsets.Add(1)
	}
	return got.(*attrs)
}

// code bounds an error code for a metric attribute: the codes of the
// protocol table, _OTHER for any other.
func code(c protocol.Code) string {
	if c.Known() {
		return string(c)
	}
	return otherValue
}
