package eino

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/schema"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
)

// ToolOptions configure a Clutch capability as an eino tool. nil is the
// defaults.
type ToolOptions struct {
	// Name is the tool's name as the model sees it. Default: the
	// capability with every character but letters, digits, '_' and '-'
	// made '_' ("skill:research" -> "skill_research").
	Name string
	// Description tells the model what the tool does. Default: "Ask the
	// team's agent with capability <capability> to do it."
	Description string
	// Params is the tool's arguments. Default: one required string
	// "input", which is then the subtask's payload (a JSON string); with
	// Params set, the subtask's payload is the arguments object as the
	// model wrote it.
	Params map[string]*schema.ParameterInfo
	// PayloadType is the subtask's payload_type ("" untyped).
	PayloadType string
	// From is who submits the task when the tool runs outside a Clutch
	// task (then a root task). Default "agent:eino".
	From string
}

// clutchTool is a Clutch capability as an eino tool.InvokableTool.
type clutchTool struct {
	r          *router.Router
	capability string
	info       *schema.ToolInfo
	plain      bool // the default params: the subtask's payload is "input"
	opts       ToolOptions
}

// Tool returns the capability of the router r's team as an eino tool
// (tool.InvokableTool): a call delegates a task that requires capability
// and returns its result. Inside a Clutch task (the agent of a graph the
// bridge runs, router.TaskFrom(ctx) != nil) the call is a subtask of that
// task — routing decision, budget, cancellation and trace come with it;
// outside one it submits a root task and waits for it, cancelling it
// when ctx ends. A failed task is the tool's error, its wire error
// (*protocol.ErrorPayload). The result is the task's payload: a JSON
// string as its text, anything else as its JSON.
func Tool(r *router.Router, capability string, opts *ToolOptions) (tool.InvokableTool, error) {
	if r == nil {
		return nil, optionsError("Tool needs a router")
	}
	if capability == "" {
		return nil, optionsError("Tool needs a capability")
	}
	c := &clutchTool{r: r, capability: capability}
	if opts != nil {
		c.opts = *opts
	}
	o := &c.opts
	if o.Name == "" {
		o.Name = router.ToolName(capability)
	}
	if o.Description == "" {
		o.Description = "Ask the team's agent with capability " + capability + " to do it."
	}
	if o.From == "" {
		o.From = "agent:" + Name
	}
	if !strings.HasPrefix(o.From, protocol.PrefixAgent) {
		return nil, optionsError(fmt.Sprintf("From %q does not start with %q", o.From, protocol.PrefixAgent))
	}
	params := o.Params
	if params == nil {
		c.plain = true
		params = map[string]*schema.ParameterInfo{"input": {Type: schema.String, Desc: "what to ask, in words", Required: true}}
	}
	c.info = &schema.ToolInfo{Name: o.Name, Desc: o.Description, ParamsOneOf: schema.NewParamsOneOfByParams(params)}
	return c, nil
}

// Info describes the tool to the model.
func (c *clutchTool) Info(context.Context) (*schema.ToolInfo, error) { return c.info, nil }

// InvokableRun delegates the task and returns its result.
func (c *clutchTool) InvokableRun(ctx context.Context, args string, _ ...tool.Option) (string, error) {
	payload, err := c.payload(args)
	if err != nil {
		return "", err
	}
	out, err := c.r.Call(ctx, c.opts.From, c.capability, c.opts.PayloadType, payload)
	if err != nil {
		return "", err
	}
	return resultText(out.Message), nil
}

// payload is the subtask's payload of the model's arguments.
func (c *clutchTool) payload(args string) (any, error) {
	if !json.Valid([]byte(args)) {
		return nil, router.Fail(protocol.CodeInvalidJSON, "the arguments of "+c.opts.Name+" are not JSON", false, nil)
	}
	if !c.plain {
		return json.RawMessage(args), nil
	}
	var in struct {
		Input *string `json:"input"`
	}
	if err := json.Unmarshal([]byte(args), &in); err != nil || in.Input == nil {
		return nil, router.Fail(protocol.CodeValidation, "the arguments of "+c.opts.Name+" need a string \"input\"", false, nil)
	}
	return *in.Input, nil
}

// resultText is a task.result's payload as a tool's output.
func resultText(m *protocol.Message) string {
	if m == nil {
		return ""
	}
	var s string
	if json.Unmarshal(m.Payload, &s) == nil {
		return s
	}
	return string(m.Payload)
}
