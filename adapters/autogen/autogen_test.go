package autogen_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/autogen"
	"github.com/clutchprotocol/clutch/protocol"
)

const (
	tReq    = protocol.TypeTaskRequest
	tChat   = protocol.TypeChatMessage
	tSys    = protocol.TypeChatSystem
	tProg   = protocol.TypeTaskProgress
	tCall   = protocol.TypeToolCall
	tRes    = protocol.TypeToolResult
	tToolEr = protocol.TypeToolError
	tResult = protocol.TypeTaskResult
)

// One run, in order: the list of a .jsonl fixture posted as one JSON array.
func runOf(t *testing.T, a *autogen.Adapter, name string) []*protocol.Message {
	t.Helper()
	raw := "[" + string(joinLines(lines(t, name))) + "]"
	return inbound(t, a, []byte(raw))
}

func joinLines(ls [][]byte) []byte {
	s := make([]string, len(ls))
	for i, l := range ls {
		s[i] = string(l)
	}
	return []byte(strings.Join(s, ","))
}

func sameRun(t *testing.T, msgs []*protocol.Message) {
	t.Helper()
	for _, m := range msgs {
		assert.Equal(t, msgs[0].RunID, m.RunID, "run of %s", m.Type)
		assert.Equal(t, msgs[0].ThreadID, m.ThreadID)
		assert.Equal(t, msgs[0].TaskID, m.TaskID)
		assert.Equal(t, autogen.Source, adapters.Source(m))
	}
}

func TestToolCallRound(t *testing.T) {
	msgs := runOf(t, newAdapter(), "agentchat_tool_call_round.jsonl")
	require.Equal(t, []protocol.Type{tReq, tCall, tRes, tChat}, types(msgs))
	sameRun(t, msgs)
	assert.Equal(t, "agent:autogen/user", msgs[0].From.AgentID)
	assert.Equal(t, "agent:autogen/assistant", msgs[1].From.AgentID)
	assert.JSONEq(t, `{"name":"web_search","call_id":"call_703i17OLXfztkuioUbkESnea","arguments":"{\"query\":\"AutoGen\"}","args":{"query":"AutoGen"}}`, string(msgs[1].Payload))
	assert.Equal(t, "call_703i17OLXfztkuioUbkESnea", msgs[1].Meta[autogen.MetaToolCallID])
	assert.Equal(t, "call_703i17OLXfztkuioUbkESnea", msgs[2].Meta[autogen.MetaToolCallID])
	assert.Equal(t, "ToolCallSummaryMessage", msgs[3].Meta[autogen.MetaType])
}

// A tool result posted on its own finds the run and task of its call.
func TestToolResultFindsItsCall(t *testing.T) {
	a := newAdapter()
	ls := lines(t, "agentchat_tool_call_round.jsonl")
	first := inbound(t, a, []byte("["+string(ls[0])+","+string(ls[1])+"]"))
	res := inbound(t, a, ls[2])
	require.Len(t, res, 1)
	assert.Equal(t, first[1].RunID, res[0].RunID)
	assert.Equal(t, first[1].TaskID, res[0].TaskID)
}

func TestStreamingChunks(t *testing.T) {
	msgs := runOf(t, newAdapter(), "agentchat_streaming_chunks.jsonl")
	// request, 16 chunks, the final text, then the TaskResult: its two
	// messages again (same ids: they dedup in the store) and the result.
	want := []protocol.Type{tReq}
	for range 16 {
		want = append(want, tProg)
	}
	// The TaskResult's first message comes after the run started: a
	// chat.message.
	want = append(want, tChat, tChat, tChat, tResult)
	require.Equal(t, want, types(msgs))
	sameRun(t, msgs)
	assert.Equal(t, true, msgs[1].Meta[autogen.MetaPartial])
	assert.JSONEq(t, `{"text":"Two"}`, string(msgs[1].Payload))
	// Three " in" chunks without ids are three events.
	ids := map[string]bool{}
	for _, m := range msgs[1:17] {
		assert.False(t, ids[m.ID], "duplicate id %s", m.ID)
		ids[m.ID] = true
	}
	assert.JSONEq(t, `{"stop_reason":null,"messages":2,"text":"Two cities in South America are Buenos Aires in Argentina and São Paulo in Brazil."}`, string(msgs[len(msgs)-1].Payload))
}

