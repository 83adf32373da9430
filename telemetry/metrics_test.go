package telemetry_test

import (
	"context"
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/telemetry"
)

// tap passes every step to the Telemetry, then signals queued tasks and
// ended tasks (with the task id) on the channels it has.
type tap struct {
	*telemetry.Telemetry
	queued chan struct{}
	ended  chan string
}

func (t *tap) Observe(ctx context.Context, s router.Step) {
	t.Telemetry.Observe(ctx, s)
	switch {
	case s.Kind == router.StepQueued && t.queued != nil:
		t.queued <- struct{}{}
	case s.Kind == router.StepEnd && t.ended != nil:
		t.ended <- s.Request.TaskID
	}
}

// points renders the data points of a metric as "attr=v,... value"
// strings, sorted: sums by their value, histograms by their count.
func points(m metricdata.Metrics) []string {
	var out []string
	line := func(set attribute.Set, v string) {
		var kv []string
		for _, a := range set.ToSlice() {
			kv = append(kv, string(a.Key)+"="+a.Value.Emit())
		}
		out = append(out, strings.Join(kv, ",")+" "+v)
	}
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			line(p.Attributes, itoa(p.Value))
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			line(p.Attributes, "n="+itoa(int64(p.Count)))
		}
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			line(p.Attributes, "n="+itoa(int64(p.Count))+" sum="+itoa(p.Sum))
		}
	}
	sort.Strings(out)
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func TestMetrics(t *testing.T) {
	var tp *tap
	e := newEnvWith(t, nil, func(tel *telemetry.Telemetry) router.Observer {
		tp = &tap{Telemetry: tel, queued: make(chan struct{}, 1)}
		return tp
	})

	e.agent("agent:lead", []string{"skill:lead"}, nil, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		if err := emitTool(ctx, t, "mcp:search", "search", ""); err != nil {
			return nil, err
		}
		sub, _ := t.NewSubtask("", map[string]any{"q": "details"})
		sub.Requires = []string{"skill:research"}
		if _, err := t.Delegate(ctx, sub); err != nil {
			return nil, err
		}
		return &router.Result{}, nil
	})
	e.agent("agent:ken", []string{"skill:research"}, nil, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		return &router.Result{}, emitTool(ctx, t, "mcp:web", "fetch", protocol.CodeToolFailed)
	})
	flaky := 0
	e.agent("agent:flaky", []string{"skill:flaky"}, nil, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		if flaky++; flaky == 1 {
			return nil, router.Fail(protocol.CodeToolUnavailable, "down", true, nil)
		}
		return &router.Result{}, nil
	})
	release := make(chan struct{})
	e.agent("agent:one", []string{"skill:one"}, &protocol.Limits{MaxConcurrency: 1}, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		<-release
		return &router.Result{}, nil
	})

	_, err := e.run(e.request("skill:lead"))
	require.NoError(t, err)
	_, err = e.run(e.request("skill:flaky"))
	require.NoError(t, err)
	_, err = e.run(e.request("skill:none"))
	require.ErrorIs(t, err, protocol.CodeNoMatch)
	// Two tasks for an agent that takes one at a time: the second waits.
	ctx := context.Background()
	h1, err := e.r.Submit(ctx, e.request("skill:one"))
	require.NoError(t, err)
	h2, err := e.r.Submit(ctx, e.request("skill:one"))
	require.NoError(t, err)
	<-tp.queued
	assert.Equal(t, []string{" 1"}, points(e.metrics()["clutch.task.queued"]), "one task queued")
	close(release)
	for _, h := range []*router.Handle{h1, h2} {
		_, err := h.Wait(ctx)
		require.NoError(t, err)
	}
	done := e.tel.Subscribed("sse")
	subs := points(e.metrics()["clutch.stream.subscribers"])
	done()
	done() // once only

	m := e.metrics()
	assert.Equal(t, []string{
		"gen_ai.agent.id=agent:flaky 2",
		"gen_ai.agent.id=agent:ken 1",
		"gen_ai.agent.id=agent:lead 1",
		"gen_ai.agent.id=agent:one 2",
	}, points(m["clutch.task.started"]))
	assert.Equal(t, []string{
		"clutch.outcome=error,error.type=NO_MATCH 1",
		"clutch.outcome=result,gen_ai.agent.id=agent:flaky 1",
		"clutch.outcome=result,gen_ai.agent.id=agent:ken 1",
		"clutch.outcome=result,gen_ai.agent.id=agent:lead 1",
		"clutch.outcome=result,gen_ai.agent.id=agent:one 2",
		"clutch.outcome=retry,error.type=TOOL_UNAVAILABLE,gen_ai.agent.id=agent:flaky 1",
	}, points(m["clutch.task.finished"]))
	assert.Equal(t, []string{
		"clutch.outcome=error,error.type=NO_MATCH n=1",
		"clutch.outcome=result,gen_ai.agent.id=agent:flaky n=1",
		"clutch.outcome=result,gen_ai.agent.id=agent:ken n=1",
		"clutch.outcome=result,gen_ai.agent.id=agent:lead n=1",
		"clutch.outcome=result,gen_ai.agent.id=agent:one n=2",
		"clutch.outcome=retry,error.type=TOOL_UNAVAILABLE,gen_ai.agent.id=agent:flaky n=1",
	}, points(m["clutch.task.duration"]))
	assert.Equal(t, []string{
		"gen_ai.agent.id=agent:flaky 0", "gen_ai.agent.id=agent:ken 0", "gen_ai.agent.id=agent:lead 0", "gen_ai.agent.id=agent:one 0",
	}, points(m["clutch.task.active"]))
	assert.Equal(t, []string{" 0"}, points(m["clutch.task.queued"]))
	assert.Equal(t, []string{" n=7"}, points(m["clutch.task.queue.wait"]), "every routed or unrouted attempt")
	qw := m["clutch.task.queue.wait"].Data.(metricdata.Histogram[float64]).DataPoints[0]
	assert.Greater(t, qw.Sum, 0.0, "the queued task waited")
	// The routing event has the queue wait of the attempt that waited
	// (either of the two), and none on the other.
	waited := 0
	for _, h := range []*router.Handle{h1, h2} {
		var decision []string
		for _, s := range e.spans.GetSpans() {
			if !slices.Contains(attrList(s), "clutch.task.id="+h.TaskID()) {
				continue
			}
			for _, ev := range s.Events {
				if ev.Name == "clutch.routing.decision" {
					decision = eventAttrs(ev.Attributes)
				}
			}
		}
		assert.Contains(t, decision, "clutch.routing.selected=agent:one", h.TaskID())
		assert.True(t, slices.ContainsFunc(decision, func(a string) bool { return strings.HasPrefix(a, "clutch.routing.reason=") }), "routing event %v", decision)
		if slices.ContainsFunc(decision, func(a string) bool { return strings.HasPrefix(a, "clutch.queue.wait_ms=") }) {
			waited++
		}
	}
	assert.Equal(t, 1, waited, "routing events with the queue wait")
	assert.Equal(t, []string{
		"clutch.routing.result=failed,error.type=NO_MATCH 1",
		"clutch.routing.result=selected,gen_ai.agent.id=agent:flaky 2",
		"clutch.routing.result=selected,gen_ai.agent.id=agent:ken 1",
		"clutch.routing.result=selected,gen_ai.agent.id=agent:lead 1",
		"clutch.routing.result=selected,gen_ai.agent.id=agent:one 2",
	}, points(m["clutch.routing.decisions"]))
	assert.Equal(t, []string{
		"clutch.outcome=error,clutch.tool.server=mcp:web,error.type=TOOL_FAILED,gen_ai.tool.name=fetch n=1",
		"clutch.outcome=result,clutch.tool.server=mcp:search,gen_ai.tool.name=search n=1",
	}, points(m["clutch.tool.duration"]))
	assert.Equal(t, []string{"clutch.stream=sse 1"}, subs)
	assert.Equal(t, []string{"clutch.stream=sse 0"}, points(m["clutch.stream.subscribers"]))

	// The store metrics agree with the log.
	byType := map[string]int64{}
	var events int64
	for ev, err := range e.st.Read(ctx, store.Query{}) {
		require.NoError(t, err)
		msg, _ := ev.Message()
		byType[string(msg.Type)]++
		events++
	}
	var want []string
	for typ, n := range byType {
		want = append(want, "clutch.event.type="+typ+" "+itoa(n))
	}
	sort.Strings(want)
	assert.Equal(t, want, points(m["clutch.store.events"]))
	batches := m["clutch.store.append.batch_size"].Data.(metricdata.Histogram[int64]).DataPoints
	require.Len(t, batches, 1)
	assert.Equal(t, events, batches[0].Sum, "every stored event was in a measured batch")
	assert.Less(t, int64(batches[0].Count), events, "decision and accept are stored together")
	dur := m["clutch.store.append.duration"].Data.(metricdata.Histogram[float64]).DataPoints
	require.Len(t, dur, 1)
	assert.Equal(t, batches[0].Count, dur[0].Count)
}

