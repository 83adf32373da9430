package langchaingo_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/llms/fake"
	"github.com/tmc/langchaingo/tools"

	"github.com/clutchprotocol/clutch/adapters/langchaingo"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// exampleRouter is a router on a memstore, for the examples.
func exampleRouter() *router.Router {
	st, _ := memstore.New(nil)
	reg, _ := registry.Open(context.Background(), st, nil)
	r, _ := router.New(st, reg, &router.Options{Logger: slog.New(slog.DiscardHandler)})
	return r
}

// printRun prints the types of the run's events, a tool event with its
// tool's name.
func printRun(r *router.Router, runID string) {
	for ev, err := range r.Store().Read(context.Background(), store.Query{RunID: runID}) {
		if err != nil {
			panic(err)
		}
		m, _ := ev.Message()
		var p struct{ Name string }
		_ = json.Unmarshal(m.Payload, &p)
		fmt.Println(strings.TrimSpace(string(m.Type) + " " + p.Name))
	}
}

// A LangChainGo agent executor as a Clutch agent: its tool calls become
// the task's events, its final answer the task's result. (LangChainGo's
// fake model calls no callbacks handler, so no model call is recorded;
// give a provider langchaingo.Callbacks to record them.)
func ExampleNew() {
	ctx := context.Background()
	r := exampleRouter()
	defer r.Close()

	model := fake.NewFakeLLM([]string{
		"Action: weather\nAction Input: Oslo",
		"Final Answer: It is sunny in Oslo.",
	})
	weather := &funcTool{name: "weather", fn: func(_ context.Context, city string) (string, error) {
		return "sunny in " + city, nil
	}}
	ex := agents.NewExecutor(agents.NewOneShotAgent(model, []tools.Tool{weather}))

	a, err := langchaingo.New("agent:forecaster", ex, &langchaingo.Options{Description: "Says the weather"})
	if err != nil {
		panic(err)
	}
	if err := r.Register(ctx, a.Card(), a.Handle); err != nil {
		panic(err)
	}
	fmt.Println(a.Card().Capabilities[0].ID, a.Card().Capabilities[0].Tools)

	req, _ := r.NewRequest("agent:user", "", "What is the weather in Oslo?")
	req.Requires = []string{"skill:forecaster"}
	h, _ := r.Submit(ctx, req)
	out, err := h.Wait(ctx)
	if err != nil {
		panic(err)
	}
	res, _ := router.ResultAs[string](out)
	fmt.Println(res)
	printRun(r, req.RunID)
	// Output:
	// skill:forecaster [langchaingo:weather]
	// It is sunny in Oslo.
	// task.request
	// routing.decision
	// task.accept
	// tool.call weather
	// tool.result weather
	// task.result
}

// A capability of the team as a LangChainGo tool: the agent's call is a
// subtask of its task, routed to the team's researcher.
func ExampleTool() {
	ctx := context.Background()
	r := exampleRouter()
	defer r.Close()

	researcher := &protocol.AgentCard{V: protocol.Version, AgentID: "agent:researcher", Capabilities: []protocol.Capability{{ID: "skill:research"}}}
	_ = r.Register(ctx, researcher, func(_ context.Context, t *router.Task) (*router.Result, error) {
		q, _ := router.Input[string](t)
		return &router.Result{Payload: "42 is the answer to " + q}, nil
	})
	research, err := langchaingo.Tool(r, "skill:research", &langchaingo.ToolOptions{Name: "research"})
	if err != nil {
		panic(err)
	}

	model := fake.NewFakeLLM([]string{
		"Action: research\nAction Input: everything",
		"Final Answer: 42.",
	})
	a, _ := langchaingo.New("agent:writer", agents.NewExecutor(agents.NewOneShotAgent(model, []tools.Tool{research})), nil)
	_ = r.Register(ctx, a.Card(), a.Handle)

	req, _ := r.NewRequest("agent:user", "", "What is the answer?")
	req.Requires = []string{"skill:writer"}
	h, _ := r.Submit(ctx, req)
	if _, err := h.Wait(ctx); err != nil {
		panic(err)
	}
	printRun(r, req.RunID)
	// Output:
	// task.request
	// routing.decision
	// task.accept
	// tool.call research
	// task.request
	// routing.decision
	// task.accept
	// task.result
	// tool.result research
	// task.result
}

// The agent asks a person with HumanTool: the task waits with the
// question; the answer runs the agent again, and the tool returns it.
func ExampleHumanTool() {
	ctx := context.Background()
	r := exampleRouter()
	defer r.Close()

	model := fake.NewFakeLLM([]string{
		"Action: ask_human\nAction Input: Which city?",
		"Action: ask_human\nAction Input: Which city?", // the turn again, after the answer
		"Final Answer: You live in Oslo.",
	})
	ex := agents.NewExecutor(agents.NewOneShotAgent(model, []tools.Tool{langchaingo.HumanTool(nil)}))
	a, _ := langchaingo.New("agent:guide", ex, nil)
	_ = r.Register(ctx, a.Card(), a.Handle)

	req, _ := r.NewRequest("agent:user", "", "Where do I live?")
	req.Requires = []string{"skill:guide"}
	h, _ := r.Submit(ctx, req)
	out, _ := h.Wait(ctx)
	fmt.Println(out.Question.Text)

	h, err := r.Answer(ctx, out.Question.ID, router.Answerer{AgentID: "agent:user"}, json.RawMessage(`"Oslo"`))
	if err != nil {
		panic(err)
	}
	out, _ = h.Wait(ctx)
	res, _ := router.ResultAs[string](out)
	fmt.Println(res)
	// Output:
	// Which city?
	// You live in Oslo.
}
