package langchaingo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/tools"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
)

// WrapTool returns t recording its calls: inside a Clutch task
// (router.TaskFrom(ctx) != nil) each Call is a tool.call {call_id, tool
// "langchaingo", name, args: the input string} before t runs and its
// tool.result {content: the output} or tool.error after, under one call
// id (docs/protocol.md §2.3, §2.3.1); outside a task it is t. A tool that
// is wrapped already is returned as it is. New wraps the tools of the
// agents it knows; wrap the tools of any other chain with it.
func WrapTool(t tools.Tool) tools.Tool {
	if _, ok := t.(*wrappedTool); ok || isNil(t) {
		return t
	}
	return &wrappedTool{inner: t}
}

// wrappedTool is a tool whose calls are recorded (WrapTool).
type wrappedTool struct{ inner tools.Tool }

// Name is the tool's name.
func (w *wrappedTool) Name() string { return w.inner.Name() }

// Description is the tool's description.
func (w *wrappedTool) Description() string { return w.inner.Description() }

// Call runs the tool, recorded as a call of the task of ctx.
func (w *wrappedTool) Call(ctx context.Context, input string) (out string, err error) {
	t := router.TaskFrom(ctx)
	if t == nil {
		return w.inner.Call(ctx, input)
	}
	rn := runFrom(ctx)
	if rn != nil {
		_ = rn.flush(ctx) // the model's streamed text goes before the call
	}
	name := w.inner.Name()
	call, err := t.StartTool(ctx, Name, name, input)
	if err != nil {
		return "", err
	}
	// The outcome is the call's even when ctx ended: it is stored anyway.
	rctx := context.WithoutCancel(ctx)
	defer func() {
		if p := recover(); p != nil {
			call.Fail(rctx, fmt.Errorf("the tool panicked: %v", p))
			panic(p)
		}
	}()
	out, err = w.inner.Call(ctx, input)
	if err != nil {
		call.Fail(rctx, err)
		if rn != nil && ctx.Err() == nil && !errors.Is(err, router.ErrWaiting) {
			ep := protocol.NewErrorPayload(err)
			rn.fail(&failure{tool: true, name: name, call: call.ID(), msg: ep.Message, code: ep.Code})
		}
		return out, err
	}
	return out, call.Done(rctx, out)
}

// ToolOptions configure a Clutch capability as a LangChainGo tool. nil is
// the defaults.
type ToolOptions struct {
	// Name is the tool's name as the model sees it. Default: the
	// capability with every character but letters, digits, '_' and '-'
	// made '_' ("skill:research" -> "skill_research").
	Name string
	// Description tells the model what the tool does. Default: "Ask the
	// team's agent with capability <capability> to do it. Input: what to
	// ask, in words."
	Description string
	// JSONInput makes the tool's input JSON, which is then the subtask's
	// payload (input that is not JSON fails the call with VALIDATION).
	// Default: the input string is the payload, a JSON string.
	JSONInput bool
	// PayloadType is the subtask's payload_type ("" untyped).
	PayloadType string
	// From is who submits the task when the tool runs outside a Clutch
	// task (then a root task). Default "agent:langchaingo".
	From string
}

// Tool returns the capability of the router r's team as a LangChainGo
// tool: a Call delegates a task that requires capability and returns its
// result. Inside a Clutch task (a chain the bridge runs,
// router.TaskFrom(ctx) != nil) the call is a subtask of that task —
// routing decision, budget, cancellation and trace come with it — and is
// recorded as a tool call (WrapTool); outside one it submits a root task
// and waits for it, cancelling it when ctx ends. A failed task is the
// call's error, its wire error (*protocol.ErrorPayload): an
// agents.Executor stops at a tool's error, so the task of the bridge
// fails with TOOL_FAILED, cause_code the subtask's code. The output is
// the result's payload: a JSON string as its text, any other JSON as it
// is.
func Tool(r *router.Router, capability string, opts *ToolOptions) (tools.Tool, error) {
	if r == nil {
		return nil, optionsError("Tool needs a router")
	}
	if capability == "" {
		return nil, optionsError("Tool needs a capability")
	}
	var o ToolOptions
	if opts != nil {
		o = *opts
	}
	if o.Name == "" {
		o.Name = router.ToolName(capability)
	}
	if o.Description == "" {
		o.Description = "Ask the team's agent with capability " + capability + " to do it. Input: what to ask, in words."
	}
	if o.From == "" {
		o.From = "agent:" + Name
	}
	if !strings.HasPrefix(o.From, protocol.PrefixAgent) {
		return nil, optionsError(fmt.Sprintf("From %q does not start with %q", o.From, protocol.PrefixAgent))
	}
	return WrapTool(&teamTool{r: r, capability: capability, o: o}), nil
}

