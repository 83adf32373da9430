package genkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"

	clutchgenkit "github.com/clutchprotocol/clutch/adapters/genkit"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
)

// countingModel wraps a reply and counts the calls of the model.
func countingModel(fn reply, n *int) reply {
	return func(ctx context.Context, req *ai.ModelRequest) (*ai.ModelResponse, error) {
		*n++
		return fn(ctx, req)
	}
}

// A tool that interrupts makes the task ask; the answer restarts the tool
// with it (ToolContext.Resumed), and the generate loop goes on from its
// checkpoint: the model is not asked again for the turn before.
func TestInterruptResume(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	g := newGenkit(t)
	calls := 0
	defineModel(g, "payer", 0, countingModel(callThen("pay", map[string]any{"amount": 10}), &calls))
	pay := definePay(g)
	register(t, r, "agent:payer", chatFlow(g, "payer", "fake/payer", pay), &clutchgenkit.Options{Store: st})
	h := submit(t, r, "skill:payer", "Pay the bill")
	out, err := h.Wait(ctx)
	if !errors.Is(err, protocol.CodeInputRequired) || out == nil || out.Question == nil {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	q := out.Question
	ref, _ := q.Details["genkit_checkpoint_ref"].(string)
	if q.Text != "Pay 10 EUR?" || fmt.Sprint(q.Details["genkit_generate"]) != "0" {
		t.Fatalf("question %+v", q)
	}
	if a, err := st.GetArtifact(ctx, ref); err != nil || a.MediaType != clutchgenkit.CheckpointMediaType || len(a.Data) == 0 {
		t.Fatalf("checkpoint %q: %v", ref, err)
	}
	h2, err := r.Answer(ctx, q.ID, router.Answerer{AgentID: "agent:user"}, json.RawMessage(`"yes"`))
	if err != nil {
		t.Fatal(err)
	}
	out, err = h2.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := router.ResultAs[string](out); err != nil || res != "answer: paid 10 EUR" {
		t.Fatalf("result %q, %v", res, err)
	}
	if calls != 2 {
		t.Fatalf("the model was called %d times, want 2 (one before the question, one after)", calls)
	}
	msgs := events(t, st, h.Request().RunID)
	wantSeq(t, routertest.Sequence(t, msgs, ""), []string{
		"task.request", "routing.decision", "task.accept",
		"x.clutch.model_call",
		"tool.call pay #1", "tool.error pay #1",
		"task.question", "task.answer",
		"routing.decision", "task.accept",
		"tool.call pay #2", "tool.result pay #2",
		"x.clutch.model_call",
		"task.result",
	})
	if te := payloadOf[protocol.ErrorPayload](t, msgs, protocol.TypeToolError, 0); te.Code != protocol.CodeInputRequired || te.Details["interrupted"] != true {
		t.Fatalf("the interrupted call's tool.error %+v", te)
	}
	if c := payloadOf[toolEvent](t, msgs, protocol.TypeToolCall, 1); string(c.Args) != `{"amount":10}` {
		t.Fatalf("the restarted call %+v", c)
	}
}

// Options.Resume makes the answer the interrupted tool's response
// (ToolDef.RespondWith): the tool does not run again. A flow's Generate
// calls before the interrupted one return their recorded responses.
func TestInterruptRespond(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	g := newGenkit(t)
	calls := 0
	defineModel(g, "payer", 0, countingModel(callThen("pay", map[string]any{"amount": 10}), &calls))
	defineModel(g, "namer", 0, countingModel(func(context.Context, *ai.ModelRequest) (*ai.ModelResponse, error) {
		return &ai.ModelResponse{Message: ai.NewModelTextMessage("the bill"), FinishReason: ai.FinishReasonStop}, nil
	}, &calls))
	pay := definePay(g)
	flow := genkit.DefineFlow(g, "payer", func(ctx context.Context, in string) (string, error) {
		first, err := clutchgenkit.Generate(ctx, g, ai.WithModelName("fake/namer"), ai.WithPrompt(in))
		if err != nil {
			return "", err
		}
		resp, err := clutchgenkit.Generate(ctx, g, ai.WithModelName("fake/payer"), ai.WithPrompt("Pay "+first.Text()), ai.WithTools(pay))
		if err != nil {
			return "", err
		}
		return resp.Text(), nil
	})
	register(t, r, "agent:payer", flow, &clutchgenkit.Options{Store: st,
		Resume: func(_ *protocol.Question, p *ai.Part, answer json.RawMessage) (*ai.Part, error) {
			var s string
			if err := json.Unmarshal(answer, &s); err != nil {
				return nil, err
			}
			return pay.RespondWith(p, "a person said "+s)
		}})
	h := submit(t, r, "skill:payer", "What is due?")
	out, err := h.Wait(ctx)
	if !errors.Is(err, protocol.CodeInputRequired) || out.Question == nil || fmt.Sprint(out.Question.Details["genkit_generate"]) != "1" {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	h2, err := r.Answer(ctx, out.Question.ID, router.Answerer{AgentID: "agent:user"}, json.RawMessage(`"no"`))
	if err != nil {
		t.Fatal(err)
	}
	out, err = h2.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := router.ResultAs[string](out); err != nil || res != "answer: a person said no" {
		t.Fatalf("result %q, %v", res, err)
	}
	if calls != 3 {
		t.Fatalf("the models were called %d times, want 3", calls)
	}
	wantSeq(t, routertest.Sequence(t, events(t, st, h.Request().RunID), ""), []string{
		"task.request", "routing.decision", "task.accept",
		"x.clutch.model_call",
		"x.clutch.model_call",
		"tool.call pay #1", "tool.error pay #1",
		"task.question", "task.answer",
		"routing.decision", "task.accept",
		"x.clutch.model_call",
		"task.result",
	})
}

// A flow that calls genkit.Generate itself gets the interrupted response
// and cannot ask: the task ends with INPUT_REQUIRED saying why. So does
// one without Options.Store, which has nowhere to keep the checkpoint.
func TestInterruptNotResumable(t *testing.T) {
	ctx := context.Background()
	r, _ := newRouter(t, nil)
	g := newGenkit(t)
	defineModel(g, "payer", 0, callThen("pay", map[string]any{"amount": 10}))
	pay := definePay(g)
	plain := genkit.DefineFlow(g, "plain", func(ctx context.Context, in string) (string, error) {
		resp, err := genkit.Generate(ctx, g, ai.WithModelName("fake/payer"), ai.WithPrompt(in), ai.WithTools(pay))
		if err != nil {
			return "", err
		}
		return resp.Text(), nil
	})
	register(t, r, "agent:plain", plain, nil)
	register(t, r, "agent:nostore", chatFlow(g, "nostore", "fake/payer", pay), nil)
	for capability, want := range map[string]string{"skill:plain": "tool pay paused for input", "skill:nostore": "Pay 10 EUR?"} {
		_, err := submit(t, r, capability, "Pay the bill").Wait(ctx)
		if ep := wireError(t, err); ep.Code != protocol.CodeInputRequired || ep.Message != want || ep.Details["not_resumable"] == nil {
			t.Fatalf("%s: error %#v", capability, ep)
		}
	}
}

// payTwice is a model that pays 10, then 20, then says what the tool
// answered last.
func payTwice(_ context.Context, req *ai.ModelRequest) (*ai.ModelResponse, error) {
	paid := 0
	var last any
	for _, m := range req.Messages {
		if m.Role == ai.RoleTool {
			paid++
			last = m.Content[0].ToolResponse.Output
		}
	}
	if paid == 2 {
		return &ai.ModelResponse{Message: ai.NewModelTextMessage(fmt.Sprint("done: ", last)), FinishReason: ai.FinishReasonStop}, nil
	}
	msg := &ai.Message{Role: ai.RoleModel, Content: []*ai.Part{ai.NewToolRequestPart(&ai.ToolRequest{Name: "pay", Ref: fmt.Sprint("call_", paid), Input: map[string]any{"amount": 10 * (paid + 1)}})}}
	return &ai.ModelResponse{Message: msg, FinishReason: ai.FinishReasonStop}, nil
}

// A generate loop interrupted again after it resumed asks a second
// question, with a checkpoint of the longer conversation; its answer
// resumes from there.
func TestInterruptTwice(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	g := newGenkit(t)
	calls := 0
	defineModel(g, "payer", 0, countingModel(payTwice, &calls))
	register(t, r, "agent:payer", chatFlow(g, "payer", "fake/payer", definePay(g)), &clutchgenkit.Options{Store: st})
	h := submit(t, r, "skill:payer", "Pay both bills")
	out, err := h.Wait(ctx)
	for i, want := range []string{"Pay 10 EUR?", "Pay 20 EUR?"} {
		if !errors.Is(err, protocol.CodeInputRequired) || out.Question == nil || out.Question.Text != want || out.Question.Index != i {
			t.Fatalf("question %d: outcome %+v, %v", i, out, err)
		}
		h2, err2 := r.Answer(ctx, out.Question.ID, router.Answerer{AgentID: "agent:user"}, json.RawMessage(`"yes"`))
		if err2 != nil {
			t.Fatal(err2)
		}
		out, err = h2.Wait(ctx)
	}
	if err != nil {
		t.Fatal(err)
	}
	if res, err := router.ResultAs[string](out); err != nil || res != "done: paid 20 EUR" {
		t.Fatalf("result %q, %v", res, err)
	}
	if calls != 3 {
		t.Fatalf("the model was called %d times, want 3", calls)
	}
	wantSeq(t, routertest.Sequence(t, events(t, st, h.Request().RunID), ""), []string{
		"task.request", "routing.decision", "task.accept",
		"x.clutch.model_call",
		"tool.call pay #1", "tool.error pay #1",
		"task.question", "task.answer",
		"routing.decision", "task.accept",
		"tool.call pay #2", "tool.result pay #2",
		"x.clutch.model_call",
		"tool.call pay #3", "tool.error pay #3",
		"task.question", "task.answer",
		"routing.decision", "task.accept",
		"tool.call pay #4", "tool.result pay #4",
		"x.clutch.model_call",
		"task.result",
	})
}

// A subtask cannot ask: a flow delegated to through Tool that is
// interrupted ends its subtask with INPUT_REQUIRED (not_asked), which is
// the delegating flow's tool failure.
func TestInterruptInSubtask(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	g := newGenkit(t)
	defineModel(g, "payer", 0, callThen("pay", map[string]any{"amount": 10}))
	register(t, r, "agent:payer", chatFlow(g, "payer", "fake/payer", definePay(g)), &clutchgenkit.Options{Store: st})
	team, err := clutchgenkit.Tool(r, "skill:payer", nil)
	if err != nil {
		t.Fatal(err)
	}
	defineModel(g, "boss", 0, callThen("skill_payer", map[string]any{"input": "Pay the bill"}))
	register(t, r, "agent:boss", chatFlow(g, "boss", "fake/boss", team), nil)
	h := submit(t, r, "skill:boss", "Get the bill paid")
	_, err = h.Wait(ctx)
	if ep := wireError(t, err); ep.Code != protocol.CodeToolFailed || ep.Details["name"] != "skill_payer" || ep.Details["cause_code"] != "INPUT_REQUIRED" {
		t.Fatalf("error %#v", ep)
	}
	msgs := events(t, st, h.Request().RunID)
	// The boss's tool.error keeps the subtask's code: the bridge's own
	// tool hands its wire error over, where a span has only its text.
	if te := payloadOf[protocol.ErrorPayload](t, msgs, protocol.TypeToolError, 1); te.Code != protocol.CodeInputRequired || te.Details["name"] != "skill_payer" {
		t.Fatalf("the boss's tool.error %+v", te)
	}
	for _, m := range msgs {
		if m.Type == protocol.TypeTaskError && m.ParentTaskID == h.TaskID() {
			var ep protocol.ErrorPayload
			if err := json.Unmarshal(m.Payload, &ep); err != nil {
				t.Fatal(err)
			}
			if ep.Code != protocol.CodeInputRequired || ep.Message != "Pay 10 EUR?" || ep.Details["not_asked"] == nil {
				t.Fatalf("subtask error %+v", ep)
			}
			return
		}
	}
	t.Fatal("the subtask did not fail")
}

// A tool that interrupts again when it is restarted cannot be resumed
// (Genkit refuses it): the task ends with INPUT_REQUIRED saying so.
func TestInterruptAgainOnRestart(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	g := newGenkit(t)
	defineModel(g, "payer", 0, callThen("pay", map[string]any{"amount": 10}))
	stubborn := genkit.DefineTool(g, "pay", "Pay an amount", func(tc *ai.ToolContext, in payArgs) (string, error) {
		return "", tc.Interrupt(&ai.InterruptOptions{Metadata: map[string]any{"question": "Really?"}})
	})
	register(t, r, "agent:payer", chatFlow(g, "payer", "fake/payer", stubborn), &clutchgenkit.Options{Store: st})
	out, err := submit(t, r, "skill:payer", "Pay the bill").Wait(ctx)
	if !errors.Is(err, protocol.CodeInputRequired) || out.Question == nil {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	h2, err := r.Answer(ctx, out.Question.ID, router.Answerer{AgentID: "agent:user"}, json.RawMessage(`"yes"`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = h2.Wait(ctx)
	if ep := wireError(t, err); ep.Code != protocol.CodeInputRequired || ep.Message != "tool pay paused for input" || ep.Details["not_resumable"] == nil {
		t.Fatalf("error %#v", ep)
	}
}
