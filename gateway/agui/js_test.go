package agui_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/gateway/agui"
	"github.com/clutchprotocol/clutch/internal/nodepeer"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// The AG-UI client lives in testdata/client (@ag-ui/client 1.0.0, pinned,
// lockfile committed); `make deps` installs it with npm ci.
const clientDir = "testdata/client"

// jsOutput is what run.mjs printed for one run: the events the HttpAgent
// received and how its run ended.
type jsOutput struct {
	Events []map[string]any
	Done   *struct {
		Result      any              `json:"result"`
		NewMessages []map[string]any `json:"newMessages"`
		State       any              `json:"state"`
		Interrupts  []map[string]any `json:"interrupts"`
	}
	Failed string
}

// runJS runs testdata/client/run.mjs with args and returns its one run.
func runJS(t *testing.T, args ...string) jsOutput {
	t.Helper()
	runs := runsJS(t, args...)
	if len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}
	return runs[0]
}

// runsJS runs testdata/client/run.mjs with args and parses its output, one
// jsOutput per run.
func runsJS(t *testing.T, args ...string) []jsOutput {
	t.Helper()
	node := nodepeer.Need(t, "the AG-UI client (@ag-ui/client)", filepath.Join(clientDir, "node_modules", "@ag-ui", "client", "package.json"))
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"run.mjs"}, args...)...)
	cmd.Dir = clientDir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run.mjs %v: %v\n%s", args, err, stderr.String())
	}
	var runs []jsOutput
	var out jsOutput
	sc := bufio.NewScanner(&stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Event  map[string]any `json:"event"`
			Done   json.RawMessage
			Failed *string
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("run.mjs printed %q: %v", sc.Text(), err)
		}
		switch {
		case line.Event != nil:
			out.Events = append(out.Events, line.Event)
		case line.Done != nil:
			if err := json.Unmarshal(line.Done, &out.Done); err != nil {
				t.Fatal(err)
			}
			runs, out = append(runs, out), jsOutput{}
		case line.Failed != nil:
			out.Failed = *line.Failed
			runs, out = append(runs, out), jsOutput{}
		}
	}
	if len(runs) == 0 || out.Events != nil {
		t.Fatalf("run.mjs did not finish:\n%s\n%s", stdout.String(), stderr.String())
	}
	return runs
}

// ids are the ids of a worker run, read back from the store.
type ids struct {
	task, call, toolResult, result string
}

func runIDs(t *testing.T, e *testEnv, run string) ids {
	t.Helper()
	var got ids
	for _, m := range e.Events(store.Query{RunID: run}) {
		switch m.Type {
		case protocol.TypeTaskRequest:
			got.task = m.TaskID
		case protocol.TypeToolCall:
			got.call = m.ID
		case protocol.TypeToolResult:
			got.toolResult = m.ID
		case protocol.TypeTaskResult:
			got.result = m.ID
		}
	}
	return got
}

// workerEvents is the exact AG-UI event sequence of a worker run (see
// worker): the run, the routing decision, the agent's step with its
// progress, tool call and answer.
func workerEvents(thread, run, text string, id ids) []string {
	step := "agent:worker/" + id.task
	return []string{
		"RUN_STARTED threadId=" + thread + " runId=" + run,
		`CUSTOM name=clutch.routing.decision value={"candidates":["agent:worker"],"considered":1,"eligible":1,"explanation":"Sent to worker, the named recipient.","reason":"explicit recipient, only eligible candidate","scores":{"agent:worker":1},"selected":"agent:worker"}`,
		"STEP_STARTED stepName=" + step,
		`STATE_SNAPSHOT snapshot={"tasks":{"` + id.task + `":{"agent_id":"agent:worker","progress":{"pct":50,"step":"searching"}}}}`,
		"TOOL_CALL_START toolCallId=" + id.call + " toolCallName=search",
		`TOOL_CALL_ARGS delta={"q":"` + text + `"} toolCallId=` + id.call,
		"TOOL_CALL_END toolCallId=" + id.call,
		"TOOL_CALL_RESULT messageId=" + id.toolResult + " role=tool toolCallId=" + id.call + ` content={"hits":3}`,
		"TEXT_MESSAGE_START messageId=" + id.result + " role=assistant name=agent:worker",
		"TEXT_MESSAGE_CONTENT messageId=" + id.result + " delta=done: " + text,
		"TEXT_MESSAGE_END messageId=" + id.result,
		"STEP_FINISHED stepName=" + step,
		"RUN_FINISHED threadId=" + thread + " runId=" + run + ` result={"text":"done: ` + text + `"}`,
	}
}