// teamTool is a capability of the team as a tool (Tool).
type teamTool struct {
	r          *router.Router
	capability string
	o          ToolOptions
}

func (tt *teamTool) Name() string        { return tt.o.Name }
func (tt *teamTool) Description() string { return tt.o.Description }

func (tt *teamTool) Call(ctx context.Context, input string) (string, error) {
	var payload any = input
	if tt.o.JSONInput {
		if !json.Valid([]byte(input)) {
			return "", router.Fail(protocol.CodeValidation, "the input of "+tt.o.Name+" is not JSON", false, nil)
		}
		payload = json.RawMessage(input)
	}
	out, err := tt.r.Call(ctx, tt.o.From, tt.capability, tt.o.PayloadType, payload)
	if err != nil {
		return "", err
	}
	return textOf(out.Message.Payload), nil
}

// textOf is a JSON value as a tool's output: a string's text, anything
// else its JSON.
func textOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(bytes.TrimSpace(raw))
}

// HumanToolOptions configure HumanTool. nil is the defaults.
type HumanToolOptions struct {
	// Name is the tool's name as the model sees it. Default "ask_human".
	Name string
	// Description tells the model what the tool does. Default: "Ask a
	// person when you need their decision, approval or knowledge. Input:
	// the question, in words. Output: their answer."
	Description string
	// Question makes the question of the tool's input (to offer choices,
	// a schema, who may answer, a deadline). Default: the input is the
	// question's text.
	Question func(input string) protocol.Question
}

// HumanTool returns a tool with which the agent asks a person: a call
// asks the question of its input in the task (router.Task.Ask) and
// returns the answer — a JSON string as its text, any other answer as its
// JSON. LangChainGo has no interrupt of its own, so the first call
// returns Ask's ErrWaiting, which ends the run: the task waits for the
// answer holding no goroutine. Once a person answers
// (router.Router.Answer), the router runs the handler again and the chain
// runs again from the start; this time the call returns the answer. See
// the package doc for what that replays. Outside a Clutch task, and in a
// subtask (which cannot ask), a call fails.
func HumanTool(opts *HumanToolOptions) tools.Tool {
	var o HumanToolOptions
	if opts != nil {
		o = *opts
	}
	if o.Name == "" {
		o.Name = "ask_human"
	}
	if o.Description == "" {
		o.Description = "Ask a person when you need their decision, approval or knowledge. Input: the question, in words. Output: their answer."
	}
	if o.Question == nil {
		o.Question = func(input string) protocol.Question { return protocol.Question{Text: input} }
	}
	return WrapTool(&humanTool{o: o})
}

// humanTool is a person as a tool (HumanTool).
type humanTool struct{ o HumanToolOptions }

func (h *humanTool) Name() string        { return h.o.Name }
func (h *humanTool) Description() string { return h.o.Description }

func (h *humanTool) Call(ctx context.Context, input string) (string, error) {
	t := router.TaskFrom(ctx)
	if t == nil {
		return "", router.Fail(protocol.CodeUnsupportedTask, h.o.Name+" asks a person in a Clutch task, and runs outside one", false, nil)
	}
	q := h.o.Question(strings.TrimSpace(input))
	if q.Text == "" {
		return "", router.Fail(protocol.CodeValidation, h.o.Name+" was given no question", false, nil)
	}
	answer, err := t.Ask(ctx, q)
	if err != nil {
		return "", err
	}
	return textOf(answer), nil
}
