package eino_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/clutchprotocol/clutch/adapters/eino"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

// register wraps g as the agent id and registers it with r.
func register[I, O any](tb testing.TB, r *router.Router, id string, g compose.Runnable[I, O], opts *eino.Options) *eino.Agent[I, O] {
	tb.Helper()
	a, err := eino.New(id, g, opts)
	if err != nil {
		tb.Fatal(err)
	}
	if err := r.Register(context.Background(), a.Card(), a.Handle); err != nil {
		tb.Fatal(err)
	}
	return a
}

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

// The ReAct graph's tool loop as a Clutch task: a model call asking for
// the tool, the tool's call and result under one call id, the model's
// answer, which is the task's result.
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
	w := weather(t)
	g := reactGraph(t, callThen("weather", `{"city":"Oslo"}`), nil, w)
	a := register(t, r, "agent:forecaster", g, &eino.Options{Description: "Says the weather", Tools: []tool.BaseTool{w}, Model: "fake-1"})
	card := a.Card()
	if card.Display.Name != "forecaster" || card.Display.Desc != "Says the weather" || len(card.Capabilities) != 1 ||
		card.Capabilities[0].ID != "skill:forecaster" || !slices.Equal(card.Capabilities[0].Tools, []string{"eino:weather"}) {
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
	if call.Tool != "eino" || call.Name != "weather" || string(call.Args) != `{"city":"Oslo"}` {
		t.Fatalf("tool.call %+v", call)
	}
	if res := payloadOf[toolEvent](t, msgs, protocol.TypeToolResult, 0); string(res.Content) != `"sunny in Oslo"` {
		t.Fatalf("tool.result %+v", res)
	}
	first := payloadOf[router.ModelCall](t, msgs, router.TypeModelCall, 0)
	second := payloadOf[router.ModelCall](t, msgs, router.TypeModelCall, 1)
	if first.Model != "fake-1" || first.Provider != "fake" || first.FinishReason != "tool_calls" || first.ToolCalls != 1 ||
		first.InputTokens != 10 || first.OutputTokens != 3 || first.TotalTokens != 13 || first.Error != nil {
		t.Fatalf("first model call %+v", first)
	}
	if second.FinishReason != "stop" || second.ToolCalls != 0 || second.TotalTokens != 25 {
		t.Fatalf("second model call %+v", second)
	}
}

