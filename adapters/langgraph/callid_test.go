package langgraph_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/protocol"
)

// callIDs returns the call ids of the tool events of msgs, by type, in
// order.
func callIDs(t *testing.T, msgs []*protocol.Message) map[protocol.Type][]string {
	t.Helper()
	out := map[protocol.Type][]string{}
	for _, m := range msgs {
		if m.Type.Family() != "tool" {
			continue
		}
		require.NoError(t, protocol.CheckToolCallID(m), "%s %s", m.Type, m.Payload)
		id, _ := protocol.ToolCallID(m)
		out[m.Type] = append(out[m.Type], id)
	}
	return out
}

// TestToolCallsPair: in every fixture and recorded run, whole and frame
// by frame, each tool outcome answers a tool.call of its task by call id
// (docs/protocol.md §2.3.1), once.
func TestToolCallsPair(t *testing.T) {
	ctx := context.Background()
	for _, c := range append(fixtures(t), adaptertest.Files(t, "testdata/recorded/*.sse", 6)...) {
		msgs, err := newTranslator(t).Inbound(ctx, c.Raw)
		require.NoError(t, err, c.Name)
		unpaired, err := adaptertest.CheckToolCalls(msgs)
		require.NoError(t, err, c.Name)
		assert.Empty(t, unpaired, "%s: outcomes of no call", c.Name)
	}
	for _, c := range adaptertest.Files(t, "testdata/recorded/*.sse", 6) {
		tr := newTranslator(t)
		var msgs []*protocol.Message
		for _, frame := range frames(c.Raw) {
			out, err := tr.Inbound(ctx, frame)
			require.NoError(t, err, c.Name)
			msgs = append(msgs, out...)
		}
		unpaired, err := adaptertest.CheckToolCalls(msgs)
		require.NoError(t, err, "%s frame by frame", c.Name)
		assert.Empty(t, unpaired, "%s frame by frame", c.Name)
	}
}

// TestToolCallIDSources: LangGraph's own ids are the call ids —
// tool_calls[i].id and tool_call_id, an events record's run_id, a
// protocol event's tool_call_id.
func TestToolCallIDSources(t *testing.T) {
	ids := callIDs(t, inbound(t, `{"event":"updates","data":{"agent":{"messages":[`+
		`{"type":"ai","content":"","id":"m1","tool_calls":[{"id":"call_a","name":"add","args":{}},{"id":"call_b","name":"div","args":{}}]}]},`+
		`"tools":{"messages":[{"type":"tool","content":"boom","tool_call_id":"call_b","name":"div","status":"error","id":"t2"},`+
		`{"type":"tool","content":"42","tool_call_id":"call_a","name":"add","id":"t1"}]}}}`))
	assert.Equal(t, map[protocol.Type][]string{
		protocol.TypeToolCall:   {"call_a", "call_b"},
		protocol.TypeToolError:  {"call_b"},
		protocol.TypeToolResult: {"call_a"},
	}, ids)

	ids = callIDs(t, inbound(t, `[{"event":"on_tool_start","name":"get_docs","run_id":"r-7","parent_ids":[],"data":{"input":{"x":5}}},`+
		`{"event":"on_tool_end","name":"get_docs","run_id":"r-7","parent_ids":[],"data":{"output":"ok"}}]`))
	assert.Equal(t, map[protocol.Type][]string{protocol.TypeToolCall: {"r-7"}, protocol.TypeToolResult: {"r-7"}}, ids)

	ids = callIDs(t, inbound(t, `[{"type":"event","method":"tools","params":{"namespace":[],"data":{"event":"tool-started","tool_call_id":"tc1","tool_name":"add","input":{}}}},`+
		`{"type":"event","method":"tools","params":{"namespace":[],"data":{"event":"tool-error","tool_call_id":"tc1","message":"no"}}}]`))
	assert.Equal(t, map[protocol.Type][]string{protocol.TypeToolCall: {"tc1"}, protocol.TypeToolError: {"tc1"}}, ids)
}

// TestToolCallIDsDerived: calls LangGraph names by no usable id get
// derived ids: a record without an id pairs with the oldest unanswered
// call of the same tool name that had none (the astream_events fixture,
// whose run_ids the LangChain test helper blanked), and an id too long to
// keep is hashed the same for the call and its outcome.
func TestToolCallIDsDerived(t *testing.T) {
	raw, err := os.ReadFile("testdata/fixtures/astream_events_v2.jsonl")
	require.NoError(t, err)
	ids := callIDs(t, inbound(t, string(raw)))
	require.Len(t, ids[protocol.TypeToolCall], 1)
	require.Len(t, ids[protocol.TypeToolResult], 1)
	assert.True(t, strings.HasPrefix(ids[protocol.TypeToolCall][0], protocol.PrefixCall))
	assert.Equal(t, ids[protocol.TypeToolCall], ids[protocol.TypeToolResult])

	// Two calls without ids, answered in order, each by its name.
	ids = callIDs(t, inbound(t, `[{"event":"on_tool_start","name":"a","run_id":"","parent_ids":[],"data":{"input":{}}},`+
		`{"event":"on_tool_start","name":"b","run_id":"","parent_ids":[],"data":{"input":{}}},`+
		`{"event":"on_tool_end","name":"b","run_id":"","parent_ids":[],"data":{"output":1}},`+
		`{"event":"on_tool_error","name":"a","run_id":"","parent_ids":[],"data":{"error":"x"}}]`))
	calls := ids[protocol.TypeToolCall]
	require.Len(t, calls, 2)
	assert.NotEqual(t, calls[0], calls[1])
	assert.Equal(t, []string{calls[1]}, ids[protocol.TypeToolResult])
	assert.Equal(t, []string{calls[0]}, ids[protocol.TypeToolError])

	// An outcome of no call it could answer stands alone.
	ids = callIDs(t, inbound(t, `{"event":"on_tool_end","name":"c","run_id":"","parent_ids":[],"data":{"output":1}}`))
	assert.True(t, strings.HasPrefix(ids[protocol.TypeToolResult][0], protocol.PrefixCall))

	long := strings.Repeat("x", 300)
	ids = callIDs(t, inbound(t, `{"event":"updates","data":{"agent":{"messages":[`+
		`{"type":"ai","content":"","id":"m1","tool_calls":[{"id":"`+long+`","name":"add","args":{}}]}]},`+
		`"tools":{"messages":[{"type":"tool","content":"42","tool_call_id":"`+long+`","name":"add","id":"t1"}]}}}`))
	require.Len(t, ids[protocol.TypeToolCall], 1)
	assert.True(t, strings.HasPrefix(ids[protocol.TypeToolCall][0], protocol.PrefixCall))
	assert.Equal(t, ids[protocol.TypeToolCall], ids[protocol.TypeToolResult])
}