func TestLogs(t *testing.T) {
	e := newEnv(t, nil)
	flaky := 0
	e.agent("agent:flaky", []string{"skill:flaky"}, nil, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		if flaky++; flaky == 1 {
			return nil, router.Fail(protocol.CodeToolUnavailable, "down", true, nil)
		}
		return nil, router.Fail(protocol.CodeValidation, "bad input", false, nil)
	})
	req := e.request("skill:flaky")
	_, err := e.run(req)
	require.ErrorIs(t, err, protocol.CodeValidation)
	task := "task=" + req.TaskID + " run=" + req.RunID + " agent=agent:flaky"
	assert.Equal(t, []string{
		"DEBUG task accepted " + task + " attempt=1",
		"WARN task retried " + task + " attempt=1 code=TOOL_UNAVAILABLE",
		"DEBUG task accepted " + task + " attempt=2",
		"ERROR task failed " + task + " attempt=2 code=VALIDATION",
	}, e.logs.records("task", "run", "agent", "attempt", "code"))
	spans := e.spans.GetSpans()
	require.Len(t, spans, 2)
	got := e.logs.attrsOf("task failed")
	assert.Equal(t, spans[1].SpanContext.TraceID().String(), got["trace_id"])
	assert.Equal(t, spans[1].SpanContext.SpanID().String(), got["span_id"])
	assert.Equal(t, "bad input", got["error"])

}

