package agui_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clutchprotocol/clutch/gateway/agui"
	"github.com/clutchprotocol/clutch/protocol"
)

// msg builds a stored message of the run "run_1": type, id, task, parent
// task, sender and payload.
func msg(typ protocol.Type, id, task, parent, from, payload string) *protocol.Message {
	return &protocol.Message{V: protocol.Version, ID: id, TS: "2026-01-01T00:00:01.500Z", ThreadID: "thr_1", RunID: "run_1",
		TaskID: task, ParentTaskID: parent, From: protocol.Participant{AgentID: from}, Type: typ, Payload: json.RawMessage(payload), Attempt: 1}
}

const (
	ui     = "agent:ui"
	ken    = "agent:ken"
	rita   = "agent:rita"
	orch   = "agent:orchestrator"
	noPay  = "null"
	retry  = `{"code":"TOOL_UNAVAILABLE","message":"down","retryable":true,"details":{"will_retry":true}}`
	failed = `{"code":"TOOL_FAILED","message":"no index","retryable":false}`
)

// translate feeds msgs to a new Translator (seqs from 1) and returns the
// summaries of what it sent, and whether it is done.
func translate(t *testing.T, msgs ...*protocol.Message) ([]string, bool) {
	t.Helper()
	tr := agui.NewTranslator("thread-x", "run-x", nil)
	var out []string
	for i, m := range msgs {
		for _, e := range tr.Translate(nil, uint64(i+1), m) {
			if e.Seq != uint64(i+1) || e.Timestamp != 1767225601500 {
				t.Errorf("%s: seq %d timestamp %d", e.Type, e.Seq, e.Timestamp)
			}
			b, err := json.Marshal(&e)
			if err != nil {
				t.Fatal(err)
			}
			var v map[string]any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatalf("%s: %v", b, err)
			}
			out = append(out, summary(v))
		}
	}
	return out, tr.Done()
}

