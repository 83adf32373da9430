package autogen_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/protocol"
)

// TestToolCallsPair: AutoGen's FunctionCall.id is the call id of the
// tool.call, and the FunctionExecutionResult's call_id that of its
// tool.result or tool.error (details.call_id), so every outcome of the
// fixtures answers its call (docs/protocol.md §2.3.1).
func TestToolCallsPair(t *testing.T) {
	for _, c := range []struct {
		file string
		want map[protocol.Type][]string
	}{
		{"agentchat_tool_call_round.jsonl", map[protocol.Type][]string{
			protocol.TypeToolCall:   {"call_703i17OLXfztkuioUbkESnea"},
			protocol.TypeToolResult: {"call_703i17OLXfztkuioUbkESnea"},
		}},
		{"agentchat_events_constructed.jsonl", map[protocol.Type][]string{
			protocol.TypeToolCall:   {"call_a1", "call_a2"},
			protocol.TypeToolResult: {"call_a1"},
			protocol.TypeToolError:  {"call_a2"},
		}},
	} {
		msgs := runOf(t, newAdapter(), c.file)
		unpaired, err := adaptertest.CheckToolCalls(msgs)
		require.NoError(t, err, c.file)
		assert.Empty(t, unpaired, c.file)
		got := map[protocol.Type][]string{}
		for _, m := range msgs {
			if id, ok := protocol.ToolCallID(m); ok {
				got[m.Type] = append(got[m.Type], id)
			}
		}
		assert.Equal(t, c.want, got, c.file)
	}
}
