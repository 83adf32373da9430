package ui

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
)

// shot writes docs/<name> when the test runs with -screenshots.
func (h *harness) shot(name string) {
	h.t.Helper()
	if !*writeShots {
		return
	}
	png, err := chromedp.Run(h.tab, chromedp.CaptureScreenshot())
	if err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("..", "..", "docs", name), png, 0o644); err != nil {
		h.t.Fatal(err)
	}
}

// submitRun submits a request of a new run from the signed-in caller and
// returns it; wait makes it wait for the task's end (or question).
func (h *harness) submitRun(requires, query string, wait bool) *protocol.Message {
	h.t.Helper()
	req, err := h.r.NewRequest(testAgent, "research.query.v1", schema.ResearchQuery{Query: query})
	if err != nil {
		h.t.Fatal(err)
	}
	req.Requires = []string{requires}
	hd, err := h.r.Submit(context.Background(), req)
	if err != nil {
		h.t.Fatal(err)
	}
	if wait {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if out, _ := hd.Wait(ctx); out == nil {
			h.t.Fatalf("task %s did not end", req.TaskID)
		}
	}
	return req
}

// TestBrowserHomeAndTrace: the page opens on the runs, named by their
// ask, with their status in words; a failed run says what failed, once, at
// the top of its trace, and a person retries it from there; a completed
// run's trace shows its tasks with durations and its tool call as done;
// a running task is cancelled from its trace.
func TestBrowserHomeAndTrace(t *testing.T) {
	h := newHarness(t)
	registerTeam(t, h.r)
	h.busyThread(h.r)
	ctx := context.Background()
	var brokenRuns atomic.Int32
	if err := h.r.Register(ctx, &protocol.AgentCard{V: protocol.Version, AgentID: "agent:broken", Display: &protocol.Display{Name: "Broken"},
		Capabilities: []protocol.Capability{{ID: "skill:broken"}}}, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		if brokenRuns.Add(1) == 1 {
			return nil, router.Fail(protocol.CodeToolFailed, "the data provider is down", false, nil)
		}
		return &router.Result{Payload: map[string]string{"text": "fixed"}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	defer close(release)
	if err := h.r.Register(ctx, &protocol.AgentCard{V: protocol.Version, AgentID: "agent:slow", Capabilities: []protocol.Capability{{ID: "skill:slow"}}},
		func(ctx context.Context, t *router.Task) (*router.Result, error) {
			select {
			case <-release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			return &router.Result{}, nil
		}); err != nil {
		t.Fatal(err)
	}
	failed := h.submitRun("skill:broken", "Which provider is down?", true)

	h.do(chromedp.EmulateViewport(1280, 800))
	h.signIn("")
	h.waitJS(`document.body.dataset.view === "home" && document.querySelector('.run-row[data-run="` + h.run + `"]') && document.querySelector('.run-row[data-run="` + failed.RunID + `"]')`)
	if txt := eval[string](h, `document.querySelector('.run-row[data-run="`+failed.RunID+`"]').textContent`); !strings.Contains(txt, "Failed") {
		t.Errorf("a failed run's row says %q: not identifiable without colour", txt)
	}
	if n := eval[int](h, `Array.from(document.querySelectorAll('.run-row')).filter(r => /registry/.test(r.dataset.run)).length`); n != 0 {
		t.Errorf("the registry run is listed")
	}
	h.shot("ui-home.png")
	h.do(chromedp.Click(`.filter[data-key="filter-failed"]`))
	h.waitJS(`document.querySelectorAll('.run-row').length === 1 && document.querySelector('.run-row[data-run="` + failed.RunID + `"]')`)
	if f := eval[string](h, `document.activeElement.dataset.key || ""`); f != "filter-failed" {
		t.Errorf("the focus moved to %q after filtering", f)
	}

	// The failed run: a banner names the step, the agent and the code.
	h.do(chromedp.Click(`.run-row[data-run="` + failed.RunID + `"] a`))
	h.waitJS(`document.body.dataset.view === "run" && document.querySelector('.banner.fail')`)
	banner := eval[string](h, `document.querySelector('.banner.fail').textContent`)
	for _, want := range []string{"Failed", "Which provider is down?", "Broken", "TOOL_FAILED", "the data provider is down"} {
		if !strings.Contains(banner, want) {
			t.Errorf("the failure banner %q lacks %q", banner, want)
		}
	}
	h.waitJS(`document.getElementById("announce").textContent.includes("This run failed: TOOL_FAILED")`)
	h.shot("ui-failure.png")
	h.do(chromedp.Click(`.act-retry`))
	h.waitJS(`document.querySelector('.trow[data-task="` + failed.TaskID + `"] .pill[data-status="completed"]') && !document.querySelector('.banner.fail')`)

	// The completed run: its tasks with durations, its tool call done.
	h.open("#/run/" + h.run)
	h.waitJS(`document.querySelectorAll('.trow').length === 2`)
	if got := eval[string](h, `document.getElementById("view-title").textContent`); got != "Nordic payments market: incumbents and real-time rails" {
		t.Errorf("the run's title %q", got)
	}
	if eval[bool](h, `document.getElementById("events").textContent.includes("running…")`) {
		t.Error("a completed run shows a running tool call")
	}
	h.waitJS(`document.querySelector('.tool-done .tool-state') && document.querySelector('.tool-done .tool-state').textContent.startsWith("done")`)
	if d := eval[string](h, `document.querySelector('.trow .tdur').textContent`); d == "" {
		t.Error("no duration on the root task")
	}
	h.shot("ui-trace.png")

	// An agent's profile, from the sidebar: its card, in words.
	h.do(chromedp.Click(`#agents li[data-agent="agent:ken"] a`))
	h.waitJS(`document.body.dataset.view === "agent" && document.querySelector(".profile")`)
	prof := eval[string](h, `document.querySelector(".profile").textContent + " " + document.getElementById("view-title").textContent`)
	for _, want := range []string{"Ken", "skill:research", "market, fintech", "mcp:browser", "max concurrency2"} {
		if !strings.Contains(prof, want) {
			t.Errorf("Ken's profile %q lacks %q", prof, want)
		}
	}

	// A running task, cancelled from its trace.
	slow := h.submitRun("skill:slow", "Take your time", false)
	h.open("#/run/" + slow.RunID)
	h.waitJS(`document.querySelector('.act-cancel')`)
	h.do(chromedp.Click(`.act-cancel`))
	h.waitJS(`document.querySelector('.trow[data-task="` + slow.TaskID + `"] .pill[data-status="cancelled"]')`)
	h.noCSPViolations()
}

// TestBrowserLiveHome: a run started while the home is open appears
// without a reload (the page follows one stream, it does not poll), the
// focus stays where the reader put it across the update, and a dropped
// stream shows the reconnecting banner with Send disabled until it is
// back.
func TestBrowserLiveHome(t *testing.T) {
	h := newHarness(t)
	registerTeam(t, h.r)
	first := h.submitRun("skill:research", "The first ask", true)
	h.signIn("")
	h.waitJS(`document.querySelector('.run-row[data-run="` + first.RunID + `"]') && document.getElementById("conn-banner").dataset.state === "live"`)
	h.do(chromedp.Focus(`.filter[data-key="filter-all"]`))
	start := time.Now()
	second := h.submitRun("skill:research", "The second ask", true)
	h.waitJS(`document.querySelector('.run-row[data-run="` + second.RunID + `"]')`)
	t.Logf("a new run appeared on the home %s after it ended", time.Since(start).Round(time.Millisecond))
	if f := eval[string](h, `document.activeElement.dataset.key || ""`); f != "filter-all" {
		t.Errorf("the focus moved to %q on a live update", f)
	}
	h.gate.drop()
	h.waitJS(`!document.getElementById("conn-banner").hidden && document.getElementById("conn-banner").dataset.state === "reconnecting" && document.getElementById("compose-send").disabled`)
	h.gate.reopen()
	h.waitJS(`document.getElementById("conn-banner").hidden && !document.getElementById("compose-send").disabled`)
	h.noCSPViolations()
}

// TestBrowserPhone: at phone widths the page fits the screen in every
// view (no horizontal scrolling), the sidebar is a drawer that the menu
// opens and a link closes, and the compose box is usable.
func TestBrowserPhone(t *testing.T) {
	h := newHarness(t)
	registerTeam(t, h.r)
	task := h.busyThread(h.r)
	for _, width := range []int64{360, 390} {
		h.do(chromedp.EmulateViewport(width, 780, chromedp.EmulateMobile))
		h.signIn("")
		h.waitJS(`document.querySelector('.run-row[data-run="` + h.run + `"]')`)
		for _, hash := range []string{"#/", "#/run/" + h.run, "#/thread/" + h.thr, "#/task/" + task, "#/agent/agent:ken"} {
			h.open(hash)
			if hash == "#/run/"+h.run {
				h.waitJS(`document.querySelector(".trow")`)
			}
			if w := eval[int](h, `document.documentElement.scrollWidth`); w > int(width) {
				t.Errorf("%d px, %s: the page is %d px wide", width, hash, w)
			}
		}
		if !eval[bool](h, `getComputedStyle(document.getElementById("sidebar")).visibility === "hidden"`) {
			t.Errorf("%d px: the sidebar is shown without the menu", width)
		}
		h.do(chromedp.Click("#menu-toggle"))
		h.waitJS(`document.body.classList.contains("drawer-open") && getComputedStyle(document.getElementById("sidebar")).visibility === "visible"`)
		h.do(chromedp.Click("#home-link"))
		h.waitJS(`!document.body.classList.contains("drawer-open") && document.body.dataset.view === "home"`)
		h.open("#/thread/" + h.thr)
		r := eval[[]float64](h, `(() => { const b = document.getElementById("compose-send").getBoundingClientRect(); return [b.left, b.right, b.top, b.bottom, innerWidth, innerHeight]; })()`)
		if r[0] < 0 || r[1] > r[4] || r[3] > r[5] || r[1]-r[0] < 40 {
			t.Errorf("%d px: the Send button is at %v", width, r)
		}
		if width == 390 {
			h.open("#/run/" + h.run)
			h.waitJS(`document.querySelector(".trow")`)
			h.shot("ui-phone.png")
		}
		h.do(chromedp.Evaluate[chromedp.Void](`document.getElementById("signout").click()`), chromedp.WaitVisible("#key"))
	}
	h.noCSPViolations()
}

// TestBrowserConversation: a thread reads as a conversation — the chat,
// one card per run with its ask, status in words and agents, the run's
// outcome — with the protocol's bookkeeping folded away until "Show every
// event"; the card opens the run's trace.
func TestBrowserConversation(t *testing.T) {
	h := newHarness(t)
	registerTeam(t, h.r)
	h.busyThread(h.r)
	h.signIn("#/thread/" + h.thr)
	h.waitJS(`document.querySelector('.run-card[data-run="` + h.run + `"]')`)
	card := eval[string](h, `document.querySelector('.run-card[data-run="`+h.run+`"]').textContent`)
	for _, want := range []string{"Completed", "Nordic payments market: incumbents and real-time rails", "Ken", "2 tasks"} {
		if !strings.Contains(card, want) {
			t.Errorf("the run card %q lacks %q", card, want)
		}
	}
	visible := func(sel string) int {
		return eval[int](h, `Array.from(document.querySelectorAll('`+sel+`')).filter(e => e.offsetParent !== null).length`)
	}
	if n := visible(`#events .ev[data-type="routing.decision"]`); n != 0 {
		t.Errorf("%d routing decisions shown in the conversation", n)
	}
	if n := visible(`#events .ev[data-type="chat.message"]`); n != 2 {
		t.Errorf("%d chat messages shown, want 2", n)
	}
	if n := visible(`#events .ev[data-type="task.result"]`); n != 1 {
		t.Errorf("%d results shown, want the run's one", n)
	}
	h.do(chromedp.Click("#events-toggle"))
	h.waitJS(`Array.from(document.querySelectorAll('#events .ev[data-type="routing.decision"]')).some(e => e.offsetParent !== null)`)
	h.do(chromedp.Click("#events-toggle"))
	h.waitJS(`document.querySelector('.run-card[data-run="` + h.run + `"]').offsetParent !== null`)
	h.do(chromedp.Click(`.run-card[data-run="` + h.run + `"]`))
	h.waitJS(`document.body.dataset.view === "run" && document.querySelectorAll(".trow").length === 2`)
	h.noCSPViolations()
}

// TestBrowserToolCallsNeverRunForever: tool events without call ids pair
// in order within their task, and a call whose task ended without its
// result says so — in the event log and in the trace, a completed run
// never shows a running tool call.
func TestBrowserToolCallsNeverRunForever(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	if err := h.r.Register(ctx, &protocol.AgentCard{V: protocol.Version, AgentID: "agent:tooler", Capabilities: []protocol.Capability{{ID: "skill:tools"}}},
		func(ctx context.Context, t *router.Task) (*router.Result, error) {
			if _, err := t.Emit(ctx, protocol.TypeToolCall, "", map[string]any{"name": "search", "args": map[string]any{"q": "x"}}); err != nil {
				return nil, err
			}
			if _, err := t.Emit(ctx, protocol.TypeToolResult, "", map[string]any{"name": "search", "content": "3 hits"}); err != nil {
				return nil, err
			}
			if _, err := t.Emit(ctx, protocol.TypeToolCall, "", map[string]any{"name": "fetch", "args": map[string]any{"url": "https://example.com"}}); err != nil {
				return nil, err
			}
			// An outcome whose call id names no call stands alone: it is not
			// the open fetch's result.
			if _, err := t.Emit(ctx, protocol.TypeToolResult, "", map[string]any{"name": "fetch", "call_id": "call_of_nothing", "content": "stray"}); err != nil {
				return nil, err
			}
			return &router.Result{Payload: map[string]string{"text": "done"}}, nil
		}); err != nil {
		t.Fatal(err)
	}
	req, err := h.r.NewRequest(testAgent, "", map[string]string{"text": "use your tools"})
	if err != nil {
		t.Fatal(err)
	}
	req.ThreadID, req.RunID, req.Requires = h.thr, h.run, []string{"skill:tools"}
	hd, err := h.r.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hd.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	h.signIn("#/thread/" + h.thr)
	h.do(chromedp.Click("#events-toggle"))
	h.waitJS(`document.body.dataset.allEvents === "1"`)
	states := eval[[]string](h, `Array.from(document.querySelectorAll('#events .card.tool .tool-state')).map(e => e.textContent)`)
	if len(states) != 2 || states[0] != "done" || states[1] != "no result recorded" {
		t.Errorf("tool call states in the log: %v", states)
	}
	h.open("#/run/" + h.run)
	h.waitJS(`document.querySelectorAll('.trace-detail .card.tool').length === 3`)
	states = eval[[]string](h, `Array.from(document.querySelectorAll('.trace-detail .card.tool .tool-state')).map(e => e.textContent)`)
	if len(states) != 3 || !strings.HasPrefix(states[0], "done") || states[1] != "no result recorded" || !strings.HasPrefix(states[2], "done") {
		t.Errorf("tool call states in the trace: %v", states)
	}
	if eval[bool](h, `document.body.textContent.includes("running…")`) {
		t.Error("a completed run shows a running tool call")
	}
}

// TestBrowserMeasures logs the page's speed at scale: the home with 1,000
// runs stored, and a run of 10,000 events (200 subtasks of 50 events)
// shown as a trace.
func TestBrowserMeasures(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 12,000 events")
	}
	h := newHarness(t)
	var batch []*protocol.Message
	for i := range 1000 {
		run := h.ids.RunID()
		req := h.ids.NewMessage(protocol.TypeTaskRequest, testAgent)
		req.RunID, req.ThreadID, req.TaskID = run, h.ids.ThreadID(), h.ids.TaskID()
		_ = req.SetPayload(map[string]string{"query": "ask number " + strconv.Itoa(i)})
		res := h.ids.Reply(req, protocol.TypeTaskResult, "agent:ken")
		_ = res.SetPayload(map[string]string{"text": "done"})
		batch = append(batch, req, res)
	}
	h.append(batch...)
	root := h.msg(protocol.TypeTaskRequest, testAgent, map[string]string{"query": "a big run"})
	root.TaskID = h.ids.TaskID()
	evs := []*protocol.Message{root}
	for i := range 200 {
		sub := h.msg(protocol.TypeTaskRequest, "agent:ken", map[string]string{"query": "part " + strconv.Itoa(i)})
		sub.TaskID, sub.ParentTaskID = h.ids.TaskID(), root.TaskID
		evs = append(evs, sub, h.ids.Reply(sub, protocol.TypeTaskAccept, "agent:analyst"))
		for j := range 47 {
			p := h.ids.Reply(sub, protocol.TypeTaskProgress, "agent:analyst")
			_ = p.SetPayload(map[string]int{"percent": j * 2})
			evs = append(evs, p)
		}
		r := h.ids.Reply(sub, protocol.TypeTaskResult, "agent:analyst")
		_ = r.SetPayload(map[string]string{"text": "part done"})
		evs = append(evs, r)
	}
	end := h.ids.Reply(root, protocol.TypeTaskResult, "agent:ken")
	_ = end.SetPayload(map[string]string{"text": "all done"})
	h.append(append(evs, end)...)

	start := time.Now()
	h.signIn("")
	h.waitJS(`document.querySelectorAll(".run-row").length === 100`)
	t.Logf("sign-in to the home with 1,000 runs stored: %s", time.Since(start).Round(time.Millisecond))
	start = time.Now()
	h.open("#/run/" + h.run)
	h.waitJS(`document.querySelectorAll(".trow").length === 201`)
	t.Logf("a 10,000-event run's trace (201 tasks): shown in %s (page's own measure: %s ms)", time.Since(start).Round(time.Millisecond),
		eval[string](h, `document.getElementById("events").dataset.loadMs`))
}

// TestBrowserLabels: every visible control of every view has a name a
// screen reader can say (its text, aria-label, a label or a title).
func TestBrowserLabels(t *testing.T) {
	h := newHarness(t)
	registerTeam(t, h.r)
	task := h.busyThread(h.r)
	h.signIn("")
	for _, hash := range []string{"#/", "#/run/" + h.run, "#/thread/" + h.thr, "#/task/" + task, "#/agent/agent:ken", "#/new"} {
		h.open(hash)
		if hash == "#/run/"+h.run {
			h.waitJS(`document.querySelector(".trow")`)
		}
		unnamed := eval[[]string](h, `Array.from(document.querySelectorAll("a, button, input, select, textarea, summary")).filter(e => e.offsetParent !== null).filter(e => {
			const name = (e.getAttribute("aria-label") || e.title || e.textContent || (e.labels && e.labels.length ? e.labels[0].textContent : "") || e.placeholder || "").trim();
			return !name;
		}).map(e => e.outerHTML.slice(0, 120))`)
		if len(unnamed) > 0 {
			t.Errorf("%s: controls without a name: %v", hash, unnamed)
		}
	}
}

// TestBrowserContrast: the text of the home, a failed run's trace and the
// sidebar meets WCAG AA contrast (4.5:1) in the light and dark themes.
func TestBrowserContrast(t *testing.T) {
	h := newHarness(t)
	registerTeam(t, h.r)
	h.busyThread(h.r)
	ctx := context.Background()
	if err := h.r.Register(ctx, &protocol.AgentCard{V: protocol.Version, AgentID: "agent:broken", Capabilities: []protocol.Capability{{ID: "skill:broken"}}},
		func(ctx context.Context, t *router.Task) (*router.Result, error) {
			return nil, router.Fail(protocol.CodeToolFailed, "down", false, nil)
		}); err != nil {
		t.Fatal(err)
	}
	failed := h.submitRun("skill:broken", "Fails on purpose", true)
	h.signIn("")
	const check = `(() => {
		const rgb = (s) => (s.match(/[\d.]+/g) || []).map(Number);
		const lum = (c) => { const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); }; return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
		const bg = (e) => { for (; e; e = e.parentElement) { const c = rgb(getComputedStyle(e).backgroundColor); if (c.length === 3 || (c.length === 4 && c[3] > 0.5)) return c; } return [255, 255, 255]; };
		const bad = [];
		for (const e of document.querySelectorAll(".pill, .meta, .run-title, .run-fail, .banner, .trow, .thread-link, .agents li, .filter, .tag, h1, h2, .view-sub")) {
			if (e.offsetParent === null || !e.textContent.trim()) continue;
			const a = lum(rgb(getComputedStyle(e).color)), b = lum(bg(e));
			const r = (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
			if (r < 4.5) bad.push(e.className + " '" + e.textContent.trim().slice(0, 30) + "' " + r.toFixed(2));
		}
		return bad;
	})()`
	for _, theme := range []string{"light", "dark"} {
		h.do(chromedp.Evaluate[chromedp.Void](`document.documentElement.dataset.theme = "` + theme + `"`))
		for _, hash := range []string{"#/", "#/run/" + failed.RunID} {
			h.open(hash)
			h.waitJS(`document.querySelector(".run-row, .trow")`)
			if bad := eval[[]string](h, check); len(bad) > 0 {
				t.Errorf("%s, %s: below 4.5:1: %v", theme, hash, bad)
			}
		}
	}
}
