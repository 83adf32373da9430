package genkit

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/core/tracing"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

// Genkit traces every action it runs — a flow, a generate loop, each
// model call, each tool call — as an OpenTelemetry span of its tracer
// provider (core/tracing), started in the context of the caller. The
// bridge reads those spans with one span processor: a span whose parent
// context carries a run of the bridge is one of the run's calls. This is
// Genkit's own instrumentation, so a flow needs no change for its model
// and tool calls to become events.

// The span attributes Genkit sets (core/tracing), read at a span's end.
const (
	attrSubtype = "genkit:metadata:subtype"
	attrState   = "genkit:state"
	attrInput   = "genkit:input"
	attrOutput  = "genkit:output"
)

// interruptPrefix starts the error text of a tool that interrupted
// (ToolContext.Interrupt); its metadata follows as JSON.
const interruptPrefix = "tool execution interrupted"

// processor is the one span processor of the process: it hands the spans
// of bridge runs to their run.
type processor struct {
	spans sync.Map // span id -> *span, for spans of runs only
}

var (
	theProcessor processor
	installedOn  atomic.Pointer[sdktrace.TracerProvider]
	installMu    sync.Mutex
)

// install registers the processor on Genkit's tracer provider, again
// when the global provider was replaced since.
func install() {
	tp := tracing.TracerProvider()
	if installedOn.Load() == tp {
		return
	}
	installMu.Lock()
	defer installMu.Unlock()
	if installedOn.Load() != tp {
		tp.RegisterSpanProcessor(&theProcessor)
		installedOn.Store(tp)
	}
}

// span is a span of a run, between its start and its end.
type span struct {
	rn     *run
	ctx    context.Context // the caller's context, without its cancel
	parent trace.SpanID
	call   *router.ToolCall // the tool.call recorded at its start, if any
}

func (p *processor) OnStart(parent context.Context, s sdktrace.ReadWriteSpan) {
	rn, _ := parent.Value(runKey{}).(*run)
	if rn == nil {
		return
	}
	sp := &span{rn: rn, ctx: context.WithoutCancel(parent), parent: trace.SpanContextFromContext(parent).SpanID()}
	if args, ok := rn.claim(sp.parent, s.Name()); ok {
		// A tool the last model call of this generate loop asked for:
		// its tool.call goes first, before anything the tool does.
		if call, err := rn.t.StartTool(parent, Name, s.Name(), args); err == nil {
			sp.call = call
		}
	}
	p.spans.Store(s.SpanContext().SpanID(), sp)
}

func (p *processor) OnEnd(s sdktrace.ReadOnlySpan) {
	v, ok := p.spans.LoadAndDelete(s.SpanContext().SpanID())
	if !ok {
		return
	}
	sp := v.(*span)
	attrs := spanAttrs(s.Attributes())
	switch attrs[attrSubtype] {
	case "model":
		sp.rn.modelCall(sp, s, attrs)
	case "tool", "tool.v2":
		sp.rn.toolCall(sp, s, attrs)
	}
}

func (p *processor) Shutdown(context.Context) error   { return nil }
func (p *processor) ForceFlush(context.Context) error { return nil }

// spanAttrs returns the string attributes of a span that the bridge reads.
func spanAttrs(kvs []attribute.KeyValue) map[string]string {
	m := make(map[string]string, 4)
	for _, kv := range kvs {
		switch k := string(kv.Key); k {
		case attrSubtype, attrState, attrInput, attrOutput:
			m[k] = kv.Value.AsString()
		}
	}
	return m
}

// runKey is the context key of a run of the bridge.
type runKey struct{}

// run is one run of a flow as a task: it records the run's model and tool
// calls (docs/protocol.md §2.3, §2.3.2) and keeps what Generate needs to
// make an interrupt a question.
type run struct {
	t *router.Task

	mu        sync.Mutex
	pending   map[trace.SpanID][]toolRequest // per generate loop: the tools its last model call asked for
	failed    *failed                        // the first model or tool failure
	interrupt []string                       // tools that interrupted
	lastModel string                         // the name of the last model called
	lastInput string                         // its request, as Genkit traced it
	toolErrs  map[trace.SpanID]error         // errors of the bridge's own tools, by their span

	// Generate's state: the calls of this run of the flow, what they
	// returned, the checkpoint it resumes from and the answer it resumes
	// with.
	store      store.Store
	resume     func(q *protocol.Question, interrupt *ai.Part, answer json.RawMessage) (*ai.Part, error)
	calls      int
	done       []*ai.ModelResponse
	checkpoint *checkpoint
	asked      *protocol.Question
	answer     json.RawMessage
	waiting    bool // Generate asked a question in this run
}

