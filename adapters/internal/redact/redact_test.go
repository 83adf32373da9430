package redact

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/protocol"
)

func TestMessage(t *testing.T) {
	m := protocol.NewIDs(nil).NewMessage(protocol.TypeTaskRequest, "agent:a")
	require.NoError(t, m.SetPayload(json.RawMessage(`{"inputs":{"q":"x","n":1},"webhooks":{"authentication":{"strategy":"bearer","token":"s1"}},"headers":[{"X-Api-Key":"s2"},"Bearer s3"],"tokens":12}`)))
	m.Meta = map[string]any{"src": "x", "Cookie": "s4", "extra": map[string]any{"config": map[string]any{"Authorization": "Basic s5", "ok": "Basic"}}, "raw": json.RawMessage(`{"password":"s6"}`)}
	require.NoError(t, Message(m))
	b, err := protocol.Encode(m)
	require.NoError(t, err)
	for _, s := range []string{"s1", "s2", "s3", "s4", "s5", "s6"} {
		assert.NotContains(t, string(b), `"`+s, s)
	}
	assert.JSONEq(t, `{"inputs":{"q":"x","n":1},"webhooks":{"authentication":{"strategy":"bearer","token":"[redacted]"}},"headers":[{"X-Api-Key":"[redacted]"},"[redacted]"],"tokens":12}`, string(m.Payload))
	assert.Equal(t, "x", m.Meta["src"])
	assert.Equal(t, "Basic", m.Meta["extra"].(map[string]any)["config"].(map[string]any)["ok"])
}

// A payload without a credential is left byte for byte.
func TestMessageLeavesCleanPayloads(t *testing.T) {
	m := protocol.NewIDs(nil).NewMessage(protocol.TypeTaskRequest, "agent:a")
	raw := `{"b":1, "a":"token count"}`
	require.NoError(t, m.SetPayload(json.RawMessage(raw)))
	require.NoError(t, Message(m))
	assert.Equal(t, raw, string(m.Payload))
}
