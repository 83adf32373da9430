package team

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// The team's run budget: these tests run two routers over one memstore in
// this process; budget_pg_test.go runs them in two processes over
// PostgreSQL, with the same agents and checks.

// budgetMax is the router.Budget.MaxTasks of the budget tests' routers.
const budgetMax = 4

// budgetAgents registers the agents of the budget tests in r, which
// plays process host ("a" or "b"): agent:leaf-<host> (skill:leaf) in
// both, agent:sub (skill:sub) in a, agent:fan (skill:fan) in b. fan
// delegates as many skill:sub subtasks at once as its query says (so
// they are routed by b and run in a) and answers when they have ended,
// whatever their outcome. runs counts the leaf and sub handlers that ran.
func budgetAgents(ctx context.Context, r *router.Router, host string, runs *atomic.Int32) error {
	leaf := func(context.Context, *router.Task) (*router.Result, error) {
		runs.Add(1)
		return summary("leaf"), nil
	}
	caps := func(id string) []protocol.Capability { return []protocol.Capability{{ID: id}} }
	if err := r.Register(ctx, &protocol.AgentCard{V: protocol.Version, AgentID: "agent:leaf-" + host, Capabilities: caps("skill:leaf")}, leaf); err != nil {
		return err
	}
	if host == "a" {
		return r.Register(ctx, &protocol.AgentCard{V: protocol.Version, AgentID: "agent:sub", Capabilities: caps("skill:sub")}, leaf)
	}
	fan := func(ctx context.Context, t *router.Task) (*router.Result, error) {
		q, err := router.Input[schema.ResearchQuery](t)
		if err != nil {
			return nil, err
		}
		n, err := strconv.Atoi(q.Query)
		if err != nil {
			return nil, err
		}
		var wg sync.WaitGroup
		for range n {
			sub, err := t.NewSubtask("research.query.v1", schema.ResearchQuery{Query: "sub"})
			if err != nil {
				return nil, err
			}
			sub.Requires = []string{"skill:sub"}
			wg.Go(func() { t.Delegate(ctx, sub) })
		}
		wg.Wait()
		return summary("fanned out"), nil
	}
	return r.Register(ctx, &protocol.AgentCard{V: protocol.Version, AgentID: "agent:fan", Capabilities: caps("skill:fan")}, fan)
}

// submitBudget submits n skill:leaf tasks of one run (run, thread) at
// once and waits for them: how many ended with a result and how many
// with BUDGET. Any other outcome is an error.
func submitBudget(ctx context.Context, r *router.Router, run, thread string, n int) (ok, over int, err error) {
	type res struct{ ok, over bool }
	out := make(chan res, n)
	errs := make(chan error, n)
	for range n {
		go func() {
			req, err := r.NewRequest("agent:ui", "research.query.v1", schema.ResearchQuery{Query: "leaf"})
			if err != nil {
				errs <- err
				return
			}
			req.RunID, req.ThreadID = run, thread
			req.Requires = []string{"skill:leaf"}
			h, err := r.Submit(ctx, req)
			if err != nil {
				errs <- err
				return
			}
			o, err := h.Wait(ctx)
			switch {
			case o == nil:
				errs <- fmt.Errorf("task %s: %w", h.TaskID(), err)
			case err == nil:
				out <- res{ok: true}
			case errors.Is(err, protocol.CodeBudget):
				out <- res{over: true}
			default:
				errs <- fmt.Errorf("task %s: %w", h.TaskID(), err)
			}
		}()
	}
	for range n {
		select {
		case r := <-out:
			if r.ok {
				ok++
			} else {
				over++
			}
		case e := <-errs:
			err = errors.Join(err, e)
		}
	}
	return ok, over, err
}

// checkRunBudget checks the log of a run against the team's budget: its
// task.request events, in seq order, are its tasks; the first max ended
// with a task.result, every later one with a task.error BUDGET (details
// max_tasks) and no routing.decision (the end of its last attempt). It returns how many tasks the run
// has.
func checkRunBudget(t *testing.T, st store.Store, run string, max int) int {
	t.Helper()
	var order []string
	routed := map[string]bool{}
	end := map[string]*protocol.Message{}
	for ev, err := range st.Read(context.Background(), store.Query{RunID: run}) {
		if err != nil {
			t.Fatal(err)
		}
		m, err := ev.Message()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case m.Type == protocol.TypeTaskRequest:
			order = append(order, m.TaskID)
		case m.Type == protocol.TypeRoutingDecision:
			routed[m.TaskID] = true
		case protocol.EndsTask(m):
			if e := end[m.TaskID]; e != nil && e.Attempt == m.Attempt {
				t.Fatalf("task %s: attempt %d ended twice", m.TaskID, m.Attempt)
			}
			end[m.TaskID] = m // the last attempt's end is the task's
		}
	}
	for i, task := range order {
		m := end[task]
		if m == nil {
			t.Fatalf("task %d of run %s (%s) did not end", i+1, run, task)
		}
		if i < max {
			if m.Type != protocol.TypeTaskResult {
				t.Fatalf("task %d of run %s, within the budget of %d: %s %s", i+1, run, max, m.Type, m.Payload)
			}
			continue
		}
		var ep protocol.ErrorPayload
		err := json.Unmarshal(m.Payload, &ep)
		if m.Type != protocol.TypeTaskError || err != nil || ep.Code != protocol.CodeBudget || fmt.Sprint(ep.Details["max_tasks"]) != strconv.Itoa(max) || routed[task] {
			t.Fatalf("task %d of run %s, past the budget of %d: %s %s (routed: %v)", i+1, run, max, m.Type, m.Payload, routed[task])
		}
	}
	return len(order)
}

