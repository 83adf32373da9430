package routertest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
)

func research(ctx context.Context, t *router.Task) (*router.Result, error) {
	q, err := router.Input[schema.ResearchQuery](t)
	if err != nil {
		return nil, err
	}
	return &router.Result{PayloadType: "research.summary.v1", Payload: schema.ResearchSummary{
		Findings: []string{"about " + q.Query}, Citations: []string{"https://example.com"},
	}}, nil
}

func TestEnv(t *testing.T) {
	env := routertest.New(t, nil)
	env.Agent("agent:ken", []string{"skill:research"}, research)
	out, err := env.Run(env.Request("research.query.v1", schema.ResearchQuery{Query: "payments"}, "skill:research"))
	if err != nil {
		t.Fatal(err)
	}
	env.AssertTypes(out.TaskID, protocol.TypeTaskRequest, protocol.TypeRoutingDecision, protocol.TypeTaskAccept, protocol.TypeTaskResult)
	env.AssertRoutedTo(out.TaskID, "agent:ken")
	if out.Message.TS != "2026-01-01T00:00:00.000Z" {
		t.Fatalf("timestamps do not follow the test clock: %s", out.Message.TS)
	}
	env.Clock.Advance(time.Hour)
	if got := env.IDs.Now(); !got.Equal(time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)) {
		t.Fatalf("clock %v", got)
	}
}

func TestDeterministicIDs(t *testing.T) {
	ids := func() []string {
		env := routertest.New(t, &routertest.Options{Seed: 7})
		var out []string
		for range 3 {
			out = append(out, env.Request("research.query.v1", schema.ResearchQuery{Query: "x"}).TaskID)
		}
		return out
	}
	a, b := ids(), ids()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, different ids: %v %v", a, b)
		}
	}
}

func TestHeartbeatTTLWithClock(t *testing.T) {
	env := routertest.New(t, &routertest.Options{})
	card := &protocol.AgentCard{V: protocol.Version, AgentID: "agent:remote", Capabilities: []protocol.Capability{{ID: "skill:research"}}}
	if err := env.Registry.Register(context.Background(), card, nil); err != nil {
		t.Fatal(err)
	}
	if err := env.Router.Attach("agent:remote", research); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Run(env.Request("research.query.v1", schema.ResearchQuery{Query: "x"}, "skill:research")); err != nil {
		t.Fatal(err)
	}
	env.Clock.Advance(time.Minute) // past the 30 s TTL, no heartbeat
	_, err := env.Run(env.Request("research.query.v1", schema.ResearchQuery{Query: "x"}, "skill:research"))
	if !errors.Is(err, protocol.CodeNoMatch) {
		t.Fatalf("offline agent still routable: %v", err)
	}
	if err := env.Registry.Heartbeat(context.Background(), "agent:remote"); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Run(env.Request("research.query.v1", schema.ResearchQuery{Query: "x"}, "skill:research")); err != nil {
		t.Fatalf("after a heartbeat: %v", err)
	}
}

// One clock: the ids' timestamps, the store's event times and the
// registry's liveness all read Env.Clock.
func TestOneClock(t *testing.T) {
	env := routertest.New(t, nil)
	env.Clock.Set(time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC))
	env.Agent("agent:ken", []string{"skill:research"}, research)
	out, err := env.Run(env.Request("research.query.v1", schema.ResearchQuery{Query: "x"}, "skill:research"))
	if err != nil {
		t.Fatal(err)
	}
	if out.Message.TS != "2030-05-06T07:08:09.000Z" {
		t.Errorf("event ts %s", out.Message.TS)
	}
	for ev, err := range env.Store.Read(context.Background(), store.Query{TaskID: out.TaskID}) {
		if err != nil {
			t.Fatal(err)
		}
		if !ev.Time.Equal(env.Clock.Now()) {
			t.Errorf("event %d stored at %v, clock %v", ev.Seq, ev.Time, env.Clock.Now())
		}
	}
	if !env.Router.IDs().Now().Equal(env.Clock.Now()) {
		t.Errorf("router clock %v, test clock %v", env.Router.IDs().Now(), env.Clock.Now())
	}
}

// Timers run on real time: in a synctest bubble a max_runtime_sec of an
// hour passes at once, while the Env's clock stays where the test put it.
func TestTimeoutInSynctestBubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := routertest.New(t, &routertest.Options{Timeout: 2 * time.Hour}) // Run's wait is a timer too
		env.Register(&protocol.AgentCard{V: protocol.Version, AgentID: "agent:slow",
			Capabilities: []protocol.Capability{{ID: "skill:slow"}}, Limits: &protocol.Limits{MaxRuntimeSec: 3600}},
			func(ctx context.Context, t *router.Task) (*router.Result, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			})
		start := time.Now()
		out, err := env.Run(env.Request("research.query.v1", schema.ResearchQuery{Query: "x"}, "skill:slow"))
		if !errors.Is(err, protocol.CodeTimeout) || out.Type != protocol.TypeTaskTimeout {
			t.Fatalf("%+v %v", out, err)
		}
		if d := time.Since(start); d != time.Hour {
			t.Errorf("the bubble's time moved %v, want the hour of max_runtime_sec", d)
		}
		if out.Message.TS != "2026-01-01T00:00:00.000Z" {
			t.Errorf("the Env's clock moved: %s", out.Message.TS)
		}
	})
}

