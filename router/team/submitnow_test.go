package team

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// batches records, per task, the types of the events of each append that
// stored some of them: the commits a task costs a process appending
// through it.
type batches struct {
	store.Store
	mu  sync.Mutex
	got map[string][][]string
}

func (b *batches) Append(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	res, err := b.Store.Append(ctx, msgs...)
	if err != nil {
		return res, err
	}
	b.record(msgs)
	return res, nil
}

// AppendIfNew records a batch only when it is stored: the wrapped store
// must be a store.Conditional (memstore).
func (b *batches) AppendIfNew(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	res, err := b.Store.(store.Conditional).AppendIfNew(ctx, msgs...)
	if err != nil || len(res) == 0 || !res[0].Stored() {
		return res, err
	}
	b.record(msgs)
	return res, nil
}

func (b *batches) record(msgs []*protocol.Message) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.got == nil {
		b.got = map[string][][]string{}
	}
	seen := map[string]int{}
	for _, m := range msgs {
		if m.TaskID == "" {
			continue
		}
		i, ok := seen[m.TaskID]
		if !ok {
			i = len(b.got[m.TaskID])
			seen[m.TaskID] = i
			b.got[m.TaskID] = append(b.got[m.TaskID], nil)
		}
		b.got[m.TaskID][i] = append(b.got[m.TaskID][i], string(m.Type))
	}
}

// Unwrap gives the wrapped store's upgrades (presence, clock) through.
func (b *batches) Unwrap() store.Store { return b.Store }

func (b *batches) of(task string) [][]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.got[task])
}

var (
	submitBatch = []string{"task.request", string(TypeOwner), "routing.decision", "task.accept"}
	resultBatch = []string{"task.result"}
)

func equalBatches(a, b [][]string) bool {
	return slices.EqualFunc(a, b, func(x, y []string) bool { return slices.Equal(x, y) })
}

// A task submitted to the process hosting its agent, which has room, is
// stored in two commits there (docs/protocol.md §5.1): its request, owner
// event, routing.decision and task.accept in one batch, then its end. One
// routed to an agent of another process takes three (request and owner;
// decision, accept and dispatch; end), and so does every task of a team
// that counts Budget.MaxTasks.
func TestLocalTaskTwoCommits(t *testing.T) {
	st, _ := memstore.New(nil)
	rec := &batches{Store: st}
	a := newProc(t, rec, adoptTTL, nil)
	b := newProc(t, st, adoptTTL, nil)
	a.register(card("agent:a", skill("skill:x")), func(ctx context.Context, tk *router.Task) (*router.Result, error) {
		return summary("from a"), nil
	})
	b.register(card("agent:b", skill("skill:y")), func(ctx context.Context, tk *router.Task) (*router.Result, error) {
		return summary("from b"), nil
	})
	waitFor(t, "a sees agent:b", func() bool { return a.handles("agent:b") }, a)

	local := a.submit(a.request("skill:x"))
	if out, err := a.wait(local); err != nil || out.Message.From.AgentID != "agent:a" {
		t.Fatalf("local task: %+v, %v", out, err)
	}
	if got, want := rec.of(local.TaskID()), [][]string{submitBatch, resultBatch}; !equalBatches(got, want) {
		t.Fatalf("local task stored as %q, want %q", got, want)
	}

	remote := a.submit(a.request("skill:y"))
	if out, err := a.wait(remote); err != nil || out.Message.From.AgentID != "agent:b" {
		t.Fatalf("remote task: %+v, %v", out, err)
	}
	want := [][]string{{"task.request", string(TypeOwner)}, {"routing.decision", "task.accept", string(TypeDispatch)}, resultBatch}
	if got := rec.of(remote.TaskID()); !equalBatches(got, want) {
		t.Fatalf("remote task stored as %q, want %q", got, want)
	}
	checkTerminals(t, st)
}

