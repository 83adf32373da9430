package router

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
)

func ok(findings ...string) Handler {
	return func(ctx context.Context, t *Task) (*Result, error) { return summary(findings...), nil }
}

func TestLifecycleResult(t *testing.T) {
	e := newEnv(t, nil)
	e.register(card("agent:ken", skill("skill:research", "fintech")), func(ctx context.Context, t *Task) (*Result, error) {
		q, err := Input[schema.ResearchQuery](t)
		if err != nil {
			return nil, err
		}
		if err := t.Progress(ctx, map[string]any{"step": "searching", "query": q.Query}); err != nil {
			return nil, err
		}
		return summary("found"), nil
	})
	h := e.submit(e.request("skill:research"))
	out, err := e.wait(h)
	if err != nil || !out.OK() {
		t.Fatalf("outcome %+v err %v", out, err)
	}
	s, err := ResultAs[schema.ResearchSummary](out)
	if err != nil || s.Findings[0] != "found" {
		t.Fatalf("result %+v %v", s, err)
	}
	want := []string{"task.request", "routing.decision", "task.accept", "task.progress", "task.result"}
	if got := e.types(h.TaskID()); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	if out.Message.From.AgentID != "agent:ken" || out.Message.To[0].AgentID != "agent:ui" || out.Message.SchemaRef != "schema://clutch/research/summary@1" {
		t.Fatalf("result envelope %+v", out.Message)
	}
}

