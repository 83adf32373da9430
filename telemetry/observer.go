package telemetry

import (
	"context"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
)

// attempt is what Telemetry keeps of one task attempt. It is the
// attempt's context too (the context its span was started in, with the
// attempt as a value), so that keeping it costs one allocation. Steps of
// an attempt come from the task's goroutine and, for its end, from
// whichever goroutine cancels or times it out: mu orders them.
type attempt struct {
	context.Context
	span  trace.Span
	start time.Time
	req   *protocol.Message
	n     int // the attempt's number
	// parent is the parent of the task's attempts: the first attempt's
	// parent, or the first attempt itself when that one started a trace
	// (retries of a task stay in its trace).
	parent trace.SpanContext

	tr protocol.Trace // what the attempt's events carry

	mu        sync.Mutex
	agent     string        // the selected agent's id, once routed
	tallies   *agentTallies // its tallies
	agentName string        // its display name, when it has one
	accepted  bool          // counted in clutch.task.active
	queued    bool          // counted in clutch.task.queued
	waitSeen  bool          // the queue wait was recorded
	ended     bool
	tool      *toolCall            // the open tool call, when there is one
	tools     map[string]*toolCall // more open tool calls, by call id
}

type toolCall struct {
	id           string // the call id (docs/protocol.md §2.3.1); "" for an outcome without a call
	span         trace.Span
	set          *attrs         // the metric set of the call's success
	trace        protocol.Trace // the tool.call's, carried by its result too
	start        time.Time
	server, name string
}

// take removes and returns the open call of id, or nil; a.mu is held.
func (a *attempt) take(id string) *toolCall {
	if tc := a.tool; tc != nil && tc.id == id {
		a.tool = nil
		return tc
	}
	tc := a.tools[id]
	delete(a.tools, id)
	return tc
}

// hexIDs returns the hex forms of a trace id and a span id, made with one
// allocation.
func hexIDs(tid trace.TraceID, sid trace.SpanID) (string, string) {
	var b [48]byte
	hex.Encode(b[:32], tid[:])
	hex.Encode(b[32:], sid[:])
	s := string(b[:])
	return s[:32], s[32:]
}

type attemptKey struct{}

// Value returns the attempt for attemptKey, else the value of its span's
// context.
func (a *attempt) Value(key any) any {
	if _, ok := key.(attemptKey); ok {
		return a
	}
	return a.Context.Value(key)
}

// attemptOf returns the attempt of ctx, or nil: ctx is the attempt the
// router was given back (StartAttempt), or a context derived from it.
func attemptOf(ctx context.Context) *attempt {
	if a, ok := ctx.(*attempt); ok {
		return a
	}
	a, _ := ctx.Value(attemptKey{}).(*attempt)
	return a
}