// A keyed task on a local agent is two commits as well, through the
// store's conditional append; a redelivery by (run_id, idempotency_key)
// under a new id and task id, in the same process or another (which
// takes the usual way, the agent not being its own), follows it and
// stores nothing: no request, owner event, decision or accept.
func TestLocalKeyedTaskTwoCommits(t *testing.T) {
	st, _ := memstore.New(nil)
	rec := &batches{Store: st}
	a := newProc(t, rec, adoptTTL, nil)
	b := newProc(t, rec, adoptTTL, nil)
	var calls sync.WaitGroup
	release := make(chan struct{})
	var releaseOnce sync.Once
	free := func() { releaseOnce.Do(func() { close(release) }) }
	t.Cleanup(free) // before the processes leave, should the test fail
	a.register(card("agent:a", skill("skill:x")), func(ctx context.Context, tk *router.Task) (*router.Result, error) {
		calls.Add(1)
		defer calls.Done()
		<-release
		return summary("from a"), nil
	})
	waitFor(t, "b sees agent:a", func() bool { return b.handles("agent:a") }, b)
	first := a.request("skill:x")
	first.IdempotencyKey = "charge-42"
	h := a.submit(first)
	var dups []*router.Handle
	for _, p := range []*proc{a, b} {
		dup := p.request("skill:x")
		dup.RunID, dup.ThreadID, dup.IdempotencyKey = first.RunID, first.ThreadID, first.IdempotencyKey
		d := p.submit(dup)
		if d.TaskID() != first.TaskID {
			t.Fatalf("keyed redelivery follows %s, want %s", d.TaskID(), first.TaskID)
		}
		if got := rec.of(dup.TaskID); len(got) != 0 {
			t.Fatalf("the keyed redelivery stored %q", got)
		}
		if got := a.types(dup.TaskID); len(got) != 0 {
			t.Fatalf("the log holds %q of the keyed redelivery", got)
		}
		dups = append(dups, d)
	}
	free()
	for _, w := range append(dups, h) {
		if out, err := a.wait(w); err != nil || out.Message.From.AgentID != "agent:a" {
			t.Fatalf("outcome %+v, %v; want a's result", out, err)
		}
	}
	calls.Wait()
	if got, want := rec.of(first.TaskID), [][]string{submitBatch, resultBatch}; !equalBatches(got, want) {
		t.Fatalf("keyed task stored as %q, want %q", got, want)
	}
	want := append(slices.Clone(submitBatch), "task.result")
	if got := a.types(first.TaskID); !slices.Equal(got, want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	checkTerminals(t, st)
}

func TestLocalTaskTeamBudgetTakesThreeCommits(t *testing.T) {
	st, _ := memstore.New(nil)
	rec := &batches{Store: st}
	a := newProc(t, rec, adoptTTL, &router.Options{Budget: router.Budget{MaxTasks: 1}})
	a.register(card("agent:a", skill("skill:x")), func(ctx context.Context, tk *router.Task) (*router.Result, error) {
		return summary("from a"), nil
	})
	first := a.request("skill:x")
	h := a.submit(first)
	if _, err := a.wait(h); err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"task.request", string(TypeOwner)}, {"routing.decision", "task.accept"}, resultBatch}
	if got := rec.of(h.TaskID()); !equalBatches(got, want) {
		t.Fatalf("task stored as %q, want %q", got, want)
	}
	// The run's second task is past the budget, as in one process.
	second := a.request("skill:x")
	second.RunID, second.ThreadID = first.RunID, first.ThreadID
	second.Reset()
	if out, err := a.wait(a.submit(second)); err == nil || out.OK() {
		t.Fatalf("second task of a run with MaxTasks 1: %+v, %v; want BUDGET", out, err)
	}
	checkTerminals(t, st)
}

// A redelivery of a task stored by the batch, while it runs, gets the
// running task in the process running it and follows its end in another;
// the task ends once.
func TestLocalTaskRedeliveredWhileRunning(t *testing.T) {
	st, _ := memstore.New(nil)
	rec := &batches{Store: st}
	a := newProc(t, rec, adoptTTL, nil)
	b := newProc(t, st, adoptTTL, nil)
	started, release := make(chan struct{}), make(chan struct{})
	var runs sync.WaitGroup
	a.register(card("agent:a", skill("skill:x")), func(ctx context.Context, tk *router.Task) (*router.Result, error) {
		runs.Add(1)
		defer runs.Done()
		close(started) // a second run panics the test
		<-release
		return summary("from a"), nil
	})
	req := a.request("skill:x")
	h := a.submit(req)
	<-started
	if got := rec.of(h.TaskID()); !equalBatches(got, [][]string{submitBatch}) {
		t.Fatalf("running task stored as %q, want %q", got, [][]string{submitBatch})
	}
	again := a.submit(req)
	if again.TaskID() != h.TaskID() {
		t.Fatalf("redelivery in a: task %s, want %s", again.TaskID(), h.TaskID())
	}
	inB := b.submit(req)
	close(release)
	for _, w := range []*router.Handle{h, again, inB} {
		out, err := a.wait(w)
		if err != nil || out.Message.From.AgentID != "agent:a" || out.Message.Attempt != 1 {
			t.Fatalf("outcome %+v, %v; want a's result of attempt 1", out, err)
		}
	}
	runs.Wait()
	if got := rec.of(h.TaskID()); !equalBatches(got, [][]string{submitBatch, resultBatch}) {
		t.Fatalf("task stored as %q", got)
	}
	checkTerminals(t, st)
}

// A task stored by the batch and cancelled as soon as Submit returns ends
// with exactly one task.cancel after its accept.
func TestLocalTaskCancelledAtOnce(t *testing.T) {
	st, _ := memstore.New(nil)
	a := newProc(t, st, adoptTTL, nil)
	a.register(card("agent:a", skill("skill:x")), func(ctx context.Context, tk *router.Task) (*router.Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	for range 20 {
		h := a.submit(a.request("skill:x"))
		h.Cancel("changed my mind")
		if _, err := a.wait(h); !errors.Is(err, protocol.CodeCancelled) {
			t.Fatalf("outcome %v", err)
		}
		want := append(slices.Clone(submitBatch), "task.cancel")
		if got := a.types(h.TaskID()); !slices.Equal(got, want) {
			t.Fatalf("events %q, want %q", got, want)
		}
	}
	checkTerminals(t, st)
}
