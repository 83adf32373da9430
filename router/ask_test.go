package router

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/internal/backends"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// asker is a handler that asks which market, then (when confirm is set)
// for an approval, and returns what it was told. runs counts its runs.
func asker(runs *atomic.Int32, confirm bool) Handler {
	return func(ctx context.Context, t *Task) (*Result, error) {
		runs.Add(1)
		market, err := t.Ask(ctx, protocol.Question{Text: "Which market?", Choices: []string{"fintech", "health"}})
		if err != nil {
			return nil, err
		}
		out := []string{string(market)}
		if confirm {
			ok, err := t.Ask(ctx, protocol.Question{Kind: protocol.QuestionApproval, Text: "Publish?"})
			if err != nil {
				return nil, err
			}
			out = append(out, string(ok))
		}
		return summary(out...), nil
	}
}

// findings returns the findings of a summary result.
func findings(t *testing.T, out *Outcome) []string {
	t.Helper()
	var s struct {
		Findings []string `json:"findings"`
	}
	if err := json.Unmarshal(out.Message.Payload, &s); err != nil {
		t.Fatal(err)
	}
	return s.Findings
}

// waitQuestion waits for h and returns the question its task stopped on.
func (e *env) waitQuestion(h *Handle) *protocol.Question {
	e.t.Helper()
	out, err := e.wait(h)
	if out == nil || out.Question == nil {
		e.t.Fatalf("the task did not stop to ask: %+v %v", out, err)
	}
	if !errors.Is(err, protocol.CodeInputRequired) || out.Type != protocol.TypeTaskQuestion {
		e.t.Fatalf("a waiting task's outcome: %s %v", out.Type, err)
	}
	return out.Question
}

