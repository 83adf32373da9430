package telemetry

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
)

// attempt is what Telemetry keeps of one task attempt, in the attempt's
// context. Steps of an attempt come from the task's goroutine and, for
// its end, from whichever goroutine cancels or times it out: mu orders
// them.
type attempt struct {
	span  trace.Span
	start time.Time
	// parent is the parent of the task's attempts: the first attempt's
	// parent, or the first attempt itself when that one started a trace
	// (retries of a task stay in its trace).
	parent trace.SpanContext

	mu       sync.Mutex
	agent    string // the selected agent's id, once routed
	accepted bool   // counted in clutch.task.active
	queued   bool   // counted in clutch.task.queued
	waitSeen bool   // the queue wait was recorded
	ended    bool
	tools    map[string]*toolCall // open tool calls by the id of their tool.call
}

type toolCall struct {
	span         trace.Span
	trace        *protocol.Trace // the tool.call's, carried by its result too
	start        time.Time
	server, name string
}

type attemptKey struct{}

func attemptOf(ctx context.Context) *attempt {
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
	ctx, span := t.tracer.Start(parent, OpInvokeAgent, trace.WithSpanKind(trace.SpanKindInternal))
	a := &attempt{span: span, start: time.Now(), parent: trace.SpanContextFromContext(parent)}
	if !a.parent.IsValid() {
		a.parent = span.SpanContext()
	}
	if span.IsRecording() {
		attrs := make([]attribute.KeyValue, 0, 8)
		attrs = append(attrs, KeyOperation.String(OpInvokeAgent),
			KeyTask.String(req.TaskID), KeyRun.String(req.RunID), KeyThread.String(req.ThreadID),
			KeyConversationID.String(req.ThreadID), KeyAttempt.Int(n))
		if req.ParentTaskID != "" {
			attrs = append(attrs, KeyParentTask.String(req.ParentTaskID))
		}
		if req.PayloadType != "" {
			attrs = append(attrs, KeyPayloadType.String(req.PayloadType))
		}
		span.SetAttributes(attrs...)
	}
	ctx = context.WithValue(ctx, attemptKey{}, a)
	sc := span.SpanContext()
	if !sc.IsValid() {
		return ctx, nil // nothing to propagate: the events keep the request's trace
	}
	tr := &protocol.Trace{TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String()}
	if p := trace.SpanContextFromContext(parent); p.IsValid() && p.SpanID() != sc.SpanID() {
		tr.ParentSpanID = p.SpanID().String()
	}
	return ctx, tr
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
		if a != nil {
			a.mu.Lock()
			a.queued = true
			a.mu.Unlock()
			a.span.AddEvent("clutch.queued")
		}
		t.queued.Add(ctx, 1)
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
		a.mu.Lock()
		a.agent, a.accepted = agent, true
		t.dequeue(ctx, a, s.QueueWait)
		a.mu.Unlock()
		if a.span.IsRecording() {
			name := agent
			if s.Agent != nil && s.Agent.Display != nil && s.Agent.Display.Name != "" {
				name = s.Agent.Display.Name
			}
			a.span.SetName(OpInvokeAgent + " " + name)
			a.span.SetAttributes(KeyAgentID.String(agent), KeyAgentName.String(name))
			if d := s.Decision; d != nil {
				a.span.AddEvent("clutch.routing.decision", trace.WithAttributes(
					KeyRoutingSelected.String(d.Selected), KeyRoutingEligible.Int(d.Eligible),
					KeyRoutingConsidered.Int(d.Considered), KeyRoutingReason.String(d.Reason),
					KeyQueueWait.Int64(s.QueueWait.Milliseconds())))
			}
		}
	}
	agentSet := metric.WithAttributeSet(t.set(setKey{kind: kindAgent, a: agent}))
	t.routing.Add(ctx, 1, metric.WithAttributeSet(t.set(setKey{kind: kindRouted, a: agent})))
	t.started.Add(ctx, 1, agentSet)
	t.active.Add(ctx, 1, agentSet)
	if t.log.Enabled(ctx, slog.LevelDebug) {
		t.logAttempt(ctx, a, slog.LevelDebug, "task accepted", s, agent, "")
	}
}

// dequeue ends the attempt's wait in the queue, once; a.mu is held.
func (t *Telemetry) dequeue(ctx context.Context, a *attempt, wait time.Duration) {
	if a.queued {
		a.queued = false
		t.queued.Add(ctx, -1)
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
	}
	t.routing.Add(ctx, 1, metric.WithAttributeSet(t.set(setKey{kind: kindFailed, a: code(c)})))
}

