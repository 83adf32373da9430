package demo_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/demo"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/clutchprotocol/clutch/store/storetest"
)

// The tests run the demo at its real pace (TimeScale 1) in a
// testing/synctest bubble: time is fake, moves only when every goroutine
// waits, and the durations below are exact whatever the machine's load.

type env struct {
	st   *memstore.Store
	r    *router.Router
	team *demo.Team
}

func newEnv(t *testing.T) *env {
	t.Helper()
	ctx := context.Background()
	st, err := memstore.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	team, err := demo.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Open(ctx, st, &registry.Options{Keys: team.Keys()})
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := schema.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := router.New(st, reg, &router.Options{Validator: schemas, Signers: team.Signers(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := team.Register(ctx, r); err != nil {
		t.Fatal(err)
	}
	return &env{st: st, r: r, team: team}
}

// close shuts the router down (its goroutines must end in the bubble)
// and checks the log: one terminal event per task, every event of the
// demo's agents signed by their key.
func (e *env) close(t *testing.T) {
	t.Helper()
	if err := e.r.Close(); err != nil {
		t.Fatal(err)
	}
	storetest.AssertOneTerminal(t, e.st)
	signed := 0
	for ev, err := range e.st.Read(context.Background(), store.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		m, _ := ev.Message()
		if _, ok := e.team.Keys()[m.From.AgentID]; !ok || m.RunID == registry.DefaultRunID || m.Type == protocol.TypeTaskAnswer {
			continue // the router's and the registry's own; an answer is the answering surface's
		}
		if err := protocol.Verify(ev.Raw, e.r.Registry().AllKeys(m.From.AgentID)); err != nil {
			t.Errorf("%s %s from %s: %v", m.Type, m.ID, m.From.AgentID, err)
		}
		signed++
	}
	if signed == 0 {
		t.Error("no signed event")
	}
	e.st.Close()
}

func (e *env) round(t *testing.T, i int) *router.Outcome {
	t.Helper()
	out, err := e.team.Round(context.Background(), e.r, i)
	if err != nil {
		t.Fatalf("round %d: %v", i, err)
	}
	return out
}

func (e *env) tree(t *testing.T, runID string) *router.TaskNode {
	t.Helper()
	tree, err := e.r.Tree(context.Background(), runID)
	if err != nil {
		t.Fatal(err)
	}
	if len(tree.Roots) != 1 {
		t.Fatalf("run %s: %d roots", runID, len(tree.Roots))
	}
	return tree.Roots[0]
}

// events are the messages of a task (or of a run, taskID ""), in order.
func (e *env) events(t *testing.T, q store.Query) []*protocol.Message {
	t.Helper()
	var out []*protocol.Message
	for ev, err := range e.st.Read(context.Background(), q) {
		if err != nil {
			t.Fatal(err)
		}
		m, err := ev.Message()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// awaitTimeouts follows the log until n questions have passed their
// deadline unanswered, returning at the moment the nth one did.
func (e *env) awaitTimeouts(t *testing.T, n int) {
	t.Helper()
	for ev, err := range e.st.Follow(context.Background(), store.Query{TypePrefix: "task.error", AgentID: router.DefaultAgentID}) {
		if err != nil {
			t.Fatal(err)
		}
		m, _ := ev.Message()
		if payload[protocol.ErrorPayload](t, m).Code == protocol.CodeTimeout {
			if n--; n == 0 {
				return
			}
		}
	}
}

func ts(t *testing.T, m *protocol.Message) time.Time {
	t.Helper()
	at, err := time.Parse(time.RFC3339Nano, m.TS)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

func payload[T any](t *testing.T, m *protocol.Message) T {
	t.Helper()
	v, err := protocol.DecodePayload[T](m)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// researchers returns the agents of root's subtasks, sorted (the lead
// asks for them at once, in no particular order).
func researchers(root *router.TaskNode) []string {
	var out []string
	for _, c := range root.Children {
		out = append(out, c.Agent)
	}
	slices.Sort(out)
	return out
}

func sorted(s ...string) []string { return slices.Sorted(slices.Values(s)) }

// child returns root's subtask run by agent.
func child(t *testing.T, root *router.TaskNode, agent string) *router.TaskNode {
	t.Helper()
	for _, c := range root.Children {
		if c.Agent == agent {
			return c
		}
	}
	t.Fatalf("no subtask of %s under %s: %v", agent, root.TaskID, researchers(root))
	return nil
}

// checkRetried checks that n failed once with a retryable code and
// succeeded on its second attempt, with a tool call in each.
func checkRetried(t *testing.T, e *env, n *router.TaskNode, code protocol.Code) {
	t.Helper()
	if n.Attempts != 2 || n.Outcome == nil || !n.Outcome.OK() {
		t.Fatalf("%s: %d attempts, outcome %+v; want a result on the second", n.Agent, n.Attempts, n.Outcome)
	}
	var types []string
	var failed *protocol.Message
	for _, m := range e.events(t, store.Query{TaskID: n.TaskID}) {
		types = append(types, string(m.Type)+"@"+string(rune('0'+m.Attempt)))
		if m.Type == protocol.TypeTaskError {
			failed = m
		}
	}
	want := []string{"task.request@1", "routing.decision@1", "task.accept@1", "tool.call@1", "task.progress@1", "tool.error@1", "task.error@1",
		"routing.decision@2", "task.accept@2", "task.progress@2", "tool.call@2", "task.progress@2", "task.progress@2", "task.progress@2", "tool.result@2",
		"task.progress@2", "task.result@2"}
	if !slices.Equal(types, want) {
		t.Fatalf("%s's events:\n got %v\nwant %v", n.Agent, types, want)
	}
	ep := payload[protocol.ErrorPayload](t, failed)
	if ep.Code != code || !ep.Retryable || ep.Details["will_retry"] != true {
		t.Fatalf("%s's first attempt: %+v, want retryable %s that will retry", n.Agent, ep, code)
	}
}

// checkTool checks that the successful attempt of n called its tool and
// reported progress between the call and its result, all with the
// call's id.
func checkTool(t *testing.T, e *env, n *router.TaskNode, tool string) {
	t.Helper()
	var call *protocol.Message
	progress := 0
	for _, m := range e.events(t, store.Query{TaskID: n.TaskID}) {
		if m.Attempt != n.Attempts {
			continue
		}
		switch m.Type {
		case protocol.TypeToolCall:
			call = m
			if p := payload[map[string]any](t, m); p["tool"] != tool {
				t.Fatalf("%s called %v, want %s", n.Agent, p["tool"], tool)
			}
		case protocol.TypeTaskProgress:
			if p := payload[map[string]any](t, m); call != nil && p["call_id"] == call.ID {
				progress++
			}
		case protocol.TypeToolResult:
			if p := payload[map[string]any](t, m); call == nil || p["call_id"] != call.ID || p["structuredContent"] == nil {
				t.Fatalf("%s: a tool.result %v without its call", n.Agent, p)
			}
			if progress != 3 {
				t.Fatalf("%s: %d progress events between the tool call and its result, want 3", n.Agent, progress)
			}
			return
		}
	}
	t.Fatalf("%s: no tool.result", n.Agent)
}

// A plain round: the lead fans out to Ken and Dara at once, Ken's search
// is rate limited once and retried, the lead writes the brief and says
// so in the thread. Tasks take 1 to 4 s each.
func TestRoundFanOutAndRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		defer e.close(t)
		start := time.Now()
		out := e.round(t, 0)
		took := time.Since(start)
		if !out.OK() {
			t.Fatalf("round 0: %+v", out.Err)
		}
		if took < 4*time.Second || took > 10*time.Second {
			t.Errorf("round 0 took %v, want 4 to 10 s", took)
		}
		root := e.tree(t, out.Message.RunID)
		if got := researchers(root); !slices.Equal(got, sorted(demo.Ken, demo.Dara)) {
			t.Fatalf("subtasks of %v, want Ken's and Dara's", got)
		}
		// Parallel: both subtasks were asked for at once, before either ended.
		ken, dara := child(t, root, demo.Ken), child(t, root, demo.Dara)
		if !ts(t, ken.Request).Equal(ts(t, dara.Request)) || !ts(t, ken.Request).Before(ts(t, dara.Outcome.Message)) {
			t.Fatalf("subtasks asked at %s and %s, Dara's ended at %s", ken.Request.TS, dara.Request.TS, dara.Outcome.Message.TS)
		}
		for _, c := range root.Children {
			for _, d := range c.Decisions {
				if d.Selected != c.Agent {
					t.Fatalf("routing chose %s for %s's track", d.Selected, c.Agent)
				}
			}
		}
		checkRetried(t, e, child(t, root, demo.Ken), protocol.CodeRateLimited)
		checkTool(t, e, child(t, root, demo.Ken), "mcp:browser")
		checkTool(t, e, child(t, root, demo.Dara), "mcp:market-data")

		// Each attempt of a researcher takes 1 to 4 s.
		for _, c := range root.Children {
			var began time.Time
			for _, m := range e.events(t, store.Query{TaskID: c.TaskID}) {
				switch {
				case m.Type == protocol.TypeTaskAccept:
					began = ts(t, m)
				case m.Type.Terminal():
					if d := ts(t, m).Sub(began); d < time.Second || d > 4*time.Second {
						t.Errorf("%s's attempt %d took %v", c.Agent, m.Attempt, d)
					}
				}
			}
		}
		brief, err := router.ResultAs[schema.ResearchSummary](out)
		if err != nil || brief.Title != "Brief: Nordic payments: who leads real-time rails?" || len(brief.Findings) != 4 || len(brief.Citations) != 6 {
			t.Fatalf("brief %+v %v", brief, err)
		}
		// The thread: the UI's ask, then the lead's answer.
		var chat []string
		for _, m := range e.events(t, store.Query{RunID: out.Message.RunID, TypePrefix: "chat."}) {
			chat = append(chat, m.From.AgentID+": "+payload[map[string]string](t, m)["text"])
		}
		if len(chat) != 2 || !strings.HasPrefix(chat[0], demo.UI+": Who leads real-time payment rails") ||
			chat[1] != demo.Lead+": Here is the brief on “Nordic payments: who leads real-time rails?”: 4 findings from Ken and Dara." {
			t.Fatalf("chat: %q", chat)
		}
		req := e.events(t, store.Query{TaskID: root.TaskID, TypePrefix: "task.request"})[0]
		if q := payload[schema.ResearchQuery](t, req); q.Query != "Nordic payments: who leads real-time rails?" || req.Meta["ui_channel"] != "chat:markets" {
			t.Fatalf("request %+v %v", q, req.Meta)
		}
	})
}

// A track fails for good: the lead writes the brief without it (round
// 2), or fails with the track's code when the brief needs it (round 4).
func TestRoundFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		defer e.close(t)

		out := e.round(t, 2)
		if !out.OK() {
			t.Fatalf("round 2: %+v, want the lead to cope", out.Err)
		}
		root := e.tree(t, out.Message.RunID)
		checkRetried(t, e, child(t, root, demo.Ken), protocol.CodeRateLimited)
		ines := child(t, root, demo.Ines)
		if ines.Attempts != 1 || ines.Outcome.Err == nil || ines.Outcome.Err.Code != protocol.CodeToolUnavailable || ines.Outcome.Err.Retryable ||
			ines.Outcome.Err.Message != "papers: the index is offline for maintenance" {
			t.Fatalf("Ines: %d attempts, %+v", ines.Attempts, ines.Outcome.Err)
		}
		brief, _ := router.ResultAs[schema.ResearchSummary](out)
		if last := brief.Findings[len(brief.Findings)-1]; last != "Caveat: The academic sources could not be used (papers: the index is offline for maintenance)" {
			t.Fatalf("brief: %q", brief.Findings)
		}

		out = e.round(t, 4)
		if out.OK() || out.Err.Code != protocol.CodeToolFailed || out.Err.Retryable ||
			out.Err.Message != "the volume figures are missing: market-data: no licence for the dataset b2b-fx-volumes" {
			t.Fatalf("round 4: %+v, want the lead to fail with TOOL_FAILED", out.Err)
		}
		root = e.tree(t, out.Message.RunID)
		if root.Attempts != 1 || root.State != protocol.TypeTaskError {
			t.Fatalf("lead: %d attempts, %s", root.Attempts, root.State)
		}
		checkRetried(t, e, child(t, root, demo.Ken), protocol.CodeRateLimited)
		dara := child(t, root, demo.Dara)
		if dara.Outcome.Err == nil || dara.Outcome.Err.Code != protocol.CodeToolFailed || out.Err.Details["subtask"] != dara.TaskID {
			t.Fatalf("Dara: %+v; lead's details %v", dara.Outcome.Err, out.Err.Details)
		}
		var toolErr *protocol.Message
		for _, m := range e.events(t, store.Query{TaskID: dara.TaskID, TypePrefix: "tool.error"}) {
			toolErr = m
		}
		if p := payload[protocol.ErrorPayload](t, toolErr); p.Code != protocol.CodeToolFailed || p.Details["tool"] != "mcp:market-data" || p.Details["call_id"] == nil {
			t.Fatalf("tool.error %+v", p)
		}
		chat := e.events(t, store.Query{RunID: out.Message.RunID, AgentID: demo.Lead, TypePrefix: "chat."})
		if len(chat) != 1 || !strings.HasPrefix(payload[map[string]string](t, chat[0])["text"], "I could not finish the brief: the volume figures are missing") {
			t.Fatalf("the lead's word in the thread: %v", chat)
		}
	})
}

// Round 1 asks the requester which region to cover before anything
// else; the next round does not wait for the answer, and the answer
// resumes the run. Unanswered, the question ends its run with TIMEOUT
// after two minutes.
func TestRoundAsksRegion(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		defer e.close(t)
		asked := time.Now()
		out := e.round(t, 1)
		q := out.Question
		if q == nil || out.Err.Code != protocol.CodeInputRequired {
			t.Fatalf("round 1: %+v, want a question", out)
		}
		if q.Text != "Which region should the brief cover?" || !slices.Equal(q.Choices, []string{"Nordics", "United States", "Both"}) ||
			q.Who != demo.Answerers || !q.Deadline.Equal(asked.Add(demo.QuestionDeadline)) {
			t.Fatalf("question %+v", q)
		}
		if !q.MayAnswer("agent:operator", demo.UI, []string{"admin"}) || q.MayAnswer("agent:mallory", demo.UI, []string{"submit"}) {
			t.Fatal("the UI's admin must be able to answer, and nobody else but the requester")
		}
		run := out.Message.RunID
		if root := e.tree(t, run); len(root.Children) != 0 {
			t.Fatalf("the lead delegated before the answer: %v", researchers(root))
		}
		// Meanwhile the next round runs to its end.
		if next := e.round(t, 2); !next.OK() {
			t.Fatalf("round 2 while round 1 waits: %+v", next.Err)
		}
		h, err := e.r.Answer(context.Background(), q.ID, router.Answerer{AgentID: demo.UI}, json.RawMessage(`"Nordics"`))
		if err != nil {
			t.Fatal(err)
		}
		if out, err = h.Wait(context.Background()); err != nil {
			t.Fatalf("after the answer: %v", err)
		}
		brief, _ := router.ResultAs[schema.ResearchSummary](out)
		root := e.tree(t, run)
		if brief.Title != "Brief: Telehealth in rural clinics: is it sticking? (Nordics)" || !slices.Equal(researchers(root), sorted(demo.Ines, demo.Ken, demo.Dara)) {
			t.Fatalf("brief %q from %v", brief.Title, researchers(root))
		}
		for _, c := range root.Children {
			if sq := payload[schema.ResearchQuery](t, c.Request); !strings.Contains(sq.Context, "region: Nordics") {
				t.Fatalf("%s's track does not name the region: %+v", c.Agent, sq)
			}
		}
		checkRetried(t, e, child(t, root, demo.Dara), protocol.CodeToolUnavailable)
		checkTool(t, e, child(t, root, demo.Ines), "mcp:papers")

		// The same ask unanswered: TIMEOUT at the deadline.
		asked = time.Now()
		out = e.round(t, 1+6)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for ev, err := range e.st.Follow(ctx, store.Query{TaskID: out.TaskID, TypePrefix: "task.error"}) {
			if err != nil {
				t.Fatal(err)
			}
			m, _ := ev.Message()
			ep := payload[protocol.ErrorPayload](t, m)
			if ep.Code != protocol.CodeTimeout || ep.Details["question_id"] != out.Question.ID || time.Since(asked) != demo.QuestionDeadline {
				t.Fatalf("unanswered: %+v after %v", ep, time.Since(asked))
			}
			break
		}
	})
}

