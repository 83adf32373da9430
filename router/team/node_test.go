package team

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/clutchprotocol/clutch/store/storetest"
)

// proc is one "process" of a team: a router with its own registry over
// the shared store, joined as a node. Real processes are tested in
// examples/distributed; these run in one process to test the logic.
type proc struct {
	*env
	node *Node
}

func newProc(t *testing.T, st store.Store, ttl time.Duration, opts *router.Options) *proc {
	t.Helper()
	return newProcWith(t, st, ttl, opts, nil)
}

func newProcWith(t *testing.T, st store.Store, ttl time.Duration, opts *router.Options, nopts *Options) *proc {
	t.Helper()
	if opts == nil {
		opts = &router.Options{}
	}
	if opts.Backoff == nil {
		opts.Backoff = func(int) time.Duration { return time.Millisecond }
	}
	p, err := joinTeam(context.Background(), st, ttl, opts, nopts)
	if err != nil {
		t.Fatal(err)
	}
	p.t = t
	t.Cleanup(p.leave)
	return p
}

// joinTeam opens a registry shared over st (HeartbeatTTL ttl) and a
// router over it with opts (logging discarded), joined to the team: one
// process's part of a team. Its env has no testing.T: newProcWith sets
// one, a child process (budget_pg_test.go) uses the router alone.
func joinTeam(ctx context.Context, st store.Store, ttl time.Duration, opts *router.Options, nopts *Options) (*proc, error) {
	reg, err := registry.Open(ctx, st, &registry.Options{Shared: true, HeartbeatTTL: ttl})
	if err != nil {
		return nil, err
	}
	sch, err := schema.New(nil)
	if err != nil {
		return nil, err
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	if opts.Validator == nil {
		opts.Validator = sch
	}
	r, err := router.New(st, reg, opts)
	if err != nil {
		return nil, err
	}
	n, err := Join(ctx, r, nopts)
	if err != nil {
		r.Close()
		return nil, err
	}
	return &proc{env: &env{st: st, reg: reg, sch: sch, r: r}, node: n}, nil
}

// leave takes the process out of its team and closes its router.
func (p *proc) leave() {
	p.node.Leave()
	p.r.Close()
}

// waitFor waits until cond holds, checking it after each registry change
// any of the procs applied (their nodes follow the store in goroutines of
// their own).
func waitFor(t *testing.T, what string, cond func() bool, ps ...*proc) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		var chs []<-chan struct{}
		for _, p := range ps {
			chs = append(chs, p.node.changed.C())
		}
		if cond() {
			return
		}
		cases := make([]reflect.SelectCase, 0, len(chs)+1)
		for _, c := range chs {
			cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(c)})
		}
		cases = append(cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(deadline)})
		if i, _, _ := reflect.Select(cases); i == len(chs) {
			t.Fatalf("%s: not within 10s", what)
		}
	}
}

