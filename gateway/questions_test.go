package gateway

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/internal/backends"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

// TestQuestions: a task that asks shows in GET /v1/questions for whoever
// may answer or read it; the answer goes through POST
// /v1/questions/{id}/answer, stamped with the caller, and the task runs
// on. Another caller neither sees nor answers it (404, as for a question
// that does not exist); a second answer is 409. On every store.
func TestQuestions(t *testing.T) {
	backends.Each(t, func(t *testing.T, st store.Store) {
		e := newEnv(t, &envOptions{store: func(testing.TB) store.Store { return st }})
		card := &protocol.AgentCard{V: protocol.Version, AgentID: "agent:drafter", Capabilities: []protocol.Capability{{ID: "skill:draft"}}}
		if err := e.r.Register(context.Background(), card, func(ctx context.Context, t *router.Task) (*router.Result, error) {
			market, err := router.AskAs[string](ctx, t, protocol.Question{Text: "Which market?", Choices: []string{"fintech", "health"}})
			if err != nil {
				return nil, err
			}
			ok, err := router.AskAs[protocol.Approval](ctx, t, protocol.Question{Kind: protocol.QuestionApproval, Text: "Publish?",
				Who: &protocol.Answerers{Agents: []string{"agent:bob"}}})
			if err != nil {
				return nil, err
			}
			return &router.Result{Payload: map[string]string{"market": market, "decision": ok.Decision}}, nil
		}); err != nil {
			t.Fatal(err)
		}
		acc := e.submit(keyAlice, `{"type":"task.request","requires":["skill:draft"],"payload":{}}`)
		q := e.nextQuestion(keyAlice, acc.TaskID)
		if q.Question.Text != "Which market?" || !q.MayAnswer || q.Requester != "agent:alice" || q.AskedBy != "agent:drafter" {
			t.Fatalf("alice's question: %+v", q)
		}
		var tree struct {
			Tasks []struct {
				Status string `json:"status"`
			} `json:"tasks"`
		}
		e.getJSON("/v1/tasks/"+acc.TaskID+"/tree", keyAlice, 200, &tree)
		if len(tree.Tasks) != 1 || tree.Tasks[0].Status != store.StatusWaiting {
			t.Errorf("a waiting task's tree: %+v", tree)
		}
		var list QuestionList
		e.getJSON("/v1/questions", keyBob, 200, &list)
		if len(list.Questions) != 0 {
			t.Fatalf("bob sees alice's question: %+v", list)
		}
		e.getJSON("/v1/questions", keyAudit, 200, &list)
		if len(list.Questions) != 1 || list.Questions[0].MayAnswer {
			t.Fatalf("read:all sees it, may not answer it: %+v", list)
		}
		path := "/v1/questions/" + q.Question.ID + "/answer"
		for _, tc := range []struct {
			key, body string
			status    int
		}{
			{keyBob, `{"value":"fintech"}`, 404},   // not his to see or answer
			{keyAudit, `{"value":"fintech"}`, 403}, // sees it, may not answer
			{keyAlice, `{"value":"retail"}`, 400},  // not a choice
			{keyAlice, `{"answer":"fintech"}`, 400},
			{keyAlice, `not json`, 400},
			{keyNone, `{"value":"fintech"}`, 404},
		} {
			if status, body := e.do("POST", path, tc.key, tc.body); status != tc.status {
				t.Errorf("%s %s: %d %s, want %d", tc.key[:5], tc.body, status, body, tc.status)
			}
		}
		if status, body := e.do("POST", "/v1/questions/task_nope.q0/answer", keyBob, `{"value":"x"}`); status != 404 ||
			!strings.Contains(string(body), "no question task_nope.q0 waits") {
			t.Errorf("a question that does not exist: %d %s", status, body)
		}
		if status, body := e.do("POST", path, keyAlice, `{"value":"fintech"}`); status != 200 {
			t.Fatalf("alice answers: %d %s", status, body)
		}
		if status, _ := e.do("POST", path, keyAlice, `{"value":"health"}`); status != 409 {
			t.Errorf("a second answer: %d", status)
		}

		// The approval names bob: he sees it among his and answers it,
		// though the task is alice's.
		q2 := e.nextQuestion(keyBob, acc.TaskID)
		if q2.Question.Kind != protocol.QuestionApproval || !q2.MayAnswer {
			t.Fatalf("bob's question: %+v", q2)
		}
		if status, _ := e.do("POST", "/v1/questions/"+q2.Question.ID+"/answer", keyAlice, `{"value":{"decision":"approve"}}`); status != 403 {
			t.Errorf("alice may not approve: %d", status)
		}
		if status, body := e.do("POST", "/v1/questions/"+q2.Question.ID+"/answer", keyBob, `{"value":{"decision":"approve"}}`); status != 200 {
			t.Fatalf("bob approves: %d %s", status, body)
		}
		e.waitEnded(acc.TaskID)
		var res struct{ Market, Decision string }
		for ev, err := range st.Read(context.Background(), store.Query{TaskID: acc.TaskID, TypePrefix: "task."}) {
			if err != nil {
				t.Fatal(err)
			}
			m, _ := ev.Message()
			switch m.Type {
			case protocol.TypeTaskAnswer:
				want := map[string]string{q.Question.ID: "agent:alice", q2.Question.ID: "agent:bob"}
				var a protocol.Answer
				_ = json.Unmarshal(m.Payload, &a)
				if want[a.QuestionID] != m.From.AgentID {
					t.Errorf("answer to %s from %s", a.QuestionID, m.From.AgentID)
				}
			case protocol.TypeTaskResult:
				_ = json.Unmarshal(m.Payload, &res)
			}
		}
		if res.Market != "fintech" || res.Decision != "approve" {
			t.Errorf("result %+v", res)
		}
	})
}

// nextQuestion waits until the task stops to ask, and returns the
// question as the caller's list shows it.
func (e *env) nextQuestion(key, taskID string) WaitingQuestion {
	e.t.Helper()
	// A redelivery of the stored request follows the task: its handle
	// resolves when the task waits.
	ctx := context.Background()
	var req *protocol.Message
	for ev, err := range e.st.Read(ctx, store.Query{TaskID: taskID, TypePrefix: "task.request", Limit: 1}) {
		if err != nil {
			e.t.Fatal(err)
		}
		req, _ = ev.Message()
	}
	h, err := e.r.Submit(ctx, req)
	if err != nil {
		e.t.Fatal(err)
	}
	out, _ := h.Wait(ctx)
	if out.Question == nil {
		e.t.Fatalf("task %s did not ask: %s", taskID, out.Type)
	}
	var list QuestionList
	e.getJSON("/v1/questions", key, 200, &list)
	for _, q := range list.Questions {
		if q.Question.ID == out.Question.ID {
			return q
		}
	}
	e.t.Fatalf("%s is not listed for %s: %+v", out.Question.ID, key[:5], list)
	return WaitingQuestion{}
}