func TestEvents(t *testing.T) {
	a := newAdapter()
	before := a.Unknown()
	msgs := runOf(t, a, "agentchat_events_constructed.jsonl")
	require.Equal(t, []protocol.Type{
		tReq, tProg, tProg, tChat, tProg, tProg, tProg, tCall, tCall, tRes, tToolEr, tChat, tProg, tProg, tProg, tChat, tChat, tChat,
		"x.autogen.sparkle_event", "x.autogen.team_state", tSys,
	}, types(msgs))
	sameRun(t, msgs)
	assert.Equal(t, int64(1), a.Unknown()-before, "the unknown kind is counted")
	assert.Equal(t, true, msgs[18].Meta[autogen.MetaUnknown])
	assert.Equal(t, true, msgs[1].Meta[autogen.MetaThought])
	assert.Equal(t, true, msgs[2].Meta[autogen.MetaInputRequest])
	assert.Equal(t, "4a1f3c2b-9e8d-4c7b-a6f5-e4d3c2b1a090", msgs[2].Meta[autogen.MetaRequestID])
	// Two calls of one event: two envelopes, the usage on the first only.
	assert.NotEqual(t, msgs[7].ID, msgs[8].ID)
	assert.Contains(t, msgs[7].Meta, autogen.MetaUsage)
	assert.NotContains(t, msgs[8].Meta, autogen.MetaUsage)
	ep, err := protocol.DecodePayload[protocol.ErrorPayload](msgs[10])
	require.NoError(t, err)
	assert.Equal(t, protocol.CodeToolFailed, ep.Code)
	assert.Equal(t, "call_a2", msgs[10].Meta[autogen.MetaToolCallID])
	// Handoff: a chat.message to the target.
	assert.Equal(t, []protocol.Participant{{AgentID: "agent:autogen/reviewer"}}, msgs[16].To)
	assert.Equal(t, "reviewer", msgs[16].Meta[autogen.MetaHandoff])
	// Structured content stays as it is.
	assert.JSONEq(t, `{"content":{"verdict":"correct","score":1},"format_string":"{verdict}"}`, string(msgs[17].Payload))
	assert.Equal(t, "0b7d1c2e-0001-4000-8000-00000000000e", msgs[14].Meta[autogen.MetaFullID])
	assert.Equal(t, "2025-07-15T01:48:51.648Z", msgs[0].TS)
	assert.Equal(t, "0b7d1c2e-0001-4000-8000-000000000001", msgs[0].IdempotencyKey)
}

func TestSwarmHandoffs(t *testing.T) {
	msgs := inbound(t, newAdapter(), read(t, "agentchat_swarm_handoffs_taskresult.json"))
	sameRun(t, msgs)
	assert.Equal(t, tReq, msgs[0].Type)
	last := msgs[len(msgs)-1]
	assert.Equal(t, tResult, last.Type)
	assert.Equal(t, "agent:autogen/planner", last.From.AgentID)
	assert.JSONEq(t, `{"stop_reason":"Text 'TERMINATE' mentioned","messages":27,"text":"TERMINATE"}`, string(last.Payload))
	var handoffs []string
	for _, m := range msgs {
		if m.Meta[autogen.MetaType] == "HandoffMessage" {
			handoffs = append(handoffs, m.To[0].AgentID)
		}
	}
	assert.Equal(t, []string{"agent:autogen/financial_analyst", "agent:autogen/planner", "agent:autogen/news_analyst", "agent:autogen/planner", "agent:autogen/writer", "agent:autogen/planner"}, handoffs)
}

func TestStopReasons(t *testing.T) {
	msgs := inbound(t, newAdapter(), read(t, "agentchat_graphflow_stopmessage_taskresult.json"))
	assert.Equal(t, tSys, msgs[len(msgs)-2].Type)
	assert.Equal(t, tResult, msgs[len(msgs)-1].Type)
	assert.Equal(t, "Stop message received", msgs[len(msgs)-1].Meta[autogen.MetaStopReason])

	msgs = inbound(t, newAdapter(), read(t, "agentchat_handoff_to_user_taskresult_constructed.json"))
	require.Equal(t, []protocol.Type{tReq, tChat, protocol.TypeTaskError}, types(msgs))
	ep, err := protocol.DecodePayload[protocol.ErrorPayload](msgs[2])
	require.NoError(t, err)
	assert.Equal(t, protocol.CodeInputRequired, ep.Code)
	assert.Equal(t, "agent:autogen/travel_agent", msgs[2].From.AgentID)

	for reason, typ := range map[string]protocol.Type{
		"External termination requested":                                 protocol.TypeTaskCancel,
		"Timeout of 30 seconds reached":                                  protocol.TypeTaskTimeout,
		"Maximum number of messages 5 reached, current message count: 5": tResult,
	} {
		raw := `{"messages":[{"source":"user","content":"go","type":"TextMessage"}],"stop_reason":"` + reason + `"}`
		msgs := inbound(t, newAdapter(), []byte(raw))
		assert.Equal(t, typ, msgs[1].Type, reason)
	}
}

func TestMultiModal(t *testing.T) {
	msgs := inbound(t, newAdapter(), read(t, "agentchat_multimodal_constructed.json"))
	require.Len(t, msgs, 1)
	m := msgs[0]
	require.Len(t, m.Attachments, 1)
	assert.Equal(t, "image/png", m.Attachments[0].MediaType)
	assert.True(t, strings.HasPrefix(m.Attachments[0].Ref, "data:image/png;base64,iVBOR"))
	assert.JSONEq(t, `{"text":"Can you describe the content of this image?","parts":["Can you describe the content of this image?",{"attachment":0}]}`, string(m.Payload))
}

