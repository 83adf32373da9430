package genkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"

	clutchgenkit "github.com/clutchprotocol/clutch/adapters/genkit"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

type toolEvent struct {
	CallID  string          `json:"call_id"`
	Tool    string          `json:"tool"`
	Name    string          `json:"name"`
	Args    json.RawMessage `json:"args"`
	Content json.RawMessage `json:"content"`
}

var toolLoopSeq = []string{
	"task.request", "routing.decision", "task.accept",
	"x.clutch.model_call",
	"tool.call weather #1", "tool.result weather #1",
	"x.clutch.model_call",
	"task.result",
}

// A flow's generate loop as a Clutch task: a model call asking for the
// tool, the tool's call and result under one call id, the model's answer,
// which is the task's result.
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
	g := newGenkit(t)
	defineModel(g, "tooler", 0, callThen("weather", map[string]any{"city": "Oslo"}))
	w := defineWeather(g, nil)
	flow := chatFlow(g, "forecaster", "fake/tooler", w)
	a := register(t, r, "agent:forecaster", flow, &clutchgenkit.Options{Description: "Says the weather", Tools: []ai.Tool{w}})
	card := a.Card()
	if card.Display.Name != "forecaster" || card.Display.Desc != "Says the weather" || len(card.Capabilities) != 1 ||
		card.Capabilities[0].ID != "skill:forecaster" || !slices.Equal(card.Capabilities[0].Tools, []string{"genkit:weather"}) {
		t.Fatalf("card %+v %+v", card.Display, card.Capabilities)
	}
	h := submit(t, r, "skill:forecaster", "Weather in Oslo?")
	out, err := h.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := router.ResultAs[string](out); err != nil || res != "answer: sunny in Oslo" {
		t.Fatalf("result %q, %v", res, err)
	}
	msgs := events(t, st, h.Request().RunID)
	wantSeq(t, routertest.Sequence(t, msgs, ""), toolLoopSeq)
	call := payloadOf[toolEvent](t, msgs, protocol.TypeToolCall, 0)
	if call.Tool != "genkit" || call.Name != "weather" || string(call.Args) != `{"city":"Oslo"}` {
		t.Fatalf("tool.call %+v", call)
	}
	if res := payloadOf[toolEvent](t, msgs, protocol.TypeToolResult, 0); string(res.Content) != `"sunny in Oslo"` {
		t.Fatalf("tool.result %+v", res)
	}
	first := payloadOf[router.ModelCall](t, msgs, router.TypeModelCall, 0)
	second := payloadOf[router.ModelCall](t, msgs, router.TypeModelCall, 1)
	if first.Model != "tooler" || first.Provider != "fake" || first.FinishReason != "stop" || first.ToolCalls != 1 ||
		first.InputTokens != 10 || first.OutputTokens != 3 || first.TotalTokens != 13 || first.Error != nil {
		t.Fatalf("first model call %+v", first)
	}
	if second.ToolCalls != 0 || second.TotalTokens != 25 {
		t.Fatalf("second model call %+v", second)
	}
}

