package genkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/core"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

// Name is the bridge's name: the "tool" member of the tool events it
// records (docs/protocol.md §2.3).
const Name = "genkit"

// DefaultProgressBytes is how much streamed text Options.ProgressBytes
// gathers by default before it stores a task.progress.
const DefaultProgressBytes = 64

// Options configure an Agent. The zero value (or nil) is the defaults.
type Options struct {
	// Name is the agent's display name and the default capability's
	// "skill:<slug of Name>". Default: the flow's name.
	Name string
	// Description is the card's description. Default: none.
	Description string
	// Capabilities replace the card's default capability
	// "skill:<slug of Name>" (each an id of docs/protocol.md §1.5).
	Capabilities []string
	// Tools are the flow's tools, listed on the card as the tools of every
	// capability ("genkit:<name>"). A flow does not tell its tools, so
	// the caller does.
	Tools []ai.Tool
	// Stream runs the flow with Stream instead of Run and stores what it
	// streams as task.progress events as it comes: text (a string, an
	// *ai.ModelResponseChunk's text) gathered to ProgressBytes, any other
	// value one event each.
	Stream bool
	// ProgressBytes is how many bytes of streamed text one task.progress
	// gathers at least (the last one takes what is left). Default
	// DefaultProgressBytes; 1 stores every chunk.
	ProgressBytes int
	// Store is the router's store (router.Router.Store), where Generate
	// keeps the checkpoint of an interrupted generate loop as an artifact
	// (CheckpointMediaType) and reads it back on resume. Without it, an
	// interrupt ends the task with INPUT_REQUIRED.
	Store store.Store
	// ResultType is the payload_type of the result ("" untyped).
	ResultType string
	// Resume turns a person's answer into how the interrupted tool call
	// goes on: a tool response part (ToolDef.RespondWith: the answer is
	// the tool's output) or a tool request part (ToolDef.RestartWith: the
	// tool runs again). Default: the tool runs again with
	// ToolContext.Resumed {"answer": <the answer decoded from JSON>}.
	Resume func(q *protocol.Question, interrupt *ai.Part, answer json.RawMessage) (*ai.Part, error)
}

// Agent is a Genkit flow as a Clutch agent: register a.Handle under
// a.Card() (router.Register).
type Agent[In, Out, Stream any] struct {
	id   string
	flow *core.Flow[In, Out, Stream]
	opts Options
	card *protocol.AgentCard
}

// New wraps the flow — genkit.DefineFlow or DefineStreamingFlow — as the
// agent agentID ("agent:..."). opts may be nil.
func New[In, Out, Stream any](agentID string, flow *core.Flow[In, Out, Stream], opts *Options) (*Agent[In, Out, Stream], error) {
	if !strings.HasPrefix(agentID, protocol.PrefixAgent) || len(agentID) == len(protocol.PrefixAgent) {
		return nil, optionsError(fmt.Sprintf("agent id %q does not start with %q", agentID, protocol.PrefixAgent))
	}
	if flow == nil {
		return nil, optionsError("no flow for " + agentID)
	}
	a := &Agent[In, Out, Stream]{id: agentID, flow: flow}
	if opts != nil {
		a.opts = *opts
	}
	o := &a.opts
	if o.Name == "" {
		o.Name = flow.Name()
	}
	if o.ProgressBytes < 0 {
		return nil, optionsError(fmt.Sprintf("ProgressBytes %d is negative", o.ProgressBytes))
	}
	if o.ProgressBytes == 0 {
		o.ProgressBytes = DefaultProgressBytes
	}
	caps := o.Capabilities
	if len(caps) == 0 {
		slug := adapters.Slug(o.Name)
		if slug == "" {
			slug = Name
		}
		caps = []string{"skill:" + slug}
	}
	var tools []string
	for i, t := range o.Tools {
		if t == nil || t.Name() == "" {
			return nil, optionsError(fmt.Sprintf("Tools[%d] has no name", i))
		}
		tools = append(tools, Name+":"+t.Name())
	}
	card := &protocol.AgentCard{V: protocol.Version, AgentID: agentID, Display: &protocol.Display{Name: o.Name, Desc: o.Description}}
	for _, c := range caps {
		card.Capabilities = append(card.Capabilities, protocol.Capability{ID: c, Tools: tools})
	}
	if err := card.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	a.card = card
	install()
	return a, nil
}

