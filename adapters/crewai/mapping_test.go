package crewai_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/adapters/crewai"
	"github.com/clutchprotocol/clutch/protocol"
)

type row struct {
	Type   protocol.Type
	Task   string
	Parent string
	From   string
}

func rows(msgs []*protocol.Message) []row {
	out := make([]row, len(msgs))
	for i, m := range msgs {
		out[i] = row{m.Type, m.TaskID, m.ParentTaskID, m.From.AgentID}
	}
	return out
}

func inbound(t *testing.T, a *crewai.Adapter, raw []byte) []*protocol.Message {
	t.Helper()
	msgs, err := a.Inbound(context.Background(), raw)
	require.NoError(t, err)
	for _, m := range msgs {
		require.NoError(t, m.Validate())
		assert.Equal(t, crewai.Source, adapters.Source(m))
	}
	return msgs
}

// Every fixture passes inbound (the contract test mutates all but one;
// here each is translated whole).
func TestEveryFixtureInbound(t *testing.T) {
	for _, c := range allFixtures(t) {
		t.Run(c.Name, func(t *testing.T) {
			require.NotEmpty(t, inbound(t, crewai.New(nil), c.Raw))
		})
	}
}

// The recorded delegation: one run, the manager's task under the crew's,
// the "Delegate work to coworker" call a tool.call plus a subtask to the
// Scorer, whose accept, LLM calls and answer land in that subtask.
func TestDelegationBatch(t *testing.T) {
	msgs := inbound(t, crewai.New(nil), read(t, "trace_batch_delegation_sequential.json"))
	const (
		crew    = "task:af21ca34-1bf9-43bb-bb2f-6ed4ec4b1731"
		manager = "task:6b4c0d0e-1758-4dff-ac12-8464b155edb3"
		sub     = "task:7d7aec22-3674-46ef-b79f-a6dca2285d76"
	)
	want := []row{
		{"task.request", crew, "", "agent:crewai:crew:crew"},
		{"task.request", manager, crew, "agent:crewai:crew:crew"},
		{"task.accept", manager, crew, "agent:crewai:manager"},
		{crewai.TypeLLMCall, manager, crew, "agent:crewai:manager"},
		{crewai.TypeLLMCall, manager, crew, "agent:crewai:manager"},
		{"tool.call", manager, crew, "agent:crewai:manager"},
		{"task.request", sub, manager, "agent:crewai:manager"},
		{"task.accept", sub, manager, "agent:crewai:scorer"},
		{crewai.TypeLLMCall, sub, manager, "agent:crewai:scorer"},
		{crewai.TypeLLMCall, sub, manager, "agent:crewai:scorer"},
		{"task.progress", sub, manager, "agent:crewai:scorer"},
		{"tool.result", manager, crew, "agent:crewai:manager"},
		{"task.result", sub, manager, "agent:crewai:scorer"},
		{crewai.TypeLLMCall, manager, crew, "agent:crewai:manager"},
		{crewai.TypeLLMCall, manager, crew, "agent:crewai:manager"},
		{"task.progress", manager, crew, "agent:crewai:manager"},
		{"task.result", manager, crew, "agent:crewai:manager"},
		{"task.result", crew, "", "agent:crewai:crew:crew"},
	}
	assert.Equal(t, want, rows(msgs))
	for _, m := range msgs {
		assert.Equal(t, "run:af21ca34-1bf9-43bb-bb2f-6ed4ec4b1731", m.RunID)
		assert.Equal(t, "thread:af21ca34-1bf9-43bb-bb2f-6ed4ec4b1731", m.ThreadID)
	}
	call, sreq, res, sres := msgs[5], msgs[6], msgs[11], msgs[12]
	var p struct {
		Tool, Name string
		CallID     string `json:"call_id"`
		Args       map[string]string
	}
	require.NoError(t, json.Unmarshal(call.Payload, &p))
	assert.Equal(t, "Scorer", p.Args["coworker"], "tool_args, a JSON string, is parsed")
	assert.Equal(t, []protocol.Participant{{AgentID: "agent:crewai:scorer", Role: "Scorer"}}, sreq.To)
	assert.Contains(t, string(res.Payload), `"call_id":"7d7aec22-3674-46ef-b79f-a6dca2285d76"`)
	assert.True(t, strings.HasPrefix(string(sres.Payload), `"4. The title`), string(sres.Payload))
	// The crew's result: output.raw, with the token count in meta.usage.
	assert.Equal(t, `"4"`, string(msgs[17].Payload))
	assert.NotNil(t, msgs[17].Meta[crewai.MetaUsage])
	// The Python dump of the agent is dropped, and said so.
	assert.Equal(t, []any{"agent"}, call.Meta[crewai.MetaDropped])
}