// StartAttempt starts the attempt's invoke_agent span (router.Observer).
// Its parent is the trace context the request carries
// (trace.trace_id/span_id, W3C ids), else the span of ctx (the submitter's,
// or the delegating attempt's for a subtask); with neither, the span
// starts a new trace. The trace returned, stamped on the attempt's events,
// names the span and its parent.
func (t *Telemetry) StartAttempt(ctx context.Context, req *protocol.Message, n int) (context.Context, *protocol.Trace) {
	parent := ctx
	if prev := attemptOf(ctx); prev != nil {
		// A retry: a sibling of the first attempt, or its child when the
		// first attempt started the trace.
		parent = trace.ContextWithSpanContext(ctx, prev.parent)
	} else if sc, ok := requestParent(req); ok {
		if cur := trace.SpanContextFromContext(ctx); !cur.IsValid() || cur.TraceID() != sc.TraceID() || cur.SpanID() != sc.SpanID() {
			parent = trace.ContextWithRemoteSpanContext(ctx, sc)
		}
	}
	// Kind internal, the default. gen_ai.operation.name is given at the
	// start, for samplers (the GenAI conventions ask for it there); the
	// other attributes are set once, when the span ends (see ended): given
	// at its start, the SDK would copy them twice more.
	ctx, span := t.tracer.Start(parent, OpInvokeAgent, startInvoke...)
	if !span.IsRecording() && !t.duration.Enabled(ctx) {
		// Neither a tracer nor a meter records (no SDK installed): the
		// span only propagates its parent, if any, and the steps are
		// logged without the state kept below.
		return ctx, nil
	}
	a := &attempt{Context: ctx, span: span, start: startTime(span), req: req, n: n, parent: trace.SpanContextFromContext(parent)}
	if !a.parent.IsValid() {
		a.parent = span.SpanContext()
	}
	sc := span.SpanContext()
	if !sc.IsValid() {
		return a, nil // nothing to propagate: the events keep the request's trace
	}
	if p := trace.SpanContextFromContext(parent); p.IsValid() && p.SpanID() != sc.SpanID() {
		// The parent's ids are in hex already when they came with the
		// request.
		if rt := req.Trace; rt != nil && p.IsRemote() && rt.SpanID != "" && rt.TraceID != "" {
			a.tr.TraceID, a.tr.ParentSpanID = rt.TraceID, rt.SpanID
			a.tr.SpanID = sc.SpanID().String()
		} else {
			a.tr.TraceID, a.tr.SpanID = hexIDs(sc.TraceID(), sc.SpanID())
			a.tr.ParentSpanID = p.SpanID().String()
		}
	} else {
		a.tr.TraceID, a.tr.SpanID = hexIDs(sc.TraceID(), sc.SpanID())
	}
	return a, &a.tr
}

// startTime is when span started: the time the SDK read, else now.
func startTime(span trace.Span) time.Time {
	if s, ok := span.(interface{ StartTime() time.Time }); ok {
		if st := s.StartTime(); !st.IsZero() {
			return st
		}
	}
	return time.Now()
}

// since is how long span lasted, from start: up to the end time the SDK
// read when the span ended, else up to now.
func since(span trace.Span, start time.Time) time.Duration {
	if s, ok := span.(interface{ EndTime() time.Time }); ok {
		if et := s.EndTime(); !et.IsZero() {
			return et.Sub(start)
		}
	}
	return time.Since(start)
}

// requestParent reads the request's trace ids as a remote span context.
func requestParent(req *protocol.Message) (trace.SpanContext, bool) {
	if req.Trace == nil || req.Trace.TraceID == "" || req.Trace.SpanID == "" {
		return trace.SpanContext{}, false
	}
	tid, err := trace.TraceIDFromHex(req.Trace.TraceID)
	if err != nil {
		return trace.SpanContext{}, false
	}
	sid, err := trace.SpanIDFromHex(req.Trace.SpanID)
	if err != nil {
		return trace.SpanContext{}, false
	}
	// The envelope has no trace flags: a trace that reached Clutch is
	// taken as sampled (see internal/traceparent).
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true}), true
}

// Observe records a step of an attempt (router.Observer).
func (t *Telemetry) Observe(ctx context.Context, s router.Step) {
	a := attemptOf(ctx)
	switch s.Kind {
	case router.StepQueued:
		// Without an attempt's state nothing records: no tally either
		// (the steps that undo a tally need the state).
		if a != nil {
			a.mu.Lock()
			if !a.ended { // a cancel may have ended the task first
				a.queued = true
				t.set(setKey{tally: tallyQueued}).n.Add(1)
			}
			a.mu.Unlock()
			a.span.AddEvent("clutch.queued")
		}
	case router.StepRouted:
		t.routed(ctx, a, s)
	case router.StepUnrouted:
		t.unrouted(ctx, a, s)
	case router.StepEvent:
		if a != nil && s.Event != nil && s.Event.Type.Family() == "tool" {
			t.toolEvent(ctx, a, s.Event)
		}
	case router.StepRetry, router.StepEnd:
		t.ended(ctx, a, s)
	}
}

