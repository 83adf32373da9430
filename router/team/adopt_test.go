package team

import (
	"context"
	"errors"
	"iter"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/internal/idem"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// mortal is the store as one process sees it: once killed, nothing the
// process writes reaches the store and its reads fail, as when the
// process died with kill -9 (its goroutines may still run here, but they
// can no longer change the log).
type mortal struct {
	store.Store
	dead atomic.Bool
}

var errDead = errors.New("the process is dead")

func (s *mortal) Append(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	if s.dead.Load() {
		return nil, errDead
	}
	return s.Store.Append(ctx, msgs...)
}

func (s *mortal) Read(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	if s.dead.Load() {
		return func(yield func(store.Event, error) bool) { yield(store.Event{}, errDead) }
	}
	return s.Store.Read(ctx, q)
}

// kill makes p dead: its writes are lost and its node stops.
func (p *proc) kill(s *mortal) {
	s.dead.Store(true)
	p.node.cancel()
}

// newMortal returns a process over a store it can be killed on.
func newMortal(t *testing.T, st store.Store, ttl time.Duration, opts *router.Options) (*proc, *mortal) {
	m := &mortal{Store: st}
	return newProc(t, m, ttl, opts), m
}

// terminalOf waits until task has a terminal event in st and returns it.
func terminalOf(t *testing.T, st store.Store, task string) *protocol.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ev, err := range st.Follow(ctx, store.Query{TaskID: task}) {
		if err != nil {
			t.Fatal(err)
		}
		m, _ := ev.Message()
		if protocol.EndsTask(m) {
			return m
		}
	}
	t.Fatalf("task %s did not end within 10s", task)
	return nil
}

// adoptions counts the adoption claims of task that got into the log.
func adoptions(t *testing.T, st store.Store, task string) int {
	t.Helper()
	n := 0
	for ev, err := range st.Read(context.Background(), store.Query{TaskID: task, TypePrefix: string(TypeOwner)}) {
		if err != nil {
			t.Fatal(err)
		}
		m, _ := ev.Message()
		if p, ok := decodeOwner(m.Payload); ok && p.From != "" {
			n++
		}
	}
	return n
}

// submitHeld registers agent:b (skill:x) in b, with a handler that
// returns summary "from b" once release is closed, has a submit a task
// for it, and returns when b's handler runs.
func submitHeld(t *testing.T, a, b *proc) (h *router.Handle, release chan struct{}) {
	t.Helper()
	started := make(chan struct{})
	release = make(chan struct{})
	b.register(card("agent:b", skill("skill:x")), func(ctx context.Context, tk *router.Task) (*router.Result, error) {
		close(started)
		<-release
		return summary("from b"), nil
	})
	waitFor(t, "a sees agent:b", func() bool { return a.handles("agent:b") }, a)
	h = a.submit(a.request("skill:x"))
	<-started
	return h, release
}