// A later batch of the same trace (no trace id in the body) finds its run
// through the crewAI task ids of an earlier one, and what the earlier one
// left open (the delegation) through the Index.
func TestLaterBatchFindsItsRun(t *testing.T) {
	a := crewai.New(nil)
	var b struct {
		Events []json.RawMessage `json:"events"`
	}
	require.NoError(t, json.Unmarshal(read(t, "trace_batch_delegation_sequential.json"), &b))
	first := inbound(t, a, enc(t, map[string]any{"events": b.Events[:6]}))
	second := inbound(t, a, enc(t, map[string]any{"events": b.Events[6:]}))
	for _, m := range second {
		assert.Equal(t, first[0].RunID, m.RunID)
	}
	// The batch ended inside the delegation: the next one goes on in it,
	// as the whole batch translates.
	whole := inbound(t, crewai.New(nil), read(t, "trace_batch_delegation_sequential.json"))
	assert.Equal(t, rows(whole), rows(append(first, second...)))
}

// AMP delivers webhook batches in no particular order: events are sorted
// by time; unknown kinds become x.crewai.<kind> extension events, counted,
// with their data kept.
func TestWebhookOrderAndUnknownKinds(t *testing.T) {
	a := crewai.New(nil)
	raw := []byte(`{"events":[
	 {"id":"e2","execution_id":"ex","timestamp":"2025-02-16T10:58:45.000Z","type":"Fancy Thing!","data":{"task_id":"t1","zap":1}},
	 {"id":"e1","execution_id":"ex","timestamp":"2025-02-16T10:58:44.000Z","type":"task_started","data":{"task_id":"t1","agent_role":"Writer","task_name":"write"}},
	 {"id":"e3","execution_id":"ex","timestamp":"2025-02-16T10:58:46.000Z","type":"tool_usage_error","data":{"task_id":"t1","agent_role":"Writer","tool_name":"search","error":"Request timed out"}}]}`)
	msgs := inbound(t, a, raw)
	require.Len(t, msgs, 3)
	assert.Equal(t, []string{"e1", "e2", "e3"}, []string{msgs[0].ID, msgs[1].ID, msgs[2].ID})
	assert.Equal(t, protocol.Type("x.crewai.fancy_thing_"), msgs[1].Type)
	assert.JSONEq(t, `{"zap":1}`, string(msgs[1].Payload))
	assert.Equal(t, "task:t1", msgs[1].TaskID)
	assert.Equal(t, map[string]int64{"Fancy Thing!": 1}, a.Unknown())
	var ep protocol.ErrorPayload
	require.NoError(t, json.Unmarshal(msgs[2].Payload, &ep))
	assert.Equal(t, protocol.TypeToolError, msgs[2].Type)
	assert.Equal(t, protocol.CodeTimeout, ep.Code)
	assert.True(t, ep.Retryable)
}

func TestFailures(t *testing.T) {
	raw := []byte(`{"trace_id":"tr","events":[
	 {"event_id":"a","timestamp":"2025-10-08T18:18:11.365096+00:00","type":"task_started","event_data":{"task_id":"t1","agent_role":"R"}},
	 {"event_id":"b","timestamp":"2025-10-08T18:18:12.365096+00:00","type":"task_failed","event_data":{"serialization_error":"boom","object_type":"TaskFailedEvent"}},
	 {"event_id":"c","timestamp":"2025-10-08T18:18:13","type":"crew_kickoff_failed","event_data":{"error":"Rate limit reached for gpt-4o"}}]}`)
	msgs := inbound(t, crewai.New(nil), raw)
	require.Len(t, msgs, 3)
	assert.Equal(t, row{"task.error", "task:t1", "task:tr", "agent:crewai"}, rows(msgs)[1], "an event without task_id belongs to the running task")
	var ep protocol.ErrorPayload
	require.NoError(t, json.Unmarshal(msgs[1].Payload, &ep))
	assert.Equal(t, protocol.ErrorPayload{Code: protocol.CodeToolFailed, Message: "boom", Details: map[string]any{"crewai_type": "task_failed"}}, ep)
	require.NoError(t, json.Unmarshal(msgs[2].Payload, &ep))
	assert.Equal(t, protocol.CodeRateLimited, ep.Code)
	assert.Equal(t, "2025-10-08T18:18:13.000Z", msgs[2].TS, "a naive time is UTC")
}