func summaries(evs []map[string]any) []string {
	var out []string
	for _, e := range evs {
		out = append(out, summary(e))
	}
	return out
}

// TestJSClientRun: the real HttpAgent POSTs a RunAgentInput; the worker
// reports progress, calls a tool and answers; the client receives, parses,
// verifies and applies exactly the expected events, and its run ends with
// the result and the assistant message.
func TestJSClientRun(t *testing.T) {
	e := newEnv(t, nil)
	out := runJS(t, "run", e.hs.URL, testKey, "thread-js", "run-js", "nordic payments")
	if out.Failed != "" {
		t.Fatalf("the run failed in the client: %s", out.Failed)
	}
	run := e.runID(&auth.Caller{AgentID: tester}, "run-js")
	want := workerEvents("thread-js", "run-js", "nordic payments", runIDs(t, e, run))
	if diff := cmp.Diff(want, summaries(out.Events)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	for _, ev := range out.Events {
		if ts, ok := ev["timestamp"].(float64); !ok || ts <= 0 {
			t.Errorf("event without timestamp: %v", ev)
		}
	}
	// The client's own bookkeeping: the assistant message, and the tool
	// call with its result.
	var roles []string
	for _, m := range out.Done.NewMessages {
		roles = append(roles, m["role"].(string))
	}
	if got := strings.Join(roles, ","); got != "assistant,tool,assistant" {
		t.Errorf("new messages: %s (%v)", got, out.Done.NewMessages)
	}
	last := out.Done.NewMessages[len(out.Done.NewMessages)-1]
	if last["content"] != "done: nordic payments" {
		t.Errorf("last message %v", last)
	}
	if st, _ := json.Marshal(out.Done.State); !strings.Contains(string(st), `"step":"searching"`) {
		t.Errorf("state %s", st)
	}

	// What was submitted: the caller's request in a thread scoped to it,
	// with the client's text, state, context and forwardedProps.
	req := e.Events(store.Query{RunID: run, TypePrefix: "task.request"})[0]
	if req.From.AgentID != tester || req.ThreadID != e.threadID(&auth.Caller{AgentID: tester}, "thread-js") || req.IdempotencyKey != "run-js" ||
		req.Meta[agui.MetaThreadID] != "thread-js" || req.Meta[agui.MetaRunID] != "run-js" || req.PayloadType != agui.PayloadInput {
		t.Errorf("request %s", req.Raw())
	}
	p, err := protocol.DecodePayload[agui.InputPayload](req)
	if err != nil || p.Text != "nordic payments" || p.MessageID != "user-1" || string(p.State) != `{"from":"client"}` ||
		string(p.ForwardedProps) != `{"locale":"en"}` || len(p.Context) != 1 || p.Context[0].Value != "UTC" {
		t.Errorf("payload %s (%v)", req.Payload, err)
	}

	// Watching the finished run replays the same events to the same client.
	watched := runJS(t, "watch", e.hs.URL, testKey, run)
	if watched.Failed != "" {
		t.Fatalf("watch failed: %s", watched.Failed)
	}
	if diff := cmp.Diff(want, summaries(watched.Events)); diff != "" {
		t.Errorf("watched events (-want +got):\n%s", diff)
	}
}

// TestJSClientConversation: two turns of one AG-UI thread. The second
// RunAgentInput carries the whole conversation back (the first user
// message, the assistant message with its toolCalls, the tool message);
// the handler takes its last user message, and both runs land in one
// Clutch thread.
func TestJSClientConversation(t *testing.T) {
	e := newEnv(t, nil)
	runs := runsJS(t, "run", e.hs.URL, testKey, "thread-conv", "run-a", "first question", "run-b", "second question")
	if len(runs) != 2 {
		t.Fatalf("%d runs", len(runs))
	}
	c := &auth.Caller{AgentID: tester}
	for i, tc := range []struct{ run, text string }{{"run-a", "first question"}, {"run-b", "second question"}} {
		if runs[i].Failed != "" {
			t.Fatalf("run %s failed: %s", tc.run, runs[i].Failed)
		}
		want := workerEvents("thread-conv", tc.run, tc.text, runIDs(t, e, e.runID(c, tc.run)))
		if diff := cmp.Diff(want, summaries(runs[i].Events)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.run, diff)
		}
	}
	thread := e.threadID(c, "thread-conv")
	var texts []string
	for _, m := range e.Events(store.Query{ThreadID: thread, TypePrefix: "task.request"}) {
		p, err := protocol.DecodePayload[agui.InputPayload](m)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, p.MessageID+":"+p.Text)
	}
	if got := strings.Join(texts, ","); got != "user-1:first question,user-2:second question" {
		t.Errorf("requests in the thread: %s", got)
	}
}

