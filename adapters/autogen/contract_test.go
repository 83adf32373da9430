package autogen_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/protocol"
)

var invalid = []adaptertest.Case{
	{Name: "no source", Raw: []byte(`{"type":"TextMessage","content":"hi"}`), Code: protocol.CodeMissingField},
	{Name: "no content", Raw: []byte(`{"type":"TextMessage","source":"user"}`), Code: protocol.CodeMissingField},
	{Name: "content not text", Raw: []byte(`{"type":"TextMessage","source":"user","content":5}`), Code: protocol.CodeWrongType},
	{Name: "bad created_at", Raw: []byte(`{"type":"TextMessage","source":"user","content":"x","created_at":"yesterday"}`), Code: protocol.CodeInvalidField},
	{Name: "tool call without id", Raw: []byte(`{"type":"ToolCallRequestEvent","source":"a","content":[{"name":"f","arguments":"{}"}]}`), Code: protocol.CodeMissingField},
	{Name: "no calls", Raw: []byte(`{"type":"ToolCallRequestEvent","source":"a","content":[]}`), Code: protocol.CodeInvalidField},
	{Name: "handoff without target", Raw: []byte(`{"type":"HandoffMessage","source":"a","content":"x"}`), Code: protocol.CodeMissingField},
	{Name: "not autogen", Raw: []byte(`{"hello":"world"}`), Code: protocol.CodeMissingField},
	{Name: "a number", Raw: []byte(`42`), Code: protocol.CodeWrongType},
	{Name: "empty list", Raw: []byte(`[]`), Code: protocol.CodeMissingField},
	{Name: "image not base64", Raw: []byte(`{"type":"MultiModalMessage","source":"user","content":[{"data":"%%%"}]}`), Code: protocol.CodeInvalidField},
	{Name: "stop_reason a number", Raw: []byte(`{"messages":[],"stop_reason":3}`), Code: protocol.CodeWrongType},
}

// firstMessage is the AutoGen message the first envelope of in came from:
// in itself, the first of a list or TaskResult, or the message of a
// worker message.
func firstMessage(in []byte) []byte {
	var probe struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if len(in) > 0 && in[0] == '[' {
		var l []json.RawMessage
		if json.Unmarshal(in, &l) == nil && len(l) > 0 {
			return l[0]
		}
	}
	if json.Unmarshal(in, &probe) == nil && len(probe.Messages) > 0 {
		in = probe.Messages[0]
	}
	// A tool event with several calls goes out one call per envelope.
	var ev map[string]json.RawMessage
	if json.Unmarshal(in, &ev) == nil && (string(ev["type"]) == `"ToolCallRequestEvent"` || string(ev["type"]) == `"ToolCallExecutionEvent"`) {
		var content []json.RawMessage
		if json.Unmarshal(ev["content"], &content) == nil && len(content) > 1 {
			ev["content"], _ = json.Marshal(content[:1])
			in, _ = json.Marshal(ev)
		}
	}
	return in
}

// Every fixture passes the contract; Outbound of the first envelope gives
// back the AutoGen message it came from (an envelope of a multi-call event
// goes out as that one call, hence the ignored part counters).
func TestContract(t *testing.T) {
	adaptertest.Run(t, newAdapter(), &adaptertest.Options{
		Valid:   agentchatCases(t),
		Invalid: invalid,
		RoundTrip: func(in, out []byte) error {
			want := firstMessage(in)
			if err := adaptertest.JSONEqual(want, out, nil); err != nil {
				return fmt.Errorf("%w\nwant %s\ngot  %s", err, want, out)
			}
			return nil
		},
		FixpointIgnore: []string{"/meta/part", "/meta/parts"},
		MaxCuts:        256,
	})
}

// The worker-runtime messages are inbound only: what came in a CloudEvent
// goes back to the app as agentchat JSON, not onto the runtime.
func TestContractCore(t *testing.T) {
	adaptertest.Run(t, newAdapter(), &adaptertest.Options{Valid: coreCases(t), NoRoundTrip: true, MaxCuts: 256})
}