// Await returns once the events exist, whether they were stored before it
// started or while it waited.
func TestAwait(t *testing.T) {
	env := routertest.New(t, nil)
	release := make(chan struct{})
	env.Agent("agent:slow", []string{"skill:slow"}, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		for i := range 3 {
			if i == 1 {
				<-release // the second and third come while the test awaits
			}
			if err := t.Progress(ctx, map[string]any{"step": i}); err != nil {
				return nil, err
			}
		}
		return &router.Result{}, nil
	})
	h, err := env.Router.Submit(context.Background(), env.Request("", nil, "skill:slow"))
	if err != nil {
		t.Fatal(err)
	}
	q := store.Query{TaskID: h.TaskID(), TypePrefix: "task.progress"}
	first := env.Await(q, nil)
	close(release)
	third := env.Await(q, routertest.Count(3))
	last := env.Await(store.Query{TaskID: h.TaskID()}, func(m *protocol.Message) bool { return m.Type.Terminal() })
	if last.Type != protocol.TypeTaskResult {
		t.Fatalf("Await gave %s, %s, %s", first.ID, third.ID, last.Type)
	}
	progress := env.Events(q)
	if len(progress) != 3 || progress[0].ID != first.ID || progress[2].ID != third.ID {
		t.Fatalf("Await's events are not the first and third progress events")
	}
	if _, err := env.Wait(h); err != nil {
		t.Fatal(err)
	}
}

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	failures []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func TestAssertOneTerminal(t *testing.T) {
	rec := &recorder{TB: t}
	env := routertest.New(rec, nil)
	env.Agent("agent:ken", []string{"skill:research"}, research)
	out, err := env.Run(env.Request("research.query.v1", schema.ResearchQuery{Query: "payments"}, "skill:research"))
	if err != nil {
		t.Fatal(err)
	}
	env.AssertOneTerminal()
	if len(rec.failures) > 0 {
		t.Fatalf("a clean log failed: %v", rec.failures)
	}
	// A second terminal event for the same attempt breaks the rule.
	extra := env.IDs.Reply(out.Message, protocol.TypeTaskError, "agent:orchestrator")
	extra.Attempt = out.Message.Attempt
	if err := extra.SetPayload(protocol.ErrorPayload{Code: protocol.CodeInterrupted, Message: "late"}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Store.Append(context.Background(), extra); err != nil {
		t.Fatal(err)
	}
	env.AssertOneTerminal()
	if len(rec.failures) != 1 || !strings.Contains(rec.failures[0], "two terminal events") {
		t.Fatalf("failures %q", rec.failures)
	}
}

// drafter asks which market, then for approval of its draft; a reject
// ends the task with the reason.
func drafter(ctx context.Context, t *router.Task) (*router.Result, error) {
	market, err := router.AskAs[string](ctx, t, protocol.Question{Text: "Which market?", Choices: []string{"fintech", "health"}})
	if err != nil {
		return nil, err
	}
	draft := "a note on " + market
	a, err := router.AskAs[protocol.Approval](ctx, t, protocol.Question{Kind: protocol.QuestionApproval, Text: "Publish " + draft + "?"})
	if err != nil {
		return nil, err
	}
	if a.Decision == protocol.Reject {
		return nil, router.Fail(protocol.CodePolicyDenied, "rejected: "+a.Reason, false, nil)
	}
	return &router.Result{Payload: map[string]string{"published": draft}}, nil
}

// TestScriptedAnswers: OnQuestion answers every question Run meets, in
// order; without it Run returns the waiting outcome and Answer answers it.
func TestScriptedAnswers(t *testing.T) {
	env := routertest.New(t, nil)
	env.Agent("agent:drafter", []string{"skill:draft"}, drafter)
	var asked []string
	env.OnQuestion(func(q *protocol.Question) any {
		asked = append(asked, q.Text)
		if q.Kind == protocol.QuestionApproval {
			return protocol.Approval{Decision: protocol.Approve}
		}
		return "fintech"
	})
	out, err := env.Run(env.Request("", nil, "skill:draft"))
	if err != nil || string(out.Message.Payload) != `{"published":"a note on fintech"}` {
		t.Fatalf("%v %v", out, err)
	}
	if len(asked) != 2 || asked[1] != "Publish a note on fintech?" {
		t.Errorf("asked %q", asked)
	}

	env.OnQuestion(nil)
	out, err = env.Run(env.Request("", nil, "skill:draft"))
	if out.Question == nil || !errors.Is(err, protocol.CodeInputRequired) {
		t.Fatalf("without answers: %v %v", out, err)
	}
	out, _ = env.Wait(env.Answer(out, "health"))
	out, err = env.Wait(env.Answer(out, protocol.Approval{Decision: protocol.Reject, Reason: "off topic"}))
	if !errors.Is(err, protocol.CodePolicyDenied) || out.Err.Message != "rejected: off topic" {
		t.Fatalf("a reject: %v", err)
	}
}

// TestQuestionDeadline: a deadline on the Env's clock, run in a synctest
// bubble, ends the task with TIMEOUT when nobody answers.
func TestQuestionDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := routertest.New(t, nil)
		env.Agent("agent:asker", []string{"skill:ask"}, func(ctx context.Context, t *router.Task) (*router.Result, error) {
			_, err := t.Ask(ctx, protocol.Question{Text: "Go?", Deadline: env.Clock.Now().Add(time.Hour)})
			return nil, err
		})
		out, _ := env.Run(env.Request("", nil, "skill:ask"))
		if out.Question == nil {
			t.Fatal("the task did not ask")
		}
		time.Sleep(time.Hour + time.Second) // fake time: the bubble's clock
		synctest.Wait()
		ends := env.Events(store.Query{TaskID: out.TaskID, TypePrefix: "task.error"})
		if len(ends) != 1 || !strings.Contains(string(ends[0].Payload), `"TIMEOUT"`) {
			t.Fatalf("after the deadline: %d task.errors", len(ends))
		}
	})
}

