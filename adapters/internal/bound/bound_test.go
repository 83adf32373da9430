package bound

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/protocol"
)

func message(t *testing.T, payload any, meta map[string]any) *protocol.Message {
	t.Helper()
	m := protocol.NewIDs(nil).NewMessage(protocol.TypeTaskResult, "agent:a")
	m.To = []protocol.Participant{}
	require.NoError(t, m.SetPayload(payload))
	m.Meta = meta
	return m
}

func size(t *testing.T, m *protocol.Message) int {
	t.Helper()
	b, err := protocol.Encode(m)
	require.NoError(t, err)
	return len(b)
}

func TestFitLeavesSmallMessages(t *testing.T) {
	m := message(t, map[string]any{"text": "hello"}, map[string]any{"src": "x"})
	before, _ := protocol.Encode(m)
	require.NoError(t, Fit(m, 0))
	after, _ := protocol.Encode(m)
	assert.Equal(t, string(before), string(after))
}

// Two big texts, one in the payload and one in meta, are cut to the same
// length, each with the marker and its size, listed in meta.truncated;
// small strings stay whole and meta keeps plain values.
func TestFitCutsTheLongestText(t *testing.T) {
	big := strings.Repeat("é\"x\n", 200_000) // 1 MB raw, more encoded
	m := message(t, map[string]any{"text": big, "n": 7, "small": "keep"}, map[string]any{"src": "x", "prompt": big[:600_000]})
	require.NoError(t, Fit(m, 0))
	assert.LessOrEqual(t, size(t, m), Limit)
	var p map[string]any
	require.NoError(t, json.Unmarshal(m.Payload, &p))
	text := p["text"].(string)
	assert.True(t, utf8.ValidString(text))
	assert.Contains(t, text, Marker+"1000000 bytes]")
	assert.Equal(t, "keep", p["small"])
	assert.Equal(t, "x", m.Meta["src"])
	prompt := m.Meta["prompt"].(string)
	assert.Contains(t, prompt, Marker+"600000 bytes]")
	assert.Equal(t, len(strings.SplitN(text, Marker, 2)[0])/100, len(strings.SplitN(prompt, Marker, 2)[0])/100, "cut to one length")
	cut := m.Meta[MetaTruncated].([]any)
	assert.Len(t, cut, 2)
	assert.Equal(t, "/payload/text", cut[0].(map[string]any)["path"])
	assert.NoError(t, m.Validate())
}

func TestFitRefusesStructure(t *testing.T) {
	nums := make([]int, 600_000) // "0," each: 1.2 MB
	m := message(t, nums, nil)
	assert.ErrorIs(t, Fit(m, 0), ErrTooLarge)
}

func TestFitCutsRoles(t *testing.T) {
	m := message(t, nil, nil)
	m.From.Role = strings.Repeat("r", 5000)
	require.NoError(t, Fit(m, 0))
	assert.LessOrEqual(t, len(m.From.Role), MaxRole)
	assert.Contains(t, m.From.Role, Marker+"5000 bytes]")
}