// Round 3 asks approval for a paid query: rejected, the brief goes
// without it and says why; approved (its next turn), Dara runs it.
func TestRoundAsksApproval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		defer e.close(t)
		for _, c := range []struct {
			answer string
			agents []string
			caveat string
		}{
			{`{"decision":"reject","reason":"over budget"}`, sorted(demo.Ines, demo.Ken),
				"Caveat: The paid claims data was left out: the paid query was declined (over budget)"},
			{`{"decision":"approve"}`, sorted(demo.Ines, demo.Ken, demo.Dara), ""},
			{`{"decision":"edit","arguments":{"dataset":"claims-eu","query":"Monitoring claims in the EU","cost_eur":12}}`, sorted(demo.Ines, demo.Ken, demo.Dara), ""},
		} {
			out := e.round(t, 3)
			q := out.Question
			if q == nil || q.Kind != protocol.QuestionApproval || q.Text != "Approve a paid market-data query (€12)?" || q.Deadline.IsZero() {
				t.Fatalf("round 3: %+v", q)
			}
			args, _ := json.Marshal(q.Details["arguments"])
			if !strings.Contains(string(args), `"dataset":"claims-by-payer"`) {
				t.Fatalf("the approval's arguments: %s", args)
			}
			h, err := e.r.Answer(context.Background(), q.ID, router.Answerer{AgentID: "agent:operator", Scopes: []string{"admin"}}, json.RawMessage(c.answer))
			if err != nil {
				t.Fatal(err)
			}
			if out, err = h.Wait(context.Background()); err != nil {
				t.Fatalf("%s: %v", c.answer, err)
			}
			root := e.tree(t, out.Message.RunID)
			if !slices.Equal(researchers(root), c.agents) {
				t.Fatalf("%s: subtasks of %v", c.answer, researchers(root))
			}
			checkRetried(t, e, child(t, root, demo.Ines), protocol.CodeTimeout)
			brief, _ := router.ResultAs[schema.ResearchSummary](out)
			if has := slices.Contains(brief.Findings, c.caveat); has != (c.caveat != "") {
				t.Fatalf("%s: findings %q", c.answer, brief.Findings)
			}
			if len(c.agents) == 3 {
				sq := payload[schema.ResearchQuery](t, child(t, root, demo.Dara).Request)
				if !strings.HasPrefix(sq.Context, "Licensed dataset claims-") {
					t.Fatalf("%s: Dara's track %+v", c.answer, sq)
				}
			}
		}
	})
}