func TestOutbound(t *testing.T) {
	a := crewai.New(nil)
	ctx := context.Background()
	k := inbound(t, a, []byte(`{"inputs":{"topic":"AI"},"meta":{"requestId":"r1"}}`))[0]
	out, err := a.Outbound(ctx, k)
	require.NoError(t, err)
	assert.JSONEq(t, `{"inputs":{"topic":"AI"},"meta":{"requestId":"r1"}}`, string(out))

	r := inbound(t, a, []byte(`{"execution_id":"ex","task_id":"research_task","human_feedback":"ok","is_approve":false}`))[0]
	out, err = a.Outbound(ctx, r)
	require.NoError(t, err)
	assert.JSONEq(t, `{"execution_id":"ex","task_id":"research_task","human_feedback":"ok","is_approve":false}`, string(out))

	follow := protocol.NewMessage(protocol.TypeTaskRequest, "agent:x")
	require.NoError(t, follow.SetPayload(map[string]any{"answer": 42, "approve": false}))
	res, err := crewai.ResumeOf(follow, "ex", "t1")
	require.NoError(t, err)
	assert.Equal(t, crewai.Resume{ExecutionID: "ex", TaskID: "t1", HumanFeedback: `{"answer":42,"approve":false}`, IsApprove: false}, *res)

	m := protocol.NewMessage(protocol.TypeChatMessage, "agent:x")
	_, err = a.Outbound(ctx, m)
	require.ErrorIs(t, err, crewai.ErrNotMappable)
	require.ErrorIs(t, err, adapters.ErrOutbound)
	assert.False(t, a.CanHandle(m))
	assert.True(t, a.CanHandle(k))
}

// ResumeOfApproval: the answer to a Crew's approval question as the
// resume body.
func TestResumeOfApproval(t *testing.T) {
	for _, c := range []struct {
		value, feedback string
		approve         bool
	}{
		{`{"decision":"approve"}`, "", true},
		{`{"decision":"approve","reason":"Excellent research! Proceed to the next task."}`, "Excellent research! Proceed to the next task.", true},
		{`{"decision":"reject","reason":"Please include more quantitative data."}`, "Please include more quantitative data.", false},
		{`{"decision":"edit","arguments":"Two days only."}`, "Two days only.", false},
		{`{"decision":"edit","reason":"shorter","arguments":{"days":2}}`, "shorter\n\n{\"days\":2}", false},
		{`"looks good"`, "looks good", true},
	} {
		r, err := crewai.ResumeOfApproval("ex", "t1", json.RawMessage(c.value))
		require.NoError(t, err, c.value)
		assert.Equal(t, crewai.Resume{ExecutionID: "ex", TaskID: "t1", HumanFeedback: c.feedback, IsApprove: c.approve}, *r, c.value)
	}
	for _, c := range []struct {
		exec, task, value string
		code              protocol.Code
	}{
		{"ex", "", `{"decision":"approve"}`, protocol.CodeMissingField},
		{"", "t1", `{"decision":"approve"}`, protocol.CodeMissingField},
		{"ex", "t1", `{"decision":"maybe"}`, protocol.CodeInvalidField},
		{"ex", "t1", `{"decision":"approve","extra":1}`, protocol.CodeInvalidField},
		{"ex", "t1", `42`, protocol.CodeInvalidField},
	} {
		_, err := crewai.ResumeOfApproval(c.exec, c.task, json.RawMessage(c.value))
		assert.ErrorIs(t, err, c.code, "%+v", c)
	}
}