func (t *Telemetry) routed(ctx context.Context, a *attempt, s router.Step) {
	agent := ""
	if s.Agent != nil {
		agent = s.Agent.AgentID
	}
	if a != nil {
		name := agent
		if s.Agent != nil && s.Agent.Display != nil && s.Agent.Display.Name != "" {
			name = s.Agent.Display.Name
		}
		as := t.agentSets(agent)
		a.mu.Lock()
		if a.ended {
			// A cancel or timeout ended the task between its task.accept
			// and this step: the attempt is over, and counted.
			a.mu.Unlock()
			return
		}
		a.agent, a.tallies, a.accepted = agent, as, true
		if name != agent {
			a.agentName = name // set with the outcome, in one call
		}
		t.dequeue(ctx, a, s.QueueWait)
		a.mu.Unlock()
		if a.span.IsRecording() {
			a.span.SetName(as.spanName(name))
			if d := s.Decision; d != nil {
				// The selected agent, the candidate count and the
				// reason, and the queue wait when the attempt waited
				// (the number of agents looked at is in the stored
				// routing.decision).
				b := getKVs()
				b.kv = append(b.kv, KeyRoutingSelected.String(d.Selected), KeyRoutingEligible.Int(d.Eligible),
					KeyRoutingReason.String(d.Reason))
				if s.QueueWait > 0 {
					b.kv = append(b.kv, KeyQueueWait.Int64(s.QueueWait.Milliseconds()))
				}
				a.span.AddEvent("clutch.routing.decision", trace.WithAttributes(b.kv...))
				b.release()
			}
		}
		as.routed.n.Add(1)
		as.started.n.Add(1)
		as.active.n.Add(1)
	}
	if t.log.Enabled(ctx, slog.LevelDebug) {
		t.logAttempt(ctx, a, slog.LevelDebug, "task accepted", s, agent, "")
	}
}

// agentTallies are the tallies of one agent, and the invoke_agent span
// name of the agent named by its id.
type agentTallies struct {
	routed, started, active *attrs
	result                  *attrs // the end set of an attempt with outcome result
	id, name                string
}

// spanName returns the invoke_agent span name of an agent called name.
func (as *agentTallies) spanName(name string) string {
	if name == as.id {
		return as.name
	}
	return OpInvokeAgent + " " + name
}

// agentSets returns the tallies of an agent, found with one lookup.
func (t *Telemetry) agentSets(agent string) *agentTallies {
	if v, ok := t.agents.Load(agent); ok {
		return v.(*agentTallies)
	}
	as := &agentTallies{
		routed:  t.set(setKey{tally: tallyRouting, kind: kindRouted, a: agent}),
		started: t.set(setKey{tally: tallyStarted, kind: kindAgent, a: agent}),
		active:  t.set(setKey{tally: tallyActive, kind: kindAgent, a: agent}),
		result:  t.set(setKey{kind: kindEnd, a: agent, b: OutcomeResult}),
		id:      agent, name: OpInvokeAgent + " " + agent,
	}
	if t.nsets.Load() >= maxSets {
		return as // bounded: set() has mapped the agent to _OTHER; not cached under its id
	}
	v, _ := t.agents.LoadOrStore(agent, as)
	return v.(*agentTallies)
}

// dequeue ends the attempt's wait in the queue, once; a.mu is held.
func (t *Telemetry) dequeue(ctx context.Context, a *attempt, wait time.Duration) {
	if a.queued {
		a.queued = false
		t.set(setKey{tally: tallyQueued}).n.Add(-1)
	}
	if !a.waitSeen {
		a.waitSeen = true
		t.queueWait.Record(ctx, wait.Seconds())
	}
}

