package genkit_test

import (
	"context"
	"errors"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"

	clutchgenkit "github.com/clutchprotocol/clutch/adapters/genkit"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/store"
)

// Cancelling the task mid-run stops the flow: the tool in flight sees its
// context end, the task ends with task.cancel, and no goroutine is left
// (TestMain).
func TestCancel(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	g := newGenkit(t)
	defineModel(g, "tooler", 0, callThen("wait", map[string]any{"city": "Oslo"}))
	started, release, stopped := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	wait := genkit.DefineTool(g, "wait", "Waits for the world", func(tc *ai.ToolContext, _ cityArgs) (string, error) {
		close(started)
		<-tc.Done()
		<-release // returns once the task has ended: its outcome is not recorded
		stopped <- tc.Err()
		return "", tc.Err()
	})
	register(t, r, "agent:slow", chatFlow(g, "slow", "fake/tooler", wait), nil)
	h := submit(t, r, "skill:slow", "Take your time")
	<-started
	h.Cancel("the user gave up")
	out, err := h.Wait(ctx)
	if !errors.Is(err, protocol.CodeCancelled) || out.Type != protocol.TypeTaskCancel {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	close(release)
	if err := <-stopped; !errors.Is(err, context.Canceled) {
		t.Fatalf("the tool's context ended with %v", err)
	}
	if err := r.Shutdown(ctx); err != nil { // every handler has returned
		t.Fatal(err)
	}
	msgs := events(t, st, h.Request().RunID)
	// The tool's call was recorded; its outcome came after the task had
	// ended, and an ended task records nothing more.
	wantSeq(t, routertest.Sequence(t, msgs, ""), []string{
		"task.request", "routing.decision", "task.accept",
		"x.clutch.model_call",
		"tool.call wait #1",
		"task.cancel",
	})
}

// A flow's model delegates to a Clutch agent through Tool: the call is a
// real subtask of the flow's task (parent_task_id, the same run), and its
// result is the tool's output the model answers with.
func TestDelegation(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	if err := r.Register(ctx, router.Card("agent:meteo", "skill:weather"), func(_ context.Context, t *router.Task) (*router.Result, error) {
		q, err := router.Input[string](t)
		if err != nil {
			return nil, err
		}
		return &router.Result{Payload: "rain in " + q}, nil
	}); err != nil {
		t.Fatal(err)
	}
	team, err := clutchgenkit.Tool(r, "skill:weather", &clutchgenkit.ToolOptions{Description: "Ask the team for the weather"})
	if err != nil {
		t.Fatal(err)
	}
	if d := team.Definition(); d.Name != "skill_weather" || d.Description != "Ask the team for the weather" {
		t.Fatalf("tool definition %+v", d)
	}
	g := newGenkit(t)
	defineModel(g, "tooler", 0, callThen("skill_weather", map[string]any{"input": "Bergen"}))
	register(t, r, "agent:forecaster", chatFlow(g, "forecaster", "fake/tooler", team), &clutchgenkit.Options{Tools: []ai.Tool{team}})
	h := submit(t, r, "skill:forecaster", "Weather in Bergen?")
	out, err := h.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := router.ResultAs[string](out); err != nil || res != "answer: rain in Bergen" {
		t.Fatalf("result %q, %v", res, err)
	}
	msgs := events(t, st, h.Request().RunID)
	var sub *protocol.Message
	for _, m := range msgs {
		if m.Type == protocol.TypeTaskRequest && m.TaskID != h.TaskID() {
			sub = m
		}
	}
	if sub == nil || sub.ParentTaskID != h.TaskID() || sub.RunID != h.Request().RunID || string(sub.Payload) != `"Bergen"` {
		t.Fatalf("subtask %+v", sub)
	}
	wantSeq(t, routertest.Sequence(t, msgs, h.TaskID()), []string{
		"task.request", "routing.decision", "task.accept",
		"x.clutch.model_call",
		"tool.call skill_weather #1", "tool.result skill_weather #1",
		"x.clutch.model_call",
		"task.result",
	})
	wantSeq(t, routertest.Sequence(t, msgs, sub.TaskID), []string{"task.request", "routing.decision", "task.accept", "task.result"})
	// The subtask runs between the tool's call and its result.
	var order []string
	for _, m := range msgs {
		if m.Type == protocol.TypeToolCall || m.Type == protocol.TypeToolResult || m.TaskID == sub.TaskID && m.Type == protocol.TypeTaskResult {
			order = append(order, string(m.Type))
		}
	}
	wantSeq(t, order, []string{"tool.call", "task.result", "tool.result"})
}

// Outside a Clutch task, Tool submits a root task and waits for it; a
// failed task is the tool's error.
func TestToolOutsideTask(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	if err := r.Register(ctx, router.Card("agent:meteo", "skill:weather"), func(_ context.Context, t *router.Task) (*router.Result, error) {
		in, err := router.Input[struct {
			City string `json:"city"`
		}](t)
		if err != nil {
			return nil, err
		}
		if in.City == "Atlantis" {
			return nil, router.Fail(protocol.CodeNotFound, "no such city", false, nil)
		}
		return &router.Result{Payload: map[string]any{"sky": "clear", "city": in.City}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	team, err := clutchgenkit.Tool(r, "skill:weather", &clutchgenkit.ToolOptions{Name: "meteo", From: "agent:app",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := team.RunRaw(ctx, map[string]any{"city": "Oslo"})
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := out.(map[string]any); !ok || m["sky"] != "clear" || m["city"] != "Oslo" {
		t.Fatalf("output %#v", out)
	}
	if _, err := team.RunRaw(ctx, map[string]any{"city": "Atlantis"}); err == nil || !errors.Is(err, protocol.CodeNotFound) {
		t.Fatalf("error %v", err)
	}
	// Two root tasks from the tool's From, with no parent.
	n := 0
	for ev, err := range st.Read(ctx, store.Query{AgentID: "agent:app", TypePrefix: string(protocol.TypeTaskRequest)}) {
		if err != nil {
			t.Fatal(err)
		}
		m, err := ev.Message()
		if err != nil || m.ParentTaskID != "" || m.Requires[0] != "skill:weather" {
			t.Fatalf("request %+v, %v", m, err)
		}
		n++
	}
	if n != 2 {
		t.Fatalf("%d root tasks, want 2", n)
	}
}

// New and Tool refuse what they cannot work with.
func TestOptions(t *testing.T) {
	r, _ := newRouter(t, nil)
	g := newGenkit(t)
	flow := chatFlow(g, "f", "fake/none")
	for name, err := range map[string]error{
		"agent id": func() error { _, err := clutchgenkit.New("forecaster", flow, nil); return err }(),
		"progress bytes": func() error {
			_, err := clutchgenkit.New("agent:f", flow, &clutchgenkit.Options{ProgressBytes: -1})
			return err
		}(),
		"no router":     func() error { _, err := clutchgenkit.Tool(nil, "skill:x", nil); return err }(),
		"no capability": func() error { _, err := clutchgenkit.Tool(r, "", nil); return err }(),
		"from": func() error {
			_, err := clutchgenkit.Tool(r, "skill:x", &clutchgenkit.ToolOptions{From: "app"})
			return err
		}(),
	} {
		if !errors.Is(err, clutchgenkit.ErrOptions) || !errors.Is(err, protocol.CodeInvalidField) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
