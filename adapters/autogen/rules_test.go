package autogen_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/adapters/autogen"
	"github.com/clutchprotocol/clutch/protocol"
)

// The rules of every adapter (adaptertest.RunRules): bounded envelopes,
// long ids refused, formatting-blind strictness, no stored credentials,
// one terminal event per task, Detect for all it accepts.
func TestRules(t *testing.T) {
	var stream [][]byte
	for _, l := range lines(t, "agentchat_tool_call_round.jsonl") {
		stream = append(stream, l)
	}
	adaptertest.RunRules(t, newAdapter(), &adaptertest.RulesOptions{
		Valid:   append(agentchatCases(t), coreCases(t)...),
		Streams: []adaptertest.Stream{{Name: "tool call round, line by line", Inputs: stream}},
		New:     func() adapters.Adapter { return newAdapter() },
	})
}

// encodedOnce translates raw and checks that its one envelope holds text
// once and fits the store.
func encodedOnce(t *testing.T, raw []byte, text string) *protocol.Message {
	t.Helper()
	msgs := inbound(t, newAdapter(), raw)
	require.Len(t, msgs, 1)
	b, err := protocol.Encode(msgs[0])
	require.NoError(t, err)
	assert.LessOrEqual(t, len(b), protocol.DefaultMaxBytes)
	assert.Equal(t, 1, strings.Count(string(b), text), "copies of the text")
	return msgs[0]
}

// A failed tool's text is the error's message, not also in
// details.autogen; Outbound puts it back.
func TestToolErrorTextOnce(t *testing.T) {
	text := "TRACEBACK " + strings.Repeat("x", 600_000)
	raw := []byte(`{"type":"ToolCallExecutionEvent","source":"assistant","content":[{"content":"` + text + `","name":"search","call_id":"c1","is_error":true}]}`)
	m := encodedOnce(t, raw, "TRACEBACK ")
	assert.Equal(t, protocol.TypeToolError, m.Type)
	out, err := newAdapter().Outbound(context.Background(), m)
	require.NoError(t, err)
	require.NoError(t, adaptertest.JSONEqual(raw, out, nil))
}

// Big JSON arguments are kept once, as sent (args, the parsed copy, only
// for arguments of at most 64 KiB).
func TestToolArgumentsOnce(t *testing.T) {
	code := "SOURCE " + strings.Repeat("y", 600_000)
	args, _ := json.Marshal(map[string]string{"code": code})
	argsStr, _ := json.Marshal(string(args))
	raw := []byte(`{"type":"ToolCallRequestEvent","source":"assistant","content":[{"id":"c1","name":"run","arguments":` + string(argsStr) + `}]}`)
	m := encodedOnce(t, raw, "SOURCE ")
	var p map[string]any
	require.NoError(t, json.Unmarshal(m.Payload, &p))
	_, parsed := p["args"]
	assert.False(t, parsed, "args repeats the big arguments")
	small := inbound(t, newAdapter(), []byte(`{"type":"ToolCallRequestEvent","source":"assistant","content":[{"id":"c1","name":"run","arguments":"{\"q\": 1}"}]}`))
	assert.Contains(t, string(small[0].Payload), `"args":{"q":1}`)
}

// A core runtime error's text is the message, not also in details.
func TestCoreErrorTextOnce(t *testing.T) {
	text := "BOOM " + strings.Repeat("z", 600_000)
	raw := []byte(`{"response":{"request_id":"r1","source":{"type":"a","key":"default"},"error":"` + text + `"}}`)
	m := encodedOnce(t, raw, "BOOM ")
	assert.Equal(t, protocol.TypeTaskError, m.Type)
	out, err := newAdapter().Outbound(context.Background(), m)
	require.NoError(t, err)
	require.NoError(t, adaptertest.JSONEqual(raw, out, nil))
}

// Text over the store's limit (a message just under the input limit) is
// cut with the marker and its size.
func TestHugeMessageFits(t *testing.T) {
	text := strings.Repeat("w", protocol.DefaultMaxBytes-200)
	raw := []byte(`{"type":"TextMessage","source":"user","content":"` + text + `"}`)
	msgs := inbound(t, newAdapter(), raw)
	require.NoError(t, adaptertest.CheckStorable(msgs))
	assert.Contains(t, string(msgs[0].Payload), "… [truncated, ")
}

// Credentials a message carries (an agent's model config echoed into an
// event) are not stored.
func TestCredentialsRedacted(t *testing.T) {
	raw := []byte(`{"type":"TextMessage","source":"user","content":"hi","metadata":{"headers":{"Authorization":"Bearer ` + adaptertest.Secret + `"}},"api_key":"` + adaptertest.Secret + `"}`)
	for _, m := range inbound(t, newAdapter(), raw) {
		b, err := protocol.Encode(m)
		require.NoError(t, err)
		assert.NotContains(t, string(b), adaptertest.Secret)
	}
	_ = autogen.Name
}