func (t *Telemetry) unrouted(ctx context.Context, a *attempt, s router.Step) {
	var c protocol.Code
	reason := ""
	if s.Err != nil {
		c, reason = s.Err.Code, s.Err.Message
	}
	if a != nil {
		a.mu.Lock()
		t.dequeue(ctx, a, s.QueueWait)
		a.mu.Unlock()
		if a.span.IsRecording() {
			a.span.AddEvent("clutch.routing.failure", trace.WithAttributes(
				KeyErrorType.String(string(c)), KeyRoutingReason.String(reason),
				KeyQueueWait.Int64(s.QueueWait.Milliseconds())))
		}
		t.set(setKey{tally: tallyRouting, kind: kindFailed, a: code(c)}).n.Add(1)
	}
}

// ended records the end of an attempt: retried (StepRetry) or the task's
// end (StepEnd).
func (t *Telemetry) ended(ctx context.Context, a *attempt, s router.Step) {
	outcome, c := outcomeOf(s)
	agent, agentName := "", ""
	var tallies *agentTallies
	var open []*toolCall
	if a != nil {
		a.mu.Lock()
		if a.ended {
			a.mu.Unlock()
			return
		}
		a.ended = true
		agent, agentName, tallies = a.agent, a.agentName, a.tallies
		t.dequeue(ctx, a, s.QueueWait)
		if a.accepted {
			a.tallies.active.n.Add(-1)
		}
		if a.tool != nil {
			open = append(open, a.tool)
			a.tool = nil
		}
		for id, tc := range a.tools {
			open = append(open, tc)
			delete(a.tools, id)
		}
		a.mu.Unlock()
	} else if s.Agent != nil {
		agent = s.Agent.AgentID
	}
	if a == nil && !t.duration.Enabled(ctx) {
		t.logEnd(ctx, a, s, outcome, agent, c)
		return // nothing records (a task ended without an attempt is counted when something does)
	}
	var end *attrs
	if tallies != nil && outcome == OutcomeResult && c == "" {
		end = tallies.result // the usual end, without a lookup
	} else {
		k := setKey{kind: kindEnd, a: agent, b: outcome}
		if c != "" {
			k.c = code(c)
		}
		end = t.set(k)
	}
	end.finished.n.Add(1)
	if a != nil {
		for _, tc := range open {
			if tc.span.IsRecording() {
				setToolAttrs(tc, "")
				tc.span.SetStatus(codes.Error, "the task ended during the call")
			}
			tc.span.End()
		}
		if a.span.IsRecording() {
			// All the span's attributes in one call (see StartAttempt).
			req := a.req
			b := getKVs()
			attrs := b.kv
			attrs = append(attrs, KeyTask.String(req.TaskID), KeyRun.String(req.RunID), KeyConversationID.String(req.ThreadID), KeyAttempt.Int(a.n))
			if req.ParentTaskID != "" {
				attrs = append(attrs, KeyParentTask.String(req.ParentTaskID))
			}
			if req.PayloadType != "" {
				attrs = append(attrs, KeyPayloadType.String(req.PayloadType))
			}
			attrs = append(attrs, KeyOutcome.String(outcome))
			if agent != "" {
				attrs = append(attrs, KeyAgentID.String(agent))
			}
			if agentName != "" {
				attrs = append(attrs, KeyAgentName.String(agentName))
			}
			if c != "" {
				attrs = append(attrs, KeyErrorType.String(string(c)))
			}
			if s.Event != nil && s.Event.Type == protocol.TypeTaskResult && s.Event.PayloadType != "" {
				attrs = append(attrs, KeyResultPayloadType.String(s.Event.PayloadType))
			}
			a.span.SetAttributes(attrs...)
			b.kv = attrs
			b.release()
			if outcome != OutcomeResult && outcome != OutcomeCancel && s.Err != nil {
				a.span.SetStatus(codes.Error, s.Err.Message)
			}
		}
		a.span.End()
		t.duration.Record(ctx, since(a.span, a.start).Seconds(), end.rec...)
	}
	t.logEnd(ctx, a, s, outcome, agent, c)
}