// Sequence pairs tool outcomes with their calls by call id, not order.
func TestSequence(t *testing.T) {
	call := func(id, name string) *protocol.Message {
		m := protocol.NewMessage(protocol.TypeToolCall, "agent:a")
		m.TaskID = "task_1"
		m.Payload = json.RawMessage(`{"call_id":"` + id + `","name":"` + name + `"}`)
		return m
	}
	result := func(id, name string) *protocol.Message {
		m := protocol.NewMessage(protocol.TypeToolResult, "agent:a")
		m.TaskID = "task_1"
		m.Payload = json.RawMessage(`{"call_id":"` + id + `","name":"` + name + `","content":1}`)
		return m
	}
	fail := protocol.NewMessage(protocol.TypeToolError, "agent:a")
	fail.TaskID = "task_1"
	fail.Payload = json.RawMessage(`{"code":"TOOL_FAILED","message":"x","retryable":false,"details":{"call_id":"c9","name":"fetch"}}`)
	other := protocol.NewMessage(protocol.TypeTaskProgress, "agent:a")
	other.TaskID = "task_2"
	got := routertest.Sequence(t, []*protocol.Message{call("c1", "search"), call("c2", "fetch"), result("c2", "fetch"), result("c1", "search"), fail, other}, "task_1")
	want := []string{"tool.call search #1", "tool.call fetch #2", "tool.result fetch #2", "tool.result search #1", "tool.error fetch #?"}
	if !slices.Equal(got, want) {
		t.Fatalf("Sequence = %q, want %q", got, want)
	}
}

// Streamed gives the texts a TextStream stored, in order; a task.progress
// of another shape fails the test.
func TestStreamed(t *testing.T) {
	env := routertest.New(t, nil)
	env.Agent("agent:talker", []string{"skill:talk"}, func(ctx context.Context, task *router.Task) (*router.Result, error) {
		s := task.TextStream(4)
		for _, b := range []byte("Grüße, world") {
			if err := s.Write(ctx, string([]byte{b})); err != nil {
				return nil, err
			}
		}
		return &router.Result{Payload: "said"}, s.Flush(ctx)
	})
	req := env.Request("research.query.v1", schema.ResearchQuery{Query: "hello"}, "skill:talk")
	if _, err := env.Run(req); err != nil {
		t.Fatal(err)
	}
	got := routertest.Streamed(t, env.Events(store.Query{RunID: req.RunID}), req.TaskID)
	if want := []string{"Grü", "ße,", " wor", "ld"}; !slices.Equal(got, want) {
		t.Fatalf("Streamed = %q, want %q", got, want)
	}

	other := protocol.NewMessage(protocol.TypeTaskProgress, "agent:a")
	other.Payload = json.RawMessage(`{"pct":40}`)
	rec := &recorder{TB: t}
	if got := routertest.Streamed(rec, []*protocol.Message{other}, ""); len(got) != 0 || len(rec.failures) != 1 {
		t.Fatalf("Streamed of a progress that is no TextProgress: %q, failures %q", got, rec.failures)
	}
}