// Events that ask for a person are marked awaiting_input; the one that
// says the feedback came is not.
func TestAwaitingInputEvents(t *testing.T) {
	a := crewai.New(nil)
	raw := []byte(`{"events":[
	 {"id":"e1","execution_id":"ex","timestamp":"2025-02-16T10:58:44.000Z","type":"human_feedback_requested","data":{"method_name":"review","message":"Review this","output":"draft"}},
	 {"id":"e2","execution_id":"ex","timestamp":"2025-02-16T10:58:45.000Z","type":"human_feedback_received","data":{"method_name":"review","feedback":"ok"}},
	 {"id":"e3","execution_id":"ex","timestamp":"2025-02-16T10:58:46.000Z","type":"flow_paused","data":{"method_name":"review","message":"Review this"}}]}`)
	msgs := inbound(t, a, raw)
	require.Len(t, msgs, 3)
	for i, want := range []bool{true, false, true} {
		var p struct {
			Awaiting bool `json:"awaiting_input"`
		}
		require.NoError(t, json.Unmarshal(msgs[i].Payload, &p))
		assert.Equal(t, want, p.Awaiting, msgs[i].ID)
	}
}

func TestDetect(t *testing.T) {
	a := crewai.New(nil)
	for _, c := range allFixtures(t) {
		assert.True(t, a.Detect(c.Raw), c.Name)
	}
	assert.False(t, a.Detect([]byte(`{"protocol":"multiagent-1.0"}`)))
	assert.False(t, a.Detect([]byte(`[1]`)))
}

// TestToolCallsPair: in every fixture, each tool outcome answers a
// tool.call of its task by call id (docs/protocol.md §2.3.1), once; the
// recorded delegation's call and result share the tool_usage_started
// event's id.
func TestToolCallsPair(t *testing.T) {
	for _, c := range allFixtures(t) {
		msgs := inbound(t, crewai.New(nil), c.Raw)
		unpaired, err := adaptertest.CheckToolCalls(msgs)
		require.NoError(t, err, c.Name)
		assert.Empty(t, unpaired, "%s: outcomes of no call", c.Name)
	}
	msgs := inbound(t, crewai.New(nil), read(t, "trace_batch_delegation_sequential.json"))
	call, res := msgs[5], msgs[11]
	require.Equal(t, protocol.TypeToolCall, call.Type)
	require.Equal(t, protocol.TypeToolResult, res.Type)
	cid, _ := protocol.ToolCallID(call)
	rid, _ := protocol.ToolCallID(res)
	assert.Equal(t, "7d7aec22-3674-46ef-b79f-a6dca2285d76", cid)
	assert.Equal(t, cid, rid)
}

// TestChunkCallIDs: a streamed tool call keeps its tool_id; without one,
// every piece of a call (same run, task and index) gets one derived id,
// and another call another.
func TestChunkCallIDs(t *testing.T) {
	chunk := func(toolID string, index int) []byte {
		return []byte(`{"content":"","chunk_type":"tool_call","task_index":0,"task_name":"","task_id":"task-123","agent_role":"Researcher","agent_id":"","tool_call":{"tool_id":"` +
			toolID + `","tool_name":"search","arguments":"{\"q\":","index":` + strconv.Itoa(index) + `}}`)
	}
	id := func(raw []byte) string {
		msgs := inbound(t, crewai.New(nil), raw)
		require.Len(t, msgs, 1)
		require.NoError(t, protocol.CheckToolCallID(msgs[0]))
		id, _ := protocol.ToolCallID(msgs[0])
		return id
	}
	assert.Equal(t, "call-123", id(chunk("call-123", 0)))
	first, again, other := id(chunk("", 0)), id(chunk("", 0)), id(chunk("", 1))
	assert.True(t, strings.HasPrefix(first, protocol.PrefixCall), first)
	assert.Equal(t, first, again, "the pieces of one call share its id")
	assert.NotEqual(t, first, other)
	assert.True(t, strings.HasPrefix(id(chunk(strings.Repeat("x", 300), 0)), protocol.PrefixCall), "an id too long to keep is replaced")
}