// logEnd logs the end of an attempt.
func (t *Telemetry) logEnd(ctx context.Context, a *attempt, s router.Step, outcome, agent string, c protocol.Code) {
	level, msg := slog.LevelDebug, "task finished"
	switch {
	case outcome == OutcomeRetry:
		level, msg = slog.LevelWarn, "task retried"
	case c == protocol.CodeInterrupted:
		level, msg = slog.LevelWarn, "task interrupted"
	case outcome == OutcomeTimeout:
		level, msg = slog.LevelWarn, "task timed out"
	case outcome == OutcomeCancel:
		level, msg = slog.LevelWarn, "task cancelled"
	case outcome == OutcomeError:
		level, msg = slog.LevelError, "task failed"
	}
	if t.log.Enabled(ctx, level) {
		t.logAttempt(ctx, a, level, msg, s, agent, c)
	}
}

// outcomeOf is the clutch.outcome and error code of an ending step.
func outcomeOf(s router.Step) (string, protocol.Code) {
	var c protocol.Code
	if s.Err != nil {
		c = s.Err.Code
	}
	if s.Kind == router.StepRetry {
		return OutcomeRetry, c
	}
	if s.Event == nil {
		return OutcomeError, c
	}
	switch s.Event.Type {
	case protocol.TypeTaskResult:
		if s.Err == nil {
			return OutcomeResult, ""
		}
	case protocol.TypeTaskTimeout:
		return OutcomeTimeout, c
	case protocol.TypeTaskCancel:
		return OutcomeCancel, c
	}
	return OutcomeError, c
}

// logAttempt writes a lifecycle record with the stable keys task, run,
// agent, attempt, code, and trace_id/span_id of the attempt's span.
func (t *Telemetry) logAttempt(ctx context.Context, a *attempt, level slog.Level, msg string, s router.Step, agent string, c protocol.Code) {
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs, slog.String("task", s.Request.TaskID), slog.String("run", s.Request.RunID))
	if agent != "" {
		attrs = append(attrs, slog.String("agent", agent))
	}
	attrs = append(attrs, slog.Int("attempt", s.Attempt))
	if c != "" {
		attrs = append(attrs, slog.String("code", string(c)))
		if s.Err != nil {
			attrs = append(attrs, slog.String("error", s.Err.Message))
		}
	}
	if a != nil {
		if sc := a.span.SpanContext(); sc.IsValid() {
			attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
		}
	}
	t.log.LogAttrs(ctx, level, msg, attrs...)
}

// startTool starts the execute_tool span of a call (id "" for a
// tool.error without a call) with gen_ai.operation.name; its other
// attributes are set when it ends (setToolAttrs).
func (t *Telemetry) startTool(ctx context.Context, f toolFields, id string) *toolCall {
	tc := &toolCall{id: id, server: f.tool, name: f.name, set: t.set(setKey{kind: kindTool, a: f.tool, b: f.name})}
	_, tc.span = t.tracer.Start(ctx, tc.set.spanName(f.name), startTool...)
	tc.start = startTime(tc.span)
	return tc
}

// The options that start spans: gen_ai.operation.name, made once.
var (
	startInvoke = []trace.SpanStartOption{trace.WithAttributes(KeyOperation.String(OpInvokeAgent))}
	startTool   = []trace.SpanStartOption{trace.WithAttributes(KeyOperation.String(OpExecuteTool))}
)

// setToolAttrs sets the attributes of a call's span set when it ends (see
// startTool), with error.type and outcome error when code is not "".
func setToolAttrs(tc *toolCall, code string) {
	b := getKVs()
	b.kv = append(b.kv, KeyToolName.String(tc.name), KeyToolServer.String(tc.server))
	if tc.id != "" {
		b.kv = append(b.kv, KeyToolCallID.String(tc.id))
	}
	if code != "" {
		b.kv = append(b.kv, KeyErrorType.String(code), KeyOutcome.String(OutcomeError))
	}
	tc.span.SetAttributes(b.kv...)
	b.release()
}