// Card returns the agent's card: its name and description, its
// capabilities, and the flow's tools on each. Do not modify it.
func (a *Agent[In, Out, Stream]) Card() *protocol.AgentCard { return a.card }

// Handle runs the flow as the task t (a router.Handler). See the package
// doc for the mapping.
func (a *Agent[In, Out, Stream]) Handle(ctx context.Context, t *router.Task) (*router.Result, error) {
	install()
	in, err := decodeInput[In](t.Request().Payload)
	if err != nil {
		return nil, err
	}
	rn := &run{t: t, store: a.opts.Store, resume: a.opts.Resume}
	if err := rn.loadCheckpoint(ctx); err != nil {
		return nil, err
	}
	ctx = context.WithValue(ctx, runKey{}, rn)
	out, err := a.runFlow(ctx, t, in)
	if err != nil {
		return nil, rn.failure(ctx, err)
	}
	if err := rn.unasked(); err != nil {
		return nil, err
	}
	return a.result(out)
}

// runFlow runs the flow once, with Run, or with Stream and what it
// streams as task.progress.
func (a *Agent[In, Out, Stream]) runFlow(ctx context.Context, t *router.Task, in In) (Out, error) {
	if !a.opts.Stream {
		return a.flow.Run(ctx, in)
	}
	var (
		out  Out
		ferr error
	)
	stream := t.TextStream(a.opts.ProgressBytes)
	// The stream is read through a plain yield func, not a range loop:
	// when yield returns false, Genkit's Flow.Stream stops the flow and
	// then yields the flow's error anyway, which a range loop that broke
	// would answer with a runtime panic. Once stopped, yield takes
	// nothing more.
	stopped := false
	a.flow.Stream(ctx, in)(func(v *core.StreamingFlowValue[Out, Stream], err error) bool {
		switch {
		case stopped:
			return false
		case err != nil:
			ferr = err
		case v.Done:
			out = v.Output
		default:
			text, isText := textOf(v.Stream)
			if !isText {
				if ferr = stream.Flush(ctx); ferr == nil {
					ferr = t.Progress(ctx, Progress{Value: v.Stream})
				}
				stopped = ferr != nil
				return !stopped
			}
			ferr = stream.Write(ctx, text)
			stopped = ferr != nil
			return !stopped
		}
		stopped = true
		return false
	})
	if ferr != nil {
		return out, ferr
	}
	return out, stream.Flush(ctx)
}

// Progress is the payload of the task.progress events of a streamed run:
// the text the flow streamed since the last one (stored by a
// router.TextStream, so the same JSON as router.TextProgress), or one
// streamed value that is not text.
type Progress struct {
	Text  string `json:"text,omitempty"`
	Value any    `json:"value,omitempty"`
}

// textOf is the text of a streamed value: a string, or a model chunk's
// text.
func textOf(v any) (string, bool) {
	switch c := v.(type) {
	case string:
		return c, true
	case *ai.ModelResponseChunk:
		if c == nil {
			return "", true
		}
		return c.Text(), true
	}
	return "", false
}

// decodeInput decodes the task.request payload raw into the flow's input:
// a string input takes a JSON string or an object {"text": ...}; any other
// type is decoded from the payload's JSON.
func decodeInput[In any](raw json.RawMessage) (In, error) {
	var in In
	if p, ok := any(&in).(*string); ok {
		if text, isText := textPayload(raw); isText {
			*p = text
			return in, nil
		}
	}
	if err := json.Unmarshal(raw, &in); err != nil {
		return in, coded.Wrap(ErrInput, inputProblem(err), nil)
	}
	return in, nil
}

