package router

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// proc is one "process" of a team: a router with its own registry over
// the shared store, joined as a node. Real processes are tested in
// examples/distributed; these run in one process to test the logic.
type proc struct {
	*env
	node *Node
}

func newProc(t *testing.T, st store.Store, ttl time.Duration, opts *Options) *proc {
	t.Helper()
	ctx := context.Background()
	reg, err := registry.Open(ctx, st, &registry.Options{Shared: true, HeartbeatTTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	sch, _ := schema.New(nil)
	if opts == nil {
		opts = &Options{}
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	if opts.Backoff == nil {
		opts.Backoff = func(int) time.Duration { return time.Millisecond }
	}
	r, err := New(st, reg, sch, opts)
	if err != nil {
		t.Fatal(err)
	}
	n, err := r.Join(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{env: &env{t: t, st: st, reg: reg, sch: sch, r: r}, node: n}
	t.Cleanup(func() {
		n.Leave()
		r.Close()
	})
	return p
}

// waitFor polls cond with the registry's own notion of time; the nodes
// follow the store in goroutines of their own.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestNodeRunsTaskInHostingProcess(t *testing.T) {
	st, _ := memstore.New(nil)
	a := newProc(t, st, time.Minute, nil)
	b := newProc(t, st, time.Minute, nil)
	var ranIn atomic.Value
	b.register(card("agent:ken", skill("skill:research")), func(ctx context.Context, tk *Task) (*Result, error) {
		ranIn.Store("b")
		if err := tk.Progress(ctx, map[string]any{"step": 1}); err != nil {
			return nil, err
		}
		return summary("found in b"), nil
	})
	waitFor(t, "a sees agent:ken", func() bool {
		ag, ok := a.reg.Get("agent:ken")
		return ok && a.reg.Online(ag) && a.r.handler("agent:ken") != nil
	})
	h := a.submit(a.request("skill:research"))
	out, err := a.wait(h)
	if err != nil || !out.OK() || ranIn.Load() != "b" {
		t.Fatalf("outcome %+v, %v; ran in %v", out, err, ranIn.Load())
	}
	got, err := ResultAs[schema.ResearchSummary](out)
	if err != nil || got.Findings[0] != "found in b" {
		t.Fatalf("result %+v, %v", got, err)
	}
	want := []string{"task.request", "routing.decision", "task.accept", string(TypeDispatch), string(TypeClaim), "task.progress", string(TypeDone), "task.result"}
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
	h := func(ctx context.Context, tk *Task) (*Result, error) {
		runs.Add(1)
		return summary("x"), nil
	}
	b := newProc(t, st, time.Minute, nil)
	c := newProc(t, st, time.Minute, nil)
	b.register(card("agent:ken", skill("skill:research")), h)
	c.register(card("agent:ken", skill("skill:research")), h)
	waitFor(t, "a sees agent:ken", func() bool { return a.r.handler("agent:ken") != nil })
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
// RecoverRedispatch they run again on an agent of another process; with
// RecoverFail they end with INTERRUPTED.
func TestNodeTakeOverFromDeadProcess(t *testing.T) {
	for _, policy := range []Recovery{RecoverRedispatch, RecoverFail} {
		t.Run(map[Recovery]string{RecoverRedispatch: "redispatch", RecoverFail: "fail"}[policy], func(t *testing.T) {
			st, _ := memstore.New(nil)
			ttl := 300 * time.Millisecond
			a := newProc(t, st, ttl, &Options{Recovery: policy})
			b := newProc(t, st, ttl, nil)
			stuck := make(chan struct{})
			release := make(chan struct{})
			defer close(release)
			b.register(card("agent:b", skill("skill:x")), func(ctx context.Context, tk *Task) (*Result, error) {
				close(stuck)
				<-release // a process that froze: it never answers
				return nil, ctx.Err()
			})
			waitFor(t, "a sees agent:b", func() bool { return a.r.handler("agent:b") != nil })
			h := a.submit(a.request("skill:x"))
			<-stuck
			// b "dies": its heartbeats stop.
			b.node.cancel()
			c := newProc(t, st, ttl, nil)
			c.register(card("agent:c", skill("skill:x")), func(ctx context.Context, tk *Task) (*Result, error) {
				return summary("c"), nil
			})
			out, err := a.wait(h)
			if policy == RecoverRedispatch {
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