// registerUntilCancelled registers agent:a (skill:x) in p with a handler
// that runs until its context ends; the channel closes when it starts.
func registerUntilCancelled(p *proc) <-chan struct{} {
	started := make(chan struct{})
	p.register(card("agent:a", skill("skill:x")), func(ctx context.Context, tk *router.Task) (*router.Result, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	return started
}

// The process that routed a task dies while a worker process runs it:
// the worker finishes and stores its outcome, and exactly one of the two
// survivors adopts the task and stores its task.result from it.
func TestAdoptStoresOutcomeOfRunningAttempt(t *testing.T) {
	st, _ := memstore.New(nil)
	ttl := adoptTTL
	a, sa := newMortal(t, st, ttl, nil)
	b := newProc(t, st, ttl, nil)
	c := newProc(t, st, ttl, nil)
	h, release := submitHeld(t, a, b)
	// A redelivery of the request to another process, while a routes
	// the task: a handle that follows the task's end in the log.
	hc := c.submit(h.Request())
	a.kill(sa)
	close(release)
	end := terminalOf(t, st, h.TaskID())
	if end.Type != protocol.TypeTaskResult || end.From.AgentID != "agent:b" || end.Attempt != 1 {
		t.Fatalf("terminal %s from %s attempt %d; want b's task.result of attempt 1", end.Type, end.From.AgentID, end.Attempt)
	}
	if end.IdempotencyKey != idem.End(h.TaskID(), 1) {
		t.Fatalf("terminal key %q; events %v", end.IdempotencyKey, b.types(h.TaskID()))
	}
	if n := adoptions(t, st, h.TaskID()); n != 1 {
		t.Fatalf("%d adoptions, want 1", n)
	}
	if out, err := c.wait(hc); err != nil || out.Message.ID != end.ID {
		t.Fatalf("the redelivery's outcome %+v, %v; want the stored end", out, err)
	}
	// A redelivery after the end: the stored outcome.
	d := newProc(t, st, ttl, nil)
	if out, err := d.wait(d.submit(h.Request())); err != nil || out.Message.ID != end.ID {
		t.Fatalf("a later redelivery: %+v, %v; want the stored end", out, err)
	}
	checkTerminals(t, st)
}

// A redelivery to a survivor of a task whose routing process died makes
// the survivor adopt it, and its handle gives the outcome.
func TestRedeliveryAdoptsTaskOfDeadNode(t *testing.T) {
	st, _ := memstore.New(nil)
	ttl := adoptTTL
	a, sa := newMortal(t, st, ttl, nil)
	// b's node checks for dead nodes once an hour: it does not adopt.
	b := newProcWith(t, st, ttl, nil, &Options{CheckInterval: time.Hour})
	h, release := submitHeld(t, a, b)
	a.kill(sa)
	e := newProc(t, st, ttl, nil)
	// For e, a TTL has passed: a, not heard from since, is dead.
	e.node.skew.Store(int64(2 * ttl))
	he := e.submit(h.Request())
	close(release)
	out, err := e.wait(he)
	if err != nil || !out.OK() || out.Message.From.AgentID != "agent:b" {
		t.Fatalf("outcome %+v, %v; want b's result", out, err)
	}
	if n := adoptions(t, st, h.TaskID()); n != 1 {
		t.Fatalf("%d adoptions, want 1", n)
	}
	checkTerminals(t, st)
}

// The routing process dies with the attempt running on one of its own
// agents, the task stored by the batch of a decision at Submit: the
// survivor applies its recovery policy, routing the task
// again to an agent of its own (router.RecoverRedispatch) or ending it with
// INTERRUPTED (router.RecoverFail).
func TestAdoptAppliesRecoveryPolicy(t *testing.T) {
	for _, policy := range []router.Recovery{router.RecoverRedispatch, router.RecoverFail} {
		t.Run(map[router.Recovery]string{router.RecoverRedispatch: "redispatch", router.RecoverFail: "fail"}[policy], func(t *testing.T) {
			st, _ := memstore.New(nil)
			ttl := adoptTTL
			rec := &batches{Store: st}
			a, sa := newMortal(t, rec, ttl, nil)
			started := registerUntilCancelled(a)
			c := newProc(t, st, ttl, &router.Options{Recovery: policy})
			h := a.submit(a.request("skill:x"))
			<-started
			// Decided at Submit: request, owner, decision and accept were
			// one batch (docs/protocol.md §5.1), and nothing else of the
			// task is stored when its process dies.
			if got := rec.of(h.TaskID()); !equalBatches(got, [][]string{submitBatch}) {
				t.Fatalf("task stored as %q, want %q", got, [][]string{submitBatch})
			}
			a.kill(sa)
			c.register(card("agent:c", skill("skill:x")), func(ctx context.Context, tk *router.Task) (*router.Result, error) {
				return summary("from c"), nil
			})
			end := terminalOf(t, st, h.TaskID())
			switch policy {
			case router.RecoverRedispatch:
				if end.Type != protocol.TypeTaskResult || end.From.AgentID != "agent:c" || end.Attempt != 2 {
					t.Fatalf("terminal %s from %s attempt %d; want c's result of attempt 2", end.Type, end.From.AgentID, end.Attempt)
				}
			case router.RecoverFail:
				out := outcomeOf(end)
				if !errors.Is(out.Err, protocol.CodeInterrupted) || end.Attempt != 1 {
					t.Fatalf("terminal %s %v attempt %d; want INTERRUPTED of attempt 1", end.Type, out.Err, end.Attempt)
				}
			}
			checkTerminals(t, st)
		})
	}
}

// A delegated subtask whose parent's handler died with its process is
// cancelled by the survivor that adopts it; the parent, routed by a live
// process, is retried there.
func TestAdoptCancelsOrphanSubtask(t *testing.T) {
	st, _ := memstore.New(nil)
	ttl := adoptTTL
	a := newProc(t, st, ttl, &router.Options{Recovery: router.RecoverFail})
	b, sb := newMortal(t, st, ttl, nil)
	c := newProc(t, st, ttl, nil)
	subID := make(chan string, 1)
	b.register(card("agent:x", skill("skill:x")), func(ctx context.Context, tk *router.Task) (*router.Result, error) {
		sub, _ := tk.NewSubtask("research.query.v1", map[string]any{"query": "sub"})
		sub.Requires = []string{"skill:y"}
		subID <- sub.TaskID
		_, err := tk.Delegate(ctx, sub)
		return nil, err
	})
	yStarted := make(chan struct{})
	c.register(card("agent:y", skill("skill:y")), func(ctx context.Context, tk *router.Task) (*router.Result, error) {
		close(yStarted)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	waitFor(t, "the agents", func() bool { return a.handles("agent:x") && b.handles("agent:y") }, a, b)
	h := a.submit(a.request("skill:x"))
	sub := <-subID
	<-yStarted
	b.kill(sb)
	if end := terminalOf(t, st, sub); end.Type != protocol.TypeTaskCancel {
		t.Fatalf("orphan subtask ended with %s, want task.cancel", end.Type)
	}
	if _, err := a.wait(h); !errors.Is(err, protocol.CodeInterrupted) {
		t.Fatalf("parent: %v, want INTERRUPTED", err)
	}
	checkTerminals(t, st)
}

// Recover in a team leaves alone the tasks live nodes route, and adopts
// those of dead ones.
func TestRecoverInTeam(t *testing.T) {
	st, _ := memstore.New(nil)
	ttl := adoptTTL
	a, sa := newMortal(t, st, ttl, nil)
	started := registerUntilCancelled(a)
	h := a.submit(a.request("skill:x"))
	<-started
	// d and e join after the task was submitted: only Recover finds it.
	d := newProc(t, st, ttl, nil)
	n, err := d.r.Recover(context.Background())
	if err != nil || n != 0 {
		t.Fatalf("Recover with the owner alive: %d, %v; want 0", n, err)
	}
	a.kill(sa)
	e := newProc(t, st, ttl, nil)
	n, err = e.r.Recover(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("Recover with the owner dead: %d, %v; want 1", n, err)
	}
	end := terminalOf(t, st, h.TaskID())
	if out := outcomeOf(end); !errors.Is(out.Err, protocol.CodeInterrupted) {
		t.Fatalf("terminal %s %v, want INTERRUPTED (router.RecoverFail)", end.Type, out.Err)
	}
	if n, err := d.r.Recover(context.Background()); err != nil || n != 0 {
		t.Fatalf("Recover again: %d, %v; want 0", n, err)
	}
	checkTerminals(t, st)
}

// FuzzDecodeOwner: owner and node heartbeat payloads are stored by other
// processes; any bytes decode to a payload with a node or are refused,
// never a panic.
func FuzzDecodeOwner(f *testing.F) {
	for _, s := range []string{
		`{"node":"host:1/01J9","depth":2,"chain":["agent:a"],"sub":true}`,
		`{"node":"host:2/01JA","from":"host:1/01J9"}`,
		`{"node":""}`, `{"depth":-1,"node":"x"}`, `null`, `[]`, `{"node":5}`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		p, ok := decodeOwner(b)
		if ok && (p.Node == "" || p.Depth < 0) {
			t.Fatalf("decodeOwner(%q) accepted %+v", b, p)
		}
		if !ok && (p.Node != "" || p.Chain != nil) {
			t.Fatalf("decodeOwner(%q) refused but returned %+v", b, p)
		}
	})
}

// A task the dead process had not routed yet (it waited for capacity)
// is routed by its adopter, whatever the recovery policy.
func TestAdoptRoutesQueuedTask(t *testing.T) {
	st, _ := memstore.New(nil)
	ttl := adoptTTL
	a, sa := newMortal(t, st, ttl, nil)
	c := newProc(t, st, ttl, &router.Options{Recovery: router.RecoverFail})
	started := make(chan struct{}, 1)
	x := card("agent:a", skill("skill:x"))
	x.Limits = &protocol.Limits{MaxConcurrency: 1}
	a.register(x, func(ctx context.Context, tk *router.Task) (*router.Result, error) {
		started <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	h1 := a.submit(a.request("skill:x"))
	<-started
	h2 := a.submit(a.request("skill:x")) // waits for agent:a's slot
	a.kill(sa)
	c.register(card("agent:c", skill("skill:x")), func(ctx context.Context, tk *router.Task) (*router.Result, error) {
		return summary("c"), nil
	})
	if end := terminalOf(t, st, h1.TaskID()); !errors.Is(outcomeOf(end).Err, protocol.CodeInterrupted) {
		t.Fatalf("the running task ended with %s, want INTERRUPTED (router.RecoverFail)", end.Type)
	}
	if end := terminalOf(t, st, h2.TaskID()); end.Type != protocol.TypeTaskResult || end.From.AgentID != "agent:c" || end.Attempt != 1 {
		t.Fatalf("the queued task ended with %s from %s attempt %d, want c's result of attempt 1", end.Type, end.From.AgentID, end.Attempt)
	}
	checkTerminals(t, st)
}

// adoptTTL is the heartbeat TTL of the adoption tests: long enough that
// a live process's agents stay online on a loaded machine (under -race),
// short enough that a dead one is found soon.
const adoptTTL = time.Second

// Beat and Beats make the process's heartbeats beats (store.Presence)
// when the store has them; once killed, its beats are lost too.
func (s *mortal) Beat(ctx context.Context, key string, data []byte) (time.Time, store.Beat, error) {
	if s.dead.Load() {
		return time.Time{}, store.Beat{}, errDead
	}
	return store.PresenceOf(s.Store).Beat(ctx, key, data)
}

func (s *mortal) Beats(ctx context.Context, prefix string) iter.Seq2[store.Beat, error] {
	if s.dead.Load() {
		return func(yield func(store.Beat, error) bool) { yield(store.Beat{}, errDead) }
	}
	return store.PresenceOf(s.Store).Beats(ctx, prefix)
}
