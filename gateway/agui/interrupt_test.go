package agui_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// TestJSClientInterrupt: the real HttpAgent sees a run that asks end with
// RUN_FINISHED and an interrupt outcome carrying the question; its next
// run, with a resume entry, answers it as the caller, and the task goes on
// in a new AG-UI run that ends with the result.
func TestJSClientInterrupt(t *testing.T) {
	e := newEnv(t, nil)
	runs := runsJS(t, "interrupt", e.hs.URL, testKey, "thread-ask", "run-ask-1", "ask:payments", "run-ask-2", `"fintech"`)
	if len(runs) != 2 {
		t.Fatalf("%d runs", len(runs))
	}
	first, second := runs[0], runs[1]
	if first.Failed != "" || second.Failed != "" {
		t.Fatalf("a run failed in the client: %q %q", first.Failed, second.Failed)
	}
	run := e.runID(&auth.Caller{AgentID: tester}, "run-ask-1")
	task := runIDs(t, e, run).task
	qid := protocol.QuestionID(task, 0)
	step := "agent:worker/" + task

	got := summaries(first.Events)
	want := []string{
		"RUN_STARTED threadId=thread-ask runId=run-ask-1",
		`CUSTOM name=clutch.routing.decision value={"candidates":["agent:worker"],"considered":1,"eligible":1,"explanation":"Sent to worker, the named recipient.","reason":"explicit recipient, only eligible candidate","scores":{"agent:worker":1},"selected":"agent:worker"}`,
		"STEP_STARTED stepName=" + step,
		"STEP_FINISHED stepName=" + step,
		"RUN_FINISHED threadId=thread-ask runId=run-ask-1",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("first run (-want +got):\n%s", diff)
	}
	outcome, _ := json.Marshal(first.Events[len(first.Events)-1]["outcome"])
	var o struct {
		Type       string `json:"type"`
		Interrupts []struct {
			ID             string         `json:"id"`
			Reason         string         `json:"reason"`
			Message        string         `json:"message"`
			ResponseSchema map[string]any `json:"responseSchema"`
		} `json:"interrupts"`
	}
	if err := json.Unmarshal(outcome, &o); err != nil || o.Type != "interrupt" || len(o.Interrupts) != 1 {
		t.Fatalf("outcome %s (%v)", outcome, err)
	}
	in := o.Interrupts[0]
	if in.ID != qid || in.Reason != "question" || in.Message != "Which market?" ||
		!cmp.Equal(in.ResponseSchema, map[string]any{"type": "string", "enum": []any{"fintech", "health"}}) {
		t.Errorf("interrupt %+v", in)
	}
	if len(first.Done.Interrupts) != 1 || first.Done.Interrupts[0]["id"] != qid {
		t.Errorf("the client's pending interrupts: %v", first.Done.Interrupts)
	}

	result := runIDs(t, e, run).result
	want = []string{
		"RUN_STARTED threadId=thread-ask runId=run-ask-2",
		`CUSTOM name=clutch.routing.decision value={"candidates":["agent:worker"],"considered":1,"eligible":1,"explanation":"Sent to worker, the named recipient.","reason":"explicit recipient, only eligible candidate","scores":{"agent:worker":1},"selected":"agent:worker"}`,
		"STEP_STARTED stepName=" + step,
		"TEXT_MESSAGE_START messageId=" + result + " role=assistant name=agent:worker",
		"TEXT_MESSAGE_CONTENT messageId=" + result + " delta=payments in fintech",
		"TEXT_MESSAGE_END messageId=" + result,
		"STEP_FINISHED stepName=" + step,
		"RUN_FINISHED threadId=thread-ask runId=run-ask-2" + ` result={"text":"payments in fintech"}`,
	}
	if diff := cmp.Diff(want, summaries(second.Events)); diff != "" {
		t.Errorf("second run (-want +got):\n%s", diff)
	}
	if len(second.Done.Interrupts) != 0 {
		t.Errorf("interrupts pending after the answer: %v", second.Done.Interrupts)
	}
	// One answer, stamped with the caller, in the same Clutch run.
	answers := e.Events(store.Query{RunID: run, TypePrefix: "task.answer"})
	if len(answers) != 1 || answers[0].From.AgentID != tester {
		t.Fatalf("answers %v", answers)
	}
	a, err := protocol.DecodePayload[protocol.Answer](answers[0])
	if err != nil || a.QuestionID != qid || string(a.Value) != `"fintech"` {
		t.Errorf("answer %s", answers[0].Payload)
	}
}

