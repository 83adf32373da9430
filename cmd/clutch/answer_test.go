package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

// TestWaitingAndAnswer: a task that asks shows in 'clutch waiting'; 'clutch
// answer' answers it through the gateway, as the key's caller, and the
// task runs on; an approval is answered with --edit; a refused value and a
// bad command line say why.
func TestWaitingAndAnswer(t *testing.T) {
	s := newServed(t)
	ctx := context.Background()
	card := &protocol.AgentCard{V: protocol.Version, AgentID: "agent:drafter", Capabilities: []protocol.Capability{{ID: "skill:draft"}}}
	if err := s.r.Register(ctx, card, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		market, err := router.AskAs[string](ctx, t, protocol.Question{Text: "Which market?", Choices: []string{"fintech", "health"},
			Who: &protocol.Answerers{Scopes: []string{"admin"}}})
		if err != nil {
			return nil, err
		}
		args, err := router.Approve(ctx, t, "tool mail.send", map[string]string{"to": "all@example.com"}, &protocol.Answerers{Agents: []string{"agent:operator"}})
		if err != nil {
			return nil, err
		}
		return &router.Result{Payload: map[string]any{"market": market, "mail": json.RawMessage(args)}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	req, err := s.r.NewRequest("agent:ui", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Requires = []string{"skill:draft"}
	h, err := s.r.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := h.Wait(ctx)
	q := out.Question.ID

	var stdout, stderr bytes.Buffer
	if code := run(s.args("waiting"), &stdout, &stderr); code != 0 {
		t.Fatalf("waiting: %d %s", code, stderr.String())
	}
	if got := stdout.String(); !strings.Contains(got, q) || !strings.Contains(got, "Which market? [fintech | health]") || !strings.Contains(got, "yes") {
		t.Fatalf("waiting:\n%s", got)
	}

	stdout.Reset()
	stderr.Reset()
	if code := run(s.args("answer", q, "retail"), &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "choices") {
		t.Errorf("a value that is not a choice: %d %s", code, stderr.String())
	}
	if code := run(s.args("answer", q), &stdout, &stderr); code != 2 {
		t.Errorf("no value: %d", code)
	}
	if code := run(s.args("answer", q, "x", "--approve"), &stdout, &stderr); code != 2 {
		t.Errorf("a value and --approve: %d", code)
	}
	stdout.Reset()
	if code := run(s.args("answer", q, "fintech"), &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "answered "+q) {
		t.Fatalf("answer: %d %s %s", code, stdout.String(), stderr.String())
	}

	// The approval comes next: once its question is in the log it waits
	// (and is listed). Edit its arguments.
	asked := nthEvent(t, s.st, req.TaskID, "task.question", 2)
	var aq protocol.Question
	if err := json.Unmarshal(asked.Payload, &aq); err != nil || aq.Kind != protocol.QuestionApproval {
		t.Fatalf("the approval: %s", asked.Payload)
	}
	stdout.Reset()
	if code := run(s.args("answer", aq.ID, "--edit", `{"to":"team@example.com"}`), &stdout, &stderr); code != 0 {
		t.Fatalf("answer --edit: %d %s", code, stderr.String())
	}
	res := nthEvent(t, s.st, req.TaskID, "task.result", 1)
	if string(res.Payload) != `{"mail":{"to":"team@example.com"},"market":"fintech"}` {
		t.Fatalf("result %s", res.Payload)
	}
	stdout.Reset()
	if code := run(s.args("waiting"), &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "no question waits") {
		t.Errorf("waiting at the end: %s", stdout.String())
	}
}

// nthEvent follows the store until the task's n-th event of type typ is
// stored, and returns it.
func nthEvent(t *testing.T, st store.Store, taskID, typ string, n int) *protocol.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ev, err := range st.Follow(ctx, store.Query{TaskID: taskID, TypePrefix: typ}) {
		if err != nil {
			t.Fatal(err)
		}
		if n--; n == 0 {
			m, err := ev.Message()
			if err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatalf("no %s #%d of %s within 10s", typ, n, taskID)
	return nil
}