func TestWorkerMessages(t *testing.T) {
	publish, request := coreMessages(t)
	msgs := inbound(t, newAdapter(), publish)
	require.Equal(t, []protocol.Type{tReq}, types(msgs))
	assert.Equal(t, "agent:autogen/user", msgs[0].From.AgentID)
	assert.Equal(t, "run:autogen/a55364ad-86fd-46ab-9449-dcb5260b1e06", msgs[0].RunID, "the team topic is the run")
	core := msgs[0].Meta["autogen_core"].(map[string]any)
	assert.Equal(t, "GroupChatMessage", core["dataschema"])

	msgs = inbound(t, newAdapter(), request)
	require.Equal(t, []protocol.Type{"x.autogen.rpc_request"}, types(msgs))
	assert.Equal(t, []protocol.Participant{{AgentID: "agent:autogen/user_proxy"}}, msgs[0].To)

	msgs = inbound(t, newAdapter(), read(t, "core_groupchat_termination_error_constructed.json"))
	require.Equal(t, []protocol.Type{tSys, protocol.TypeTaskError}, types(msgs))
	ep, err := protocol.DecodePayload[protocol.ErrorPayload](msgs[1])
	require.NoError(t, err)
	assert.Equal(t, "ValueError", ep.Details["error_type"])

	msgs = inbound(t, newAdapter(), []byte(`{"response":{"request_id":"1","payload":null,"error":"boom","metadata":{}}}`))
	require.Equal(t, []protocol.Type{protocol.TypeTaskError}, types(msgs))
}

// The same input into a named run, twice, gives the same envelopes; with
// another salt, messages without an AutoGen id get other ids.
func TestRunAndIDs(t *testing.T) {
	a := newAdapter()
	first := lines(t, "agentchat_streaming_chunks.jsonl")[1]
	run := autogen.Run{ID: "run_1", ThreadID: "thr_1", TaskID: "task_1", Agents: "agent:ken/", Owner: "agent:ken", Started: true}
	m1, err := a.InboundRun(context.Background(), run, first)
	require.NoError(t, err)
	m2, err := a.InboundRun(context.Background(), run, first)
	require.NoError(t, err)
	assert.Equal(t, m1[0].ID, m2[0].ID)
	assert.Equal(t, "run_1", m1[0].RunID)
	assert.Equal(t, "agent:ken/assistant", m1[0].From.AgentID)
	assert.Equal(t, "agent:ken", m1[0].Meta[autogen.MetaOwner])
	run.Salt = "other"
	m3, err := a.InboundRun(context.Background(), run, first)
	require.NoError(t, err)
	assert.NotEqual(t, m1[0].ID, m3[0].ID)

	// Started: a user message does not start the task again.
	m4, err := a.InboundRun(context.Background(), run, lines(t, "agentchat_streaming_chunks.jsonl")[0])
	require.NoError(t, err)
	assert.Equal(t, tChat, m4[0].Type)
}

func TestOutboundNative(t *testing.T) {
	a := autogen.New(&autogen.Options{Peers: []string{"agent:autogen/assistant"}})
	m := protocol.NewMessage(protocol.TypeChatMessage, "agent:ken")
	m.To = []protocol.Participant{{AgentID: "agent:autogen/assistant"}}
	require.NoError(t, m.SetPayload(map[string]string{"text": "hello"}))
	require.True(t, a.CanHandle(m))
	out, err := a.Outbound(context.Background(), m)
	require.NoError(t, err)
	assert.Contains(t, string(out), `"content":"hello"`)
	assert.Contains(t, string(out), `"type":"TextMessage"`)
	assert.Contains(t, string(out), `"source":"ken"`)

	m.To = nil
	assert.False(t, a.CanHandle(m))
	_, err = a.Outbound(context.Background(), m)
	assert.ErrorIs(t, err, autogen.ErrNotMappable)
}

func TestDetect(t *testing.T) {
	a := newAdapter()
	for _, c := range append(agentchatCases(t), coreCases(t)...) {
		assert.True(t, a.Detect(c.Raw), c.Name)
	}
	for _, raw := range []string{
		`{"v":"clutch/0.1","id":"m","type":"chat.message","from":{"agent_id":"agent:a"},"payload":{}}`,
		`{"protocol":"multiagent-1.0","role":"agent","content":{"type":"text"}}`,
		`"TextMessage"`, ``,
	} {
		assert.False(t, a.Detect([]byte(raw)), raw)
	}
	reg, err := adapters.NewRegistry(a)
	require.NoError(t, err)
	msgs, got, err := reg.Inbound(context.Background(), read(t, "agentchat_swarm_handoffs_taskresult.json"))
	require.NoError(t, err)
	assert.Equal(t, autogen.Name, got.Name())
	assert.Equal(t, tResult, msgs[len(msgs)-1].Type)
}