// A tool that fails: its tool.error pairs with its call, and the task
// fails with TOOL_FAILED naming the tool and keeping its words.
func TestFailingTool(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	g := newGenkit(t)
	defineModel(g, "tooler", 0, callThen("weather", map[string]any{"city": "Oslo"}))
	w := defineWeather(g, errors.New("the weather service is down"))
	register(t, r, "agent:forecaster", chatFlow(g, "forecaster", "fake/tooler", w), nil)
	h := submit(t, r, "skill:forecaster", "Weather in Oslo?")
	_, err := h.Wait(ctx)
	ep := wireError(t, err)
	if ep.Code != protocol.CodeToolFailed || ep.Message != "tool weather failed: the weather service is down" ||
		ep.Details["name"] != "weather" || ep.Details["tool"] != "genkit" || ep.Details["cause_code"] != "INTERNAL" {
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
	g := newGenkit(t)
	defineModel(g, "busy", 0, func(context.Context, *ai.ModelRequest) (*ai.ModelResponse, error) {
		return nil, errors.New("the model is overloaded")
	})
	register(t, r, "agent:forecaster", chatFlow(g, "forecaster", "fake/busy", defineWeather(g, nil)), nil)
	h := submit(t, r, "skill:forecaster", "Weather in Oslo?")
	_, err := h.Wait(ctx)
	if ep := wireError(t, err); ep.Code != protocol.CodeDependency || ep.Message != "model fake/busy failed: the model is overloaded" {
		t.Fatalf("error %#v", ep)
	}
	msgs := events(t, st, h.Request().RunID)
	wantSeq(t, routertest.Sequence(t, msgs, ""), []string{
		"task.request", "routing.decision", "task.accept", "x.clutch.model_call", "task.error",
	})
	if mc := payloadOf[router.ModelCall](t, msgs, router.TypeModelCall, 0); mc.Error == nil || mc.Error.Code != protocol.CodeDependency || mc.Error.Message != "the model is overloaded" {
		t.Fatalf("model call %+v", mc)
	}
}

// A streaming flow: what it streams comes as task.progress events of at
// least ProgressBytes (the last takes the rest), which join to the
// result.
func TestStreaming(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	g := newGenkit(t)
	defineModel(g, "tooler", 3, callThen("weather", map[string]any{"city": "Oslo"}))
	w := defineWeather(g, nil)
	flow := genkit.DefineStreamingFlow(g, "forecaster", func(ctx context.Context, in string, cb func(context.Context, string) error) (string, error) {
		resp, err := clutchgenkit.Generate(ctx, g, ai.WithModelName("fake/tooler"), ai.WithPrompt(in), ai.WithTools(w),
			ai.WithStreaming(func(ctx context.Context, c *ai.ModelResponseChunk) error { return cb(ctx, c.Text()) }))
		if err != nil {
			return "", err
		}
		return resp.Text(), nil
	})
	register(t, r, "agent:forecaster", flow, &clutchgenkit.Options{Stream: true, ProgressBytes: 8})
	h := submit(t, r, "skill:forecaster", "Weather in Oslo?")
	out, err := h.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := router.ResultAs[string](out); err != nil || res != "answer: sunny in Oslo" {
		t.Fatalf("result %q, %v", res, err)
	}
	msgs := events(t, st, h.Request().RunID)
	texts := routertest.Streamed(t, msgs, "")
	// 21 bytes in chunks of 3 (the tool's turn streams no text), gathered
	// to at least 8: 9, 9, 3.
	if !slices.Equal(texts, []string{"answer: s", "unny in O", "slo"}) {
		t.Fatalf("progress %q", texts)
	}
	wantSeq(t, routertest.Sequence(t, msgs, ""), []string{
		"task.request", "routing.decision", "task.accept",
		"x.clutch.model_call",
		"tool.call weather #1", "tool.result weather #1",
		"task.progress", "task.progress",
		"x.clutch.model_call",
		"task.progress",
		"task.result",
	})
}

type cityQuery struct {
	City string `json:"city"`
}

type forecast struct {
	City string `json:"city"`
	Sky  string `json:"sky"`
}

// A flow with typed input and output: the request payload is decoded
// into the input, the output is the result's JSON; a payload that does
// not fit fails with VALIDATION before the flow runs.
func TestTypedFlow(t *testing.T) {
	ctx := context.Background()
	r, _ := newRouter(t, nil)
	g := newGenkit(t)
	runs := 0
	flow := genkit.DefineFlow(g, "typed", func(_ context.Context, q cityQuery) (forecast, error) {
		runs++
		return forecast{City: q.City, Sky: "clear"}, nil
	})
	register(t, r, "agent:typed", flow, &clutchgenkit.Options{ResultType: "weather.forecast.v1"})
	out, err := submit(t, r, "skill:typed", map[string]any{"city": "Oslo"}).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := router.ResultAs[forecast](out); err != nil || res != (forecast{City: "Oslo", Sky: "clear"}) || out.Message.PayloadType != "weather.forecast.v1" {
		t.Fatalf("result %+v, %v (%s)", res, err, out.Message.PayloadType)
	}
	_, err = submit(t, r, "skill:typed", []int{1}).Wait(ctx)
	if ep := wireError(t, err); ep.Code != protocol.CodeValidation || runs != 1 ||
		ep.Message != "genkit: the request does not fit the flow's input: the payload is a JSON array of the wrong kind" {
		t.Fatalf("error %#v after %d runs", ep, runs)
	}
}

// A flow that streams values that are not text: each is one
// task.progress {"value"}, in order.
func TestStreamingValues(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	g := newGenkit(t)
	flow := genkit.DefineStreamingFlow(g, "sky", func(ctx context.Context, q cityQuery, cb func(context.Context, forecast) error) (int, error) {
		for _, sky := range []string{"cloudy", "clear"} {
			if err := cb(ctx, forecast{City: q.City, Sky: sky}); err != nil {
				return 0, err
			}
		}
		return 2, nil
	})
	register(t, r, "agent:sky", flow, &clutchgenkit.Options{Stream: true})
	h := submit(t, r, "skill:sky", map[string]any{"city": "Oslo"})
	out, err := h.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := router.ResultAs[int](out); err != nil || n != 2 {
		t.Fatalf("result %d, %v", n, err)
	}
	var got []string
	for _, m := range events(t, st, h.Request().RunID) {
		if m.Type == protocol.TypeTaskProgress {
			got = append(got, string(m.Payload))
		}
	}
	wantSeq(t, got, []string{`{"value":{"city":"Oslo","sky":"cloudy"}}`, `{"value":{"city":"Oslo","sky":"clear"}}`})
}

// A streamed value the task cannot store (NaN is no JSON) ends the run
// with the store's error. The bridge stops reading the flow's stream
// there, which Genkit's Flow.Stream does not allow a range loop to do
// (it yields the flow's error after the loop broke): the handler must
// not panic.
func TestStreamingStopsOnAProgressError(t *testing.T) {
	ctx := context.Background()
	r, _ := newRouter(t, nil)
	g := newGenkit(t)
	flow := genkit.DefineStreamingFlow(g, "nan", func(ctx context.Context, _ string, cb func(context.Context, float64) error) (int, error) {
		if err := cb(ctx, math.NaN()); err != nil {
			return 0, err
		}
		return 1, nil
	})
	register(t, r, "agent:nan", flow, &clutchgenkit.Options{Stream: true})
	h := submit(t, r, "skill:nan", "Go")
	_, err := h.Wait(ctx)
	if ep := wireError(t, err); ep.Code != protocol.CodeWrongType || strings.Contains(ep.Message, "panicked") {
		t.Fatalf("error %+v", ep)
	}
}

// A flow whose streamed text chunks end inside a character (a model that
// streams bytes): no task.progress holds part of a character, so the
// progress texts are valid UTF-8 and join to the streamed text, the last
// one flushed at the end.
func TestStreamingSplitsNoCharacter(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	g := newGenkit(t)
	const answer = "Grüße ✓ 🌍 é"
	flow := genkit.DefineStreamingFlow(g, "talker", func(ctx context.Context, _ string, cb func(context.Context, string) error) (string, error) {
		for i := range len(answer) {
			if err := cb(ctx, answer[i:i+1]); err != nil {
				return "", err
			}
		}
		return answer, nil
	})
	register(t, r, "agent:talker", flow, &clutchgenkit.Options{Stream: true, ProgressBytes: 2})
	h := submit(t, r, "skill:talker", "Say hello")
	out, err := h.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := router.ResultAs[string](out); err != nil || res != answer {
		t.Fatalf("result %q, %v", res, err)
	}
	// Each piece is valid text, decoded as it was stored: a piece cut
	// inside a character would hold U+FFFD and not join to the answer.
	texts := routertest.Streamed(t, events(t, st, h.Request().RunID), "")
	if strings.Join(texts, "") != answer {
		t.Fatalf("progress %q joins to %q, not %q", texts, strings.Join(texts, ""), answer)
	}
}

// A tool that panics ends its span without Genkit's state (the span's
// End is deferred; Genkit recovers nothing): its call is a tool.error
// INTERNAL, not a tool.result. Here the flow runs the tool itself and
// recovers the panic.
func TestPanickingTool(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	g := newGenkit(t)
	boom := genkit.DefineTool(g, "boom", "Panics", func(*ai.ToolContext, cityArgs) (string, error) {
		panic("the tool exploded")
	})
	flow := genkit.DefineFlow(g, "boomer", func(ctx context.Context, _ string) (out string, err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("recovered: %v", p)
			}
		}()
		_, err = boom.RunRaw(ctx, map[string]any{"city": "Oslo"})
		return "", err
	})
	register(t, r, "agent:boomer", flow, nil)
	h := submit(t, r, "skill:boomer", "Go")
	if _, err := h.Wait(ctx); err == nil {
		t.Fatal("the flow succeeded")
	}
	msgs := events(t, st, h.Request().RunID)
	wantSeq(t, routertest.Sequence(t, msgs, ""), []string{
		"task.request", "routing.decision", "task.accept",
		"tool.call boom #1", "tool.error boom #1",
		"task.error",
	})
	if te := payloadOf[protocol.ErrorPayload](t, msgs, protocol.TypeToolError, 0); te.Code != protocol.CodeInternal {
		t.Fatalf("tool.error %+v", te)
	}
}
