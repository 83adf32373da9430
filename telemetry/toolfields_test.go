package telemetry

import (
	"encoding/json"
	"testing"
)

func TestReadToolFields(t *testing.T) {
	for _, c := range []struct {
		in   string
		want toolFields
		ok   bool
	}{
		{`{"tool":"mcp:web","name":"fetch","args":{"q":[1,{"tool":"no"}]}}`, toolFields{tool: "mcp:web", name: "fetch"}, true},
		{`{"tool":"mcp:web","name":"fetch","call_id":"msg_1","content":[{"type":"text","text":"x"}]}`, toolFields{tool: "mcp:web", name: "fetch", callID: "msg_1"}, true},
		{`{"code":"TOOL_FAILED","message":"gone \"away\"","retryable":false,"details":{"tool":"mcp:web","name":"fetch","call_id":"msg_2","content":[]}}`,
			toolFields{tool: "mcp:web", name: "fetch", callID: "msg_2", code: "TOOL_FAILED", message: `gone "away"`}, true},
		{`{"name":7,"details":null}`, toolFields{}, true},
		{`[1,2]`, toolFields{}, false},
		{`{"tool":`, toolFields{}, false},
		{`{"tool":"a","tool":"b"}`, toolFields{}, false},
		{`{"tool":"a","args":{"q":1,"q":2}}`, toolFields{}, false},
		{`{"tool":"a","args":[1,2,]}`, toolFields{}, false},
		{`{"tool":"a","n":01}`, toolFields{}, false},
		{`{"tool":"a","n":tru}`, toolFields{}, false},
		{` { "tool" : "a" , "n" : [ -1.5E-3 , {} , [] ] , "name" : "b" } `, toolFields{tool: "a", name: "b"}, true},
		{`{"tool":"caf\u00e9","name":"é"}`, toolFields{tool: "café", name: "é"}, true},
		{``, toolFields{}, false},
		// A top-level call_id comes first (docs/protocol.md §2.3.1).
		{`{"details":{"call_id":"d"},"call_id":"t"}`, toolFields{callID: "t"}, true},
		{`{"call_id":"t","details":{"call_id":"d"}}`, toolFields{callID: "t"}, true},
		{`{"call_id":5,"details":{"call_id":"d"}}`, toolFields{callID: "d"}, true},
	} {
		var f toolFields
		ok := readToolFields([]byte(c.in), &f)
		if ok != c.ok || (ok && f != c.want) {
			t.Errorf("%s: got %+v %v, want %+v %v", c.in, f, ok, c.want, c.ok)
		}
	}
}

// FuzzReadToolFields: any input is read without a panic, and a JSON
// object's string members come out as encoding/json reads them.
func FuzzReadToolFields(f *testing.F) {
	for _, s := range []string{
		`{"tool":"mcp:web","name":"fetch","args":{}}`,
		`{"tool":"a","name":"b","call_id":"c","content":[1,2,{"x":null}]}`,
		`{"code":"X","message":"m\u00e9","details":{"call_id":"c","tool":"t","name":"n"}}`,
		`{"details":[]}`, `{}`, `[]`, `"x"`, `{"tool":1}`,
		`{"tool":"a","args":{"q":[1,-0.5e+3,true,false,null,{"a":{}}]},"name":"b"}`,
		`{"tool":"a","tool":"b"}`, `{"args":{"q":1,"q":2},"name":"n"}`, `{"n":01}`, `{"tool":"a"} x`,
		`{ "tool" : "a" , "name" : "b" }`, `{"name":"caf\u00e9"}`, `{"name":"é"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// The one-pass scanner reads what the decoder reads, or leaves
		// the input to it.
		var fast, slow toolFields
		if scanToolFields(b, &fast) {
			if !decodeToolFields(b, &slow) || fast != slow {
				t.Fatalf("%q: the scanner read %+v, the decoder %+v", b, fast, slow)
			}
		} else if fast != (toolFields{}) {
			t.Fatalf("%q: the scanner set %+v and left the input to the decoder", b, fast)
		}
		var got toolFields
		ok := readToolFields(b, &got)
		var std struct {
			Tool, Name, Code, Message string
			CallID                    string `json:"call_id"`
		}
		if !ok || json.Unmarshal(b, &std) != nil {
			return
		}
		// Only top-level string members without details are compared:
		// details may fill what the top level lacks.
		var raw map[string]json.RawMessage
		if json.Unmarshal(b, &raw) != nil || raw["details"] != nil || len(raw) != countKeys(b) {
			return
		}
		if got.tool != std.Tool || got.name != std.Name || got.callID != std.CallID || got.code != std.Code || got.message != std.Message {
			t.Fatalf("%q: got %+v, encoding/json reads %+v", b, got, std)
		}
	})
}

// countKeys counts the top-level members of a JSON object as
// encoding/json's token stream sees them (duplicates included), so that
// inputs whose duplicate or case-folded keys encoding/json merges are
// skipped.
func countKeys(b []byte) int {
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return -1
	}
	for k := range m {
		switch k {
		case "tool", "name", "call_id", "code", "message":
		default:
			return -1 // other keys may case-fold onto these in encoding/json
		}
	}
	return len(m)
}