// kvs is a reusable attribute slice for one SetAttributes or AddEvent
// call, back in kvPool after it: the SDK copies what it is given.
type kvs struct{ kv []attribute.KeyValue }

var kvPool = sync.Pool{New: func() any { return &kvs{kv: make([]attribute.KeyValue, 0, 12)} }}

func getKVs() *kvs { return kvPool.Get().(*kvs) }

func (b *kvs) release() {
	clear(b.kv) // no strings kept alive by the pool
	b.kv = b.kv[:0]
	kvPool.Put(b)
}

// toolEvent starts an execute_tool span at a tool.call, whose trace the
// tool.call then carries (an adapter that calls the tool over the network
// propagates it), and ends it at the tool.result or tool.error with the
// same call id (docs/protocol.md §2.3.1: call_id, details.call_id; a
// tool.call without one goes by its event id, as protocol.ToolCallID
// reads it). An outcome of no open call — a call refused before it was
// made, or an outcome without a call id — is a span of its own that ends
// at once.
func (t *Telemetry) toolEvent(ctx context.Context, a *attempt, m *protocol.Message) {
	var f toolFields
	if !readToolFields(m.Payload, &f) {
		return // not a payload of this shape: not a call this package can follow
	}
	switch m.Type {
	case protocol.TypeToolCall:
		id := f.callID
		if id == "" {
			id = m.ID // a call stored before §2.3.1
		}
		tc := t.startTool(ctx, f, id)
		if sc := tc.span.SpanContext(); sc.IsValid() {
			tc.trace.TraceID, tc.trace.ParentSpanID = a.tr.TraceID, a.tr.SpanID
			tc.trace.SpanID = sc.SpanID().String()
			if tc.trace.TraceID == "" {
				tc.trace.TraceID = sc.TraceID().String()
			}
			m.Trace = &tc.trace
		}
		a.mu.Lock()
		if a.tool == nil {
			a.tool = tc
		} else {
			if a.tools == nil {
				a.tools = map[string]*toolCall{}
			}
			a.tools[id] = tc
		}
		a.mu.Unlock()
	case protocol.TypeToolResult, protocol.TypeToolError:
		a.mu.Lock()
		tc := a.take(f.callID)
		a.mu.Unlock()
		if tc == nil {
			tc = t.startTool(ctx, f, "")
		}
		if tc.trace.SpanID != "" {
			m.Trace = &tc.trace
		}
		errType, failed := "", m.Type == protocol.TypeToolError
		if failed {
			errType = code(protocol.Code(f.code))
		}
		if tc.span.IsRecording() {
			if failed {
				setToolAttrs(tc, f.code)
				tc.span.SetStatus(codes.Error, f.message)
			} else {
				setToolAttrs(tc, "")
			}
		}
		tc.span.End()
		set := tc.set
		if failed {
			set = t.set(setKey{kind: kindTool, a: tc.server, b: tc.name, c: errType})
		}
		t.toolDur.Record(ctx, since(tc.span, tc.start).Seconds(), set.rec...)
		if m.Type == protocol.TypeToolError && t.log.Enabled(ctx, slog.LevelWarn) {
			attrs := []slog.Attr{slog.String("task", m.TaskID), slog.String("run", m.RunID), slog.String("agent", m.From.AgentID),
				slog.Int("attempt", m.Attempt), slog.String("code", f.code), slog.String("tool", tc.server), slog.String("name", tc.name)}
			if sc := tc.span.SpanContext(); sc.IsValid() {
				attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
			}
			t.log.LogAttrs(ctx, slog.LevelWarn, "tool call failed", attrs...)
		}
	}
}