// toolRequest is a tool call a model asked for.
type toolRequest struct {
	name    string
	input   json.RawMessage
	claimed bool
}

// failed is the first component failure of a run, which the task's error
// names.
type failed struct {
	tool       bool
	name, call string
	msg        string
	code       protocol.Code // the tool's error code
}

func (rn *run) fail(f *failed) {
	rn.mu.Lock()
	if rn.failed == nil {
		rn.failed = f
	}
	rn.mu.Unlock()
}

// claim returns the arguments of the tool call name that the last model
// call of the generate loop parent asked for, and whether it asked for
// one. Genkit runs a turn's tool calls at once and its spans do not say
// which request a span serves, so when the model asked for the tool more
// than once with different arguments, the tool.call leaves them out.
func (rn *run) claim(parent trace.SpanID, name string) (any, bool) {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	reqs := rn.pending[parent]
	first := -1
	same := true
	for i := range reqs {
		if reqs[i].claimed || reqs[i].name != name {
			continue
		}
		if first < 0 {
			first = i
		} else if string(reqs[i].input) != string(reqs[first].input) {
			same = false
		}
	}
	if first < 0 {
		return nil, false
	}
	reqs[first].claimed = true
	if !same || len(reqs[first].input) == 0 {
		return nil, true
	}
	return reqs[first].input, true
}

// modelOutput is what the bridge reads of a traced ModelResponse.
type modelOutput struct {
	FinishReason string `json:"finishReason"`
	Message      *struct {
		Content []struct {
			ToolRequest *struct {
				Name  string          `json:"name"`
				Input json.RawMessage `json:"input"`
			} `json:"toolRequest"`
		} `json:"content"`
	} `json:"message"`
	Usage *struct {
		InputTokens  int `json:"inputTokens"`
		OutputTokens int `json:"outputTokens"`
		TotalTokens  int `json:"totalTokens"`
	} `json:"usage"`
}

// modelCall records a model span as one x.clutch.model_call, and notes
// the tools it asked for.
func (rn *run) modelCall(sp *span, s sdktrace.ReadOnlySpan, attrs map[string]string) {
	provider, model, ok := strings.Cut(s.Name(), "/")
	if !ok {
		provider, model = "", s.Name()
	}
	mc := router.ModelCall{Model: model, Provider: provider, DurationMS: s.EndTime().Sub(s.StartTime()).Milliseconds()}
	var reqs []toolRequest
	if attrs[attrState] == "error" {
		msg := s.Status().Description
		ep := protocol.NewErrorPayload(spanError(msg))
		if ep.Code == protocol.CodeInternal { // the model's own failure, not a cancel
			ep = protocol.ErrorPayload{Code: protocol.CodeDependency, Message: msg, Retryable: protocol.CodeDependency.Retryable()}
			rn.fail(&failed{name: s.Name(), msg: msg})
		}
		mc.Error = &ep
	} else if attrs[attrState] != "success" {
		// No state: the model's action did not return (a panic).
		mc.Error = &protocol.ErrorPayload{Code: protocol.CodeInternal, Message: "the model call ended without returning: it panicked", Retryable: protocol.CodeInternal.Retryable()}
	} else {
		var out modelOutput
		if json.Unmarshal([]byte(attrs[attrOutput]), &out) == nil {
			mc.FinishReason = out.FinishReason
			if u := out.Usage; u != nil {
				mc.InputTokens, mc.OutputTokens, mc.TotalTokens = u.InputTokens, u.OutputTokens, u.TotalTokens
			}
			if m := out.Message; m != nil {
				for _, p := range m.Content {
					if tr := p.ToolRequest; tr != nil {
						reqs = append(reqs, toolRequest{name: tr.Name, input: tr.Input})
					}
				}
			}
			mc.ToolCalls = len(reqs)
		}
	}
	rn.mu.Lock()
	if rn.pending == nil {
		rn.pending = map[trace.SpanID][]toolRequest{}
	}
	rn.pending[sp.parent] = reqs
	rn.lastModel, rn.lastInput = s.Name(), attrs[attrInput]
	rn.mu.Unlock()
	_, _ = rn.t.RecordModelCall(sp.ctx, mc) // an ended task records nothing more
}