// TestGaugesBalance: tasks cancelled while queued, while being routed and
// while running leave clutch.task.active and clutch.task.queued at 0.
func TestGaugesBalance(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	const n = 40
	ended, queued := make(chan string, n), make(chan struct{}, n)
	e := newEnvWith(t, nil, func(tel *telemetry.Telemetry) router.Observer {
		return &tap{Telemetry: tel, ended: ended, queued: queued}
	})
	e.agent("agent:one", []string{"skill:one"}, &protocol.Limits{MaxConcurrency: 2}, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	hs := make([]*router.Handle, n)
	for i := range hs {
		h, err := e.r.Submit(context.Background(), e.request("skill:one"))
		require.NoError(t, err)
		hs[i] = h
	}
	for range n - 2 { // two run, the others wait for them
		<-queued
	}
	for _, i := range rng.Perm(n) {
		hs[i].Cancel("test")
	}
	for range n {
		<-ended
	}
	m := e.metrics()
	for _, p := range append(points(m["clutch.task.active"]), points(m["clutch.task.queued"])...) {
		assert.True(t, strings.HasSuffix(p, " 0"), "gauge left at %s", p)
	}
	var finished int64
	for _, p := range points(m["clutch.task.finished"]) {
		assert.True(t, strings.HasPrefix(p, "clutch.outcome=cancel,error.type=CANCELLED"), p)
		v, err := strconv.ParseInt(p[strings.LastIndexByte(p, ' ')+1:], 10, 64)
		require.NoError(t, err)
		finished += v
	}
	assert.Equal(t, int64(n), finished, "every task ended as cancelled, once")
}

// The task and tool durations carry exemplars of the attempt's trace (the
// SDK's default filter keeps those of sampled spans); the store metrics,
// which measure the store, none.
func TestExemplars(t *testing.T) {
	e := newEnv(t, nil)
	e.agent("agent:a", []string{"skill:x"}, nil, func(ctx context.Context, task *router.Task) (*router.Result, error) {
		if err := emitTool(ctx, task, "mcp:s", "find", ""); err != nil {
			return nil, err
		}
		return &router.Result{Payload: map[string]any{"ok": true}}, nil
	})
	_, err := e.run(e.request("skill:x"))
	require.NoError(t, err)
	var traceID string
	for _, s := range e.spans.GetSpans() {
		if strings.HasPrefix(s.Name, telemetry.OpInvokeAgent) {
			traceID = s.SpanContext.TraceID().String()
		}
	}
	require.NotEmpty(t, traceID)
	ms := e.metrics()
	exemplars := func(name string) (ids []string) {
		for _, dp := range ms[name].Data.(metricdata.Histogram[float64]).DataPoints {
			for _, ex := range dp.Exemplars {
				ids = append(ids, hex.EncodeToString(ex.TraceID))
			}
		}
		return ids
	}
	assert.Equal(t, []string{traceID}, exemplars(telemetry.MetricTaskDuration))
	assert.Equal(t, []string{traceID}, exemplars(telemetry.MetricToolDuration))
	assert.Empty(t, exemplars(telemetry.MetricStoreAppendDur))
	for _, dp := range ms[telemetry.MetricStoreBatchSize].Data.(metricdata.Histogram[int64]).DataPoints {
		assert.Empty(t, dp.Exemplars)
	}
}
