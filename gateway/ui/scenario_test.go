package ui

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
)

// registerTeam registers the busy thread's agents: two researchers (Ken has
// a browser tool and the fintech tag) and an analyst whose first attempt
// fails with a retryable error.
func registerTeam(t testing.TB, r *router.Router) {
	t.Helper()
	ctx := context.Background()
	research := func(id, name string, tags []string, tools []string) *protocol.AgentCard {
		return &protocol.AgentCard{V: protocol.Version, AgentID: id,
			Display: &protocol.Display{Name: name},
			Capabilities: []protocol.Capability{{ID: "skill:research", Version: "1.0", Tags: tags, Tools: tools,
				TrustLevel: protocol.TrustSandbox}},
			Limits: &protocol.Limits{MaxConcurrency: 2, MaxRuntimeSec: 600}}
	}
	if err := r.Register(ctx, research("agent:ken", "Ken", []string{"market", "fintech"}, []string{"mcp:browser"}), ken); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(ctx, research("agent:research-2", "Research 2", []string{"market", "health"}, nil), ken); err != nil {
		t.Fatal(err)
	}
	analyst := &protocol.AgentCard{V: protocol.Version, AgentID: "agent:analyst", Display: &protocol.Display{Name: "Analyst"},
		Capabilities: []protocol.Capability{{ID: "skill:analysis", Version: "1.0", Tags: []string{"sources"}, TrustLevel: protocol.TrustSandbox}},
		Limits:       &protocol.Limits{MaxConcurrency: 1, MaxRuntimeSec: 600}}
	var tries atomic.Int32
	if err := r.Register(ctx, analyst, func(ctx context.Context, task *router.Task) (*router.Result, error) {
		if tries.Add(1) == 1 {
			return nil, router.Fail(protocol.CodeCapacity, "rate limited by the data provider, try again shortly", true,
				map[string]any{"provider": "example-data"})
		}
		return &router.Result{PayloadType: "research.sources.v1", Payload: schema.ResearchSources{
			Sources:         []schema.Source{{URL: "https://example.com/data/real-time-rails", Title: "Real-time rails adoption"}},
			RelevanceScores: map[string]float64{"https://example.com/data/real-time-rails": 0.92},
		}}, nil
	}); err != nil {
		t.Fatal(err)
	}
}

// ken searches with the browser tool, has the analyst rank the sources and
// returns a summary.
func ken(ctx context.Context, task *router.Task) (*router.Result, error) {
	q, err := router.Input[schema.ResearchQuery](task)
	if err != nil {
		return nil, err
	}
	call, err := task.Emit(ctx, protocol.TypeToolCall, "", map[string]any{"tool": "mcp:browser", "name": "search",
		"args": map[string]any{"query": q.Query, "max_results": 5}})
	if err != nil {
		return nil, err
	}
	if _, err := task.Emit(ctx, protocol.TypeToolResult, "", map[string]any{"tool": "mcp:browser", "name": "search", "call_id": call.ID,
		"content": []map[string]string{
			{"title": "Nordic payments 2026", "url": "https://example.com/reports/nordic-payments-2026"},
			{"title": "Real-time rails adoption", "url": "https://example.com/data/real-time-rails"},
		}}); err != nil {
		return nil, err
	}
	if err := task.Progress(ctx, map[string]any{"step": "ranking sources", "percent": 40}); err != nil {
		return nil, err
	}
	if _, err := task.RecordModelCall(ctx, router.ModelCall{Model: "gpt-4o-mini", Provider: "openai", InputTokens: 812, OutputTokens: 96,
		TotalTokens: 908, FinishReason: "tool_calls", ToolCalls: 1, DurationMS: 640}); err != nil {
		return nil, err
	}
	sub, err := task.NewSubtask("research.query.v1", schema.ResearchQuery{Query: "rank these sources by relevance"})
	if err != nil {
		return nil, err
	}
	sub.Requires = []string{"skill:analysis"}
	if _, err := task.Delegate(ctx, sub); err != nil {
		return nil, err
	}
	if err := task.Progress(ctx, map[string]any{"step": "summarising", "percent": 90}); err != nil {
		return nil, err
	}
	return &router.Result{PayloadType: "research.summary.v1", Payload: schema.ResearchSummary{
		Title:     "Market analysis complete",
		Findings:  []string{"Three incumbents process about 70% of card volume", "Real-time rails adoption doubled in 2026"},
		Citations: []string{"https://example.com/data/real-time-rails"},
	}}, nil
}