func TestTranslate(t *testing.T) {
	root := msg(protocol.TypeTaskRequest, "m1", "t1", "", ui, `{"text":"hi"}`)
	accept := msg(protocol.TypeTaskAccept, "m2", "t1", "", ken, `{}`)
	for _, tc := range []struct {
		name string
		msgs []*protocol.Message
		want []string
		done bool
	}{{
		name: "result",
		msgs: []*protocol.Message{root, accept, msg(protocol.TypeTaskResult, "m3", "t1", "", ken, `"all good"`)},
		want: []string{
			"RUN_STARTED threadId=thread-x runId=run-x",
			"STEP_STARTED stepName=agent:ken/t1",
			"TEXT_MESSAGE_START messageId=m3 role=assistant name=agent:ken",
			"TEXT_MESSAGE_CONTENT messageId=m3 delta=all good",
			"TEXT_MESSAGE_END messageId=m3",
			"STEP_FINISHED stepName=agent:ken/t1",
			"RUN_FINISHED threadId=thread-x runId=run-x result=all good",
		},
		done: true,
	}, {
		name: "a result without text sends no message",
		msgs: []*protocol.Message{root, msg(protocol.TypeTaskResult, "m3", "t1", "", ken, noPay)},
		want: []string{"RUN_STARTED threadId=thread-x runId=run-x", "RUN_FINISHED threadId=thread-x runId=run-x result=null"},
		done: true,
	}, {
		name: "retry then failure",
		msgs: []*protocol.Message{root, accept,
			msg(protocol.TypeTaskError, "m3", "t1", "", ken, retry),
			msg(protocol.TypeTaskAccept, "m4", "t1", "", rita, `{}`),
			msg(protocol.TypeTaskError, "m5", "t1", "", rita, failed)},
		want: []string{
			"RUN_STARTED threadId=thread-x runId=run-x",
			"STEP_STARTED stepName=agent:ken/t1",
			"STEP_FINISHED stepName=agent:ken/t1",
			`CUSTOM name=clutch.task.error value={"code":"TOOL_UNAVAILABLE","details":{"will_retry":true},"message":"down","retryable":true}`,
			"STEP_STARTED stepName=agent:rita/t1",
			"STEP_FINISHED stepName=agent:rita/t1",
			"RUN_ERROR code=TOOL_FAILED message=no index",
		},
		done: true,
	}, {
		name: "cancel and timeout name their code",
		msgs: []*protocol.Message{root, accept, msg(protocol.TypeTaskCancel, "m3", "t1", "", orch, `{"code":"CANCELLED","message":"user pressed stop","retryable":false}`)},
		want: []string{"RUN_STARTED threadId=thread-x runId=run-x", "STEP_STARTED stepName=agent:ken/t1", "STEP_FINISHED stepName=agent:ken/t1", "RUN_ERROR code=CANCELLED message=user pressed stop"},
		done: true,
	}, {
		name: "a timeout without a readable payload",
		msgs: []*protocol.Message{root, msg(protocol.TypeTaskTimeout, "m3", "t1", "", orch, `{}`)},
		want: []string{"RUN_STARTED threadId=thread-x runId=run-x", "RUN_ERROR code=TIMEOUT message=" + protocol.CodeTimeout.Summary()},
		done: true,
	}, {
		name: "delegation is a tool call",
		msgs: []*protocol.Message{root, accept,
			func() *protocol.Message {
				m := msg(protocol.TypeTaskRequest, "m3", "t2", "t1", ken, `{"q": "x"}`)
				m.PayloadType = "research.query.v1"
				return m
			}(),
			msg(protocol.TypeRoutingDecision, "m4", "t2", "t1", orch, `{"selected":"agent:rita"}`),
			msg(protocol.TypeTaskAccept, "m5", "t2", "t1", rita, `{}`),
			msg(protocol.TypeTaskResult, "m6", "t2", "t1", rita, `{"summary":"found"}`),
			msg(protocol.TypeTaskRequest, "m7", "t3", "t1", ken, `{}`),
			msg(protocol.TypeTaskError, "m8", "t3", "t1", orch, `{"code":"NO_MATCH","message":"nobody","retryable":false}`),
			msg(protocol.TypeTaskResult, "m9", "t1", "", ken, `{"text":"ok"}`)},
		want: []string{
			"RUN_STARTED threadId=thread-x runId=run-x",
			"STEP_STARTED stepName=agent:ken/t1",
			"TOOL_CALL_START toolCallId=t2 toolCallName=research.query.v1",
			`TOOL_CALL_ARGS delta={"q":"x"} toolCallId=t2`,
			"TOOL_CALL_END toolCallId=t2",
			`CUSTOM name=clutch.routing.decision value={"selected":"agent:rita"}`,
			"STEP_STARTED stepName=agent:rita/t2",
			"TOOL_CALL_RESULT messageId=m6 role=tool toolCallId=t2 content=found",
			"STEP_FINISHED stepName=agent:rita/t2",
			"TOOL_CALL_START toolCallId=t3 toolCallName=task",
			"TOOL_CALL_ARGS delta={} toolCallId=t3",
			"TOOL_CALL_END toolCallId=t3",
			`TOOL_CALL_RESULT messageId=m8 role=tool toolCallId=t3 content={"code":"NO_MATCH","message":"nobody","retryable":false}`,
			"TEXT_MESSAGE_START messageId=m9 role=assistant name=agent:ken",
			"TEXT_MESSAGE_CONTENT messageId=m9 delta=ok",
			"TEXT_MESSAGE_END messageId=m9",
			"STEP_FINISHED stepName=agent:ken/t1",
			`RUN_FINISHED threadId=thread-x runId=run-x result={"text":"ok"}`,
		},
		done: true,
	}, {
		name: "steps still open when the root ends are finished, newest first",
		msgs: []*protocol.Message{root, accept,
			msg(protocol.TypeTaskRequest, "m3", "t2", "t1", ken, `{}`),
			msg(protocol.TypeTaskAccept, "m4", "t2", "t1", rita, `{}`),
			msg(protocol.TypeTaskError, "m5", "t1", "", ken, failed),
			msg(protocol.TypeTaskCancel, "m6", "t2", "t1", orch, `{"code":"CANCELLED","message":"the parent task ended","retryable":false}`)},
		want: []string{
			"RUN_STARTED threadId=thread-x runId=run-x",
			"STEP_STARTED stepName=agent:ken/t1",
			"TOOL_CALL_START toolCallId=t2 toolCallName=task",
			"TOOL_CALL_ARGS delta={} toolCallId=t2",
			"TOOL_CALL_END toolCallId=t2",
			"STEP_STARTED stepName=agent:rita/t2",
			"STEP_FINISHED stepName=agent:rita/t2",
			"STEP_FINISHED stepName=agent:ken/t1",
			"RUN_ERROR code=TOOL_FAILED message=no index",
		},
		done: true,
	}, {
		name: "tool calls and their answers",
		msgs: []*protocol.Message{root, accept,
			msg(protocol.TypeToolCall, "c1", "t1", "", ken, `{"tool":"mcp:browser","name":"search","args":{ "q" : "a\nb" }}`),
			msg(protocol.TypeToolCall, "c2", "t1", "", ken, `{"tool":"mcp:files"}`),
			msg(protocol.TypeToolResult, "r2", "t1", "", ken, `{"tool":"mcp:files","content":"plain text"}`),
			msg(protocol.TypeToolError, "r1", "t1", "", ken, `{"code":"TOOL_FAILED","message":"boom","retryable":false,"details":{"call_id":"c1","tool":"mcp:browser"}}`),
			msg(protocol.TypeToolResult, "r3", "t1", "", ken, `{"name":"lookup","content":[{"type":"text","text":"x"}]}`)},
		want: []string{
			"RUN_STARTED threadId=thread-x runId=run-x",
			"STEP_STARTED stepName=agent:ken/t1",
			"TOOL_CALL_START toolCallId=c1 toolCallName=search",
			`TOOL_CALL_ARGS delta={"q":"a\nb"} toolCallId=c1`,
			"TOOL_CALL_END toolCallId=c1",
			"TOOL_CALL_START toolCallId=c2 toolCallName=mcp:files",
			"TOOL_CALL_END toolCallId=c2",
			// no call_id: the oldest open call of the task with that name
			"TOOL_CALL_RESULT messageId=r2 role=tool toolCallId=c2 content=plain text",
			`TOOL_CALL_RESULT messageId=r1 role=tool toolCallId=c1 content={"code":"TOOL_FAILED","message":"boom","retryable":false,"details":{"call_id":"c1","tool":"mcp:browser"}}`,
			// no call to answer: one is announced first
			"TOOL_CALL_START toolCallId=r3 toolCallName=lookup",
			"TOOL_CALL_END toolCallId=r3",
			`TOOL_CALL_RESULT messageId=r3 role=tool toolCallId=r3 content=[{"type":"text","text":"x"}]`,
		},
	}, {
		// docs/protocol.md §2.3.1: the call id is the toolCallId, and an
		// outcome answers the call of its task with its call id alone.
		name: "tool calls paired by call id",
		msgs: []*protocol.Message{root, accept,
			msg(protocol.TypeToolCall, "e1", "t1", "", ken, `{"call_id":"lc_1","tool":"langgraph:agent","name":"add","args":{}}`),
			msg(protocol.TypeToolCall, "e2", "t1", "", ken, `{"call_id":"lc_2","tool":"langgraph:agent","name":"add","args":{}}`),
			// the same call again (a streamed call's pieces): nothing new
			msg(protocol.TypeToolCall, "e2b", "t1", "", ken, `{"call_id":"lc_2","tool":"langgraph:agent","name":"add","partial":true}`),
			// answered in the other order, the same name: by id, not order
			msg(protocol.TypeToolResult, "e3", "t1", "", ken, `{"call_id":"lc_2","name":"add","content":"2"}`),
			// an error naming its call at the top, as foreign emitters do
			msg(protocol.TypeToolError, "e4", "t1", "", ken, `{"code":"TOOL_FAILED","message":"no","retryable":false,"call_id":"lc_1"}`),
			// a refused call: its call id names no call, so it stands alone
			// even with a call of that name open in the task
			msg(protocol.TypeToolCall, "e5", "t1", "", ken, `{"call_id":"lc_3","tool":"mcp:web","name":"fetch"}`),
			msg(protocol.TypeToolError, "e6", "t1", "", ken, `{"code":"POLICY_DENIED","message":"not allowed","retryable":false,"details":{"call_id":"call_x","name":"fetch"}}`),
			// the same call id in another task is another call
			msg(protocol.TypeToolResult, "e7", "t2", "t1", rita, `{"call_id":"lc_3","name":"fetch","content":"elsewhere"}`),
			// a second outcome of an answered call stands alone too
			msg(protocol.TypeToolResult, "e8", "t1", "", ken, `{"call_id":"lc_2","name":"add","content":"again"}`),
			msg(protocol.TypeToolResult, "e9", "t1", "", ken, `{"call_id":"lc_3","name":"fetch","content":"page"}`)},
		want: []string{
			"RUN_STARTED threadId=thread-x runId=run-x",
			"STEP_STARTED stepName=agent:ken/t1",
			"TOOL_CALL_START toolCallId=lc_1 toolCallName=add",
			"TOOL_CALL_ARGS delta={} toolCallId=lc_1",
			"TOOL_CALL_END toolCallId=lc_1",
			"TOOL_CALL_START toolCallId=lc_2 toolCallName=add",
			"TOOL_CALL_ARGS delta={} toolCallId=lc_2",
			"TOOL_CALL_END toolCallId=lc_2",
			"TOOL_CALL_RESULT messageId=e3 role=tool toolCallId=lc_2 content=2",
			`TOOL_CALL_RESULT messageId=e4 role=tool toolCallId=lc_1 content={"code":"TOOL_FAILED","message":"no","retryable":false,"call_id":"lc_1"}`,
			"TOOL_CALL_START toolCallId=lc_3 toolCallName=fetch",
			"TOOL_CALL_END toolCallId=lc_3",
			"TOOL_CALL_START toolCallId=call_x toolCallName=fetch",
			"TOOL_CALL_END toolCallId=call_x",
			`TOOL_CALL_RESULT messageId=e6 role=tool toolCallId=call_x content={"code":"POLICY_DENIED","message":"not allowed","retryable":false,"details":{"call_id":"call_x","name":"fetch"}}`,
			"TOOL_CALL_START toolCallId=e7 toolCallName=fetch",
			"TOOL_CALL_END toolCallId=e7",
			"TOOL_CALL_RESULT messageId=e7 role=tool toolCallId=e7 content=elsewhere",
			"TOOL_CALL_START toolCallId=e8 toolCallName=add",
			"TOOL_CALL_END toolCallId=e8",
			"TOOL_CALL_RESULT messageId=e8 role=tool toolCallId=e8 content=again",
			"TOOL_CALL_RESULT messageId=e9 role=tool toolCallId=lc_3 content=page",
		},
	}, {
		name: "progress is the run's state",
		msgs: []*protocol.Message{root,
			msg(protocol.TypeTaskProgress, "p1", "t1", "", ken, `{"pct":10}`),
			msg(protocol.TypeTaskProgress, "p2", "t2", "t1", rita, `"half"`),
			msg(protocol.TypeTaskProgress, "p3", "t1", "", ken, `{"pct":90}`)},
		want: []string{
			"RUN_STARTED threadId=thread-x runId=run-x",
			`STATE_SNAPSHOT snapshot={"tasks":{"t1":{"agent_id":"agent:ken","progress":{"pct":10}}}}`,
			`STATE_SNAPSHOT snapshot={"tasks":{"t1":{"agent_id":"agent:ken","progress":{"pct":10}},"t2":{"agent_id":"agent:rita","progress":"half"}}}`,
			`STATE_SNAPSHOT snapshot={"tasks":{"t1":{"agent_id":"agent:ken","progress":{"pct":90}},"t2":{"agent_id":"agent:rita","progress":"half"}}}`,
		},
	}, {
		name: "chat, extensions, registry events",
		msgs: []*protocol.Message{root,
			msg(protocol.TypeChatMessage, "h1", "t1", "", ui, `{"text":"faster please"}`),
			msg(protocol.TypeChatMessage, "h2", "t1", "", ken, `{"content":"on it"}`),
			msg(protocol.TypeChatSystem, "h3", "t1", "", orch, `"maintenance at noon"`),
			msg(protocol.TypeChatMessage, "h4", "t1", "", ken, `{}`),
			msg(protocol.TypeAgentHeartbeat, "h5", "t1", "", ken, `{"status":"ok"}`),
			msg("x.acme.note", "h6", "t1", "", ken, `[1,2]`),
			msg(protocol.TypeRoutingFailure, "h7", "t1", "", orch, `{"code":"NO_MATCH"}`)},
		want: []string{
			"RUN_STARTED threadId=thread-x runId=run-x",
			"TEXT_MESSAGE_START messageId=h1 role=user name=agent:ui",
			"TEXT_MESSAGE_CONTENT messageId=h1 delta=faster please",
			"TEXT_MESSAGE_END messageId=h1",
			"TEXT_MESSAGE_START messageId=h2 role=assistant name=agent:ken",
			"TEXT_MESSAGE_CONTENT messageId=h2 delta=on it",
			"TEXT_MESSAGE_END messageId=h2",
			"TEXT_MESSAGE_START messageId=h3 role=system name=agent:orchestrator",
			"TEXT_MESSAGE_CONTENT messageId=h3 delta=maintenance at noon",
			"TEXT_MESSAGE_END messageId=h3",
			"TEXT_MESSAGE_START messageId=h4 role=assistant name=agent:ken",
			"TEXT_MESSAGE_CONTENT messageId=h4 delta={}",
			"TEXT_MESSAGE_END messageId=h4",
			"CUSTOM name=clutch.x.acme.note value=[1,2]",
			`CUSTOM name=clutch.routing.failure value={"code":"NO_MATCH"}`,
		},
	}, {
		name: "nothing after the end, redeliveries ignored",
		msgs: []*protocol.Message{root, msg(protocol.TypeTaskRequest, "m1b", "t1", "", ui, `{"text":"hi"}`),
			msg(protocol.TypeTaskResult, "m3", "t1", "", ken, `""`),
			msg(protocol.TypeChatMessage, "m4", "t1", "", ken, `"late"`)},
		want: []string{"RUN_STARTED threadId=thread-x runId=run-x", "RUN_FINISHED threadId=thread-x runId=run-x result="},
		done: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, done := translate(t, tc.msgs...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if done != tc.done {
				t.Errorf("done %v, want %v", done, tc.done)
			}
		})
	}
}

