package langchaingo_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/tmc/langchaingo/tools"

	"github.com/clutchprotocol/clutch/adapters/langchaingo"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
)

// The human tool asks a person: the task waits with the question; the
// answer runs the chain again from the start — the model is asked again
// for the turn before the question, the human tool now returns the answer
// — and the run goes on to its result.
func TestHumanToolAskAndResume(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	paid := 0
	pay := &funcTool{name: "pay", fn: func(_ context.Context, amount string) (string, error) {
		paid++
		return "paid " + amount + " EUR", nil
	}}
	m := newModel(
		action("ask_human", "Pay 10 EUR?"), // the first run asks
		action("ask_human", "Pay 10 EUR?"), // the run after the answer replays the turn
		action("pay", "10"),
		final("paid 10 EUR"),
	)
	register(t, r, "agent:payer", oneShot(m, langchaingo.HumanTool(nil), pay), nil)
	h := submit(t, r, "skill:payer", "Pay the bill")
	out, err := h.Wait(ctx)
	if !errors.Is(err, protocol.CodeInputRequired) || out == nil || out.Question == nil || out.Question.Text != "Pay 10 EUR?" {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	h2, err := r.Answer(ctx, out.Question.ID, router.Answerer{AgentID: "agent:user"}, json.RawMessage(`"yes"`))
	if err != nil {
		t.Fatal(err)
	}
	out, err = h2.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := router.ResultAs[string](out); err != nil || res != "paid 10 EUR" {
		t.Fatalf("result %q, %v", res, err)
	}
	if m.calls.Load() != 4 || paid != 1 {
		t.Fatalf("%d model calls, %d payments; want 4 and 1", m.calls.Load(), paid)
	}
	msgs := events(t, st, h.Request().RunID)
	wantSeq(t, routertest.Sequence(t, msgs, ""), []string{
		"task.request", "routing.decision", "task.accept",
		"x.clutch.model_call",
		"tool.call ask_human #1", "task.question", "tool.error ask_human #1",
		"task.answer", "routing.decision", "task.accept",
		"x.clutch.model_call",
		"tool.call ask_human #2", "tool.result ask_human #2",
		"x.clutch.model_call",
		"tool.call pay #3", "tool.result pay #3",
		"x.clutch.model_call",
		"task.result",
	})
	if te := payloadOf[protocol.ErrorPayload](t, msgs, protocol.TypeToolError, 0); te.Code != protocol.CodeInputRequired {
		t.Fatalf("the asking call's tool.error %+v", te)
	}
	if res := payloadOf[toolEvent](t, msgs, protocol.TypeToolResult, 0); string(res.Content) != `"yes"` {
		t.Fatalf("the answered call's tool.result %+v", res)
	}
}

// HumanToolOptions.Question shapes the question: here, choices. Outside
// a Clutch task the tool fails, and an empty question is refused.
func TestHumanToolOptions(t *testing.T) {
	ctx := context.Background()
	r, _ := newRouter(t, nil)
	human := langchaingo.HumanTool(&langchaingo.HumanToolOptions{Name: "approve", Question: func(in string) protocol.Question {
		return protocol.Question{Text: in, Choices: []string{"yes", "no"}}
	}})
	if human.Name() != "approve" {
		t.Fatalf("name %q", human.Name())
	}
	register(t, r, "agent:payer", oneShot(newModel(action("approve", "Pay?")), human), nil)
	out, err := submit(t, r, "skill:payer", "Pay").Wait(ctx)
	if !errors.Is(err, protocol.CodeInputRequired) || len(out.Question.Choices) != 2 {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	if _, err := human.Call(ctx, "Pay?"); protocol.CodeOf(err) != protocol.CodeUnsupportedTask {
		t.Fatalf("outside a task: %v", err)
	}
	// In any Clutch handler (here a plain one) an empty question is refused.
	card := &protocol.AgentCard{V: protocol.Version, AgentID: "agent:mute", Capabilities: []protocol.Capability{{ID: "skill:mute"}}}
	if err := r.Register(ctx, card, func(ctx context.Context, _ *router.Task) (*router.Result, error) {
		_, err := langchaingo.HumanTool(nil).Call(ctx, " ")
		return nil, err
	}); err != nil {
		t.Fatal(err)
	}
	_, err = submit(t, r, "skill:mute", "Pay").Wait(ctx)
	if ep := wireError(t, err); ep.Code != protocol.CodeValidation || ep.Message != "ask_human was given no question" {
		t.Fatalf("empty question: %#v", ep)
	}
}

// Cancelling the task mid-run ends the chain's context: the running tool
// sees it and stops, the executor returns, the task ends with task.cancel,
// and no goroutine is left behind (TestMain's goleak). The tool ends after
// the task.cancel here, so its call has no outcome: the task has ended.
func TestCancel(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	started, release := make(chan struct{}), make(chan struct{})
	stopped := make(chan error, 1)
	slow := &funcTool{name: "slow", fn: func(ctx context.Context, _ string) (string, error) {
		close(started)
		<-ctx.Done()
		<-release
		stopped <- ctx.Err()
		return "", ctx.Err()
	}}
	m := newModel(action("slow", "x"), final("never"))
	register(t, r, "agent:slow", oneShot(m, slow), nil)
	h := submit(t, r, "skill:slow", "Go")
	<-started
	h.Cancel("the user gave up")
	_, err := h.Wait(ctx)
	close(release)
	if !errors.Is(err, protocol.CodeCancelled) {
		t.Fatalf("outcome error %v", err)
	}
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Fatalf("the tool's context: %v", err)
	}
	msgs := events(t, st, h.Request().RunID)
	wantSeq(t, routertest.Sequence(t, msgs, ""), []string{
		"task.request", "routing.decision", "task.accept",
		"x.clutch.model_call",
		"tool.call slow #1",
		"task.cancel",
	})
	if m.calls.Load() != 1 {
		t.Fatalf("%d model calls, want 1 before the cancel", m.calls.Load())
	}
}

var _ tools.Tool = langchaingo.HumanTool(nil)