// busyThread fills h's thread with a conversation around one research task:
// chat, the request, its routing decision, a tool call, progress, a
// delegated subtask that fails once and is retried, and the results.
// It returns the research task's id.
func (h *harness) busyThread(r *router.Router) string {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := r.NewRequest("agent:ana", "research.query.v1", schema.ResearchQuery{
		Query: "Nordic payments market: incumbents and real-time rails", MaxSources: 5})
	if err != nil {
		h.t.Fatal(err)
	}
	req.ThreadID, req.RunID = h.thr, h.run
	req.Domain = "research"
	req.Requires = []string{"skill:research"}
	req.Prefers = []string{"tool:browser", "domain:fintech"}
	req.Meta = map[string]any{"ui_channel": "research"}

	hello := h.chat("agent:ana", "Can someone dig into the Nordic payments market? Incumbents and real-time rails, please.")
	hello.Meta = map[string]any{"ui_channel": "research"}
	h.append(hello)
	handle, err := r.Submit(ctx, req)
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := handle.Wait(ctx); err != nil {
		h.t.Fatal(err)
	}
	h.append(h.chat("agent:ana", "Thanks Ken, that is what I needed."))
	return req.TaskID
}

// TestBrowserBusyThread opens the busy thread through the sidebar and
// follows deep links to a task and, through the task tree, to its subtask.
func TestBrowserBusyThread(t *testing.T) {
	h := newHarness(t)
	registerTeam(t, h.r)
	root := h.busyThread(h.r)
	h.signIn("")

	// The sidebar: the thread under its channel, the agents with their state.
	h.waitJS(`document.querySelector('#channels a[data-thread="` + h.thr + `"]')`)
	if ch := eval[string](h, `document.querySelector('#channels a[data-thread="`+h.thr+`"]').closest(".channel").querySelector("h2").textContent`); ch != "# research" {
		t.Fatalf("the thread is listed under %q, want # research", ch)
	}
	h.waitJS(`document.querySelector('#agents li[data-agent="agent:ken"] .dot.on')`)
	h.do(chromedp.Click(`#channels a[data-thread="` + h.thr + `"]`))
	h.waitJS(`document.getElementById("events").dataset.view === "thread:` + h.thr + `" && document.getElementById("events").dataset.loaded === "true"`)

	// Every kind of event is drawn as its own kind of card.
	for sel, want := range map[string]string{
		`.ev[data-type="routing.decision"] .card.decision`: "agent:research-2",
		`.ev[data-type="tool.call"] .tool-result`:          "Nordic payments 2026",
		`.ev[data-type="task.progress"] .progress`:         "",
		`.ev[data-type="task.error"] .card.error .code`:    "CAPACITY",
		`.ev[data-type="task.result"] .card.result`:        "Three incumbents",
		`.ev[data-type="task.request"] .card`:              "Nordic payments market",
		`.ev[data-type="x.clutch.model_call"] .model-call`: "model gpt-4o-mini (openai): 812 tokens in, 96 out; asks for 1 tool call; 640 ms",
	} {
		got := eval[string](h, `Array.from(document.querySelectorAll('#events `+sel+`')).map(n => n.textContent).join(" | ") || "MISSING"`)
		if got == "MISSING" || !strings.Contains(got, want) {
			t.Errorf("%s shows %q, want it to contain %q", sel, got, want)
		}
	}
	if got := eval[string](h, `document.querySelector('#events .ev[data-type="task.error"]').textContent`); !strings.Contains(got, "will retry as attempt 2") || !strings.Contains(got, "retryable") {
		t.Errorf("the retried error shows %q, want its retry plan", got)
	}

	// A deep link to the task; its tree lists the delegated subtask.
	h.open("#/task/" + root)
	h.waitJS(`document.querySelector('#tree-body li[data-task="` + root + `"] li[data-task]')`)
	if got := eval[string](h, `document.querySelector('#events .ev.target').dataset.type`); got != "task.request" {
		t.Errorf("the task view marks a %q, want its task.request", got)
	}
	sub := eval[string](h, `document.querySelector('#tree-body li[data-task="`+root+`"] li[data-task]').dataset.task`)
	h.do(chromedp.Click(`#tree-body li[data-task="` + sub + `"] > a`))
	h.waitJS(`document.getElementById("events").dataset.view === "task:` + sub + `" && document.getElementById("events").dataset.loaded === "true"`)
	types := eval[[]string](h, `Array.from(document.querySelectorAll("#events .ev")).map(e => e.dataset.type)`)
	if !slices.Contains(types, "task.error") || !slices.Contains(types, "task.result") {
		t.Errorf("the subtask view shows %v, want its failed attempt and its result", types)
	}
	h.noCSPViolations()
}