// ended records the end of an attempt: retried (StepRetry) or the task's
// end (StepEnd).
func (t *Telemetry) ended(ctx context.Context, a *attempt, s router.Step) {
	outcome, c := outcomeOf(s)
	agent := ""
	var open []*toolCall
	if a != nil {
		a.mu.Lock()
		if a.ended {
			a.mu.Unlock()
			return
		}
		a.ended = true
		agent = a.agent
		t.dequeue(ctx, a, s.QueueWait)
		if a.accepted {
			t.active.Add(ctx, -1, metric.WithAttributeSet(t.set(setKey{kind: kindAgent, a: agent})))
		}
		for id, tc := range a.tools {
			open = append(open, tc)
			delete(a.tools, id)
		}
		a.mu.Unlock()
	} else if s.Agent != nil {
		agent = s.Agent.AgentID
	}
	end := metric.WithAttributeSet(t.set(setKey{kind: kindEnd, a: agent, b: outcome, c: code(c)}))
	if c == "" {
		end = metric.WithAttributeSet(t.set(setKey{kind: kindEnd, a: agent, b: outcome}))
	}
	t.finished.Add(ctx, 1, end)
	if a != nil {
		t.duration.Record(ctx, time.Since(a.start).Seconds(), end)
		for _, tc := range open {
			tc.span.SetStatus(codes.Error, "the task ended during the call")
			tc.span.End()
		}
		if a.span.IsRecording() {
			attrs := []attribute.KeyValue{KeyOutcome.String(outcome)}
			if c != "" {
				attrs = append(attrs, KeyErrorType.String(string(c)))
			}
			if s.Event != nil && s.Event.Type == protocol.TypeTaskResult && s.Event.PayloadType != "" {
				attrs = append(attrs, KeyResultPayloadType.String(s.Event.PayloadType))
			}
			a.span.SetAttributes(attrs...)
			if outcome != OutcomeResult && outcome != OutcomeCancel && s.Err != nil {
				a.span.SetStatus(codes.Error, s.Err.Message)
			}
		}
		a.span.End()
	}
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

// toolFields are the members of tool.call, tool.result and tool.error
// payloads that name the call (docs/protocol.md §2.3; the MCP client's
// payloads, and the wire error's details for tool.error).
type toolFields struct {
	Tool    string `json:"tool"`
	Name    string `json:"name"`
	CallID  string `json:"call_id"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Details struct {
		Tool   string `json:"tool"`
		Name   string `json:"name"`
		CallID string `json:"call_id"`
	} `json:"details"`
}

// toolEvent starts an execute_tool span at a tool.call, whose id the
// tool.call then carries (an adapter that calls the tool over the network
// propagates it), and ends it at the tool.result or tool.error that names
// the call (call_id, details.call_id). A tool.error with no call, refused
// before any call was made, is a span of its own that ends at once.
func (t *Telemetry) toolEvent(ctx context.Context, a *attempt, m *protocol.Message) {
	var f toolFields
	if err := json.Unmarshal(m.Payload, &f); err != nil {
		return // not a payload of this shape: not a call this package can follow
	}
	if f.Details.CallID != "" {
		f.CallID = f.Details.CallID
	}
	if f.Tool == "" {
		f.Tool = f.Details.Tool
	}
	if f.Name == "" {
		f.Name = f.Details.Name
	}
	switch m.Type {
	case protocol.TypeToolCall:
		tc := &toolCall{start: time.Now(), server: f.Tool, name: f.Name}
		_, tc.span = t.tracer.Start(ctx, OpExecuteTool+" "+f.Name, trace.WithSpanKind(trace.SpanKindInternal))
		if tc.span.IsRecording() {
			tc.span.SetAttributes(KeyOperation.String(OpExecuteTool), KeyToolName.String(f.Name),
				KeyToolServer.String(f.Tool), KeyToolCallID.String(m.ID), KeyToolType.String("extension"))
		}
		if sc := tc.span.SpanContext(); sc.IsValid() {
			tc.trace = &protocol.Trace{TraceID: sc.TraceID().String(), SpanID: sc.SpanID().String(), ParentSpanID: a.span.SpanContext().SpanID().String()}
			m.Trace = tc.trace
		}
		a.mu.Lock()
		if a.tools == nil {
			a.tools = map[string]*toolCall{}
		}
		a.tools[m.ID] = tc
		a.mu.Unlock()
	case protocol.TypeToolResult, protocol.TypeToolError:
		a.mu.Lock()
		tc := a.tools[f.CallID]
		delete(a.tools, f.CallID)
		a.mu.Unlock()
		if tc == nil {
			tc = &toolCall{start: time.Now(), server: f.Tool, name: f.Name}
			_, tc.span = t.tracer.Start(ctx, OpExecuteTool+" "+f.Name, trace.WithSpanKind(trace.SpanKindInternal))
			if tc.span.IsRecording() {
				tc.span.SetAttributes(KeyOperation.String(OpExecuteTool), KeyToolName.String(f.Name),
					KeyToolServer.String(f.Tool), KeyToolType.String("extension"))
			}
		}
		if tc.trace != nil {
			m.Trace = tc.trace
		}
		errType := ""
		if m.Type == protocol.TypeToolError {
			errType = code(protocol.Code(f.Code))
			if tc.span.IsRecording() {
				tc.span.SetAttributes(KeyErrorType.String(f.Code), KeyOutcome.String(OutcomeError))
				tc.span.SetStatus(codes.Error, f.Message)
			}
		} else if tc.span.IsRecording() {
			tc.span.SetAttributes(KeyOutcome.String(OutcomeResult))
		}
		tc.span.End()
		t.toolDur.Record(ctx, time.Since(tc.start).Seconds(),
			metric.WithAttributeSet(t.set(setKey{kind: kindTool, a: tc.server, b: tc.name, c: errType})))
		if m.Type == protocol.TypeToolError && t.log.Enabled(ctx, slog.LevelWarn) {
			attrs := []slog.Attr{slog.String("task", m.TaskID), slog.String("run", m.RunID), slog.String("agent", m.From.AgentID),
				slog.Int("attempt", m.Attempt), slog.String("code", f.Code), slog.String("tool", tc.server), slog.String("name", tc.name)}
			if sc := tc.span.SpanContext(); sc.IsValid() {
				attrs = append(attrs, slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
			}
			t.log.LogAttrs(ctx, slog.LevelWarn, "tool call failed", attrs...)
		}
	}
}