// TestJSClientDelegation: a delegated subtask reaches the client as a tool
// call with its own step, which the client's verifier and state accept.
func TestJSClientDelegation(t *testing.T) {
	e := newEnv(t, nil)
	out := runJS(t, "run", e.hs.URL, testKey, "thread-js", "run-del", "delegate:check")
	if out.Failed != "" {
		t.Fatalf("the run failed in the client: %s", out.Failed)
	}
	var types []string
	for _, ev := range out.Events {
		types = append(types, ev["type"].(string))
	}
	if got := strings.Join(types, " "); got != "RUN_STARTED CUSTOM STEP_STARTED TOOL_CALL_START TOOL_CALL_ARGS TOOL_CALL_END CUSTOM STEP_STARTED TOOL_CALL_RESULT STEP_FINISHED TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END STEP_FINISHED RUN_FINISHED" {
		t.Errorf("types %s", got)
	}
	var roles []string
	for _, m := range out.Done.NewMessages {
		roles = append(roles, m["role"].(string))
	}
	if got := strings.Join(roles, ","); got != "assistant,tool,assistant" {
		t.Errorf("new messages %s: %v", got, out.Done.NewMessages)
	}
	if tool := out.Done.NewMessages[1]; tool["content"] != "helped: check" {
		t.Errorf("tool message %v", tool)
	}
}

// TestJSClientRunError: a failed task ends the client's run with
// RUN_ERROR, which the client reports as it does for any agent.
func TestJSClientRunError(t *testing.T) {
	e := newEnv(t, nil)
	out := runJS(t, "run", e.hs.URL, testKey, "thread-js", "run-fail", "fail:no index")
	run := e.runID(&auth.Caller{AgentID: tester}, "run-fail")
	id := runIDs(t, e, run)
	want := []string{
		"RUN_STARTED threadId=thread-js runId=run-fail",
		`CUSTOM name=clutch.routing.decision value={"candidates":["agent:worker"],"considered":1,"eligible":1,"explanation":"Sent to worker, the named recipient.","reason":"explicit recipient, only eligible candidate","scores":{"agent:worker":1},"selected":"agent:worker"}`,
		"STEP_STARTED stepName=agent:worker/" + id.task,
		"STEP_FINISHED stepName=agent:worker/" + id.task,
		"RUN_ERROR code=TOOL_FAILED message=no index",
	}
	if diff := cmp.Diff(want, summaries(out.Events)); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	// The client ends the run without a result or a new message.
	if out.Done == nil || out.Done.Result != nil || len(out.Done.NewMessages) != 0 {
		t.Errorf("client outcome %+v", out)
	}
}

// TestJSClientRefused: the client sees the handler's refusals as HTTP
// errors (no key: 401).
func TestJSClientRefused(t *testing.T) {
	e := newEnv(t, nil)
	out := runJS(t, "run", e.hs.URL, "wrong-key-0123456789abcdef", "t", "r", "hello")
	if !strings.Contains(out.Failed, "401") || len(out.Events) != 0 {
		t.Errorf("got %+v", out)
	}
}