// budgetTeam starts two routers of a team over one memstore, each with
// router.Budget.MaxTasks budgetMax and the budget agents (runsA and runsB count
// their handlers' runs), and waits until each sees the other's agents.
func budgetTeam(t *testing.T) (st store.Store, a, b *proc, runsA, runsB *atomic.Int32) {
	t.Helper()
	st, _ = memstore.New(nil)
	opts := func() *router.Options { return &router.Options{Budget: router.Budget{MaxTasks: budgetMax}} }
	a = newProc(t, st, time.Minute, opts())
	b = newProc(t, st, time.Minute, opts())
	runsA, runsB = new(atomic.Int32), new(atomic.Int32)
	if err := budgetAgents(t.Context(), a.r, "a", runsA); err != nil {
		t.Fatal(err)
	}
	if err := budgetAgents(t.Context(), b.r, "b", runsB); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the agents", func() bool { return a.handles("agent:fan") && b.handles("agent:sub") }, a, b)
	return st, a, b, runsA, runsB
}

// Two routers of a team submit tasks of one run at once: the run's
// router.Budget.MaxTasks holds for the team, not for each router, and the tasks
// that run are the first of the run in the log, whichever router routed
// them.
func TestNodeTaskBudgetAcrossProcesses(t *testing.T) {
	st, a, b, runsA, runsB := budgetTeam(t)
	ctx := t.Context()

	const each = 5
	run, thread := a.r.IDs().RunID(), a.r.IDs().ThreadID()
	type count struct {
		ok, over int
		err      error
	}
	fromB := make(chan count, 1)
	go func() {
		ok, over, err := submitBudget(ctx, b.r, run, thread, each)
		fromB <- count{ok, over, err}
	}()
	okA, overA, err := submitBudget(ctx, a.r, run, thread, each)
	if err != nil {
		t.Fatal(err)
	}
	cb := <-fromB
	if cb.err != nil {
		t.Fatal(cb.err)
	}
	if okA+cb.ok != budgetMax || overA+cb.over != 2*each-budgetMax || int(runsA.Load()+runsB.Load()) != budgetMax {
		t.Fatalf("a: %d ran, %d over budget; b: %d ran, %d over; handlers ran %d+%d; want %d ran in all",
			okA, overA, cb.ok, cb.over, runsA.Load(), runsB.Load(), budgetMax)
	}
	if n := checkRunBudget(t, st, run, budgetMax); n != 2*each {
		t.Fatalf("the run has %d tasks, want %d", n, 2*each)
	}
	t.Logf("a: %d ran, %d over budget; b: %d ran, %d over", okA, overA, cb.ok, cb.over)
}

// A task routed by one router delegates subtasks in another: the
// subtasks count toward the same run total as the task routed elsewhere.
func TestNodeTaskBudgetDelegationAcrossProcesses(t *testing.T) {
	st, a, _, runsA, _ := budgetTeam(t)

	const subs = 6
	// The root, routed by a, runs agent:fan in b; b routes its subtasks
	// to agent:sub in a. The root is the run's first task.
	req, _ := a.r.NewRequest("agent:ui", "research.query.v1", schema.ResearchQuery{Query: strconv.Itoa(subs)})
	req.Requires = []string{"skill:fan"}
	if _, err := a.wait(a.submit(req)); err != nil {
		t.Fatal(err)
	}
	if got := runsA.Load(); got != budgetMax-1 {
		t.Fatalf("%d subtasks ran, want %d (the root and %d subtasks make the budget)", got, budgetMax-1, budgetMax-1)
	}
	if n := checkRunBudget(t, st, req.RunID, budgetMax); n != 1+subs {
		t.Fatalf("the run has %d tasks, want %d", n, 1+subs)
	}
}

