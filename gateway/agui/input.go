package agui

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// Input is the RunAgentInput an AG-UI client (@ag-ui/client's HttpAgent)
// POSTs to start a run, or, with Resume, to answer the interrupt the
// thread's last run ended with. Members this package does not read
// (toolCalls of assistant messages, metadata, ...) are ignored, so newer
// clients are accepted.
type Input struct {
	ThreadID       string         `json:"threadId"`
	RunID          string         `json:"runId"`
	ParentRunID    string         `json:"parentRunId,omitzero"`
	State          jsontext.Value `json:"state,omitzero"`
	Messages       []InputMessage `json:"messages"`
	Tools          []Tool         `json:"tools"`
	Context        []Context      `json:"context"`
	ForwardedProps jsontext.Value `json:"forwardedProps,omitzero"`
	Resume         []ResumeEntry  `json:"resume,omitzero"`
}

// InputMessage is one message of a RunAgentInput's conversation.
type InputMessage struct {
	ID   string `json:"id"`
	Role string `json:"role"` // "user", "assistant", "system", "developer", "tool", ...
	// Content is a JSON string, or for a user message an array of input
	// parts ({"type":"text","text":...}, images, ...); see Text.
	Content    jsontext.Value `json:"content,omitzero"`
	Name       string         `json:"name,omitzero"`
	ToolCallID string         `json:"toolCallId,omitzero"`
}

// Text returns the message's text: its content when that is a string, or
// the text of its "text" parts joined by "\n".
func (m *InputMessage) Text() string {
	if s, ok := str(m.Content); ok {
		return s
	}
	var parts []string
	var arr []jsontext.Value
	if err := json.Unmarshal(m.Content, &arr); err != nil {
		return ""
	}
	for _, p := range arr {
		var typ, text string
		eachMember(p, func(k []byte, v jsontext.Value) {
			switch string(k) {
			case "type":
				typ, _ = str(v)
			case "text":
				text, _ = str(v)
			}
		})
		if typ == "text" {
			parts = append(parts, text)
		}
	}
	return strings.Join(parts, "\n")
}

// Tool is a tool the client offers the agent (a front-end tool).
type Tool struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Parameters  jsontext.Value `json:"parameters,omitzero"`
}

// Context is a piece of context the client gives the agent.
type Context struct {
	Description string `json:"description"`
	Value       string `json:"value"`
}

// LastUserMessage returns the last message of role "user" with text.
func (in *Input) LastUserMessage() (*InputMessage, bool) {
	for i := len(in.Messages) - 1; i >= 0; i-- {
		if m := &in.Messages[i]; m.Role == "user" && strings.TrimSpace(m.Text()) != "" {
			return m, true
		}
	}
	return nil, false
}

// DecodeInput decodes and checks a RunAgentInput body: one strict JSON
// object (no duplicate names, valid UTF-8, bounded depth: the envelope
// codec's rules) with threadId and runId of 1 to protocol.MaxIDLength bytes
// without control characters, and at least one user message with text
// unless it resumes (Resume names interrupts of 1 to protocol.MaxIDLength
// bytes).
// A refusal matches ErrInvalidInput and carries the protocol code of the
// fault (INVALID_JSON, DUPLICATE_KEY, WRONG_TYPE, MISSING_FIELD, ...).
func DecodeInput(body []byte) (*Input, error) {
	if len(bytes.TrimSpace(body)) == 0 || bytes.TrimSpace(body)[0] != '{' {
		return nil, coded.Wrap(ErrInvalidInput, "the body must be a JSON object (RunAgentInput)", protocol.CodeWrongType)
	}
	in := &Input{}
	if err := adapters.DecodeJSON("agui", body, in); err != nil {
		return nil, coded.Wrap(ErrInvalidInput, "", err)
	}
	for name, id := range map[string]string{"threadId": in.ThreadID, "runId": in.RunID} {
		if id == "" {
			return nil, coded.Wrap(ErrInvalidInput, name+" is required", protocol.CodeMissingField)
		}
		if !adapters.ValidForeignID(id) {
			return nil, coded.Wrap(ErrInvalidInput, name+" must be at most 256 bytes without control characters", protocol.CodeInvalidField)
		}
	}
	if in.ParentRunID != "" && !adapters.ValidForeignID(in.ParentRunID) {
		return nil, coded.Wrap(ErrInvalidInput, "parentRunId must be at most 256 bytes without control characters", protocol.CodeInvalidField)
	}
	for i := range in.Messages {
		if m := &in.Messages[i]; m.Content != nil && m.Content.Kind() != '"' && m.Content.Kind() != '[' && m.Content.Kind() != 'n' {
			return nil, coded.Wrap(ErrInvalidInput, "a message's content must be a string or an array of parts", protocol.CodeWrongType)
		}
	}
	for _, e := range in.Resume {
		if e.InterruptID == "" || !adapters.ValidForeignID(e.InterruptID) {
			return nil, coded.Wrap(ErrInvalidInput, "a resume entry's interruptId must be 1 to 256 bytes without control characters", protocol.CodeInvalidField)
		}
	}
	if _, ok := in.LastUserMessage(); !ok && len(in.Resume) == 0 {
		return nil, coded.Wrap(ErrInvalidInput, "messages must hold a user message with text", protocol.CodeMissingField)
	}
	return in, nil
}

// PayloadInput is the payload_type of the task.request DefaultRequest
// makes: an [InputPayload].
const PayloadInput = "agui.input.v1"

// InputPayload is the payload of the task.request DefaultRequest makes
// from a RunAgentInput: the text of its last user message, that message's
// AG-UI id, and the client's state, context and forwardedProps as sent.
type InputPayload struct {
	Text           string          `json:"text"`
	MessageID      string          `json:"message_id,omitempty"`
	State          json.RawMessage `json:"state,omitempty"`
	Context        []Context       `json:"context,omitempty"`
	ForwardedProps json.RawMessage `json:"forwarded_props,omitempty"`
}

// Request is the contract of the task.request the handler submits for a
// RunAgentInput. The handler sets everything else: the sender (the
// authenticated caller), ids, idempotency key and meta.
type Request struct {
	// PayloadType names the payload's schema; it must pass the router's
	// validator: be registered in its schema registry (or be "" for an
	// untyped request).
	PayloadType string
	// Payload is encoded as JSON (a json.RawMessage is taken as it is).
	Payload any
	// To addresses agents by id; none lets the router choose by Requires
	// and Prefers.
	To       []string
	Requires []string
	Prefers  []string
	Domain   string
}

// DefaultRequest is the Request of Options.Request when it is nil: payload
// type PayloadInput with an InputPayload, addressed to agent when it is not
// "" and otherwise routed by requires (none: any agent may take it).
func DefaultRequest(in *Input, agent string, requires []string) *Request {
	m, _ := in.LastUserMessage()
	p := InputPayload{Text: m.Text(), MessageID: m.ID, Context: in.Context,
		State: nonNull(in.State), ForwardedProps: nonNull(in.ForwardedProps)}
	req := &Request{PayloadType: PayloadInput, Payload: p, Requires: requires}
	if agent != "" {
		req.To = []string{agent}
	}
	return req
}

func nonNull(v jsontext.Value) json.RawMessage {
	if len(v) == 0 || v.Kind() == 'n' {
		return nil
	}
	return json.RawMessage(v)
}