// toolCall records a tool span's outcome under the call id of its
// tool.call, recording the tool.call first when its start did not (a tool
// Genkit runs again on resume, outside a model turn).
func (rn *run) toolCall(sp *span, s sdktrace.ReadOnlySpan, attrs map[string]string) {
	call := sp.call
	if call == nil {
		var args any
		if in := attrs[attrInput]; in != "" && in != "null" && json.Valid([]byte(in)) {
			args = json.RawMessage(in)
		}
		c, err := rn.t.StartTool(sp.ctx, Name, s.Name(), args)
		if err != nil {
			return
		}
		call = c
	}
	switch attrs[attrState] {
	case "error":
	case "success":
		var out struct {
			Output json.RawMessage `json:"output"`
		}
		var content any
		if json.Unmarshal([]byte(attrs[attrOutput]), &out) == nil && len(out.Output) > 0 {
			content = out.Output
		}
		_ = call.Done(sp.ctx, content)
		return
	default:
		// Genkit sets no state on a span whose action did not return: it
		// panicked (the span's End is deferred, nothing recovers).
		msg := "the tool ended without returning: it panicked"
		call.Fail(sp.ctx, router.Fail(protocol.CodeInternal, msg, protocol.CodeInternal.Retryable(), nil))
		rn.fail(&failed{tool: true, name: s.Name(), call: call.ID(), msg: msg, code: protocol.CodeInternal})
		return
	}
	msg := s.Status().Description
	if meta, ok := interruptOf(msg); ok {
		d := map[string]any{"interrupted": true}
		if meta != nil {
			d["interrupt"] = meta
		}
		call.Fail(sp.ctx, router.Fail(protocol.CodeInputRequired, "the tool paused for input", false, d))
		rn.mu.Lock()
		rn.interrupt = append(rn.interrupt, s.Name())
		rn.mu.Unlock()
		return
	}
	err := spanError(msg)
	rn.mu.Lock()
	if e, ok := rn.toolErrs[s.SpanContext().SpanID()]; ok {
		err = e // a Tool's wire error, with its code
		delete(rn.toolErrs, s.SpanContext().SpanID())
	}
	rn.mu.Unlock()
	call.Fail(sp.ctx, err)
	if !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		ep := protocol.NewErrorPayload(err)
		rn.fail(&failed{tool: true, name: s.Name(), call: call.ID(), msg: ep.Message, code: ep.Code})
	}
}

// noteToolError keeps the error of one of the bridge's own tools (Tool)
// for the end of its span, whose status keeps only its text.
func noteToolError(ctx context.Context, err error) {
	rn, _ := ctx.Value(runKey{}).(*run)
	if rn == nil {
		return
	}
	id := trace.SpanContextFromContext(ctx).SpanID()
	rn.mu.Lock()
	if rn.toolErrs == nil {
		rn.toolErrs = map[trace.SpanID]error{}
	}
	rn.toolErrs[id] = err
	rn.mu.Unlock()
}

// interruptOf reports whether the error text msg is a tool's interrupt,
// with its metadata when it has some.
func interruptOf(msg string) (any, bool) {
	rest, ok := strings.CutPrefix(msg, interruptPrefix)
	if !ok {
		return nil, false
	}
	var meta any
	if rest = strings.TrimLeft(rest, ": \n"); rest != "" {
		_ = json.Unmarshal([]byte(rest), &meta)
	}
	return meta, true
}

// spanError is the error of a failed span's status text: a context's
// own error when it is one, so a cancel stays CANCELLED.
func spanError(msg string) error {
	switch msg {
	case context.Canceled.Error():
		return context.Canceled
	case context.DeadlineExceeded.Error():
		return context.DeadlineExceeded
	}
	if msg == "" {
		msg = "failed without saying why"
	}
	return errors.New(msg)
}
