package genkit

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/firebase/genkit/go/ai"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
)

// ToolOptions configure a Clutch capability as a Genkit tool. nil is the
// defaults.
type ToolOptions struct {
	// Name is the tool's name as the model sees it. Default: the
	// capability with every character but letters, digits, '_' and '-'
	// made '_' ("skill:research" -> "skill_research").
	Name string
	// Description tells the model what the tool does. Default: "Ask the
	// team's agent with capability <capability> to do it."
	Description string
	// InputSchema is the JSON Schema of the tool's arguments. Default: an
	// object with one required string "input", which is then the
	// subtask's payload (a JSON string); with InputSchema set, the
	// subtask's payload is the arguments as the model wrote them.
	InputSchema map[string]any
	// PayloadType is the subtask's payload_type ("" untyped).
	PayloadType string
	// From is who submits the task when the tool runs outside a Clutch
	// task (then a root task). Default "agent:genkit".
	From string
}

// Tool returns the capability of the router r's team as a Genkit tool
// (ai.NewTool): a call delegates a task that requires capability and
// returns its result. Inside a Clutch task (a flow the bridge runs,
// router.TaskFrom(ctx) != nil) the call is a subtask of that task —
// routing decision, budget, cancellation and trace come with it; outside
// one it submits a root task and waits for it, cancelling it when ctx
// ends. A failed task is the tool's error, its wire error
// (*protocol.ErrorPayload), which Genkit reports to the flow as the
// tool's failure. The tool's output is the task's payload: a JSON string
// as a string, anything else as its JSON value.
//
// Pass it to genkit.Generate with ai.WithTools; register it with
// genkit.RegisterAction as well when an interrupted generate loop that
// uses it must resume (Generate finds tools by name).
func Tool(r *router.Router, capability string, opts *ToolOptions) (ai.Tool, error) {
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
		o.Description = "Ask the team's agent with capability " + capability + " to do it."
	}
	if o.From == "" {
		o.From = "agent:" + Name
	}
	if !strings.HasPrefix(o.From, protocol.PrefixAgent) {
		return nil, optionsError(fmt.Sprintf("From %q does not start with %q", o.From, protocol.PrefixAgent))
	}
	plain := o.InputSchema == nil
	schema := o.InputSchema
	if plain {
		schema = map[string]any{
			"type":                 "object",
			"properties":           map[string]any{"input": map[string]any{"type": "string", "description": "what to ask, in words"}},
			"required":             []any{"input"},
			"additionalProperties": false,
		}
	}
	fn := func(tc *ai.ToolContext, args any) (any, error) {
		payload, err := toolPayload(o.Name, plain, args)
		if err != nil {
			noteToolError(tc, err)
			return nil, err
		}
		out, err := r.Call(tc, o.From, capability, o.PayloadType, payload)
		if err != nil {
			noteToolError(tc, err)
			return nil, err
		}
		return resultValue(out.Message), nil
	}
	return ai.NewTool(o.Name, o.Description, fn, ai.WithInputSchema(schema)), nil
}

// toolPayload is the subtask's payload of the model's arguments.
func toolPayload(name string, plain bool, args any) (any, error) {
	if !plain {
		return args, nil
	}
	m, _ := args.(map[string]any)
	s, ok := m["input"].(string)
	if !ok {
		return nil, router.Fail(protocol.CodeValidation, "the arguments of "+name+" need a string \"input\"", false, nil)
	}
	return s, nil
}

// resultValue is a task.result's payload as a tool's output: a JSON
// string as a string, anything else as its JSON value.
func resultValue(m *protocol.Message) any {
	if m == nil || len(m.Payload) == 0 {
		return nil
	}
	var v any
	if json.Unmarshal(m.Payload, &v) != nil {
		return string(m.Payload)
	}
	return v
}
