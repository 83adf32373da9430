package agui

import (
	"bytes"
	"encoding/json"
	"strconv"

	"github.com/go-json-experiment/json/jsontext"
)

// EventType is the type of an AG-UI event, as the AG-UI core package names
// it.
type EventType string

// The AG-UI event types this package sends.
const (
	RunStarted         EventType = "RUN_STARTED"
	RunFinished        EventType = "RUN_FINISHED"
	RunError           EventType = "RUN_ERROR"
	StepStarted        EventType = "STEP_STARTED"
	StepFinished       EventType = "STEP_FINISHED"
	TextMessageStart   EventType = "TEXT_MESSAGE_START"
	TextMessageContent EventType = "TEXT_MESSAGE_CONTENT"
	TextMessageEnd     EventType = "TEXT_MESSAGE_END"
	ToolCallStart      EventType = "TOOL_CALL_START"
	ToolCallArgs       EventType = "TOOL_CALL_ARGS"
	ToolCallEnd        EventType = "TOOL_CALL_END"
	ToolCallResult     EventType = "TOOL_CALL_RESULT"
	StateSnapshot      EventType = "STATE_SNAPSHOT"
	Custom             EventType = "CUSTOM"
)

// Event is one AG-UI event. Only the fields of its Type are sent (see
// MarshalJSON); the others must be left zero.
type Event struct {
	Type EventType
	// Seq is the store seq of the Clutch event this one translates; it is
	// not part of the AG-UI event (the handler sends it as the SSE id of
	// the last AG-UI event of each Clutch event).
	Seq uint64
	// Timestamp is the Clutch event's ts in Unix milliseconds; 0 omits it.
	Timestamp int64

	ThreadID string // RUN_STARTED, RUN_FINISHED
	RunID    string // RUN_STARTED, RUN_FINISHED
	// Result is the JSON of RUN_FINISHED's result; nil omits it.
	Result json.RawMessage
	// Outcome is the JSON of RUN_FINISHED's outcome; nil omits it (a
	// success).
	Outcome json.RawMessage

	Message string // RUN_ERROR
	Code    string // RUN_ERROR, optional

	StepName string // STEP_STARTED, STEP_FINISHED

	MessageID string // TEXT_MESSAGE_*, TOOL_CALL_RESULT
	Role      string // TEXT_MESSAGE_START ("assistant", "user", "system"), TOOL_CALL_RESULT ("tool")
	Name      string // TEXT_MESSAGE_START (optional), CUSTOM
	Delta     string // TEXT_MESSAGE_CONTENT, TOOL_CALL_ARGS

	ToolCallID      string // TOOL_CALL_*
	ToolCallName    string // TOOL_CALL_START
	ParentMessageID string // TOOL_CALL_START, optional
	Content         string // TOOL_CALL_RESULT

	Snapshot json.RawMessage // STATE_SNAPSHOT
	Value    json.RawMessage // CUSTOM; nil sends null
}

// MarshalJSON encodes e as the AG-UI core schema of its type defines it:
// "type" first, then the type's fields, required ones always, optional ones
// when set. Embedded JSON (Result, Snapshot, Value) is compacted, so an
// encoded event is always one line.
func (e *Event) MarshalJSON() ([]byte, error) {
	return e.AppendJSON(nil), nil
}

// AppendJSON appends the JSON of e (see MarshalJSON) to b.
func (e *Event) AppendJSON(b []byte) []byte {
	b = append(b, `{"type":`...)
	b = appendString(b, string(e.Type))
	if e.Timestamp != 0 {
		b = append(b, `,"timestamp":`...)
		b = strconv.AppendInt(b, e.Timestamp, 10)
	}
	switch e.Type {
	case RunStarted:
		b = field(b, "threadId", e.ThreadID)
		b = field(b, "runId", e.RunID)
	case RunFinished:
		b = field(b, "threadId", e.ThreadID)
		b = field(b, "runId", e.RunID)
		if e.Result != nil {
			b = rawField(b, "result", e.Result)
		}
		if e.Outcome != nil {
			b = rawField(b, "outcome", e.Outcome)
		}
	case RunError:
		b = field(b, "message", e.Message)
		if e.Code != "" {
			b = field(b, "code", e.Code)
		}
	case StepStarted, StepFinished:
		b = field(b, "stepName", e.StepName)
	case TextMessageStart:
		b = field(b, "messageId", e.MessageID)
		b = field(b, "role", e.Role)
		if e.Name != "" {
			b = field(b, "name", e.Name)
		}
	case TextMessageContent:
		b = field(b, "messageId", e.MessageID)
		b = field(b, "delta", e.Delta)
	case TextMessageEnd:
		b = field(b, "messageId", e.MessageID)
	case ToolCallStart:
		b = field(b, "toolCallId", e.ToolCallID)
		b = field(b, "toolCallName", e.ToolCallName)
		if e.ParentMessageID != "" {
			b = field(b, "parentMessageId", e.ParentMessageID)
		}
	case ToolCallArgs:
		b = field(b, "toolCallId", e.ToolCallID)
		b = field(b, "delta", e.Delta)
	case ToolCallEnd:
		b = field(b, "toolCallId", e.ToolCallID)
	case ToolCallResult:
		b = field(b, "messageId", e.MessageID)
		b = field(b, "toolCallId", e.ToolCallID)
		b = field(b, "content", e.Content)
		b = field(b, "role", "tool")
	case StateSnapshot:
		b = rawField(b, "snapshot", e.Snapshot)
	case Custom:
		b = field(b, "name", e.Name)
		b = rawField(b, "value", e.Value)
	}
	return append(b, '}')
}

func field(b []byte, name, v string) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendString(b, v)
}

// rawField appends a JSON value compacted; a missing or invalid value is
// sent as null (the values come from stored payloads, which are valid).
func rawField(b []byte, name string, v json.RawMessage) []byte {
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendRaw(b, v)
}

func appendRaw(b []byte, v []byte) []byte {
	if len(v) == 0 {
		return append(b, "null"...)
	}
	buf := bytes.NewBuffer(b)
	n := buf.Len()
	if err := json.Compact(buf, v); err != nil {
		buf.Truncate(n)
		buf.WriteString("null")
	}
	return buf.Bytes()
}

// appendString appends s as a JSON string; invalid UTF-8 becomes U+FFFD.
func appendString(b []byte, s string) []byte {
	b, _ = jsontext.AppendQuote(b, s)
	return b
}
