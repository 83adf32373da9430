package multiagent

import (
	"encoding/json"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/schema"
)

// Payload is the payload of the messages the adapter makes (except
// task.error and agent.*): the envelope's body, member for member, with
// the types of docs/protocol.md §12's TypeScript interface. Unknown members inside
// these objects are kept on the wire but not in these Go types.
type Payload struct {
	Task       string      `json:"task"`
	Inputs     *Inputs     `json:"inputs,omitempty"`
	Content    *Content    `json:"content,omitempty"`
	Outputs    *Outputs    `json:"outputs,omitempty"`
	Confidence *Confidence `json:"confidence,omitempty"`
}

// Inputs are the envelope's inputs.
type Inputs struct {
	Context    any            `json:"context,omitempty"` // a string in multiagent-1.0; any JSON is kept
	Resources  []Resource     `json:"resources,omitempty"`
	Parameters map[string]any `json:"parameters,omitempty"`
}

// Resource is one of inputs.resources.
type Resource struct {
	Type string `json:"type"` // url, file, db, tool
	ID   string `json:"id"`
	Hint string `json:"hint,omitempty"`
}

// Content is the envelope's normalized content.
type Content struct {
	Type string          `json:"type"` // text, code, json, tool_result, error
	Text *string         `json:"text,omitempty"`
	Data json.RawMessage `json:"data,omitempty"`
}

// Outputs are the envelope's outputs.
type Outputs struct {
	Artifacts   []Artifact `json:"artifacts,omitempty"`
	NextActions []Action   `json:"next_actions,omitempty"`
}

// Artifact is one of outputs.artifacts.
type Artifact struct {
	Kind   string  `json:"kind"`
	Name   string  `json:"name"`
	URI    *string `json:"uri,omitempty"`
	Inline string  `json:"inline,omitempty"`
}

// Action is one of outputs.next_actions.
type Action struct {
	Intent string         `json:"intent"`
	Task   string         `json:"task"`
	Args   map[string]any `json:"args,omitempty"`
}

// Confidence is the envelope's confidence.
type Confidence struct {
	Score     float64  `json:"score"`
	Rationale string   `json:"rationale,omitempty"`
	Risks     []string `json:"risks,omitempty"`
}

// PayloadOf decodes the payload of a message the adapter made (or any
// payload of that shape). Unlike protocol.DecodePayload it ignores
// members Payload does not define, as the envelope's senders add their own.
func PayloadOf(m *protocol.Message) (*Payload, error) {
	var p Payload
	if err := jsonv2.Unmarshal(m.Payload, &p); err != nil {
		return nil, &protocol.Error{Code: protocol.CodeWrongType, Path: "/payload", Offset: -1, Detail: "not a multiagent-1.0 payload", Err: err}
	}
	return &p, nil
}

// PayloadSchema is the JSON Schema of Payload: the body the adapter puts
// in payloads, as loose as multiagent-1.0 (unknown members allowed).
const PayloadSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "required": ["task"],
  "properties": {
    "task": {"type": "string"},
    "inputs": {"type": "object"},
    "content": {
      "type": "object",
      "required": ["type"],
      "properties": {"type": {"type": "string", "minLength": 1}, "text": {"type": "string"}}
    },
    "outputs": {
      "type": "object",
      "properties": {
        "artifacts": {"type": "array", "items": {"type": "object"}},
        "next_actions": {
          "type": "array",
          "items": {
            "type": "object",
            "required": ["intent", "task"],
            "properties": {"intent": {"type": "string", "minLength": 1}, "task": {"type": "string"}, "args": {"type": "object"}}
          }
        }
      }
    },
    "confidence": {
      "type": "object",
      "required": ["score"],
      "properties": {"score": {"type": "number", "minimum": 0, "maximum": 1}}
    }
  }
}`

// RegisterSchemas registers PayloadSchema under the payload types of the
// ten intents ("multiagent.plan.v1", ..., "multiagent.tool_call.v1"), so
// that a non-permissive schema registry validates the adapter's messages
// and the results of agents that answer them with these payload types.
func RegisterSchemas(reg *schema.Registry) error {
	for _, i := range intentTable {
		if _, ok := reg.Lookup(PayloadType(i.Intent)); ok {
			continue
		}
		if err := reg.Register(PayloadType(i.Intent), []byte(PayloadSchema)); err != nil {
			return err
		}
	}
	return nil
}