// TestEventJSON pins the encoding of each type: the fields of the AG-UI core
// schema, required ones even when empty, one line.
func TestEventJSON(t *testing.T) {
	for _, tc := range []struct {
		e    agui.Event
		want string
	}{
		{agui.Event{Type: agui.RunStarted, ThreadID: "t", RunID: "r", Timestamp: 5}, `{"type":"RUN_STARTED","timestamp":5,"threadId":"t","runId":"r"}`},
		{agui.Event{Type: agui.RunFinished, ThreadID: "t", RunID: "r"}, `{"type":"RUN_FINISHED","threadId":"t","runId":"r"}`},
		{agui.Event{Type: agui.RunFinished, ThreadID: "t", RunID: "r", Result: json.RawMessage("{\n \"a\": [1, 2]\n}")}, `{"type":"RUN_FINISHED","threadId":"t","runId":"r","result":{"a":[1,2]}}`},
		{agui.Event{Type: agui.RunError, Message: "m"}, `{"type":"RUN_ERROR","message":"m"}`},
		{agui.Event{Type: agui.StepStarted, StepName: "s"}, `{"type":"STEP_STARTED","stepName":"s"}`},
		{agui.Event{Type: agui.TextMessageStart, MessageID: "m", Role: "assistant"}, `{"type":"TEXT_MESSAGE_START","messageId":"m","role":"assistant"}`},
		{agui.Event{Type: agui.TextMessageContent, MessageID: "m", Delta: "a\"<\n\u2028"}, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"a\"<\n` + "\u2028" + `"}`},
		{agui.Event{Type: agui.ToolCallStart, ToolCallID: "c", ToolCallName: "n", ParentMessageID: "p"}, `{"type":"TOOL_CALL_START","toolCallId":"c","toolCallName":"n","parentMessageId":"p"}`},
		{agui.Event{Type: agui.ToolCallResult, MessageID: "m", ToolCallID: "c"}, `{"type":"TOOL_CALL_RESULT","messageId":"m","toolCallId":"c","content":"","role":"tool"}`},
		{agui.Event{Type: agui.StateSnapshot, Snapshot: json.RawMessage(`not json`)}, `{"type":"STATE_SNAPSHOT","snapshot":null}`},
		{agui.Event{Type: agui.Custom, Name: "n"}, `{"type":"CUSTOM","name":"n","value":null}`},
		{agui.Event{Type: agui.TextMessageContent, MessageID: "m", Delta: "bad \xff utf8"}, `{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"bad ` + "\ufffd" + ` utf8"}`},
	} {
		b := tc.e.AppendJSON(nil)
		if string(b) != tc.want || !json.Valid(b) {
			t.Errorf("%s:\n got %s\nwant %s", tc.e.Type, b, tc.want)
		}
	}
}

func TestDefaultText(t *testing.T) {
	for payload, want := range map[string]string{
		`"plain"`:                          "plain",
		`"esc\"aped\n"`:                    "esc\"aped\n",
		`{"text":"t","content":"c"}`:       "t",
		`{"content":"c","message":"m"}`:    "c",
		`{"summary":"s","n":1}`:            "s",
		`{"text":5,"message":"m"}`:         "m",
		`{"a": [1, 2]}`:                    `{"a":[1,2]}`,
		`null`:                             "",
		``:                                 "",
		`42`:                               "42",
		`{"text":"","summary":"fallback"}`: "fallback",
	} {
		if got := agui.DefaultText(&protocol.Message{Payload: json.RawMessage(payload)}); got != want {
			t.Errorf("DefaultText(%s) = %q, want %q", payload, got, want)
		}
	}
}

// TestToolCallArgsAnyLayout: a tool.call's members are read whatever
// their lengths; a member name is not lost when reading its value moves
// the decoder's buffer (as a long call_id before args once did).
func TestToolCallArgsAnyLayout(t *testing.T) {
	tr := agui.NewTranslator("thread-x", "run-x", nil)
	for n := range 700 {
		pad := strings.Repeat("p", n)
		m := msg(protocol.TypeToolCall, "c"+strconv.Itoa(n), "t1", "", ken,
			`{"call_id":"c`+strconv.Itoa(n)+`","pad":"`+pad+`","args":{"q":"nordic payments"},"name":"search","tool":"mcp:search"}`)
		var args, name string
		for _, e := range tr.Translate(nil, uint64(n+1), m) {
			switch e.Type {
			case agui.ToolCallArgs:
				args = e.Delta
			case agui.ToolCallStart:
				name = e.ToolCallName
			}
		}
		if args != `{"q":"nordic payments"}` || name != "search" {
			t.Fatalf("padding %d: args %q name %q", n, args, name)
		}
	}
}