// Every round of the cycle ends as its kind says, and the cycle repeats.
func TestRoundCycle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		defer e.close(t)
		titles := map[string]bool{}
		for i := range 7 {
			out := e.round(t, i)
			var got string
			switch {
			case out.Question != nil:
				got = "asks"
			case out.OK():
				got = "completed"
			default:
				got = "failed " + string(out.Err.Code)
			}
			want := []string{"completed", "asks", "completed", "asks", "failed TOOL_FAILED", "completed"}[i%6]
			if got != want {
				t.Errorf("round %d: %s, want %s", i, got, want)
			}
			req := e.events(t, store.Query{TaskID: out.TaskID, TypePrefix: "task.request"})[0]
			titles[payload[schema.ResearchQuery](t, req).Query] = true
		}
		if len(titles) != 6 {
			t.Errorf("%d titles: %v", len(titles), titles)
		}
		e.awaitTimeouts(t, 2)
	})
}

// Run pauses every between rounds, goes on while questions wait, and
// stops when its context ends.
func TestRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		defer e.close(t)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- e.team.Run(ctx, e.r, 3*time.Second) }()
		// Follow the roots' ends and questions until round 4 has failed.
		var seen []string
	follow:
		for ev, err := range e.st.Follow(ctx, store.Query{AgentID: demo.Lead}) {
			if err != nil {
				t.Fatal(err)
			}
			m, _ := ev.Message()
			switch {
			case m.Type == protocol.TypeTaskQuestion:
				seen = append(seen, "asks")
			case m.Type == protocol.TypeTaskResult && m.ParentTaskID == "":
				seen = append(seen, "completed")
			case m.Type == protocol.TypeTaskError:
				seen = append(seen, "failed")
				break follow
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(seen, []string{"completed", "asks", "completed", "asks", "failed"}) {
			t.Fatalf("rounds: %v", seen)
		}
		// Nobody answers: both questions time out, Run stopped or not.
		e.awaitTimeouts(t, 2)
	})
}

func TestOptions(t *testing.T) {
	if _, err := demo.New(&demo.Options{TimeScale: -1}); err == nil {
		t.Fatal("a negative TimeScale: no error")
	}
	team, err := demo.New(&demo.Options{TimeScale: 0.001})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := demo.New(nil)
	keys, signers := team.Keys(), team.Signers()
	for _, id := range []string{demo.UI, demo.Lead, demo.Ken, demo.Ines, demo.Dara} {
		if len(keys[id]) != 1 || keys[id][0].Kid == other.Keys()[id][0].Kid {
			t.Fatalf("%s: keys %v, another team's %v: want one key of its own kid", id, keys[id], other.Keys()[id])
		}
		if _, ok := signers[id]; ok != (id != demo.UI) {
			t.Fatalf("%s signs in the router: %v", id, ok)
		}
	}
}
