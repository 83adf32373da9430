package protocol

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func toolEvent(typ Type, payload string) *Message {
	return &Message{ID: "msg_event", Type: typ, Payload: json.RawMessage(payload)}
}

// TestCheckToolCallID: the shapes of docs/protocol.md §2.3.1, and each way
// a new tool event can break them, with the code and the path.
func TestCheckToolCallID(t *testing.T) {
	long := strings.Repeat("x", MaxIDLength+1)
	for _, c := range []struct {
		typ     Type
		payload string
		code    Code // "" when valid
		path    string
	}{
		{TypeToolCall, `{"call_id":"msg_1","tool":"mcp:web","name":"fetch","args":{}}`, "", ""},
		{TypeToolResult, `{"tool":"mcp:web","name":"fetch","call_id":"call_abc","content":[]}`, "", ""},
		{TypeToolError, `{"code":"TOOL_FAILED","message":"gone","retryable":false,"details":{"call_id":"msg_1","tool":"mcp:web"}}`, "", ""},
		{TypeToolCall, `{"call_id":"` + strings.Repeat("x", MaxIDLength) + `"}`, "", ""},
		{TypeToolCall, ` { "args" : {"call_id": 7} , "call_id" : "c\u00e9" } `, "", ""},

		{TypeToolCall, `{"tool":"mcp:web","name":"fetch","args":{"call_id":"inner"}}`, CodeMissingField, "/payload/call_id"},
		{TypeToolResult, `{"tool":"mcp:web","content":[],"details":{"call_id":"msg_1"}}`, CodeMissingField, "/payload/call_id"},
		{TypeToolError, `{"code":"TOOL_FAILED","message":"gone","retryable":false,"call_id":"msg_1"}`, CodeMissingField, "/payload/details/call_id"},
		{TypeToolError, `{"code":"TOOL_FAILED","message":"gone","retryable":false,"details":null}`, CodeMissingField, "/payload/details/call_id"},
		{TypeToolError, `{"code":"TOOL_FAILED","message":"gone","retryable":false,"details":{"tool":"mcp:web"}}`, CodeMissingField, "/payload/details/call_id"},
		{TypeToolCall, `{"call_id":7}`, CodeWrongType, "/payload/call_id"},
		{TypeToolCall, `{"call_id":null}`, CodeWrongType, "/payload/call_id"},
		{TypeToolError, `{"details":{"call_id":["msg_1"]}}`, CodeWrongType, "/payload/details/call_id"},
		{TypeToolCall, `{"call_id":""}`, CodeInvalidField, "/payload/call_id"},
		{TypeToolResult, `{"call_id":"` + long + `"}`, CodeInvalidField, "/payload/call_id"},
		{TypeToolCall, `"search"`, CodeWrongType, "/payload"},
		{TypeToolResult, `null`, CodeWrongType, "/payload"},
		{TypeToolResult, ``, CodeWrongType, "/payload"},
		{TypeToolResult, `{"call_id":"a"`, CodeWrongType, "/payload"},
		{TypeToolResult, `{"call_id":"a"} {}`, CodeWrongType, "/payload"},
		{TypeToolResult, `{"call_id":"a","call_id":"b"}`, CodeWrongType, "/payload"},
		{TypeToolError, `{"details":"msg_1"}`, CodeWrongType, "/payload/details"},
	} {
		err := CheckToolCallID(toolEvent(c.typ, c.payload))
		if c.code == "" {
			if err != nil {
				t.Errorf("%s %s: %v", c.typ, c.payload, err)
			}
			continue
		}
		var pe *Error
		if !errors.As(err, &pe) || pe.Code != c.code || pe.Path != c.path {
			t.Errorf("%s %s: got %v, want %s at %s", c.typ, c.payload, err, c.code, c.path)
		}
	}
	for _, typ := range []Type{TypeTaskResult, TypeTaskError, TypeChatMessage, "x.acme.tool.call"} {
		if err := CheckToolCallID(toolEvent(typ, `"no call id"`)); err != nil {
			t.Errorf("%s is not a tool event, got %v", typ, err)
		}
	}
	if err := CheckToolCallID(nil); err != nil {
		t.Errorf("nil: %v", err)
	}
}

