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
	wantSeq(t, sequence(t, msgs, ""), []string{
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
	wantSeq(t, sequence(t, events(t, st, h.Request().RunID), ""), []string{
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
