package langchaingo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/tools"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
)

// Name is the bridge's name: the "tool" member of the tool events it
// records (docs/protocol.md §2.3).
const Name = "langchaingo"

// DefaultProgressBytes is how much streamed text Options.ProgressBytes
// gathers by default before it stores a task.progress.
const DefaultProgressBytes = 64

// Options configure an Agent. The zero value (or nil) is the defaults.
type Options struct {
	// Name is the agent's display name and the default capability's
	// "skill:<slug of Name>". Default: the agent id without "agent:".
	Name string
	// Description is the card's description. Default: none.
	Description string
	// Capabilities replace the card's default capability
	// "skill:<slug of Name>" (each an id of docs/protocol.md §1.5).
	Capabilities []string
	// Tools are listed on the card as the tools of every capability
	// ("langchaingo:<name>"), after the tools of an *agents.Executor's
	// agent, which New finds itself. A chain does not tell its tools, so
	// the caller does.
	Tools []tools.Tool
	// Stream runs the chain with chains.WithStreamingFunc and stores what
	// its model streams as task.progress {"text"} events, gathered to
	// ProgressBytes.
	Stream bool
	// ProgressBytes is how many bytes of streamed text one task.progress
	// gathers at least (the end of a model call, a tool call and the end
	// of the run send what is left). Default DefaultProgressBytes; 1
	// stores every chunk.
	ProgressBytes int
	// CallOptions are given to every run of the chain (chains.Call), as a
	// model name, temperature or stop words.
	CallOptions []chains.ChainCallOption
	// ResultType is the payload_type of the result ("" untyped).
	ResultType string
}

// Agent is a LangChainGo chain — an agents.Executor or any chains.Chain —
// as a Clutch agent: register a.Handle under a.Card() (router.Register).
type Agent struct {
	id    string
	chain chains.Chain
	opts  Options
	card  *protocol.AgentCard
}

// New wraps chain as the agent agentID ("agent:..."). An *agents.Executor
// whose agent is a OneShotZeroAgent, ConversationalAgent or
// OpenAIFunctionsAgent is copied with its tools wrapped by WrapTool, so
// their calls are recorded; chain itself is not changed. The tools of
// another chain are wrapped by the caller. opts may be nil.
func New(agentID string, chain chains.Chain, opts *Options) (*Agent, error) {
	if !strings.HasPrefix(agentID, protocol.PrefixAgent) || len(agentID) == len(protocol.PrefixAgent) {
		return nil, optionsError(fmt.Sprintf("agent id %q does not start with %q", agentID, protocol.PrefixAgent))
	}
	if isNil(chain) {
		return nil, optionsError("no chain for " + agentID)
	}
	if chain.GetMemory() == nil {
		return nil, optionsError("the chain of " + agentID + " has no memory (chains.Call needs one: memory.NewSimple())")
	}
	a := &Agent{id: agentID}
	if opts != nil {
		a.opts = *opts
	}
	o := &a.opts
	if o.Name == "" {
		o.Name = strings.TrimPrefix(agentID, protocol.PrefixAgent)
	}
	if o.ProgressBytes < 0 {
		return nil, optionsError(fmt.Sprintf("ProgressBytes %d is negative", o.ProgressBytes))
	}
	if o.ProgressBytes == 0 {
		o.ProgressBytes = DefaultProgressBytes
	}
	var own []tools.Tool
	a.chain, own = withWrappedTools(chain)
	var names []string
	for i, t := range append(own, o.Tools...) {
		if isNil(t) || t.Name() == "" {
			return nil, optionsError(fmt.Sprintf("tool %d has no name", i))
		}
		if n := Name + ":" + t.Name(); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	caps := o.Capabilities
	if len(caps) == 0 {
		slug := adapters.Slug(o.Name)
		if slug == "" {
			slug = Name
		}
		caps = []string{"skill:" + slug}
	}
	card := &protocol.AgentCard{V: protocol.Version, AgentID: agentID, Display: &protocol.Display{Name: o.Name, Desc: o.Description}}
	for _, c := range caps {
		card.Capabilities = append(card.Capabilities, protocol.Capability{ID: c, Tools: names})
	}
	if err := card.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrOptions, err)
	}
	a.card = card
	return a, nil
}

// withWrappedTools returns chain, or a copy of an *agents.Executor whose
// agent, of a type the package knows, has its tools wrapped, and the
// agent's tools.
func withWrappedTools(chain chains.Chain) (chains.Chain, []tools.Tool) {
	e, ok := chain.(*agents.Executor)
	if !ok || e == nil || isNil(e.Agent) {
		return chain, nil
	}
	ex := *e
	switch ag := e.Agent.(type) {
	case *agents.OneShotZeroAgent:
		c := *ag
		c.Tools = wrapAll(ag.Tools)
		ex.Agent = &c
	case *agents.ConversationalAgent:
		c := *ag
		c.Tools = wrapAll(ag.Tools)
		ex.Agent = &c
	case *agents.OpenAIFunctionsAgent:
		c := *ag
		c.Tools = wrapAll(ag.Tools)
		ex.Agent = &c
	default:
		return chain, ag.GetTools()
	}
	return &ex, ex.Agent.GetTools()
}

func wrapAll(ts []tools.Tool) []tools.Tool {
	out := make([]tools.Tool, len(ts))
	for i, t := range ts {
		out[i] = WrapTool(t)
	}
	return out
}

// Card returns the agent's card: its name and description, its
// capabilities, and the chain's tools on each. Do not modify it.
func (a *Agent) Card() *protocol.AgentCard { return a.card }

