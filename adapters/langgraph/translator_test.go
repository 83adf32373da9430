package langgraph_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/adapters/langgraph"
	"github.com/clutchprotocol/clutch/protocol"
)

func inbound(t *testing.T, raw string) []*protocol.Message {
	t.Helper()
	msgs, err := newTranslator(t).Inbound(context.Background(), []byte(raw))
	require.NoError(t, err)
	return msgs
}

func types(msgs []*protocol.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, string(m.Type))
	}
	return out
}

// The real Platform capture: one run, one thread, in order; node tasks are
// children of the run's task (subgraph tasks of their namespace's task);
// the tool call keeps its id.
func TestLegacyCaptureOneRunInOrder(t *testing.T) {
	raw, err := os.ReadFile("testdata/fixtures/platform_sse_legacy_chat_langchain.sse")
	require.NoError(t, err)
	msgs := inbound(t, string(raw))
	require.NotEmpty(t, msgs)
	assert.Equal(t, protocol.TypeTaskAccept, msgs[0].Type)
	ids := map[string]bool{}
	for _, m := range msgs {
		assert.Equal(t, "run:01994ed8-29c4-7108-93d4-d649c7a9e370", m.RunID)
		assert.Equal(t, msgs[0].ThreadID, m.ThreadID)
		assert.False(t, ids[m.ID], "duplicate id %s", m.ID)
		ids[m.ID] = true
	}
	var call *protocol.Message
	for _, m := range msgs {
		if m.Type == protocol.TypeToolCall {
			call = m
			break
		}
	}
	require.NotNil(t, call)
	assert.Equal(t, "toolu_011AD2TbtpQF3BRbxYAyyoKZ", call.Meta[langgraph.MetaToolCallID])
	// The subgraph task 1ded568d… runs inside conduct_research:112ad8d7….
	var sub *protocol.Message
	for _, m := range msgs {
		if m.TaskID == "task:1ded568d-0a6a-35e7-cd32-ca7eb1adf769" {
			sub = m
			break
		}
	}
	require.NotNil(t, sub)
	assert.Equal(t, "task:112ad8d7-bbc3-68b9-5d81-cead45ae71fb", sub.ParentTaskID)
	// The same bytes give the same ids (a re-delivered stream dedups).
	again := inbound(t, string(raw))
	for i := range msgs {
		assert.Equal(t, msgs[i].ID, again[i].ID)
	}
}

func TestInterruptIsInputRequired(t *testing.T) {
	msgs := inbound(t, "event: metadata\ndata: {\"run_id\":\"r1\",\"attempt\":1}\n\n"+
		"event: values\ndata: {\"messages\":[],\"__interrupt__\":[{\"value\":\"Approve the refund?\",\"id\":\"int-1\"}]}\n\n"+
		"event: end\ndata: null\n\n")
	require.Equal(t, []string{"task.accept", "task.progress", "task.error", "x.langgraph.end"}, types(msgs))
	ep, err := protocol.DecodePayload[protocol.ErrorPayload](msgs[2])
	require.NoError(t, err)
	assert.Equal(t, protocol.CodeInputRequired, ep.Code)
	assert.Equal(t, "Approve the refund?", ep.Message)
	assert.Equal(t, []any{"int-1"}, msgs[2].Meta[langgraph.MetaInterrupts])
	assert.Equal(t, "task:r1", msgs[2].TaskID)
}

// The Agent Server sends a dynamic interrupt in updates and again in
// values: the task waits for input once.
func TestInterruptReportedOnce(t *testing.T) {
	raw, err := os.ReadFile("testdata/recorded/approval_interrupt.sse")
	require.NoError(t, err)
	n := 0
	for _, m := range inbound(t, string(raw)) {
		if m.Type == protocol.TypeTaskError {
			n++
		}
	}
	assert.Equal(t, 1, n)
}

func TestToolMessagesAndErrors(t *testing.T) {
	msgs := inbound(t, `{"event":"updates","data":{"tools":{"messages":[`+
		`{"type":"tool","content":"42","tool_call_id":"c1","name":"add","id":"t1"},`+
		`{"type":"tool","content":"boom","tool_call_id":"c2","name":"div","status":"error","id":"t2"}]}}}`)
	require.Equal(t, []string{"task.progress", "tool.result", "tool.error"}, types(msgs))
	assert.Equal(t, "c1", msgs[1].Meta[langgraph.MetaToolCallID])
	ep, err := protocol.DecodePayload[protocol.ErrorPayload](msgs[2])
	require.NoError(t, err)
	assert.Equal(t, protocol.CodeToolFailed, ep.Code)
	assert.Equal(t, "boom", ep.Message)
}