// A tool that fails: its tool.error pairs with its call, and the task
// fails with TOOL_FAILED naming the tool and keeping its words.
func TestFailingTool(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	register(t, r, "agent:forecaster", reactGraph(t, callThen("weather", `{"city":"Oslo"}`), nil, broken(t)), nil)
	h := submit(t, r, "skill:forecaster", "Weather in Oslo?")
	_, err := h.Wait(ctx)
	var ep *protocol.ErrorPayload
	if !errors.As(err, &ep) || ep.Code != protocol.CodeToolFailed || ep.Message != "tool weather failed: the weather service is down" ||
		ep.Details["name"] != "weather" || ep.Details["tool"] != "eino" {
		t.Fatalf("error %#v", err)
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
	m := &fakeModel{reply: func(context.Context, []*schema.Message) (*schema.Message, error) {
		return nil, errors.New("the model is overloaded")
	}}
	register(t, r, "agent:forecaster", reactGraph(t, m, nil, weather(t)), &eino.Options{Model: "fake-1"})
	h := submit(t, r, "skill:forecaster", "Weather in Oslo?")
	_, err := h.Wait(ctx)
	var ep *protocol.ErrorPayload
	if !errors.As(err, &ep) || ep.Code != protocol.CodeDependency || ep.Message != "model fake-1 failed: the model is overloaded" {
		t.Fatalf("error %#v", err)
	}
	msgs := events(t, st, h.Request().RunID)
	wantSeq(t, routertest.Sequence(t, msgs, ""), []string{
		"task.request", "routing.decision", "task.accept", "x.clutch.model_call", "task.error",
	})
	if mc := payloadOf[router.ModelCall](t, msgs, router.TypeModelCall, 0); mc.Error == nil || mc.Error.Code != protocol.CodeDependency || mc.Error.Message != "the model is overloaded" {
		t.Fatalf("model call %+v", mc)
	}
}

// A streamed run: the answer's text comes as task.progress events of at
// least ProgressBytes (the last takes the rest), which join to the
// result; the streamed model calls are recorded with the usage of their
// last chunk.
func TestStreaming(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	m := callThen("weather", `{"city":"Oslo"}`)
	m.chunk = 3
	register(t, r, "agent:forecaster", reactGraph(t, m, nil, weather(t)), &eino.Options{Stream: true, ProgressBytes: 8})
	h := submit(t, r, "skill:forecaster", "Weather in Oslo?")
	out, err := h.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const answer = "answer: sunny in Oslo"
	if res, err := router.ResultAs[string](out); err != nil || res != answer {
		t.Fatalf("result %q, %v", res, err)
	}
	msgs := events(t, st, h.Request().RunID)
	texts := routertest.Streamed(t, msgs, "")
	// 21 bytes in chunks of 3, gathered to at least 8: 9, 9, 3.
	if !slices.Equal(texts, []string{"answer: s", "unny in O", "slo"}) {
		t.Fatalf("progress %q", texts)
	}
	// A streamed model call is stored when its stream has been read to
	// the end, which the graph does at the same time: where it falls
	// among the other events is not fixed, only that it is before the
	// result.
	seq := routertest.Sequence(t, msgs, "")
	wantSeq(t, slices.DeleteFunc(slices.Clone(seq), func(s string) bool { return s == string(router.TypeModelCall) }), []string{
		"task.request", "routing.decision", "task.accept",
		"tool.call weather #1", "tool.result weather #1",
		"task.progress", "task.progress", "task.progress",
		"task.result",
	})
	var reasons []string
	for i := range 2 {
		mc := payloadOf[router.ModelCall](t, msgs, router.TypeModelCall, i)
		reasons = append(reasons, mc.FinishReason)
		if mc.TotalTokens != 13 && mc.TotalTokens != 25 {
			t.Fatalf("streamed model call %+v", mc)
		}
	}
	slices.Sort(reasons)
	if !slices.Equal(reasons, []string{"stop", "tool_calls"}) || slices.Index(seq, string(router.TypeModelCall)) < 3 {
		t.Fatalf("streamed model calls: %q in %q", reasons, seq)
	}
}

// An interrupt of a tool becomes the task's question, with the
// checkpoint kept in the artifact store and its ref in the question; the
// answer resumes the graph from the checkpoint (the tool sees the answer)
// and the run finishes.
func TestInterruptResume(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	cs, err := eino.NewCheckPointStore(st)
	if err != nil {
		t.Fatal(err)
	}
	g := reactGraph(t, callThen("pay", `{"amount":10}`), cs, payTool(t))
	register(t, r, "agent:payer", g, &eino.Options{CheckPoints: cs})
	h := submit(t, r, "skill:payer", "Pay the bill")
	out, err := h.Wait(ctx)
	if !errors.Is(err, protocol.CodeInputRequired) || out == nil || out.Question == nil {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	q := out.Question
	if q.Text != "Pay 10 EUR?" || q.Details["eino_checkpoint_id"] != "clutch/"+h.TaskID() {
		t.Fatalf("question %+v", q)
	}
	ref, _ := q.Details["eino_checkpoint_ref"].(string)
	if a, err := st.GetArtifact(ctx, ref); err != nil || a.MediaType != eino.CheckpointMediaType || len(a.Data) == 0 {
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
	if te := payloadOf[protocol.ErrorPayload](t, msgs, protocol.TypeToolError, 0); te.Code != protocol.CodeInputRequired {
		t.Fatalf("the interrupted call's tool.error %+v", te)
	}
}

// Without a checkpoint store an interrupt cannot be resumed: the task
// ends with INPUT_REQUIRED saying so.
func TestInterruptWithoutCheckpoints(t *testing.T) {
	ctx := context.Background()
	r, _ := newRouter(t, nil)
	register(t, r, "agent:payer", reactGraph(t, callThen("pay", `{"amount":10}`), nil, payTool(t)), nil)
	_, err := submit(t, r, "skill:payer", "Pay the bill").Wait(ctx)
	var ep *protocol.ErrorPayload
	if !errors.As(err, &ep) || ep.Code != protocol.CodeInputRequired || ep.Message != "Pay 10 EUR?" || ep.Details["not_resumable"] == nil {
		t.Fatalf("error %#v", err)
	}
}

// Cancelling the task mid-run stops the graph: the model call in flight
// ends with the context, the task ends with task.cancel, and no
// goroutine is left (TestMain).
func TestCancel(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	started, release := make(chan struct{}), make(chan struct{})
	m := &fakeModel{reply: func(ctx context.Context, _ []*schema.Message) (*schema.Message, error) {
		close(started)
		<-ctx.Done()
		<-release // returns once the task has ended: its call is not recorded
		return nil, ctx.Err()
	}}
	register(t, r, "agent:slow", reactGraph(t, m, nil, weather(t)), nil)
	h := submit(t, r, "skill:slow", "Take your time")
	<-started
	h.Cancel("the user gave up")
	out, err := h.Wait(ctx)
	if !errors.Is(err, protocol.CodeCancelled) || out.Type != protocol.TypeTaskCancel {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	close(release)
	if err := r.Shutdown(ctx); err != nil { // every handler has returned
		t.Fatal(err)
	}
	msgs := events(t, st, h.Request().RunID)
	wantSeq(t, routertest.Sequence(t, msgs, ""), []string{
		"task.request", "routing.decision", "task.accept", "task.cancel",
	})
}

// The graph delegates to the team through Tool: a real subtask of its
// task (parent_task_id, the same run) that a plain Clutch agent runs, and
// whose result the model gets back.
func TestDelegation(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	if err := r.Register(ctx, router.Card("agent:shouter", "skill:shout"), func(_ context.Context, t *router.Task) (*router.Result, error) {
		s, err := router.Input[string](t)
		return &router.Result{Payload: strings.ToUpper(s)}, err
	}); err != nil {
		t.Fatal(err)
	}
	shout, err := eino.Tool(r, "skill:shout", nil)
	if err != nil {
		t.Fatal(err)
	}
	info, _ := shout.Info(ctx)
	if info.Name != "skill_shout" {
		t.Fatalf("tool name %q", info.Name)
	}
	register(t, r, "agent:caller", reactGraph(t, callThen("skill_shout", `{"input":"hello"}`), nil, shout), nil)
	h := submit(t, r, "skill:caller", "Say hello loudly")
	out, err := h.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := router.ResultAs[string](out); err != nil || res != "answer: HELLO" {
		t.Fatalf("result %q, %v", res, err)
	}
	msgs := events(t, st, h.Request().RunID)
	wantSeq(t, routertest.Sequence(t, msgs, h.TaskID()), []string{
		"task.request", "routing.decision", "task.accept",
		"x.clutch.model_call",
		"tool.call skill_shout #1", "tool.result skill_shout #1",
		"x.clutch.model_call",
		"task.result",
	})
	var sub *protocol.Message
	for _, m := range msgs {
		if m.Type == protocol.TypeTaskRequest && m.TaskID != h.TaskID() {
			sub = m
		}
	}
	if sub == nil || sub.ParentTaskID != h.TaskID() || sub.From.AgentID != "agent:caller" || !slices.Equal(sub.Requires, []string{"skill:shout"}) {
		t.Fatalf("subtask %+v", sub)
	}
	wantSeq(t, routertest.Sequence(t, msgs, sub.TaskID), []string{"task.request", "routing.decision", "task.accept", "task.result"})
}

// A delegation nobody can take fails the tool with the subtask's error,
// and the task with TOOL_FAILED whose cause is NO_MATCH.
func TestDelegationFails(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	shout, err := eino.Tool(r, "skill:shout", &eino.ToolOptions{Name: "shout"})
	if err != nil {
		t.Fatal(err)
	}
	register(t, r, "agent:caller", reactGraph(t, callThen("shout", `{"input":"hello"}`), nil, shout), nil)
	h := submit(t, r, "skill:caller", "Say hello loudly")
	_, err = h.Wait(ctx)
	var ep *protocol.ErrorPayload
	if !errors.As(err, &ep) || ep.Code != protocol.CodeToolFailed || ep.Details["cause_code"] != string(protocol.CodeNoMatch) {
		t.Fatalf("error %#v", err)
	}
	msgs := events(t, st, h.Request().RunID)
	wantSeq(t, routertest.Sequence(t, msgs, h.TaskID()), []string{
		"task.request", "routing.decision", "task.accept",
		"x.clutch.model_call",
		"tool.call shout #1", "tool.error shout #1",
		"task.error",
	})
	if te := payloadOf[protocol.ErrorPayload](t, msgs, protocol.TypeToolError, 0); te.Code != protocol.CodeNoMatch {
		t.Fatalf("tool.error %+v", te)
	}
}

// Outside a Clutch task the tool submits a root task and waits for it.
func TestToolOutsideTask(t *testing.T) {
	ctx := context.Background()
	r, _ := newRouter(t, nil)
	if err := r.Register(ctx, router.Card("agent:adder", "skill:add"), func(_ context.Context, t *router.Task) (*router.Result, error) {
		in, err := router.Input[struct{ A, B int }](t)
		return &router.Result{Payload: map[string]int{"sum": in.A + in.B}}, err
	}); err != nil {
		t.Fatal(err)
	}
	add, err := eino.Tool(r, "skill:add", &eino.ToolOptions{Params: map[string]*schema.ParameterInfo{
		"A": {Type: schema.Integer, Required: true}, "B": {Type: schema.Integer, Required: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := add.InvokableRun(ctx, `{"A":2,"B":3}`)
	if err != nil || got != `{"sum":5}` {
		t.Fatalf("%q, %v", got, err)
	}
	if _, err := add.InvokableRun(ctx, `{"A":`); !errors.Is(err, protocol.CodeInvalidJSON) {
		t.Fatalf("bad arguments: %v", err)
	}
}

// A typed graph takes the request's JSON as its input and gives its
// output as the result's JSON; a request that does not decode fails with
// VALIDATION.
func TestTypedGraph(t *testing.T) {
	ctx := context.Background()
	r, _ := newRouter(t, nil)
	type sum struct {
		Sum int `json:"sum"`
	}
	g, err := compose.NewChain[struct{ A, B int }, sum]().
		AppendLambda(compose.InvokableLambda(func(_ context.Context, in struct{ A, B int }) (sum, error) {
			return sum{in.A + in.B}, nil
		})).Compile(ctx)
	if err != nil {
		t.Fatal(err)
	}
	register(t, r, "agent:adder", g, &eino.Options{Capabilities: []string{"skill:add"}})
	out, err := submit(t, r, "skill:add", map[string]int{"A": 2, "B": 40}).Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := router.ResultAs[sum](out); err != nil || res.Sum != 42 {
		t.Fatalf("result %+v, %v", res, err)
	}
	if _, err := submit(t, r, "skill:add", "two and two").Wait(ctx); !errors.Is(err, protocol.CodeValidation) {
		t.Fatalf("bad input: %v", err)
	}
}

// New and Tool refuse what they cannot work with, with INVALID_FIELD.
func TestOptions(t *testing.T) {
	g := reactGraph(t, callThen("weather", `{}`), nil, weather(t))
	r, _ := newRouter(t, nil)
	for name, err := range map[string]error{
		"agent id":       func() error { _, err := eino.New("forecaster", g, nil); return err }(),
		"no runnable":    func() error { _, err := eino.New[string, string]("agent:x", nil, nil); return err }(),
		"progress bytes": func() error { _, err := eino.New("agent:x", g, &eino.Options{ProgressBytes: -1}); return err }(),
		"nil tool":       func() error { _, err := eino.New("agent:x", g, &eino.Options{Tools: []tool.BaseTool{nil}}); return err }(),
		"capability":     func() error { _, err := eino.New("agent:x", g, &eino.Options{Capabilities: []string{""}}); return err }(),
		"tool router":    func() error { _, err := eino.Tool(nil, "skill:x", nil); return err }(),
		"tool cap":       func() error { _, err := eino.Tool(r, "", nil); return err }(),
		"tool from":      func() error { _, err := eino.Tool(r, "skill:x", &eino.ToolOptions{From: "me"}); return err }(),
	} {
		if !errors.Is(err, eino.ErrOptions) || !errors.Is(err, protocol.CodeInvalidField) {
			t.Errorf("%s: %v", name, err)
		}
	}
	typed, err := compose.NewChain[int, int]().AppendLambda(compose.InvokableLambda(func(_ context.Context, i int) (int, error) { return i, nil })).Compile(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := eino.New("agent:x", typed, &eino.Options{Stream: true}); !errors.Is(err, eino.ErrOptions) {
		t.Errorf("stream of ints: %v", err)
	}
}

// A graph compiled to pause before a node asks before it runs it; the
// answer goes in after a restart — another router on the same store —
// and that router resumes the graph from the checkpoint in the artifact
// store: the node before the pause does not run again.
func TestInterruptBeforeNodeAfterRestart(t *testing.T) {
	ctx := context.Background()
	r1, st := newRouter(t, nil)
	drafts := 0
	// build compiles the graph with a checkpoint store on st, as each
	// process does at its start.
	build := func() (compose.Runnable[string, string], *eino.CheckPointStore) {
		cs, err := eino.NewCheckPointStore(st)
		if err != nil {
			t.Fatal(err)
		}
		g := compose.NewGraph[string, string]()
		_ = g.AddLambdaNode("draft", compose.InvokableLambda(func(_ context.Context, in string) (string, error) {
			drafts++
			return "draft of " + in, nil
		}))
		_ = g.AddLambdaNode("send", compose.InvokableLambda(func(_ context.Context, in string) (string, error) {
			return "sent " + in, nil
		}))
		_ = g.AddEdge(compose.START, "draft")
		_ = g.AddEdge("draft", "send")
		_ = g.AddEdge("send", compose.END)
		run, err := g.Compile(ctx, compose.WithCheckPointStore(cs), compose.WithInterruptBeforeNodes([]string{"send"}))
		if err != nil {
			t.Fatal(err)
		}
		return run, cs
	}
	run, cs := build()
	register(t, r1, "agent:mailer", run, &eino.Options{CheckPoints: cs})
	h := submit(t, r1, "skill:mailer", "the letter")
	out, err := h.Wait(ctx)
	if !errors.Is(err, protocol.CodeInputRequired) || out.Question == nil {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	if q := out.Question; q.Text != "The eino graph paused at send: answer to continue" {
		t.Fatalf("question %q", q.Text)
	}
	if err := r1.Close(); err != nil {
		t.Fatal(err)
	}

	r2, _ := newRouter(t, st) // the process after a restart, on the same store
	run, cs = build()
	register(t, r2, "agent:mailer", run, &eino.Options{CheckPoints: cs})
	if _, err := r2.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	h2, err := r2.Answer(ctx, out.Question.ID, router.Answerer{AgentID: "agent:user"}, json.RawMessage(`"go ahead"`))
	if err != nil {
		t.Fatal(err)
	}
	out, err = h2.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := router.ResultAs[string](out); err != nil || res != "sent draft of the letter" || drafts != 1 {
		t.Fatalf("result %q, %v; drafted %d times", res, err, drafts)
	}
}

// A graph's own error (a lambda's, not a model's or a tool's) keeps its
// code when it has one and is INTERNAL otherwise, with its words.
func TestGraphError(t *testing.T) {
	ctx := context.Background()
	r, _ := newRouter(t, nil)
	for capability, fail := range map[string]error{
		"skill:conflict": router.Fail(protocol.CodeConflict, "the ledger is locked", false, nil),
		"skill:plain":    errors.New("division by zero"),
	} {
		g, err := compose.NewChain[string, string]().AppendLambda(compose.InvokableLambda(func(context.Context, string) (string, error) {
			return "", fail
		})).Compile(ctx)
		if err != nil {
			t.Fatal(err)
		}
		register(t, r, "agent:"+strings.TrimPrefix(capability, "skill:"), g, &eino.Options{Capabilities: []string{capability}})
	}
	_, err := submit(t, r, "skill:conflict", "x").Wait(ctx)
	if !errors.Is(err, protocol.CodeConflict) || !strings.Contains(err.Error(), "the ledger is locked") {
		t.Fatalf("coded: %v", err)
	}
	_, err = submit(t, r, "skill:plain", "x").Wait(ctx)
	var ep *protocol.ErrorPayload
	if !errors.As(err, &ep) || ep.Code != protocol.CodeInternal || !strings.HasPrefix(ep.Message, "the eino graph failed: ") || !strings.Contains(ep.Message, "division by zero") {
		t.Fatalf("plain: %#v", err)
	}
}

// A tool that panics: eino recovers the panic into the graph's error
// without calling the tool's OnError, yet the tool.call still gets its
// one outcome, a tool.error INTERNAL, before the task ends with INTERNAL.
// Two calls run in parallel (eino's ToolsNode), one panicking in a
// goroutine of eino's: the other's result pairs with its own call.
func TestPanickingTool(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	boom, err := utils.InferTool("boom", "Panics", func(context.Context, cityArgs) (string, error) {
		panic("the tool exploded")
	})
	if err != nil {
		t.Fatal(err)
	}
	m := &fakeModel{reply: func(context.Context, []*schema.Message) (*schema.Message, error) {
		return schema.AssistantMessage("", []schema.ToolCall{
			{ID: "call_1", Type: "function", Function: schema.FunctionCall{Name: "weather", Arguments: `{"city":"Oslo"}`}},
			{ID: "call_2", Type: "function", Function: schema.FunctionCall{Name: "boom", Arguments: `{"city":"Oslo"}`}},
		}), nil
	}}
	register(t, r, "agent:boom", reactGraph(t, m, nil, weather(t), boom), nil)
	h := submit(t, r, "skill:boom", "Weather in Oslo?")
	if _, err := h.Wait(ctx); !errors.Is(err, protocol.CodeInternal) {
		t.Fatalf("error %#v", err)
	}
	msgs := events(t, st, h.Request().RunID)
	calls := map[string]string{}
	outcomes := map[string]int{}
	for _, m := range msgs {
		switch m.Type {
		case protocol.TypeToolCall, protocol.TypeToolResult, protocol.TypeToolError:
			id, ok := protocol.ToolCallID(m)
			if !ok {
				t.Fatalf("%s has no call id", m.Type)
			}
			if m.Type == protocol.TypeToolCall {
				calls[id] = payloadOf[toolEvent](t, []*protocol.Message{m}, m.Type, 0).Name
			} else {
				outcomes[id]++
			}
		}
	}
	if len(calls) != 2 {
		t.Fatalf("calls %v", calls)
	}
	for id, name := range calls {
		if outcomes[id] != 1 {
			t.Fatalf("call %s (%s) has %d outcomes:\n%s", id, name, outcomes[id], join(routertest.Sequence(t, msgs, "")))
		}
	}
	if msgs[len(msgs)-1].Type != protocol.TypeTaskError {
		t.Fatalf("last event %s", msgs[len(msgs)-1].Type)
	}
}

// A streamed answer whose chunks end inside a character (a model that
// streams bytes): no task.progress holds part of a character, so the
// progress texts are valid UTF-8 and join to the answer, the last one
// flushed at the end.
func TestStreamingSplitsNoCharacter(t *testing.T) {
	ctx := context.Background()
	r, st := newRouter(t, nil)
	const answer = "Grüße ✓ 🌍 é"
	m := &fakeModel{chunk: 1, reply: func(context.Context, []*schema.Message) (*schema.Message, error) {
		return schema.AssistantMessage(answer, nil), nil
	}}
	register(t, r, "agent:talker", reactGraph(t, m, nil, weather(t)), &eino.Options{Stream: true, ProgressBytes: 2})
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