// resumeInput is a RunAgentInput that answers interrupt id with payload
// (status "resolved" unless status is given).
func resumeInput(thread, run, id, status, payload string) string {
	if status == "" {
		status = "resolved"
	}
	entry := map[string]any{"interruptId": id, "status": status}
	if payload != "" {
		entry["payload"] = json.RawMessage(payload)
	}
	b, _ := json.Marshal(map[string]any{
		"threadId": thread, "runId": run, "messages": []any{map[string]any{"id": "m1", "role": "user", "content": "ask:x"}},
		"resume": []any{entry},
	})
	return string(b)
}

// TestResumeRefused: a resume entry for another caller's question, for no
// question, with a value the question refuses, twice, or of an unknown
// status: refused with nothing stored, and the task still waits (or, for
// the second answer, has run on once).
func TestResumeRefused(t *testing.T) {
	e := newEnv(t, nil)
	resp := e.do(t, http.MethodPost, "/", testKey, input("thr", "run-1", "ask:cards"))
	frames := readSSE(t, resp.Body)
	resp.Body.Close()
	last := frames[len(frames)-1].Event
	if last["type"] != "RUN_FINISHED" || last["outcome"] == nil {
		t.Fatalf("the run did not end with an interrupt: %v", last)
	}
	task := runIDs(t, e, e.runID(&auth.Caller{AgentID: tester}, "run-1")).task
	qid := protocol.QuestionID(task, 0)
	answers := func() int { return len(e.Events(store.Query{TaskID: task, TypePrefix: "task.answer"})) }

	for _, c := range []struct {
		name, key, body string
		status          int
		code            protocol.Code
	}{
		{"another tenant", otherKey, resumeInput("thr", "r2", qid, "", `"fintech"`), http.StatusNotFound, protocol.CodeNotFound},
		{"another thread", testKey, resumeInput("thr-other", "r2", qid, "", `"fintech"`), http.StatusNotFound, protocol.CodeNotFound},
		{"no such question", testKey, resumeInput("thr", "r2", task+".q7", "", `"fintech"`), http.StatusNotFound, protocol.CodeNotFound},
		{"not a choice", testKey, resumeInput("thr", "r2", qid, "", `"retail"`), http.StatusBadRequest, protocol.CodeInvalidField},
		{"no payload", testKey, resumeInput("thr", "r2", qid, "", ""), http.StatusBadRequest, protocol.CodeMissingField},
		{"unknown status", testKey, resumeInput("thr", "r2", qid, "later", `"fintech"`), http.StatusBadRequest, protocol.CodeInvalidField},
		{"other tenant cancels", otherKey, resumeInput("thr", "r2", qid, "cancelled", ""), http.StatusNotFound, protocol.CodeNotFound},
	} {
		resp := e.do(t, http.MethodPost, "/", c.key, c.body)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status || !strings.Contains(string(body), `"code":"`+string(c.code)+`"`) {
			t.Errorf("%s: %d %s, want %d %s", c.name, resp.StatusCode, body, c.status, c.code)
		}
		if n := answers(); n != 0 {
			t.Fatalf("%s: %d answers stored", c.name, n)
		}
	}
	if n := e.Router.Waiting(); n != 1 {
		t.Fatalf("Waiting() = %d after the refusals", n)
	}

	resp = e.do(t, http.MethodPost, "/", testKey, resumeInput("thr", "r2", qid, "", `"health"`))
	frames = readSSE(t, resp.Body)
	resp.Body.Close()
	if last := frames[len(frames)-1].Event; last["type"] != "RUN_FINISHED" || summary(last) != `RUN_FINISHED threadId=thr runId=r2 result={"text":"cards in health"}` {
		t.Errorf("resumed run ended %v", last)
	}
	resp = e.do(t, http.MethodPost, "/", testKey, resumeInput("thr", "r3", qid, "", `"fintech"`))
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || answers() != 1 {
		t.Errorf("a second answer: %d %s, %d answers", resp.StatusCode, body, answers())
	}
}

// TestResumeCancelled: a resume entry of status "cancelled" ends the wait:
// the task is cancelled and the new AG-UI run says so.
func TestResumeCancelled(t *testing.T) {
	e := newEnv(t, nil)
	resp := e.do(t, http.MethodPost, "/", testKey, input("thr", "run-1", "ask:cards"))
	readSSE(t, resp.Body)
	resp.Body.Close()
	task := runIDs(t, e, e.runID(&auth.Caller{AgentID: tester}, "run-1")).task
	resp = e.do(t, http.MethodPost, "/", testKey, resumeInput("thr", "run-2", protocol.QuestionID(task, 0), "cancelled", ""))
	frames := readSSE(t, resp.Body)
	resp.Body.Close()
	var got []string
	for _, f := range frames {
		got = append(got, summary(f.Event))
	}
	want := []string{"RUN_STARTED threadId=thr runId=run-2", "RUN_ERROR code=CANCELLED message=the person cancelled " + protocol.QuestionID(task, 0)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if n := e.Router.Waiting(); n != 0 {
		t.Errorf("Waiting() = %d", n)
	}
}