// A streamed tool message without a status does not decide the call's
// outcome: the updates frame that carries status "error" does.
func TestStreamedToolMessageWaitsForStatus(t *testing.T) {
	msgs := inbound(t, `[{"event":"messages","data":[{"type":"tool","content":"division by zero","tool_call_id":"c9","name":"div","id":"t9"},{"langgraph_node":"tools"}]},`+
		`{"event":"updates","data":{"tools":{"messages":[{"type":"tool","content":"division by zero","tool_call_id":"c9","name":"div","id":"t9","status":"error"}]}}}]`)
	require.Equal(t, []string{"chat.message", "task.progress", "tool.error"}, types(msgs))
}

func TestErrorFrames(t *testing.T) {
	msgs := inbound(t, "event: error\ndata: {\"error\":\"ValueError\",\"message\":\"graph threw\"}\n\n")
	require.Equal(t, []string{"task.error"}, types(msgs))
	ep, _ := protocol.DecodePayload[protocol.ErrorPayload](msgs[0])
	assert.Equal(t, "graph threw", ep.Message)
	assert.Equal(t, "ValueError", ep.Details["error"])

	msgs = inbound(t, "event: error\ndata: \"Run not found\"\n\n")
	ep, _ = protocol.DecodePayload[protocol.ErrorPayload](msgs[0])
	assert.Equal(t, protocol.CodeNotFound, ep.Code)
}

func TestUnknownKindsAreKeptAndCounted(t *testing.T) {
	tr := newTranslator(t)
	msgs, err := tr.Inbound(context.Background(), []byte("event: feedback\ndata: {\"k\":\"u\"}\n\nevent: Brand New!\ndata: 1\n\n"))
	require.NoError(t, err)
	require.Equal(t, []string{"x.langgraph.feedback", "x.langgraph.brand_new_"}, types(msgs))
	assert.Equal(t, true, msgs[0].Meta[langgraph.MetaUnknown])
	assert.EqualValues(t, 2, tr.Unknown())
}

func TestPartialMessagesAreDeltas(t *testing.T) {
	msgs := inbound(t, `[{"event":"messages/partial","data":[{"type":"ai","content":"Hel","id":"m1"}]},`+
		`{"event":"messages/partial","data":[{"type":"ai","content":"Hello","id":"m1"}]}]`)
	require.Equal(t, []string{"chat.message", "chat.message"}, types(msgs))
	assert.Contains(t, string(msgs[1].Payload), `"content":"lo"`)
	assert.Equal(t, true, msgs[1].Meta[langgraph.MetaPartial])
}

func TestSecretsAreScrubbed(t *testing.T) {
	msgs := inbound(t, `{"event":"messages/metadata","data":{"m1":{"metadata":{"run_id":"r","authorization":"Bearer s3cret","x-api-key":"k"}}}}`)
	for _, m := range msgs {
		b, err := protocol.Encode(m)
		require.NoError(t, err)
		assert.False(t, strings.Contains(string(b), "s3cret"), string(b))
		assert.False(t, strings.Contains(string(b), `"k"`), string(b))
	}
}

func TestRunObjectsAndWebhooks(t *testing.T) {
	for status, want := range map[string]string{"pending": "task.request", "running": "task.accept", "success": "task.result", "error": "task.error", "timeout": "task.timeout", "interrupted": "task.cancel"} {
		msgs := inbound(t, `{"run_id":"r9","thread_id":"th","assistant_id":"agent","status":"`+status+`","created_at":"2024-07-25T15:35:42.598503+00:00","updated_at":"2024-07-25T15:35:42.598503+00:00","metadata":{}}`)
		require.Equal(t, []string{want}, types(msgs), status)
		assert.Equal(t, "run:r9", msgs[0].RunID)
		assert.Equal(t, "thread:th", msgs[0].ThreadID)
		assert.Equal(t, "2024-07-25T15:35:42.598Z", msgs[0].TS)
	}
	// A webhook of a run that waits for input.
	msgs := inbound(t, `{"run_id":"r9","thread_id":"th","assistant_id":"agent","status":"interrupted","run_started_at":"x","webhook_sent_at":"y","values":{"__interrupt__":[{"value":"why?","id":"i9"}]}}`)
	require.Equal(t, []string{"task.error"}, types(msgs))
	ep, _ := protocol.DecodePayload[protocol.ErrorPayload](msgs[0])
	assert.Equal(t, protocol.CodeInputRequired, ep.Code)
}

func TestOutboundRunRequest(t *testing.T) {
	tr := newTranslator(t)
	m := protocol.NewMessage(protocol.TypeTaskRequest, "agent:host")
	m.To = []protocol.Participant{{AgentID: "agent:chat"}}
	m.Payload = []byte(`{"messages":[{"role":"user","content":"hi"}]}`)
	out, err := tr.Outbound(context.Background(), m)
	require.NoError(t, err)
	assert.JSONEq(t, `{"assistant_id":"chat","input":{"messages":[{"role":"user","content":"hi"}]}}`, string(out))
	_, err = tr.Outbound(context.Background(), protocol.NewMessage(protocol.TypeChatSystem, "agent:host"))
	require.ErrorIs(t, err, protocol.CodeUnsupportedTask)
}