func TestNodeRunsTaskInHostingProcess(t *testing.T) {
	st, _ := memstore.New(nil)
	a := newProc(t, st, time.Minute, nil)
	b := newProc(t, st, time.Minute, nil)
	var ranIn atomic.Value
	b.register(card("agent:ken", skill("skill:research")), func(ctx context.Context, tk *router.Task) (*router.Result, error) {
		ranIn.Store("b")
		if err := tk.Progress(ctx, map[string]any{"step": 1}); err != nil {
			return nil, err
		}
		return summary("found in b"), nil
	})
	waitFor(t, "a sees agent:ken", func() bool {
		ag, ok := a.reg.Get("agent:ken")
		return ok && a.reg.Online(ag) && a.handles("agent:ken")
	}, a)
	h := a.submit(a.request("skill:research"))
	out, err := a.wait(h)
	if err != nil || !out.OK() || ranIn.Load() != "b" {
		t.Fatalf("outcome %+v, %v; ran in %v", out, err, ranIn.Load())
	}
	got, err := router.ResultAs[schema.ResearchSummary](out)
	if err != nil || got.Findings[0] != "found in b" {
		t.Fatalf("result %+v, %v", got, err)
	}
	want := []string{"task.request", string(TypeOwner), "routing.decision", "task.accept", string(TypeDispatch), string(TypeClaim), "task.progress", string(TypeDone), "task.result"}
	if diff := a.types(h.TaskID()); !equalStrings(diff, want) {
		t.Fatalf("events %v, want %v", diff, want)
	}
	checkTerminals(t, st)
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// An agent hosted in two processes (the same id) runs each attempt once:
// the claim the store deduplicates picks one.
func TestNodeClaimOnce(t *testing.T) {
	st, _ := memstore.New(nil)
	a := newProc(t, st, time.Minute, nil)
	var runs atomic.Int32
	h := func(ctx context.Context, tk *router.Task) (*router.Result, error) {
		runs.Add(1)
		return summary("x"), nil
	}
	b := newProc(t, st, time.Minute, nil)
	c := newProc(t, st, time.Minute, nil)
	b.register(card("agent:ken", skill("skill:research")), h)
	c.register(card("agent:ken", skill("skill:research")), h)
	waitFor(t, "a sees agent:ken", func() bool { return a.handles("agent:ken") }, a)
	for range 20 {
		out, err := a.wait(a.submit(a.request("skill:research")))
		if err != nil || !out.OK() {
			t.Fatal(out, err)
		}
	}
	if n := runs.Load(); n != 20 {
		t.Fatalf("%d handler runs for 20 tasks", n)
	}
}

// A process whose agents stop heartbeating loses its attempts: with
// router.RecoverRedispatch they run again on an agent of another process; with
// router.RecoverFail they end with INTERRUPTED.
func TestNodeTakeOverFromDeadProcess(t *testing.T) {
	for _, policy := range []router.Recovery{router.RecoverRedispatch, router.RecoverFail} {
		t.Run(map[router.Recovery]string{router.RecoverRedispatch: "redispatch", router.RecoverFail: "fail"}[policy], func(t *testing.T) {
			st, _ := memstore.New(nil)
			ttl := 300 * time.Millisecond
			a := newProc(t, st, ttl, &router.Options{Recovery: policy})
			b := newProc(t, st, ttl, nil)
			stuck := make(chan struct{})
			release := make(chan struct{})
			defer close(release)
			b.register(card("agent:b", skill("skill:x")), func(ctx context.Context, tk *router.Task) (*router.Result, error) {
				close(stuck)
				<-release // a process that froze: it never answers
				return nil, ctx.Err()
			})
			waitFor(t, "a sees agent:b", func() bool { return a.handles("agent:b") }, a)
			h := a.submit(a.request("skill:x"))
			<-stuck
			// b "dies": its heartbeats stop.
			b.node.cancel()
			c := newProc(t, st, ttl, nil)
			c.register(card("agent:c", skill("skill:x")), func(ctx context.Context, tk *router.Task) (*router.Result, error) {
				return summary("c"), nil
			})
			out, err := a.wait(h)
			if policy == router.RecoverRedispatch {
				if err != nil || !out.OK() || out.Message.From.AgentID != "agent:c" {
					t.Fatalf("outcome %+v, %v; want a result from agent:c", out, err)
				}
				return
			}
			if !errors.Is(err, protocol.CodeInterrupted) {
				t.Fatalf("outcome %+v, %v; want INTERRUPTED", out, err)
			}
		})
	}
}

// A task routed to another process delegates to a third one; cancelling
// the root in the first process cancels the handlers in the other two,
// and each task ends once. A delegation back to an agent on the chain is
// refused as a cycle, across processes too.
func TestNodeDelegationAndCancelAcrossProcesses(t *testing.T) {
	st, _ := memstore.New(nil)
	a := newProc(t, st, time.Minute, nil)
	b := newProc(t, st, time.Minute, nil)
	c := newProc(t, st, time.Minute, nil)
	yStarted := make(chan struct{}, 1)
	yCancelled := make(chan struct{}, 1)
	cycleErr := make(chan error, 1)
	b.register(card("agent:x", skill("skill:x")), func(ctx context.Context, tk *router.Task) (*router.Result, error) {
		q, _ := router.Input[schema.ResearchQuery](tk)
		sub, err := tk.NewSubtask("research.query.v1", schema.ResearchQuery{Query: q.Query})
		if err != nil {
			return nil, err
		}
		sub.Requires = []string{"skill:y"}
		_, err = tk.Delegate(ctx, sub)
		return nil, err
	})
	c.register(card("agent:y", skill("skill:y")), func(ctx context.Context, tk *router.Task) (*router.Result, error) {
		if q, _ := router.Input[schema.ResearchQuery](tk); q.Query == "loop" {
			sub, _ := tk.NewSubtask("research.query.v1", schema.ResearchQuery{Query: "back"})
			sub.Requires = []string{"skill:x"}
			_, err := tk.Delegate(ctx, sub)
			cycleErr <- err
			return nil, err
		}
		yStarted <- struct{}{}
		<-ctx.Done()
		yCancelled <- struct{}{}
		return nil, ctx.Err()
	})
	waitFor(t, "a sees both agents", func() bool {
		return a.handles("agent:x") && b.handles("agent:y") && c.handles("agent:x")
	}, a, b, c)
	h := a.submit(a.request("skill:x"))
	<-yStarted
	h.Cancel("the user gave up")
	select {
	case <-yCancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler two processes away was not cancelled")
	}
	out, err := a.wait(h)
	if !errors.Is(err, protocol.CodeCancelled) || out.Type != protocol.TypeTaskCancel {
		t.Fatalf("root outcome %+v, %v; want a task.cancel", out, err)
	}
	// The subtask ends too: b stored its task.cancel when x's context
	// ended, before x returned and y saw its own cancel.
	if n, err := storetestCheck(st); n != 0 || err != nil {
		t.Fatalf("%d tasks without exactly one terminal event (%v)", n, err)
	}

	// x (in b) → y (in c) → x again: CYCLE, though each hop is in
	// another process.
	req, err := a.r.NewRequest("agent:ui", "research.query.v1", schema.ResearchQuery{Query: "loop"})
	if err != nil {
		t.Fatal(err)
	}
	req.Requires = []string{"skill:x"}
	h = a.submit(req)
	select {
	case err := <-cycleErr:
		if !errors.Is(err, protocol.CodeCycle) {
			t.Fatalf("delegation back to agent:x: %v, want CYCLE", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer to the delegation")
	}
	if _, err := a.wait(h); !errors.Is(err, protocol.CodeCycle) {
		t.Fatalf("root of the cycle: %v, want CYCLE passed up", err)
	}
}

// storetestCheck returns how many tasks of st have no terminal event or
// break the one-terminal rule.
func storetestCheck(st store.Store) (int, error) {
	rep, err := storetestCheckTerminals(st)
	return len(rep.Problems) + len(rep.Open), err
}

func storetestCheckTerminals(st store.Store) (storetest.TerminalReport, error) {
	return storetest.CheckTerminals(context.Background(), st)
}

// An agent's max_concurrency holds for the attempts of every process:
// two processes submitting at once never run more than its limit.
func TestNodeCapacityAcrossProcesses(t *testing.T) {
	st, _ := memstore.New(nil)
	a := newProc(t, st, time.Minute, nil)
	c := newProc(t, st, time.Minute, nil)
	b := newProc(t, st, time.Minute, nil)
	var now, peak atomic.Int32
	x := card("agent:x", skill("skill:x"))
	x.Limits = &protocol.Limits{MaxConcurrency: 1}
	b.register(x, func(ctx context.Context, tk *router.Task) (*router.Result, error) {
		n := now.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(2 * time.Millisecond) // hold the slot while the others arrive
		now.Add(-1)
		return summary("x"), nil
	})
	waitFor(t, "both see agent:x", func() bool { return a.handles("agent:x") && c.handles("agent:x") }, a, c)
	var hs []*router.Handle
	for range 4 {
		hs = append(hs, a.submit(a.request("skill:x")), c.submit(c.request("skill:x")))
	}
	for i, h := range hs {
		e := a.env
		if i%2 == 1 {
			e = c.env
		}
		if out, err := e.wait(h); err != nil || !out.OK() {
			t.Fatalf("task %d: %+v, %v", i, out, err)
		}
	}
	if p := peak.Load(); p != 1 {
		t.Fatalf("agent:x ran %d attempts at once, its max_concurrency is 1", p)
	}
}

// The delegation depth of a run counts across processes: the budget of
// the process that routes a subtask sees the depth it has there.
func TestNodeDepthBudgetAcrossProcesses(t *testing.T) {
	st, _ := memstore.New(nil)
	a := newProc(t, st, time.Minute, nil)
	b := newProc(t, st, time.Minute, &router.Options{Budget: router.Budget{MaxDepth: 2}})
	depthErr := make(chan error, 1)
	// Each handler delegates to the next skill its query names
	// ("y,z,w": to skill:y with "z,w"), or answers when there is none.
	hop := func(ctx context.Context, tk *router.Task) (*router.Result, error) {
		q, _ := router.Input[schema.ResearchQuery](tk)
		if q.Query == "." {
			return summary("leaf"), nil
		}
		next, rest, _ := strings.Cut(q.Query, ",")
		if rest == "" {
			rest = "."
		}
		sub, _ := tk.NewSubtask("research.query.v1", schema.ResearchQuery{Query: rest})
		sub.Requires = []string{"skill:" + next}
		_, err := tk.Delegate(ctx, sub)
		if next == "w" {
			depthErr <- err
		}
		return summary(q.Query), err
	}
	b.register(card("agent:x", skill("skill:x")), hop)
	a.register(card("agent:y", skill("skill:y")), hop)
	b.register(card("agent:z", skill("skill:z")), hop)
	a.register(card("agent:w", skill("skill:w")), hop)
	waitFor(t, "the agents", func() bool { return a.handles("agent:x") && b.handles("agent:w") }, a, b)
	// x (in b, depth 0) → y (routed by b: depth 1, runs in a) → z
	// (routed by a: depth 2, runs in b) → w: routed by b at depth 3, over
	// its MaxDepth of 2, though b saw only depths 0 and 2 itself.
	req, _ := a.r.NewRequest("agent:ui", "research.query.v1", schema.ResearchQuery{Query: "y,z,w"})
	req.Requires = []string{"skill:x"}
	h := a.submit(req)
	select {
	case err := <-depthErr:
		if !errors.Is(err, protocol.CodeBudget) {
			t.Fatalf("delegation at depth 3: %v, want BUDGET", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no answer")
	}
	if _, err := a.wait(h); !errors.Is(err, protocol.CodeBudget) {
		t.Fatalf("root: %v, want BUDGET passed up", err)
	}
}

// FuzzDecodeDone: the outcome another process stored is outside input;
// any bytes give a router.Result or an error, never a panic.
func FuzzDecodeDone(f *testing.F) {
	for _, s := range []string{
		`{"result":{"payload_type":"research.summary.v1","payload":{"title":"x"},"attachments":[{"kind":"artifact_ref","ref":"artifact:sha256:00"}]}}`,
		`{"error":{"code":"INTERRUPTED","message":"gone","retryable":true}}`,
		`{}`, `null`, `[]`, `{"result":null,"error":null}`, `{"error":{"code":5}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := decodeDone(&protocol.Message{Payload: b})
		if (res == nil) == (err == nil) {
			t.Fatalf("decodeDone(%q) = %v, %v: want exactly one of a result and an error", b, res, err)
		}
	})
}

// max_runtime_sec holds across processes: the routing process stores the
// task.timeout, and the handler in the hosting process sees its context
// end.
func TestNodeTimeoutAcrossProcesses(t *testing.T) {
	st, _ := memstore.New(nil)
	a := newProc(t, st, time.Minute, nil)
	b := newProc(t, st, time.Minute, nil)
	x := card("agent:x", skill("skill:x"))
	x.Limits = &protocol.Limits{MaxRuntimeSec: 1}
	ended := make(chan error, 1)
	var runs atomic.Int32
	b.register(x, func(ctx context.Context, tk *router.Task) (*router.Result, error) {
		runs.Add(1)
		<-ctx.Done()
		select {
		case ended <- ctx.Err():
		default: // a second run is reported below, not left blocked
		}
		return nil, ctx.Err()
	})
	waitFor(t, "a sees agent:x", func() bool { return a.handles("agent:x") }, a)
	h := a.submit(a.request("skill:x"))
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("the handler's context ended without an error")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler in the hosting process was not stopped")
	}
	out, err := a.wait(h)
	if !errors.Is(err, protocol.CodeTimeout) || out.Type != protocol.TypeTaskTimeout {
		t.Fatalf("outcome %+v, %v; want task.timeout", out, err)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want once", n)
	}
}

func TestJoinTwiceRefused(t *testing.T) {
	st, _ := memstore.New(nil)
	a := newProc(t, st, time.Minute, nil)
	if _, err := Join(context.Background(), a.r, nil); !errors.Is(err, router.ErrInvalidOptions) {
		t.Fatalf("second Join: %v, want ErrInvalidOptions", err)
	}
	e := newEnv(t, nil) // a registry that is not Shared
	if _, err := Join(context.Background(), e.r, nil); !errors.Is(err, router.ErrInvalidOptions) {
		t.Fatalf("Join without a Shared registry: %v, want ErrInvalidOptions", err)
	}
}