// TestToolCallID: how a reader takes the call id, new shapes and old ones
// (docs/protocol.md §2.3.1).
func TestToolCallID(t *testing.T) {
	for _, c := range []struct {
		typ     Type
		payload string
		id      string
		ok      bool
	}{
		{TypeToolCall, `{"call_id":"call_abc","name":"search"}`, "call_abc", true},
		{TypeToolCall, `{"tool":"mcp:web","name":"search"}`, "msg_event", true}, // before the rule: the event's id
		{TypeToolCall, `{"call_id":7}`, "msg_event", true},
		{TypeToolCall, `{"call_id":""}`, "msg_event", true},
		{TypeToolCall, `{"details":{"call_id":"elsewhere"}}`, "msg_event", true},
		{TypeToolCall, `"search"`, "msg_event", true},
		{TypeToolResult, `{"call_id":"call_abc","content":"3 hits"}`, "call_abc", true},
		{TypeToolResult, `{"details":{"call_id":"call_abc"}}`, "call_abc", true},
		{TypeToolResult, `{"name":"search","content":"3 hits"}`, "", false}, // before the rule: none
		{TypeToolError, `{"code":"TOOL_FAILED","details":{"call_id":"call_abc"}}`, "call_abc", true},
		{TypeToolError, `{"code":"TOOL_FAILED","call_id":"call_top","details":{"call_id":"call_abc"}}`, "call_top", true},
		{TypeToolError, `{"details":{"call_id":"call_abc"},"call_id":"call_top"}`, "call_top", true},
		{TypeToolError, `{"code":"TOOL_FAILED","call_id":5,"details":{"call_id":"call_abc"}}`, "call_abc", true},
		{TypeToolError, `{"tool":"mcp:papers","code":"TOOL_UNAVAILABLE"}`, "", false},
		{TypeToolError, `{"details":{"call_id":"a\"b\u00e9"}}`, `a"bé`, true},
		{TypeToolError, `{"details":{"call_id":"a"`, "", false},
		{TypeTaskResult, `{"call_id":"call_abc"}`, "", false},
	} {
		id, ok := ToolCallID(toolEvent(c.typ, c.payload))
		if id != c.id || ok != c.ok {
			t.Errorf("%s %s: got %q %v, want %q %v", c.typ, c.payload, id, ok, c.id, c.ok)
		}
	}
	if _, ok := ToolCallID(nil); ok {
		t.Error("nil message has a call id")
	}
}

// TestToolCallIDOwnsItsString: the id returned does not share memory with
// the payload, which the caller may reuse.
func TestToolCallIDOwnsItsString(t *testing.T) {
	m := toolEvent(TypeToolResult, `{"call_id":"call_abc"}`)
	id, _ := ToolCallID(m)
	copy(m.Payload, `{"call_id":"XXXXXXXX"}`)
	if id != "call_abc" {
		t.Fatalf("the id changed with the payload: %q", id)
	}
}

// FuzzToolCallID: the readers never panic; what CheckToolCallID accepts,
// ToolCallID reads as the id at the place the rule names, as
// encoding/json reads it.
func FuzzToolCallID(f *testing.F) {
	for _, s := range []string{
		`{"call_id":"msg_1","tool":"mcp:web","name":"fetch","args":{"q":[1,{"call_id":2}]}}`,
		`{"code":"TOOL_FAILED","message":"m","retryable":false,"details":{"call_id":"c","tool":"t"}}`,
		`{"details":null}`, `{"details":[]}`, `{"call_id":null}`, `{"call_id":""}`, `{}`, `[]`, `"x"`, ``,
		`{"call_id":"a","call_id":"b"}`, `{"call_id":"caf\u00e9"}`, `{"details":{"call_id":"\ud800"}}`,
	} {
		for typ := range 3 {
			f.Add(byte(typ), []byte(s))
		}
	}
	types := [...]Type{TypeToolCall, TypeToolResult, TypeToolError}
	f.Fuzz(func(t *testing.T, typ byte, b []byte) {
		m := &Message{ID: "msg_event", Type: types[int(typ)%len(types)], Payload: b}
		id, ok := ToolCallID(m)
		if m.Type == TypeToolCall && (!ok || id == "") {
			t.Fatalf("%q: a tool.call always has a call id, got %q %v", b, id, ok)
		}
		if CheckToolCallID(m) != nil {
			return
		}
		// Exact member names (encoding/json matches struct fields
		// without regard to case).
		var top map[string]json.RawMessage
		if err := json.Unmarshal(b, &top); err != nil {
			t.Fatalf("%q passes CheckToolCallID but encoding/json refuses it: %v", b, err)
		}
		str := func(raw json.RawMessage) string {
			var s string
			if json.Unmarshal(raw, &s) != nil {
				return ""
			}
			return s
		}
		want := str(top["call_id"])
		if want == "" && m.Type == TypeToolError {
			var details map[string]json.RawMessage
			if err := json.Unmarshal(top["details"], &details); err != nil {
				t.Fatalf("%q: details: %v", b, err)
			}
			want = str(details["call_id"])
		}
		if want == "" || !ok || id != want {
			t.Fatalf("%q: ToolCallID read %q %v, encoding/json %q", b, id, ok, want)
		}
	})
}