// In a team, a retry stores no new request and a redelivery is not
// stored again: neither counts toward the run's router.Budget.MaxTasks, and a
// task past the budget stays past it when Retry runs it again.
func TestNodeTaskBudgetCountsRequestsOnce(t *testing.T) {
	st, _ := memstore.New(nil)
	a := newProc(t, st, time.Minute, &router.Options{Budget: router.Budget{MaxTasks: 2}})
	var calls atomic.Int32
	a.register(card("agent:flaky", skill("skill:r")), func(ctx context.Context, tk *router.Task) (*router.Result, error) {
		if calls.Add(1) == 1 {
			return nil, &protocol.ErrorPayload{Code: protocol.CodeToolUnavailable, Message: "try again", Retryable: true}
		}
		return summary("x"), nil
	})
	first := a.request("skill:r")
	first.IdempotencyKey = "first"
	if _, err := a.wait(a.submit(first)); err != nil {
		t.Fatal(err)
	}
	again := *first
	again.ID = a.r.IDs().MessageID() // a redelivery with a new id
	if _, err := a.wait(a.submit(&again)); err != nil {
		t.Fatal(err)
	}
	second := a.request("skill:r")
	second.RunID, second.ThreadID = first.RunID, first.ThreadID
	if _, err := a.wait(a.submit(second)); err != nil {
		t.Fatalf("the run's second task: %v", err)
	}
	third := a.request("skill:r")
	third.RunID, third.ThreadID = first.RunID, first.ThreadID
	if _, err := a.wait(a.submit(third)); !errors.Is(err, protocol.CodeBudget) {
		t.Fatalf("the run's third task: %v, want BUDGET", err)
	}
	// Retry runs the third task again from its stored request: its place
	// in the run has not changed.
	h, err := a.r.Retry(t.Context(), third.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.wait(h); !errors.Is(err, protocol.CodeBudget) {
		t.Fatalf("the third task retried: %v, want BUDGET", err)
	}
	if n := checkRunBudget(t, st, first.RunID, 2); n != 3 || calls.Load() != 3 {
		t.Fatalf("the run has %d tasks and the handler ran %d times, want 3 and 3 (one retry)", n, calls.Load())
	}
}

// failRunRequests is a store whose reads of a run's task.request events
// (the count of router.Budget.MaxTasks in a team) fail with err.
type failRunRequests struct {
	store.Store
	err error
}

func (s failRunRequests) Read(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	if q.RunID != "" && q.TypePrefix == string(protocol.TypeTaskRequest) {
		return func(yield func(store.Event, error) bool) { yield(store.Event{}, s.err) }
	}
	return s.Store.Read(ctx, q)
}

// In a team, a task whose place in its run cannot be read ends with a
// task.error of the store's code, retryable as that code is, and its
// handler does not run.
func TestNodeTaskBudgetUnread(t *testing.T) {
	mem, _ := memstore.New(nil)
	st := failRunRequests{Store: mem, err: coded.New("store: the disk is gone", protocol.CodeInternal)}
	a := newProc(t, st, time.Minute, &router.Options{Budget: router.Budget{MaxTasks: 2}})
	var calls atomic.Int32
	a.register(card("agent:x", skill("skill:x")), func(context.Context, *router.Task) (*router.Result, error) {
		calls.Add(1)
		return summary("x"), nil
	})
	req := a.request("skill:x")
	out, err := a.wait(a.submit(req))
	if !errors.Is(err, protocol.CodeInternal) || out.Type != protocol.TypeTaskError || calls.Load() != 0 {
		t.Fatalf("outcome %+v, %v, the handler ran %d times; want a task.error INTERNAL and no run", out, err, calls.Load())
	}
	if ep := out.Err; ep.Code != protocol.CodeInternal || !ep.Retryable || !strings.HasPrefix(ep.Message, "counting the run's tasks for its budget: ") {
		t.Fatalf("the task.error: %+v", ep)
	}
}

// In a team, what a router read of its runs' requests is bounded: with
// maxCounted runs known, a new run takes the place of one of them, and a
// run forgotten is read again, with the same outcome.
func TestNodeTaskBudgetForgetsRuns(t *testing.T) {
	st, _ := memstore.New(nil)
	a := newProc(t, st, time.Minute, &router.Options{Budget: router.Budget{MaxTasks: 1}})
	a.register(card("agent:x", skill("skill:x")), func(context.Context, *router.Task) (*router.Result, error) { return summary("x"), nil })
	a.node.cmu.Lock()
	for i := range maxCounted {
		a.node.counted[fmt.Sprint("run-", i)] = teamCount{n: 1, last: 1}
	}
	a.node.cmu.Unlock()
	first := a.request("skill:x")
	if _, err := a.wait(a.submit(first)); err != nil {
		t.Fatal(err)
	}
	ev, err := st.Get(t.Context(), first.ID)
	if err != nil {
		t.Fatal(err)
	}
	a.node.cmu.Lock()
	n, known := len(a.node.counted), a.node.counted[first.RunID]
	delete(a.node.counted, first.RunID) // forgotten: the next task reads again
	a.node.cmu.Unlock()
	if n != maxCounted || known != (teamCount{n: 1, last: ev.Seq}) {
		t.Fatalf("%d runs known, the new one as %+v; want %d, {1 %d}", n, known, maxCounted, ev.Seq)
	}
	for i := range 2 { // read again, then known
		next := a.request("skill:x")
		next.RunID, next.ThreadID = first.RunID, first.ThreadID
		if _, err := a.wait(a.submit(next)); !errors.Is(err, protocol.CodeBudget) {
			t.Fatalf("task %d past the budget: %v, want BUDGET", i+2, err)
		}
	}
	if n := checkRunBudget(t, st, first.RunID, 1); n != 3 {
		t.Fatalf("the run has %d tasks, want 3", n)
	}
}
