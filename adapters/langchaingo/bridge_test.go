package langchaingo_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/prompts"
	"github.com/tmc/langchaingo/tools"

	"github.com/clutchprotocol/clutch/adapters/langchaingo"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

var toolLoopSeq = []string{
	"task.request", "routing.decision", "task.accept",
	"x.clutch.model_call",
	"tool.call weather #1", "tool.result weather #1",
	"x.clutch.model_call",
	"task.result",
}

// An agent executor's tool loop as a Clutch task: a model call asking for
// the tool, the tool's call and result under one call id, the model's
// final answer, which is the task's result.
func TestToolLoop(t *testing.T) {
	r, st := newRouter(t, nil)
	testToolLoop(t, r, st)
}

// The same tool loop on a boltstore file.
func TestToolLoopBolt(t *testing.T) {
	bs, err := boltstore.Open(filepath.Join(t.TempDir(), "clutch.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	r, st := newRouter(t, bs)
	testToolLoop(t, r, st)
}

func testToolLoop(t *testing.T, r *router.Router, st store.Store) {
	ctx := context.Background()
	w := weather(nil)
	ex := oneShot(newModel(action("weather", "Oslo"), final("sunny in Oslo")), w)
	a := register(t, r, "agent:forecaster", ex, &langchaingo.Options{Description: "Says the weather"})
	card := a.Card()
	if card.Display.Name != "forecaster" || card.Display.Desc != "Says the weather" || len(card.Capabilities) != 1 ||
		card.Capabilities[0].ID != "skill:forecaster" || !slices.Equal(card.Capabilities[0].Tools, []string{"langchaingo:weather"}) {
		t.Fatalf("card %+v %+v", card.Display, card.Capabilities)
	}
	h := submit(t, r, "skill:forecaster", "Weather in Oslo?")
	out, err := h.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := router.ResultAs[string](out); err != nil || res != "sunny in Oslo" {
		t.Fatalf("result %q, %v", res, err)
	}
	msgs := events(t, st, h.Request().RunID)
	wantSeq(t, routertest.Sequence(t, msgs, ""), toolLoopSeq)
	call := payloadOf[toolEvent](t, msgs, protocol.TypeToolCall, 0)
	if call.Tool != "langchaingo" || call.Name != "weather" || string(call.Args) != `"Oslo"` {
		t.Fatalf("tool.call %+v", call)
	}
	if res := payloadOf[toolEvent](t, msgs, protocol.TypeToolResult, 0); string(res.Content) != `"sunny in Oslo"` {
		t.Fatalf("tool.result %+v", res)
	}
	for i := range 2 {
		mc := payloadOf[router.ModelCall](t, msgs, router.TypeModelCall, i)
		if mc.Model != "fake-model" || mc.Provider != "fake" || mc.FinishReason != "stop" ||
			mc.InputTokens != 10 || mc.OutputTokens != 3 || mc.TotalTokens != 13 || mc.Error != nil {
			t.Fatalf("model call %d: %+v", i, mc)
		}
	}
	// New ran a copy of the executor: the caller's agent keeps its tools.
	if got := ex.Agent.GetTools(); len(got) != 1 || got[0] != w {
		t.Fatalf("the executor's tools were changed: %v", got)
	}
}

// A tool that fails: its tool.error pairs with its call, and the task
// fails with TOOL_FAILED naming the tool and keeping its words.
func TestFailingTool(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	register(t, r, "agent:forecaster", oneShot(newModel(action("weather", "Oslo"), final("?")), weather(errors.New("the weather service is down"))), nil)
	h := submit(t, r, "skill:forecaster", "Weather in Oslo?")
	_, err := h.Wait(ctx)
	ep := wireError(t, err)
	if ep.Code != protocol.CodeToolFailed || ep.Message != "tool weather failed: the weather service is down" ||
		ep.Details["name"] != "weather" || ep.Details["tool"] != "langchaingo" || ep.Details["cause_code"] != "INTERNAL" {
		t.Fatalf("error %#v", ep)
	}
	msgs := events(t, st, h.Request().RunID)
	wantSeq(t, routertest.Sequence(t, msgs, ""), []string{
		"task.request", "routing.decision", "task.accept",
		"x.clutch.model_call",
		"tool.call weather #1", "tool.error weather #1",
		"task.error",
	})
	te := payloadOf[protocol.ErrorPayload](t, msgs, protocol.TypeToolError, 0)
	if te.Message != "the weather service is down" || te.Details["call_id"] != ep.Details["call_id"] {
		t.Fatalf("tool.error %+v, task error details %v", te, ep.Details)
	}
}

// A model that fails: its model call is recorded with the error, and the
// task fails with DEPENDENCY.
func TestFailingModel(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	m := newModel()
	m.err = errors.New("the model is overloaded")
	register(t, r, "agent:forecaster", oneShot(m, weather(nil)), nil)
	h := submit(t, r, "skill:forecaster", "Weather in Oslo?")
	_, err := h.Wait(ctx)
	if ep := wireError(t, err); ep.Code != protocol.CodeDependency || ep.Message != "model fake-model failed: the model is overloaded" || !ep.Retryable {
		t.Fatalf("error %#v", ep)
	}
	msgs := events(t, st, h.Request().RunID)
	wantSeq(t, routertest.Sequence(t, msgs, ""), []string{"task.request", "routing.decision", "task.accept", "x.clutch.model_call", "task.error"})
	if mc := payloadOf[router.ModelCall](t, msgs, router.TypeModelCall, 0); mc.Error == nil || mc.Error.Message != "the model is overloaded" || mc.Model != "fake-model" {
		t.Fatalf("model call %+v", mc)
	}
}

// Errors of the agent itself map onto the error table: a model whose
// answer does not parse is DEPENDENCY, an agent out of iterations BUDGET.
func TestAgentErrors(t *testing.T) {
	ctx := context.Background()
	r, _ := newRouter(t, nil)
	register(t, r, "agent:mumbler", oneShot(newModel("I am not sure what to do."), weather(nil)), nil)
	loop := agents.NewExecutor(agents.NewOneShotAgent(newModel(action("weather", "Oslo")), []tools.Tool{weather(nil)}), agents.WithMaxIterations(2))
	register(t, r, "agent:looper", loop, nil)
	for capability, want := range map[string]protocol.Code{"skill:mumbler": protocol.CodeDependency, "skill:looper": protocol.CodeBudget} {
		_, err := submit(t, r, capability, "Weather?").Wait(ctx)
		if ep := wireError(t, err); ep.Code != want {
			t.Fatalf("%s: %#v, want %s", capability, ep, want)
		}
	}
}

// A model that streams bytes may end a chunk inside a character: no
// task.progress is cut there, and the pieces join to what it streamed.
func TestStreamingSplitsNoCharacter(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	answer := final("Grüße ✓ 🌍 é")
	m := newModel(answer)
	m.chunk = 1
	register(t, r, "agent:talker", oneShot(m), &langchaingo.Options{Stream: true, ProgressBytes: 2})
	h := submit(t, r, "skill:talker", "Say hello")
	if _, err := h.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	// Each piece is valid text, decoded as it was stored: a piece cut
	// inside a character would hold U+FFFD and not join to the answer.
	texts := routertest.Streamed(t, events(t, st, h.Request().RunID), "")
	if strings.Join(texts, "") != answer {
		t.Fatalf("progress %q joins to %q, not %q", texts, strings.Join(texts, ""), answer)
	}
}

// With Stream, what the model streams becomes task.progress events of at
// least ProgressBytes each: tiny chunks are gathered, the rest of a model
// call's text goes when the call ends (before its x.clutch.model_call),
// and the text before a tool call goes before the call.
func TestStreaming(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	m := newModel(action("weather", "Oslo"), final("sunny in Oslo"))
	m.chunk = 3
	register(t, r, "agent:forecaster", oneShot(m, weather(nil)), &langchaingo.Options{Stream: true, ProgressBytes: 16})
	h := submit(t, r, "skill:forecaster", "Weather in Oslo?")
	if _, err := h.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	msgs := events(t, st, h.Request().RunID)
	var seq []string
	var turns []string // the text of each model call, as streamed
	var text strings.Builder
	for i, s := range routertest.Sequence(t, msgs, "") {
		if s != "task.progress" {
			if text.Len() > 0 {
				turns = append(turns, text.String())
				text.Reset()
			}
			seq = append(seq, s)
			continue
		}
		p := payloadOf[langchaingo.Progress](t, msgs[i:], protocol.TypeTaskProgress, 0)
		if len(p.Text) < 16 && i+1 < len(msgs) && msgs[i+1].Type == protocol.TypeTaskProgress {
			t.Fatalf("a task.progress of %d bytes is followed by another: %q", len(p.Text), p.Text)
		}
		text.WriteString(p.Text)
		if len(seq) == 0 || seq[len(seq)-1] != "task.progress" {
			seq = append(seq, s)
		}
	}
	wantSeq(t, seq, []string{
		"task.request", "routing.decision", "task.accept",
		"task.progress", "x.clutch.model_call",
		"tool.call weather #1", "tool.result weather #1",
		"task.progress", "x.clutch.model_call",
		"task.result",
	})
	if !slices.Equal(turns, []string{action("weather", "Oslo"), final("sunny in Oslo")}) {
		t.Fatalf("streamed %q", turns)
	}
}

// A chain with two inputs takes them from a JSON object; text, a missing
// input and a payload that is neither text nor an object fail with
// VALIDATION, naming what was wrong.
func TestInputs(t *testing.T) {
	ctx := context.Background()
	r, _ := newRouter(t, nil)
	m := newModel("Oslo is sunny")
	m.cb = nil // an LLM chain's model without the bridge's callbacks
	chain := chains.NewLLMChain(m, prompts.NewPromptTemplate("Say the {{.what}} in {{.city}}.", []string{"what", "city"}))
	register(t, r, "agent:sayer", chain, nil)
	out, err := submit(t, r, "skill:sayer", map[string]any{"what": "weather", "city": "Oslo"}).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := router.ResultAs[string](out); err != nil || res != "Oslo is sunny" {
		t.Fatalf("result %q, %v", res, err)
	}
	for payload, want := range map[string]string{
		`"Oslo"`:          "the chain takes 2 inputs (what, city), so the payload must be a JSON object of them, not text",
		`{"what":"rain"}`: `the payload has no member "city", an input of the chain (what, city)`,
		`[1,2]`:           "the payload is a JSON array, not a JSON string or object",
	} {
		_, err := submit(t, r, "skill:sayer", json.RawMessage(payload)).Wait(ctx)
		if ep := wireError(t, err); ep.Code != protocol.CodeValidation || !strings.HasSuffix(ep.Message, want) {
			t.Fatalf("%s: %#v", payload, ep)
		}
	}
	// A one-input chain takes text as a JSON string or protocol Content.
	register(t, r, "agent:forecaster", oneShot(newModel(final("sunny")), weather(nil)), nil)
	for _, p := range []any{"Weather?", map[string]any{"text": "Weather?"}} {
		out, err := submit(t, r, "skill:forecaster", p).Wait(ctx)
		if res, rerr := router.ResultAs[string](out); err != nil || rerr != nil || res != "sunny" {
			t.Fatalf("%v: %q, %v %v", p, res, err, rerr)
		}
	}
}

// New refuses what cannot work, naming it.
func TestNewOptions(t *testing.T) {
	ex := oneShot(newModel(final("x")), weather(nil))
	for name, c := range map[string]struct {
		id    string
		chain chains.Chain
		opts  *langchaingo.Options
		want  string
	}{
		"id":       {"forecaster", ex, nil, `agent id "forecaster" does not start with "agent:"`},
		"chain":    {"agent:x", nil, nil, "no chain for agent:x"},
		"nil ptr":  {"agent:x", (*agents.Executor)(nil), nil, "no chain for agent:x"},
		"memory":   {"agent:x", &agents.Executor{Agent: ex.Agent}, nil, "the chain of agent:x has no memory"},
		"progress": {"agent:x", ex, &langchaingo.Options{ProgressBytes: -1}, "ProgressBytes -1 is negative"},
		"tool":     {"agent:x", ex, &langchaingo.Options{Tools: []tools.Tool{nil}}, "tool 1 has no name"},
	} {
		_, err := langchaingo.New(c.id, c.chain, c.opts)
		if !errors.Is(err, langchaingo.ErrOptions) || !errors.Is(err, protocol.CodeInvalidField) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