// Handle runs the chain as the task t (a router.Handler): chains.Call
// with the request's inputs. See the package doc for the mapping.
func (a *Agent) Handle(ctx context.Context, t *router.Task) (*router.Result, error) {
	inputs, err := decodeInputs(t.Request().Payload, neededKeys(ctx, a.chain))
	if err != nil {
		return nil, err
	}
	rn := &run{text: t.TextStream(a.opts.ProgressBytes)}
	ctx = context.WithValue(ctx, runKey{}, rn)
	opts := a.opts.CallOptions
	if a.opts.Stream {
		opts = append(slices.Clip(opts), chains.WithStreamingFunc(rn.stream))
	}
	out, err := chains.Call(ctx, a.chain, inputs, opts...)
	if err != nil {
		if ctx.Err() == nil {
			_ = rn.flush(ctx)
		}
		return nil, rn.failure(ctx, err)
	}
	if err := rn.flush(ctx); err != nil {
		return nil, err
	}
	return &router.Result{PayloadType: a.opts.ResultType, Payload: resultOf(a.chain, out)}, nil
}

// neededKeys are the chain's input keys that its memory does not give,
// as chains.Run finds them.
func neededKeys(ctx context.Context, c chains.Chain) []string {
	mem := c.GetMemory().MemoryVariables(ctx)
	var keys []string
	for _, k := range c.GetInputKeys() {
		if !slices.Contains(mem, k) {
			keys = append(keys, k)
		}
	}
	return keys
}

// decodeInputs decodes the task.request payload raw into the chain's
// inputs: a JSON string, or an object whose only member is a string
// "text" (protocol Content), is the value of the chain's one needed input
// key; any other object is the inputs, member by member, and must hold
// every needed key.
func decodeInputs(raw json.RawMessage, needed []string) (map[string]any, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return textInput(s, needed)
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, inputError("the payload is " + kindOf(raw) + ", not a JSON string or object")
	}
	if text, ok := obj["text"].(string); ok && len(obj) == 1 && !slices.Contains(needed, "text") && len(needed) == 1 {
		return textInput(text, needed)
	}
	for _, k := range needed {
		if _, ok := obj[k]; !ok {
			return nil, inputError(fmt.Sprintf("the payload has no member %q, an input of the chain (%s)", k, strings.Join(needed, ", ")))
		}
	}
	return obj, nil
}

func textInput(s string, needed []string) (map[string]any, error) {
	if len(needed) != 1 {
		return nil, inputError(fmt.Sprintf("the chain takes %d inputs (%s), so the payload must be a JSON object of them, not text", len(needed), strings.Join(needed, ", ")))
	}
	return map[string]any{needed[0]: s}, nil
}

// kindOf names the JSON kind of raw, in words.
func kindOf(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return "not valid JSON"
	}
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a JSON boolean"
	case float64:
		return "a JSON number"
	case []any:
		return "a JSON array"
	}
	return "a JSON value"
}

// resultOf is the result payload of the chain's outputs: the value of
// its one output key (a string is text), else every output as an object.
func resultOf(c chains.Chain, out map[string]any) any {
	if keys := c.GetOutputKeys(); len(keys) == 1 {
		if v, ok := out[keys[0]]; ok {
			return v
		}
	}
	return out
}

// failure is the task's error for the chain's error err: a question's
// wait as it is; ctx's when the task was cancelled; TOOL_FAILED when a
// tool failed first; DEPENDENCY when the model did; else err, coded.
func (rn *run) failure(ctx context.Context, err error) error {
	if errors.Is(err, router.ErrWaiting) {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	rn.mu.Lock()
	f := rn.failed
	rn.mu.Unlock()
	switch {
	case f != nil && f.tool:
		d := map[string]any{"tool": Name, "name": f.name, "call_id": f.call, "cause_code": string(f.code)}
		return router.Fail(protocol.CodeToolFailed, "tool "+f.name+" failed: "+f.msg, false, d)
	case f != nil:
		return router.Fail(protocol.CodeDependency, "model "+f.name+" failed: "+f.msg, protocol.CodeDependency.Retryable(), map[string]any{"model": f.name})
	}
	return codedError(err)
}

// codedError maps an error of LangChainGo onto the error table of
// docs/protocol.md §5.4.
func codedError(err error) error {
	var ep *protocol.ErrorPayload
	if errors.As(err, &ep) {
		return ep
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	fail := func(code protocol.Code, what string) error {
		return router.Fail(code, what+": "+err.Error(), code.Retryable(), nil)
	}
	var le *llms.Error
	switch {
	case errors.As(err, &le):
		switch le.Code {
		case llms.ErrCodeRateLimit, llms.ErrCodeQuotaExceeded:
			return fail(protocol.CodeRateLimited, "the model refused")
		case llms.ErrCodeTimeout:
			return fail(protocol.CodeTimeout, "the model took too long")
		case llms.ErrCodeCanceled:
			return fail(protocol.CodeCancelled, "the model call was cancelled")
		}
		return fail(protocol.CodeDependency, "the model failed")
	case errors.Is(err, agents.ErrNotFinished):
		return fail(protocol.CodeBudget, "the agent ran out of iterations")
	case errors.Is(err, agents.ErrUnableToParseOutput), errors.Is(err, agents.ErrAgentNoReturn), errors.Is(err, agents.ErrInvalidChainReturnType):
		return fail(protocol.CodeDependency, "the model's answer was not usable")
	case errors.Is(err, agents.ErrExecutorInputNotString), errors.Is(err, chains.ErrInvalidInputValues), errors.Is(err, chains.ErrMissingInputValues):
		return fail(protocol.CodeValidation, "the chain refused its inputs")
	}
	if c := protocol.CodeOf(err); c != protocol.CodeInternal {
		return err // a coded error keeps its code
	}
	return fail(protocol.CodeInternal, "the LangChainGo chain failed")
}