func TestAskAndAnswer(t *testing.T) {
	e := newEnv(t, nil)
	var runs atomic.Int32
	e.register(card("agent:a", skill("skill:r")), asker(&runs, true))
	req := e.request("skill:r")
	requester := Answerer{AgentID: req.From.AgentID}
	q := e.waitQuestion(e.submit(req))
	if q.ID != req.TaskID+".q0" || q.Index != 0 || q.Text != "Which market?" {
		t.Fatalf("question %+v", q)
	}
	if n := e.r.Waiting(); n != 1 {
		t.Fatalf("Waiting() = %d", n)
	}
	if e.r.running(req.TaskID) {
		t.Fatal("a waiting task holds a running slot")
	}

	h, err := e.r.Answer(context.Background(), q.ID, requester, json.RawMessage(`"fintech"`))
	if err != nil {
		t.Fatal(err)
	}
	q2 := e.waitQuestion(h)
	if q2.ID != req.TaskID+".q1" || q2.Kind != protocol.QuestionApproval {
		t.Fatalf("second question %+v", q2)
	}
	h, err = e.r.Answer(context.Background(), q2.ID, requester, json.RawMessage(`{"decision":"approve"}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.wait(h)
	if err != nil {
		t.Fatal(err)
	}
	if got := findings(t, out); !slices.Equal(got, []string{`"fintech"`, `{"decision":"approve"}`}) {
		t.Errorf("result %v", got)
	}
	if n := runs.Load(); n != 3 {
		t.Errorf("the handler ran %d times, want 3 (one per answer, and the first)", n)
	}
	want := []string{"task.request", "routing.decision", "task.accept", "task.question", "task.answer",
		"routing.decision", "task.accept", "task.question", "task.answer", "routing.decision", "task.accept", "task.result"}
	if got := e.types(req.TaskID); !slices.Equal(got, want) {
		t.Errorf("events\n got %v\nwant %v", got, want)
	}
	if n := e.r.Waiting(); n != 0 {
		t.Errorf("Waiting() = %d after the end", n)
	}
	// The answer is stamped with who gave it and addressed to the asker.
	for ev, err := range e.st.Read(context.Background(), store.Query{TaskID: req.TaskID, TypePrefix: "task.answer", Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		m, _ := ev.Message()
		if m.From.AgentID != requester.AgentID || len(m.To) != 1 || m.To[0].AgentID != "agent:a" {
			t.Errorf("answer from %s to %v", m.From.AgentID, m.To)
		}
	}
}

// TestAnswerRefused: who may not answer, a value that does not fit, a
// question that does not wait: refused, nothing stored, the task still
// waits.
func TestAnswerRefused(t *testing.T) {
	e := newEnv(t, nil)
	var runs atomic.Int32
	e.register(card("agent:a", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
		runs.Add(1)
		v, err := t.Ask(ctx, protocol.Question{Text: "Budget?", Schema: json.RawMessage(`{"type":"number","minimum":0}`),
			Who: &protocol.Answerers{Agents: []string{"agent:finance"}, Scopes: []string{"approve"}}})
		if err != nil {
			return nil, err
		}
		return summary(string(v)), nil
	})
	req := e.request("skill:r")
	q := e.waitQuestion(e.submit(req))
	before := len(e.types(req.TaskID))
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		qid   string
		by    Answerer
		value string
		err   error
	}{
		{"the requester is not named", q.ID, Answerer{AgentID: req.From.AgentID}, `1`, ErrUnauthorized},
		{"a stranger", q.ID, Answerer{AgentID: "agent:eve", Scopes: []string{"submit"}}, `1`, ErrUnauthorized},
		{"not a number", q.ID, Answerer{AgentID: "agent:finance"}, `"lots"`, ErrInvalidPayload},
		{"below the minimum", q.ID, Answerer{AgentID: "agent:finance"}, `-5`, ErrInvalidPayload},
		{"not JSON", q.ID, Answerer{AgentID: "agent:finance"}, `{`, ErrInvalidRequest},
		{"another question", req.TaskID + ".q7", Answerer{AgentID: "agent:finance"}, `1`, ErrNotWaiting},
		{"not a question id", "task_x", Answerer{AgentID: "agent:finance"}, `1`, ErrInvalidRequest},
		{"an unknown task", "task_nope.q0", Answerer{AgentID: "agent:finance"}, `1`, ErrUnknownTask},
	} {
		if _, err := e.r.Answer(ctx, tc.qid, tc.by, json.RawMessage(tc.value)); !errors.Is(err, tc.err) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.err)
		}
	}
	if got := len(e.types(req.TaskID)); got != before || runs.Load() != 1 || e.r.Waiting() != 1 {
		t.Fatalf("a refused answer changed something: %d events (were %d), %d runs, %d waiting", got, before, runs.Load(), e.r.Waiting())
	}
	// A scope the question names may answer.
	h, err := e.r.Answer(ctx, q.ID, Answerer{AgentID: "agent:ops", Scopes: []string{"submit", "approve"}}, json.RawMessage(`250`))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := e.wait(h); err != nil || !slices.Equal(findings(t, out), []string{"250"}) {
		t.Fatalf("%v %v", out, err)
	}
	if _, err := e.r.Answer(ctx, q.ID, Answerer{AgentID: "agent:finance"}, json.RawMessage(`1`)); !errors.Is(err, ErrAnswered) {
		t.Errorf("a second answer: %v", err)
	}
}

// TestAnswersRace: of answers that race, exactly one is stored and the
// task runs on once.
func TestAnswersRace(t *testing.T) {
	e := newEnv(t, nil)
	var runs atomic.Int32
	e.register(card("agent:a", skill("skill:r")), asker(&runs, false))
	req := e.request("skill:r")
	q := e.waitQuestion(e.submit(req))
	const n = 8
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, n)
	handles := make(chan *Handle, n)
	for i := range n {
		wg.Go(func() {
			<-start
			v := `"fintech"`
			if i%2 == 1 {
				v = `"health"`
			}
			h, err := e.r.Answer(context.Background(), q.ID, Answerer{AgentID: req.From.AgentID}, json.RawMessage(v))
			errs <- err
			if h != nil {
				handles <- h
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	close(handles)
	won := 0
	for err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, ErrAnswered):
			t.Errorf("a losing answer: %v", err)
		}
	}
	if won != 1 {
		t.Fatalf("%d answers won", won)
	}
	for h := range handles {
		if _, err := e.wait(h); err != nil {
			t.Fatal(err)
		}
	}
	answers := 0
	for _, typ := range e.types(req.TaskID) {
		if typ == "task.answer" {
			answers++
		}
	}
	if answers != 1 || runs.Load() != 2 {
		t.Errorf("%d answers stored, %d runs", answers, runs.Load())
	}
}

// TestAskDeadline: a question whose deadline passes ends its task with
// TIMEOUT naming the question; an answer after that is refused.
func TestAskDeadline(t *testing.T) {
	e := newEnv(t, nil)
	e.register(card("agent:a", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
		_, err := t.Ask(ctx, protocol.Question{Text: "quick?", Deadline: t.r.now().Add(20 * time.Millisecond)})
		return nil, err
	})
	req := e.request("skill:r")
	q := e.waitQuestion(e.submit(req))
	ev := e.next(store.Query{TaskID: req.TaskID, TypePrefix: "task.error"}) // stored by the deadline's timer
	ep, err := protocol.DecodePayload[protocol.ErrorPayload](ev)
	if err != nil || ep.Code != protocol.CodeTimeout || ep.Details["question_id"] != q.ID {
		t.Fatalf("the deadline's end: %+v %v", ep, err)
	}
	if _, err := e.r.Answer(context.Background(), q.ID, Answerer{AgentID: req.From.AgentID}, json.RawMessage(`1`)); !errors.Is(err, ErrTaskEnded) {
		t.Errorf("an answer after the deadline: %v", err)
	}
	if e.r.Waiting() != 0 {
		t.Error("the task still waits")
	}
}

// TestCancelWhileWaiting: a cancel ends a waiting task; then no answer is
// taken.
func TestCancelWhileWaiting(t *testing.T) {
	e := newEnv(t, nil)
	var runs atomic.Int32
	e.register(card("agent:a", skill("skill:r")), asker(&runs, false))
	req := e.request("skill:r")
	h := e.submit(req)
	q := e.waitQuestion(h)
	h.Cancel("no longer needed")
	types := e.types(req.TaskID)
	if types[len(types)-1] != "task.cancel" {
		t.Fatalf("events %v", types)
	}
	if _, err := e.r.Answer(context.Background(), q.ID, Answerer{AgentID: req.From.AgentID}, json.RawMessage(`"fintech"`)); !errors.Is(err, ErrTaskEnded) {
		t.Errorf("an answer after the cancel: %v", err)
	}
	// Router.Cancel of a second waiting task returns the cancel's outcome.
	req2 := e.request("skill:r")
	e.waitQuestion(e.submit(req2))
	h2, err := e.r.Cancel(req2.TaskID, "")
	if err != nil {
		t.Fatal(err)
	}
	if out, _ := e.wait(h2); out.Type != protocol.TypeTaskCancel {
		t.Errorf("outcome %s", out.Type)
	}
	if runs.Load() != 2 || e.r.Waiting() != 0 {
		t.Errorf("%d runs, %d waiting", runs.Load(), e.r.Waiting())
	}
}

// TestAskInSubtask: a subtask cannot ask.
func TestAskInSubtask(t *testing.T) {
	e := newEnv(t, nil)
	e.register(card("agent:sub", skill("skill:sub")), func(ctx context.Context, t *Task) (*Result, error) {
		_, err := t.Ask(ctx, protocol.Question{Text: "?"})
		return nil, err
	})
	e.register(card("agent:a", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
		sub, err := t.NewSubtask("", nil)
		if err != nil {
			return nil, err
		}
		sub.Requires = []string{"skill:sub"}
		_, err = t.Delegate(ctx, sub)
		return nil, err
	})
	_, err := e.wait(e.submit(e.request("skill:r")))
	if !errors.Is(err, protocol.CodeInvalidField) {
		t.Fatalf("%v", err)
	}
}

// TestAskSurvivesRestart: on each store, a task that waits goes on
// waiting across a restart (Recover leaves it); answered after it, it runs
// on exactly once. A task whose answer was stored just before its process
// stopped runs on at Recover, once.
func TestAskSurvivesRestart(t *testing.T) {
	backends.Each(t, func(t *testing.T, st store.Store) {
		ctx := context.Background()
		var runs atomic.Int32
		e1 := newEnvOn(t, st, nil)
		e1.register(card("agent:a", skill("skill:r")), asker(&runs, false))
		waiting := e1.request("skill:r")
		q := e1.waitQuestion(e1.submit(waiting))
		answered := e1.request("skill:r")
		qa := e1.waitQuestion(e1.submit(answered))
		if err := e1.r.Close(); err != nil {
			t.Fatal(err)
		}
		// The second task's answer lands as its process dies: stored, not
		// run on.
		m := e1.r.ids.Reply(e1.last(answered.TaskID, "task.question"), protocol.TypeTaskAnswer, answered.From.AgentID)
		m.IdempotencyKey = "clutch.answer/" + qa.ID
		if err := m.SetPayload(protocol.Answer{QuestionID: qa.ID, Value: json.RawMessage(`"health"`)}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Append(ctx, m); err != nil {
			t.Fatal(err)
		}

		e2 := newEnvOn(t, st, nil)
		e2.register(card("agent:a", skill("skill:r")), asker(&runs, false))
		n, err := e2.r.Recover(ctx)
		if err != nil || n != 1 {
			t.Fatalf("Recover = %d, %v (want the answered task resumed)", n, err)
		}
		if ev := e2.next(store.Query{TaskID: answered.TaskID, TypePrefix: "task.result"}); !slices.Equal(findingsOf(t, ev), []string{`"health"`}) {
			t.Errorf("resumed at Recover: %s", ev.Payload)
		}
		if e2.r.Waiting() != 1 {
			t.Fatalf("Waiting() = %d after Recover", e2.r.Waiting())
		}
		if n, err := e2.r.Recover(ctx); err != nil || n != 0 {
			t.Fatalf("Recover again = %d, %v", n, err)
		}
		h, err := e2.r.Answer(ctx, q.ID, Answer(waiting), json.RawMessage(`"fintech"`))
		if err != nil {
			t.Fatal(err)
		}
		out, err := e2.wait(h)
		if err != nil || !slices.Equal(findings(t, out), []string{`"fintech"`}) {
			t.Fatalf("%v %v", out, err)
		}
		if n := runs.Load(); n != 4 {
			t.Errorf("%d runs, want 4: each task once before and once after", n)
		}
	})
}

// Answer is the requester of req as an Answerer.
func Answer(req *protocol.Message) Answerer { return Answerer{AgentID: req.From.AgentID} }

func findingsOf(t *testing.T, m *protocol.Message) []string {
	t.Helper()
	return findings(t, &Outcome{Message: m})
}

// next waits for the first event of q, following the store.
func (e *env) next(q store.Query) *protocol.Message {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	q.Limit = 1
	for ev, err := range e.st.Follow(ctx, q) {
		if err != nil {
			e.t.Fatal(err)
		}
		m, err := ev.Message()
		if err != nil {
			e.t.Fatal(err)
		}
		return m
	}
	e.t.Fatalf("no event of %+v within 10s", q)
	return nil
}

// last returns the last event of the task of type typ.
func (e *env) last(taskID, typ string) *protocol.Message {
	e.t.Helper()
	var last *protocol.Message
	for ev, err := range e.st.Read(context.Background(), store.Query{TaskID: taskID, TypePrefix: typ}) {
		if err != nil {
			e.t.Fatal(err)
		}
		last, _ = ev.Message()
	}
	return last
}

// TestApprovals: RequireApproval holds a task until a person approves,
// rejects with a reason, or edits its input; Approve inside a handler
// does the same for one action.
func TestApprovals(t *testing.T) {
	e := newEnv(t, &Options{Middleware: []Middleware{
		RequireApproval(func(t *Task) bool { return t.Agent() == "agent:payer" }, &protocol.Answerers{Scopes: []string{"approve"}}),
	}})
	var paid []string
	var mu sync.Mutex
	e.register(card("agent:payer", skill("skill:pay")), func(ctx context.Context, t *Task) (*Result, error) {
		in, err := Input[map[string]any](t)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		paid = append(paid, in["to"].(string))
		mu.Unlock()
		return summary("paid"), nil
	})
	e.register(card("agent:mailer", skill("skill:mail")), func(ctx context.Context, t *Task) (*Result, error) {
		args, err := Approve(ctx, t, "tool mail.send", map[string]string{"to": "all@example.com"}, nil)
		if err != nil {
			return nil, err
		}
		return summary(string(args)), nil
	})
	ctx := context.Background()
	boss := Answerer{AgentID: "agent:boss", Scopes: []string{"approve"}}
	pay := func(to string) *protocol.Message {
		m := e.request("skill:pay")
		m.PayloadType, m.SchemaRef = "", "" // untyped
		if err := m.SetPayload(map[string]string{"to": to}); err != nil {
			t.Fatal(err)
		}
		return m
	}

	// Approve: the handler runs on the input as sent.
	first := pay("ken")
	q := e.waitQuestion(e.submit(first))
	if q.Kind != protocol.QuestionApproval || q.Details["action"] != "the task for agent:payer" {
		t.Fatalf("question %+v", q)
	}
	if _, err := e.r.Answer(ctx, q.ID, Answer(first), json.RawMessage(`{"decision":"approve"}`)); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("the requester is not among who may approve: %v", err)
	}
	h, err := e.r.Answer(ctx, q.ID, boss, json.RawMessage(`{"decision":"approve"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.wait(h); err != nil {
		t.Fatal(err)
	}
	// Reject: the handler never runs; the reason is in the error.
	q = e.waitQuestion(e.submit(pay("eve")))
	h, err = e.r.Answer(ctx, q.ID, boss, json.RawMessage(`{"decision":"reject","reason":"unknown payee"}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.wait(h); !errors.Is(err, protocol.CodePolicyDenied) || !strings.Contains(err.Error(), "unknown payee") {
		t.Errorf("a reject: %v", err)
	}
	// Edit: the handler runs on the edited input.
	q = e.waitQuestion(e.submit(pay("ana")))
	h, err = e.r.Answer(ctx, q.ID, boss, json.RawMessage(`{"decision":"edit","arguments":{"to":"ana-escrow"}}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.wait(h); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if !slices.Equal(paid, []string{"ken", "ana-escrow"}) {
		t.Errorf("paid %v", paid)
	}
	mu.Unlock()

	// Approve in a handler: the edited arguments come back.
	req := e.request("skill:mail")
	q = e.waitQuestion(e.submit(req))
	h, err = e.r.Answer(ctx, q.ID, Answer(req), json.RawMessage(`{"decision":"edit","arguments":{"to":"team@example.com"}}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.wait(h)
	if err != nil || !slices.Equal(findings(t, out), []string{`{"to":"team@example.com"}`}) {
		t.Fatalf("%v %v", out, err)
	}
}

// TestResumeKeepsRetries: attempts that resume after an answer do not
// count toward MaxAttempts, whether the answer came through Answer or was
// found by Recover: with MaxAttempts 2, a handler that fails retryably
// after its answer runs twice after it, no more.
func TestResumeKeepsRetries(t *testing.T) {
	failing := func(after *atomic.Int32) Handler {
		return func(ctx context.Context, t *Task) (*Result, error) {
			if _, err := t.Ask(ctx, protocol.Question{Text: "go?"}); err != nil {
				return nil, err
			}
			after.Add(1)
			return nil, Fail(protocol.CodeToolFailed, "flaky", true, nil)
		}
	}
	ctx := context.Background()
	for _, viaRecover := range []bool{false, true} {
		st := backends.All()[0].New(t)
		var after atomic.Int32
		e := newEnvOn(t, st, &Options{MaxAttempts: 2})
		e.register(card("agent:a", skill("skill:r")), failing(&after))
		req := e.request("skill:r")
		q := e.waitQuestion(e.submit(req))
		var h *Handle
		if viaRecover {
			if err := e.r.Close(); err != nil {
				t.Fatal(err)
			}
			m := e.r.ids.Reply(e.last(req.TaskID, "task.question"), protocol.TypeTaskAnswer, req.From.AgentID)
			m.IdempotencyKey = "clutch.answer/" + q.ID
			if err := m.SetPayload(protocol.Answer{QuestionID: q.ID, Value: json.RawMessage(`"yes"`)}); err != nil {
				t.Fatal(err)
			}
			if _, err := st.Append(ctx, m); err != nil {
				t.Fatal(err)
			}
			e = newEnvOn(t, st, &Options{MaxAttempts: 2})
			e.register(card("agent:a", skill("skill:r")), failing(&after))
			if n, err := e.r.Recover(ctx); err != nil || n != 1 {
				t.Fatalf("Recover = %d, %v", n, err)
			}
			e.nextEnd(req.TaskID)
		} else {
			var err error
			if h, err = e.r.Answer(ctx, q.ID, Answer(req), json.RawMessage(`"yes"`)); err != nil {
				t.Fatal(err)
			}
			if _, err := e.wait(h); !errors.Is(err, protocol.CodeToolFailed) {
				t.Fatalf("outcome %v", err)
			}
		}
		if n := after.Load(); n != 2 {
			t.Errorf("recover=%v: the handler ran %d times after the answer, want 2 (MaxAttempts)", viaRecover, n)
		}
	}
}

// nextEnd waits for the task's terminal event.
func (e *env) nextEnd(taskID string) *protocol.Message {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ev, err := range e.st.Follow(ctx, store.Query{TaskID: taskID, TypePrefix: "task."}) {
		if err != nil {
			e.t.Fatal(err)
		}
		m, err := ev.Message()
		if err != nil {
			e.t.Fatal(err)
		}
		if protocol.EndsTask(m) {
			return m
		}
	}
	e.t.Fatalf("task %s did not end within 10s", taskID)
	return nil
}

// TestResumed: a handler whose state lives outside goes on from its last
// answer: Resumed gives the question (with the details it stored) and the
// answer, and the next Ask asks a new question instead of replaying.
func TestResumed(t *testing.T) {
	e := newEnv(t, nil)
	type seen struct {
		q     *protocol.Question
		value string
	}
	var mu sync.Mutex
	var runs []seen
	e.register(card("agent:a", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
		q, v, err := t.Resumed(ctx)
		if err != nil {
			return nil, err
		}
		mu.Lock()
		runs = append(runs, seen{q, string(v)})
		n := len(runs)
		mu.Unlock()
		if n <= 2 { // the outside system stops twice
			if _, err := t.Ask(ctx, protocol.Question{Text: "step?", Details: map[string]any{"outside": n}}); err != nil {
				return nil, err
			}
			return nil, errors.New("Ask after Resumed returned a recorded answer")
		}
		return summary(string(v)), nil
	})
	req := e.request("skill:r")
	who := Answerer{AgentID: req.From.AgentID}
	q := e.waitQuestion(e.submit(req))
	h, err := e.r.Answer(context.Background(), q.ID, who, json.RawMessage(`"one"`))
	if err != nil {
		t.Fatal(err)
	}
	q2 := e.waitQuestion(h)
	if q2.Index != 1 {
		t.Fatalf("the run after Resumed asked %+v, want a new question q1", q2)
	}
	h, err = e.r.Answer(context.Background(), q2.ID, who, json.RawMessage(`"two"`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.wait(h)
	if err != nil {
		t.Fatal(err)
	}
	if got := findings(t, out); !slices.Equal(got, []string{`"two"`}) {
		t.Errorf("result %v", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(runs) != 3 || runs[0].q != nil || runs[1].q == nil || runs[1].q.ID != q.ID || runs[1].value != `"one"` ||
		runs[2].q.ID != q2.ID || runs[2].value != `"two"` || runs[2].q.Details["outside"] != float64(2) {
		t.Errorf("runs saw %+v", runs)
	}
}