// payloadOf decodes the payload of the task's first event whose type has
// the prefix.
func payloadOf[T any](t *testing.T, e *env, taskID, typePrefix string) T {
	t.Helper()
	for ev, err := range e.st.Read(context.Background(), store.Query{TaskID: taskID, TypePrefix: typePrefix}) {
		if err != nil {
			t.Fatal(err)
		}
		m, err := ev.Message()
		if err != nil {
			t.Fatal(err)
		}
		p, err := protocol.DecodePayload[T](m)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Fatalf("task %s has no %s event", taskID, typePrefix)
	var zero T
	return zero
}

func decisionOf(t *testing.T, e *env, taskID string) protocol.RoutingDecision {
	t.Helper()
	return payloadOf[protocol.RoutingDecision](t, e, taskID, string(protocol.TypeRoutingDecision))
}

func failureOf(t *testing.T, e *env, taskID string) protocol.ErrorPayload {
	t.Helper()
	return payloadOf[protocol.ErrorPayload](t, e, taskID, string(protocol.TypeRoutingFailure))
}

func TestRequiresAndSemantics(t *testing.T) {
	e := newEnv(t, nil)
	e.register(card("agent:a", skill("skill:research")), ok("a"))
	e.register(card("agent:b", skill("skill:research"), skill("skill:code")), ok("b"))
	h := e.submit(e.request("skill:research", "skill:code"))
	if out, err := e.wait(h); err != nil || out.Message.From.AgentID != "agent:b" {
		t.Fatalf("want agent:b, got %+v %v", out, err)
	}
	d := decisionOf(t, e, h.TaskID())
	if d.Selected != "agent:b" || !slices.Equal(d.Candidates, []string{"agent:b"}) || !strings.Contains(d.Reason, "requires[skill:research, skill:code]") {
		t.Fatalf("decision %+v", d)
	}
}

func TestNoMatchRoutingFailure(t *testing.T) {
	e := newEnv(t, nil)
	e.register(card("agent:a", skill("skill:research")), ok())
	h := e.submit(e.request("skill:legal"))
	out, err := e.wait(h)
	if !errors.Is(err, protocol.CodeNoMatch) || out.Type != protocol.TypeTaskError {
		t.Fatalf("outcome %+v err %v", out, err)
	}
	if got := e.types(h.TaskID()); !slices.Equal(got, []string{"task.request", "routing.failure", "task.error"}) {
		t.Fatalf("events %v", got)
	}
}

func TestPreferenceScoring(t *testing.T) {
	e := newEnv(t, nil)
	e.register(card("agent:plain", skill("skill:research")), ok())
	e.register(card("agent:fin", protocol.Capability{ID: "skill:research", Tags: []string{"fintech"}, Tools: []string{"mcp:browser"}}), ok())
	e.register(card("agent:half", protocol.Capability{ID: "skill:research", Tags: []string{"fintech"}}), ok())
	req := e.request("skill:research")
	req.Prefers = []string{"tool:browser", "domain:fintech"}
	h := e.submit(req)
	e.wait(h)
	d := decisionOf(t, e, h.TaskID())
	if d.Selected != "agent:fin" || d.Scores["agent:fin"] != 1 || d.Scores["agent:half"] != 0.5 || d.Scores["agent:plain"] != 0 {
		t.Fatalf("decision %+v", d)
	}
	if !slices.Equal(d.Candidates, []string{"agent:fin", "agent:half", "agent:plain"}) || !strings.Contains(d.Reason, "best preference score 1.00") {
		t.Fatalf("ranking %+v", d)
	}
	// The message's domain counts too, with its own weight.
	req = e.request("skill:research")
	req.Domain = "fintech"
	h = e.submit(req)
	e.wait(h)
	if d := decisionOf(t, e, h.TaskID()); d.Scores["agent:plain"] != 0 || d.Scores["agent:half"] != 1 {
		t.Fatalf("domain scores %+v", d.Scores)
	}
}

func TestWeights(t *testing.T) {
	e := newEnv(t, &Options{Weights: Weights{Tags: 1, Tools: 3}})
	e.register(card("agent:tags", protocol.Capability{ID: "skill:r", Tags: []string{"fintech"}}), ok())
	e.register(card("agent:tools", protocol.Capability{ID: "skill:r", Tools: []string{"mcp:browser"}}), ok())
	req := e.request("skill:r")
	req.Prefers = []string{"tool:browser", "domain:fintech"}
	h := e.submit(req)
	e.wait(h)
	if d := decisionOf(t, e, h.TaskID()); d.Selected != "agent:tools" || d.Scores["agent:tools"] != 0.75 {
		t.Fatalf("decision %+v", d)
	}
}

// blocker is a handler that parks until released.
type blocker struct {
	started chan string
	release chan struct{}
}

func newBlocker() *blocker {
	return &blocker{started: make(chan string, 100), release: make(chan struct{})}
}

func (b *blocker) handler(id string) Handler {
	return func(ctx context.Context, t *Task) (*Result, error) {
		b.started <- id
		select {
		case <-b.release:
			return summary(id), nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func TestTieBreakLeastLoaded(t *testing.T) {
	e := newEnv(t, nil)
	b := newBlocker()
	e.register(card("agent:a", skill("skill:r")), b.handler("agent:a"))
	e.register(card("agent:b", skill("skill:r")), b.handler("agent:b"))
	h1 := e.submit(e.request("skill:r"))
	first := <-b.started
	h2 := e.submit(e.request("skill:r"))
	second := <-b.started
	if first == second {
		t.Fatalf("both tasks went to %s although the other agent was idle", first)
	}
	if d := decisionOf(t, e, h2.TaskID()); !strings.Contains(d.Reason, "lowest load") {
		t.Fatalf("reason %q", d.Reason)
	}
	close(b.release)
	e.wait(h1)
	e.wait(h2)
}

func TestTieBreakSuccessRate(t *testing.T) {
	e := newEnv(t, &Options{MaxAttempts: 1})
	var failA atomic.Bool
	failA.Store(true)
	e.register(card("agent:a", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
		if failA.Load() {
			return nil, Fail(protocol.CodeToolFailed, "boom", false, nil)
		}
		return summary("a"), nil
	})
	e.register(card("agent:b", skill("skill:r")), ok("b"))
	// Send tasks to a alone, so it fails.
	for range 2 {
		req := e.request("skill:r")
		req.To = []protocol.Participant{{AgentID: "agent:a"}}
		e.wait(e.submit(req))
	}
	for range 4 {
		h := e.submit(e.request("skill:r"))
		out, _ := e.wait(h)
		if out.Message.From.AgentID != "agent:b" {
			t.Fatalf("routed to %s despite its failures", out.Message.From.AgentID)
		}
		if d := decisionOf(t, e, h.TaskID()); !strings.Contains(d.Reason, "success rate") {
			t.Fatalf("reason %q", d.Reason)
		}
	}
}

func TestTieBreakRoundRobin(t *testing.T) {
	e := newEnv(t, nil)
	for _, id := range []string{"agent:a", "agent:b", "agent:c"} {
		e.register(card(id, skill("skill:r")), ok(id))
	}
	seen := map[string]int{}
	for range 9 {
		h := e.submit(e.request("skill:r"))
		out, _ := e.wait(h)
		seen[out.Message.From.AgentID]++
		if d := decisionOf(t, e, h.TaskID()); !strings.Contains(d.Reason, "round robin among 3") {
			t.Fatalf("reason %q", d.Reason)
		}
	}
	for id, n := range seen {
		if n != 3 {
			t.Fatalf("round robin uneven: %v (%s)", seen, id)
		}
	}
}

func TestHardFilters(t *testing.T) {
	e := newEnv(t, nil)
	sandboxed := card("agent:sandboxed", protocol.Capability{ID: "skill:r", Tools: []string{"mcp:browser"}, TrustLevel: "sandbox"})
	sandboxed.Security = &protocol.CardSecurity{Sandbox: true, Network: "egress-restricted"}
	prod := card("agent:prod", protocol.Capability{ID: "skill:r", Tools: []string{"mcp:browser", "mcp:files"}, TrustLevel: "prod"})
	prod.Security = &protocol.CardSecurity{Sandbox: true, Network: "open"}
	open := card("agent:open", protocol.Capability{ID: "skill:r"})
	open.Security = &protocol.CardSecurity{Network: "open"}
	e.register(sandboxed, ok())
	e.register(prod, ok())
	e.register(open, ok())

	cases := []struct {
		name     string
		edit     func(m *protocol.Message)
		want     string
		rejected []string
		code     protocol.Code
	}{
		{"sandbox and trust level", func(m *protocol.Message) {
			m.Security = &protocol.Security{Policy: &protocol.Policy{Sandbox: true}}
		}, "agent:sandboxed", []string{"agent:prod", "agent:open"}, ""},
		{"tool allowlist", func(m *protocol.Message) {
			m.Security = &protocol.Security{Policy: &protocol.Policy{ToolAllowlist: []string{"mcp:browser"}}}
		}, "", []string{"agent:prod"}, ""},
		{"network", func(m *protocol.Message) { m.Requires = append(m.Requires, "network:open") }, "", []string{"agent:sandboxed"}, ""},
		{"nothing complies", func(m *protocol.Message) {
			m.Security = &protocol.Security{Policy: &protocol.Policy{Sandbox: true, ToolAllowlist: []string{"mcp:files"}}}
		}, "", nil, protocol.CodePolicyDenied},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := e.request("skill:r")
			tc.edit(req)
			h := e.submit(req)
			out, err := e.wait(h)
			if tc.code != "" {
				if !errors.Is(err, tc.code) {
					t.Fatalf("err %v, want %s", err, tc.code)
				}
				if f := failureOf(t, e, h.TaskID()); len(f.Details["rejected"].(map[string]any)) != 3 {
					t.Fatalf("failure details %+v", f.Details)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			d := decisionOf(t, e, h.TaskID())
			if tc.want != "" && out.Message.From.AgentID != tc.want {
				t.Fatalf("routed to %s, want %s", out.Message.From.AgentID, tc.want)
			}
			for _, id := range tc.rejected {
				if _, ok := d.Rejected[id]; !ok {
					t.Fatalf("%s not rejected: %+v", id, d)
				}
				if slices.Contains(d.Candidates, id) {
					t.Fatalf("%s is a candidate", id)
				}
			}
		})
	}
}

// TestRoutingPassesShareNothing: the router reuses its routing state
// from task to task; a decision must show only its own pass — after a pass
// that rejected agents, one that rejects none lists no rejections and
// every candidate, with scores of its own.
func TestRoutingPassesShareNothing(t *testing.T) {
	e := newEnv(t, nil)
	e.register(card("agent:a", protocol.Capability{ID: "skill:r", Tags: []string{"fintech"}}), ok())
	e.register(card("agent:b", protocol.Capability{ID: "skill:r", Tools: []string{"mcp:browser"}}), ok())
	for i := range 6 {
		req := e.request("skill:r")
		restricted := i%2 == 0
		if restricted {
			req.Security = &protocol.Security{Policy: &protocol.Policy{ToolAllowlist: []string{"mcp:none"}}}
		} else {
			req.Prefers = []string{"domain:fintech"}
		}
		h := e.submit(req)
		if _, err := e.wait(h); err != nil {
			t.Fatal(err)
		}
		d := decisionOf(t, e, h.TaskID())
		if restricted {
			if len(d.Rejected) != 1 || d.Rejected["agent:b"] == "" || !slices.Equal(d.Candidates, []string{"agent:a"}) || len(d.Scores) != 1 {
				t.Fatalf("task %d (b rejected): %+v", i, d)
			}
			continue
		}
		if d.Rejected != nil || len(d.Candidates) != 2 || d.Selected != "agent:a" ||
			d.Scores["agent:a"] != 1 || d.Scores["agent:b"] != 0 || d.Eligible != 2 || d.Considered != 2 {
			t.Fatalf("task %d (none rejected): %+v", i, d)
		}
	}
}

// TestAttachedAgent: an agent registered in the registry by someone else
// (an adapter) is routable once a handler is attached; going offline after
// the TTL is tested in routertest, whose clock can move.
func TestAttachedAgent(t *testing.T) {
	e := newEnv(t, nil)
	e.register(card("agent:local", skill("skill:x")), ok())
	if err := e.reg.Register(context.Background(), card("agent:remote", skill("skill:r")), nil); err != nil {
		t.Fatal(err)
	}
	if err := e.r.Attach("agent:remote", ok("remote")); err != nil {
		t.Fatal(err)
	}
	if out, err := e.wait(e.submit(e.request("skill:r"))); err != nil || out.Message.From.AgentID != "agent:remote" {
		t.Fatalf("%+v %v", out, err)
	}
}

func TestExplicitToSkipsScoring(t *testing.T) {
	e := newEnv(t, nil)
	e.register(card("agent:a", skill("skill:r", "fintech")), ok("a"))
	e.register(card("agent:b", skill("skill:r")), ok("b"))
	req := e.request("skill:r")
	req.Prefers = []string{"domain:fintech"}
	req.To = []protocol.Participant{{AgentID: "agent:b"}}
	h := e.submit(req)
	out, err := e.wait(h)
	if err != nil || out.Message.From.AgentID != "agent:b" {
		t.Fatalf("%+v %v", out, err)
	}
	if d := decisionOf(t, e, h.TaskID()); d.Selected != "agent:b" || !strings.Contains(d.Reason, "explicit recipient") {
		t.Fatalf("decision %+v", d)
	}
	// An explicit recipient still passes the hard filters.
	req = e.request("skill:r")
	req.To = []protocol.Participant{{AgentID: "agent:b"}}
	req.Security = &protocol.Security{Policy: &protocol.Policy{Sandbox: true}}
	if _, err := e.wait(e.submit(req)); !errors.Is(err, protocol.CodePolicyDenied) {
		t.Fatalf("explicit recipient bypassed the policy: %v", err)
	}
	req = e.request("skill:legal")
	req.To = []protocol.Participant{{AgentID: "agent:b"}}
	if _, err := e.wait(e.submit(req)); !errors.Is(err, protocol.CodeNoMatch) {
		t.Fatalf("explicit recipient without the required capability: %v", err)
	}
}

func TestInvalidResultBecomesValidationError(t *testing.T) {
	e := newEnv(t, &Options{MaxAttempts: 1})
	e.register(card("agent:sloppy", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
		return &Result{PayloadType: "research.summary.v1", Payload: map[string]any{"title": "no findings"}}, nil
	})
	h := e.submit(e.request("skill:r"))
	out, err := e.wait(h)
	if !errors.Is(err, protocol.CodeValidation) || out.Type != protocol.TypeTaskError {
		t.Fatalf("%+v %v", out, err)
	}
	if out.Err.Details["result"] == nil || out.Err.Details["violations"] == nil {
		t.Fatalf("the invalid result is not kept for audit: %+v", out.Err.Details)
	}
	// It is in the stored task.error too.
	stored, err := e.r.storedOutcome(context.Background(), h.TaskID())
	if err != nil || stored.Err.Details["result"] == nil {
		t.Fatalf("stored %+v %v", stored, err)
	}
}

func TestHandlerErrorAndPanic(t *testing.T) {
	e := newEnv(t, &Options{MaxAttempts: 1})
	e.register(card("agent:fail", skill("skill:fail")), func(ctx context.Context, t *Task) (*Result, error) {
		return nil, Fail(protocol.CodeToolUnavailable, "MCP server mcp:browser not responding", false, map[string]any{"tool": "mcp:browser"})
	})
	e.register(card("agent:panic", skill("skill:panic")), func(ctx context.Context, t *Task) (*Result, error) {
		panic("nil map")
	})
	out, err := e.wait(e.submit(e.request("skill:fail")))
	if !errors.Is(err, protocol.CodeToolUnavailable) || out.Err.Details["tool"] != "mcp:browser" {
		t.Fatalf("%+v %v", out, err)
	}
	out, err = e.wait(e.submit(e.request("skill:panic")))
	if !errors.Is(err, protocol.CodeInternal) || !strings.Contains(out.Err.Message, "panicked") {
		t.Fatalf("%+v %v", out, err)
	}
}

func TestRetryThenSuccess(t *testing.T) {
	e := newEnv(t, &Options{MaxAttempts: 3})
	var calls atomic.Int32
	e.register(card("agent:flaky", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
		if n := calls.Add(1); int(n) != t.Attempt() {
			return nil, errors.New("attempt number out of step")
		}
		if t.Attempt() < 3 {
			return nil, Fail(protocol.CodeToolUnavailable, "try again", true, nil)
		}
		return summary("third time"), nil
	})
	h := e.submit(e.request("skill:r"))
	out, err := e.wait(h)
	if err != nil || out.Message.Attempt != 3 {
		t.Fatalf("%+v %v", out, err)
	}
	want := []string{"task.request",
		"routing.decision", "task.accept", "task.error",
		"routing.decision", "task.accept", "task.error",
		"routing.decision", "task.accept", "task.result"}
	if got := e.types(h.TaskID()); !slices.Equal(got, want) {
		t.Fatalf("events %v", got)
	}
}

func TestRetryExhausted(t *testing.T) {
	e := newEnv(t, &Options{MaxAttempts: 2})
	var calls atomic.Int32
	e.register(card("agent:down", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
		calls.Add(1)
		return nil, Fail(protocol.CodeToolUnavailable, "down", true, nil)
	})
	out, err := e.wait(e.submit(e.request("skill:r")))
	if !errors.Is(err, protocol.CodeToolUnavailable) || calls.Load() != 2 || out.Message.Attempt != 2 {
		t.Fatalf("%+v %v calls %d", out, err, calls.Load())
	}
	if out.Err.Details["will_retry"] != nil {
		t.Fatal("final error says it will retry")
	}
}

func TestTimeout(t *testing.T) {
	e := newEnv(t, nil)
	c := card("agent:slow", skill("skill:r"))
	c.Limits = &protocol.Limits{MaxRuntimeSec: 1}
	stuck := make(chan struct{})
	defer close(stuck)
	var sawDeadline atomic.Bool
	e.register(c, func(ctx context.Context, t *Task) (*Result, error) {
		<-ctx.Done()
		sawDeadline.Store(errors.Is(ctx.Err(), context.DeadlineExceeded))
		return summary("late"), nil
	})
	h := e.submit(e.request("skill:r"))
	out, err := e.wait(h)
	if !errors.Is(err, protocol.CodeTimeout) || out.Type != protocol.TypeTaskTimeout {
		t.Fatalf("%+v %v", out, err)
	}
	if got := e.types(h.TaskID()); got[len(got)-1] != "task.timeout" || slices.Contains(got, "task.result") {
		t.Fatalf("events %v", got)
	}
}

func TestCancelSubtree(t *testing.T) { synctest.Test(t, testCancelSubtree) }

func testCancelSubtree(t *testing.T) {
	e := newEnv(t, nil)
	childStarted := make(chan string, 1)
	e.register(card("agent:lead", skill("skill:lead")), func(ctx context.Context, t *Task) (*Result, error) {
		sub, err := t.NewSubtask("research.query.v1", schema.ResearchQuery{Query: "sub"})
		if err != nil {
			return nil, err
		}
		sub.Requires = []string{"skill:worker"}
		out, err := t.Delegate(ctx, sub)
		if err != nil {
			return nil, err
		}
		return &Result{PayloadType: out.Message.PayloadType, Payload: out.Message.Payload}, nil
	})
	e.register(card("agent:worker", skill("skill:worker")), func(ctx context.Context, t *Task) (*Result, error) {
		childStarted <- t.ID()
		<-ctx.Done()
		return nil, ctx.Err()
	})
	h := e.submit(e.request("skill:lead"))
	child := <-childStarted
	h.Cancel("user changed their mind")
	out, err := e.wait(h)
	if !errors.Is(err, protocol.CodeCancelled) || out.Type != protocol.TypeTaskCancel || out.Err.Message != "user changed their mind" {
		t.Fatalf("%+v %v", out, err)
	}
	// The child ends with task.cancel too.
	synctest.Wait()
	if got := e.types(child); got[len(got)-1] != "task.cancel" {
		t.Fatalf("child events %v", got)
	}
}

func TestDelegationAndCycle(t *testing.T) {
	e := newEnv(t, nil)
	e.register(card("agent:a", skill("skill:a")), func(ctx context.Context, t *Task) (*Result, error) {
		sub, _ := t.NewSubtask("research.query.v1", schema.ResearchQuery{Query: "b"})
		sub.Requires = []string{"skill:b"}
		out, err := t.Delegate(ctx, sub)
		if err != nil {
			return nil, err
		}
		return &Result{PayloadType: "research.summary.v1", Payload: out.Message.Payload}, nil
	})
	e.register(card("agent:b", skill("skill:b")), func(ctx context.Context, t *Task) (*Result, error) {
		if t.Request().ParentTaskID == "" {
			return nil, errors.New("no parent")
		}
		sub, _ := t.NewSubtask("research.query.v1", schema.ResearchQuery{Query: "back to a"})
		sub.Requires = []string{"skill:a"}
		_, err := t.Delegate(ctx, sub)
		if !errors.Is(err, protocol.CodeCycle) {
			return nil, errors.New("delegating back to agent:a was not refused as a cycle")
		}
		return summary("b saw the cycle refused"), nil
	})
	h := e.submit(e.request("skill:a"))
	out, err := e.wait(h)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := ResultAs[schema.ResearchSummary](out)
	if s.Findings[0] != "b saw the cycle refused" {
		t.Fatalf("result %+v", s)
	}
	tree, err := e.r.Tree(context.Background(), h.Request().RunID)
	if err != nil {
		t.Fatal(err)
	}
	if len(tree.Roots) != 1 || len(tree.Roots[0].Children) != 1 || len(tree.Roots[0].Children[0].Children) != 1 {
		t.Fatalf("tree:\n%s", tree)
	}
	grandchild := tree.Roots[0].Children[0].Children[0]
	if grandchild.Outcome == nil || grandchild.Outcome.Err.Code != protocol.CodeCycle {
		t.Fatalf("tree:\n%s", tree)
	}
	if tree.Roots[0].Children[0].Request.RunID != h.Request().RunID {
		t.Fatal("subtask in another run")
	}
}

func TestBudget(t *testing.T) {
	t.Run("depth", func(t *testing.T) {
		e := newEnv(t, &Options{Budget: Budget{MaxDepth: 2}})
		var depthErr atomic.Value
		var h Handler
		h = func(ctx context.Context, t *Task) (*Result, error) {
			sub, _ := t.NewSubtask("research.query.v1", schema.ResearchQuery{Query: "deeper"})
			sub.Requires = []string{"skill:r"}
			sub.To = []protocol.Participant{{AgentID: "agent:" + map[string]string{"agent:a": "b", "agent:b": "c", "agent:c": "d", "agent:d": "a"}[t.Agent()]}}
			_, err := t.Delegate(ctx, sub)
			if err != nil {
				depthErr.CompareAndSwap(nil, err)
				return nil, err
			}
			return summary("x"), nil
		}
		for _, id := range []string{"agent:a", "agent:b", "agent:c", "agent:d"} {
			e.register(card(id, skill("skill:r")), h)
		}
		req := e.request("skill:r")
		req.To = []protocol.Participant{{AgentID: "agent:a"}}
		_, err := e.wait(e.submit(req))
		if !errors.Is(err, protocol.CodeBudget) || !errors.Is(depthErr.Load().(error), protocol.CodeBudget) {
			t.Fatalf("err %v, first %v", err, depthErr.Load())
		}
	})
	t.Run("tasks", func(t *testing.T) {
		e := newEnv(t, &Options{Budget: Budget{MaxTasks: 2}})
		e.register(card("agent:fan", skill("skill:fan")), func(ctx context.Context, t *Task) (*Result, error) {
			var errs []error
			for range 2 {
				sub, _ := t.NewSubtask("research.query.v1", schema.ResearchQuery{Query: "x"})
				sub.Requires = []string{"skill:leaf"}
				_, err := t.Delegate(ctx, sub)
				errs = append(errs, err)
			}
			if errs[0] != nil || !errors.Is(errs[1], protocol.CodeBudget) {
				return nil, errors.New("want the second subtask over budget")
			}
			return summary("ok"), nil
		})
		e.register(card("agent:leaf", skill("skill:leaf")), ok())
		if _, err := e.wait(e.submit(e.request("skill:fan"))); err != nil {
			t.Fatal(err)
		}
	})
}

func TestConcurrencyLimitQueues(t *testing.T) { synctest.Test(t, testConcurrencyLimitQueues) }

func testConcurrencyLimitQueues(t *testing.T) {
	e := newEnv(t, &Options{QueueTimeout: 5 * time.Second})
	c := card("agent:one", skill("skill:r"))
	c.Limits = &protocol.Limits{MaxConcurrency: 1}
	var running, peak atomic.Int32
	release := make(chan struct{})
	e.register(c, func(ctx context.Context, t *Task) (*Result, error) {
		n := running.Add(1)
		defer running.Add(-1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		<-release
		return summary("x"), nil
	})
	var hs []*Handle
	for range 5 {
		hs = append(hs, e.submit(e.request("skill:r")))
	}
	synctest.Wait() // one task runs, four wait for its slot
	if n := e.r.waiting.Load(); n != 4 {
		t.Fatalf("%d tasks waiting for a slot, want 4", n)
	}
	close(release)
	for _, h := range hs {
		if _, err := e.wait(h); err != nil {
			t.Fatal(err)
		}
	}
	if peak.Load() != 1 {
		t.Fatalf("peak concurrency %d, limit 1", peak.Load())
	}
}

func TestQueueTimeoutAndFull(t *testing.T) { synctest.Test(t, testQueueTimeoutAndFull) }

func testQueueTimeoutAndFull(t *testing.T) {
	e := newEnv(t, &Options{MaxQueued: 1})
	c := card("agent:one", skill("skill:r"))
	c.Limits = &protocol.Limits{MaxConcurrency: 1}
	b := newBlocker()
	e.register(c, b.handler("one"))
	h1 := e.submit(e.request("skill:r"))
	<-b.started
	e.r.opts.QueueTimeout = 300 * time.Millisecond
	h2 := e.submit(e.request("skill:r")) // waits, then times out
	synctest.Wait()
	h3 := e.submit(e.request("skill:r")) // the queue (1) is full
	_, err3 := e.wait(h3)
	_, err2 := e.wait(h2)
	if !errors.Is(err2, protocol.CodeCapacity) || !errors.Is(err3, protocol.CodeCapacity) {
		t.Fatalf("queued %v, overflow %v", err2, err3)
	}
	if f := failureOf(t, e, h3.TaskID()); !strings.Contains(f.Message, "queue is full") {
		t.Fatalf("overflow failure %+v", f)
	}
	close(b.release)
	e.wait(h1)
}

func TestRedeliveredRequestRunsOnce(t *testing.T) {
	e := newEnv(t, nil)
	var calls atomic.Int32
	b := newBlocker()
	e.register(card("agent:a", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
		calls.Add(1)
		return b.handler("a")(ctx, t)
	})
	req := e.request("skill:r")
	req.IdempotencyKey = "idem-1"
	h1 := e.submit(req)
	<-b.started
	// The same bytes again, while running.
	again, err := protocol.Decode(req.Raw())
	if err != nil {
		t.Fatal(err)
	}
	h2 := e.submit(again)
	if h2.TaskID() != h1.TaskID() {
		t.Fatal("redelivery started another task")
	}
	// A new message with the same idempotency key, while running.
	other := e.request("skill:r")
	other.RunID, other.IdempotencyKey = req.RunID, "idem-1"
	h3 := e.submit(other)
	close(b.release)
	o1, _ := e.wait(h1)
	o2, _ := e.wait(h2)
	o3, _ := e.wait(h3)
	if o1.Message.ID != o2.Message.ID || o1.Message.ID != o3.Message.ID {
		t.Fatal("handles disagree on the outcome")
	}
	// After it ended: the stored outcome.
	h4 := e.submit(again)
	o4, _ := e.wait(h4)
	if o4.Message.ID != o1.Message.ID || calls.Load() != 1 {
		t.Fatalf("ran %d times", calls.Load())
	}
}

func TestConcurrentSubmitsRace(t *testing.T) {
	e := newEnv(t, nil)
	for _, id := range []string{"agent:a", "agent:b", "agent:c"} {
		c := card(id, skill("skill:r"))
		c.Limits = &protocol.Limits{MaxConcurrency: 4}
		e.register(c, ok(id))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				h, err := e.r.Submit(context.Background(), e.request("skill:r"))
				if err != nil {
					errs <- err
					return
				}
				if _, err := h.Wait(context.Background()); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// TestCancelReachesSubtaskDelegatedWithOtherContext: the subtree is
// cancelled even when a handler delegates with a context of its own.
func TestCancelReachesSubtaskDelegatedWithOtherContext(t *testing.T) {
	synctest.Test(t, testCancelReachesSubtaskDelegatedWithOtherContext)
}

func testCancelReachesSubtaskDelegatedWithOtherContext(t *testing.T) {
	e := newEnv(t, nil)
	childStarted := make(chan string, 1)
	e.register(card("agent:lead", skill("skill:lead")), func(ctx context.Context, t *Task) (*Result, error) {
		sub, _ := t.NewSubtask("research.query.v1", schema.ResearchQuery{Query: "sub"})
		sub.Requires = []string{"skill:worker"}
		h, err := t.r.submit(context.Background(), sub, t.ts) // not the handler's ctx
		if err != nil {
			return nil, err
		}
		out, err := h.Wait(context.Background())
		if err != nil {
			return nil, err
		}
		return &Result{PayloadType: out.Message.PayloadType, Payload: out.Message.Payload}, nil
	})
	e.register(card("agent:worker", skill("skill:worker")), func(ctx context.Context, t *Task) (*Result, error) {
		childStarted <- t.ID()
		<-ctx.Done()
		return nil, ctx.Err()
	})
	h := e.submit(e.request("skill:lead"))
	child := <-childStarted
	h.Cancel("stop")
	if _, err := e.wait(h); !errors.Is(err, protocol.CodeCancelled) {
		t.Fatal(err)
	}
	synctest.Wait()
	if got := e.types(child); got[len(got)-1] != "task.cancel" {
		t.Fatalf("child events %v", got)
	}
}