// inputProblem says in words what did not fit, without the Go types
// encoding/json names.
func inputProblem(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		where := "the payload"
		if te.Field != "" {
			where = "member " + strconv.Quote(te.Field)
		}
		return where + " is a JSON " + te.Value + " of the wrong kind"
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "the payload is not JSON: " + se.Error()
	}
	return err.Error()
}

// textPayload returns the text of a payload that is a JSON string or an
// object whose only member is "text".
func textPayload(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var all map[string]json.RawMessage
	if json.Unmarshal(raw, &all) != nil || len(all) != 1 {
		return "", false
	}
	if t, ok := all["text"]; ok && json.Unmarshal(t, &s) == nil {
		return s, true
	}
	return "", false
}

// result makes the task's result of the flow's output: a model response's
// text, a string as it is, any other value as JSON.
func (a *Agent[In, Out, Stream]) result(out Out) (*router.Result, error) {
	var p any = out
	if r, ok := any(out).(*ai.ModelResponse); ok && r != nil {
		p = r.Text()
	}
	return &router.Result{PayloadType: a.opts.ResultType, Payload: p}, nil
}

// failure is the task's error for the flow's error err: a question's
// wait as it is; ctx's when the task was cancelled; TOOL_FAILED when a
// tool failed first; DEPENDENCY when the model did; else err, coded by
// its Genkit status.
func (rn *run) failure(ctx context.Context, err error) error {
	if errors.Is(err, router.ErrWaiting) {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var ep *protocol.ErrorPayload
	if errors.As(err, &ep) {
		return ep // a Fail of the flow, or of the bridge's Generate
	}
	rn.mu.Lock()
	f := rn.failed
	rn.mu.Unlock()
	switch {
	case f == nil:
		// Genkit fails a resumed generate loop whose restarted tool
		// interrupts again (FAILED_PRECONDITION).
		if e := rn.unaskedBecause("a tool restarted on resume interrupted again, which Genkit cannot resume: " + err.Error()); e != nil {
			return e
		}
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		code := protocol.CodeInternal
		var ge *core.GenkitError
		if errors.As(err, &ge) {
			code = codeOfStatus(ge.Status)
		} else if c := protocol.CodeOf(err); c != protocol.CodeInternal {
			return err // a coded error of the flow keeps its code
		}
		return router.Fail(code, "the Genkit flow failed: "+err.Error(), code.Retryable(), nil)
	case f.tool:
		d := map[string]any{"tool": Name, "name": f.name, "cause_code": string(f.code)}
		if f.call != "" {
			d["call_id"] = f.call
		}
		return router.Fail(protocol.CodeToolFailed, "tool "+f.name+" failed: "+f.msg, false, d)
	default:
		return router.Fail(protocol.CodeDependency, "model "+f.name+" failed: "+f.msg, protocol.CodeDependency.Retryable(), map[string]any{"model": f.name})
	}
}

// codeOfStatus maps a Genkit error status onto the error table of
// docs/protocol.md §5.4.
func codeOfStatus(s core.StatusName) protocol.Code {
	switch s {
	case core.INVALID_ARGUMENT, core.OUT_OF_RANGE:
		return protocol.CodeValidation
	case core.NOT_FOUND:
		return protocol.CodeNotFound
	case core.CANCELLED:
		return protocol.CodeCancelled
	case core.DEADLINE_EXCEEDED:
		return protocol.CodeTimeout
	case core.PERMISSION_DENIED, core.UNAUTHENTICATED:
		return protocol.CodeUnauthorized
	case core.RESOURCE_EXHAUSTED:
		return protocol.CodeRateLimited
	case core.UNAVAILABLE:
		return protocol.CodeDependency
	case core.ABORTED: // Genkit's generate loop ran out of turns
		return protocol.CodeBudget
	case core.ALREADY_EXISTS:
		return protocol.CodeConflict
	case core.UNIMPLEMENTED:
		return protocol.CodeUnsupportedTask
	}
	return protocol.CodeInternal
}
