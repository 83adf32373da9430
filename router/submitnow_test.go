package router

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// newCountedEnv is newEnv over a memstore whose appends are counted,
// AppendIfNew's (store.Conditional) included.
func newCountedEnv(t *testing.T, opts *Options) (*env, *countingStore) {
	t.Helper()
	st, err := memstore.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	counted, cs := counting(st)
	return newEnvOn(t, counted, opts), cs
}

// events returns the task's events, in order.
func (e *env) events(taskID string) []store.Event {
	e.t.Helper()
	var out []store.Event
	for ev, err := range e.st.Read(context.Background(), store.Query{TaskID: taskID}) {
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// ranOnce asserts that the handler ran once (calls) and that the log
// holds one task: one request, decision, accept and result, no stray.
func (e *env) ranOnce(calls *atomic.Int32) {
	e.t.Helper()
	if n := calls.Load(); n != 1 {
		e.t.Errorf("the handler ran %d times", n)
	}
	want := map[protocol.Type]int{protocol.TypeTaskRequest: 1, protocol.TypeRoutingDecision: 1, protocol.TypeTaskAccept: 1, protocol.TypeTaskResult: 1}
	if got := e.countTypes(); !maps.Equal(got, want) {
		e.t.Errorf("log %v, want %v", got, want)
	}
}

// countTypes counts the events of the whole log by type.
func (e *env) countTypes() map[protocol.Type]int {
	e.t.Helper()
	n := map[protocol.Type]int{}
	for ev, err := range e.st.Read(context.Background(), store.Query{TypePrefix: "task."}) {
		if err != nil {
			e.t.Fatal(err)
		}
		m, _ := ev.Message()
		n[m.Type]++
	}
	for ev, err := range e.st.Read(context.Background(), store.Query{TypePrefix: "routing."}) {
		if err != nil {
			e.t.Fatal(err)
		}
		m, _ := ev.Message()
		n[m.Type]++
	}
	return n
}

// TestTwoCommitsWhenDecidedAtSubmit: a task whose agent is local and free
// is stored in two appends — request, decision and accept in one batch,
// then its result, also when it carries an idempotency_key (the store's
// conditional append); one that must queue in three (docs/protocol.md
// §5.1).
func TestTwoCommitsWhenDecidedAtSubmit(t *testing.T) {
	e, cs := newCountedEnv(t, nil)
	release := make(chan struct{})
	busy := card("agent:busy", skill("skill:busy"))
	busy.Limits = &protocol.Limits{MaxConcurrency: 1}
	e.register(card("agent:a", skill("skill:r")), ok())

	before := cs.appends.Load()
	req := e.request("skill:r")
	if _, err := e.wait(e.submit(req)); err != nil {
		t.Fatal(err)
	}
	if n := cs.appends.Load() - before; n != 2 {
		t.Errorf("a task decided at Submit took %d appends, want 2", n)
	}
	if got := e.types(req.TaskID); !slices.Equal(got, []string{"task.request", "routing.decision", "task.accept", "task.result"}) {
		t.Fatalf("events %v", got)
	}
	if evs := e.events(req.TaskID); evs[1].Seq != evs[0].Seq+1 || evs[2].Seq != evs[0].Seq+2 || !evs[1].Time.Equal(evs[0].Time) || !evs[2].Time.Equal(evs[0].Time) {
		t.Errorf("request, decision and accept are not one batch: %d %v, %d %v, %d %v", evs[0].Seq, evs[0].Time, evs[1].Seq, evs[1].Time, evs[2].Seq, evs[2].Time)
	}

	// A task that queues behind the busy agent: its request alone, then
	// its decision and accept, then its result.
	started := make(chan struct{}, 1)
	e.register(busy, func(ctx context.Context, t *Task) (*Result, error) {
		started <- struct{}{}
		<-release
		return summary("busy"), nil
	})
	first := e.submit(e.request("skill:busy"))
	<-started
	before = cs.appends.Load()
	queued := e.submit(e.request("skill:busy"))
	if n := cs.appends.Load() - before; n != 1 {
		t.Errorf("a task that must queue stored %d appends at Submit, want 1 (its request)", n)
	}
	close(release)
	for _, h := range []*Handle{first, queued} {
		if _, err := e.wait(h); err != nil {
			t.Fatal(err)
		}
	}
	if n := cs.appends.Load() - before; n != 4 { // first's result, and queued's three
		t.Errorf("a queued task and another's end took %d appends, want 4", n)
	}

	// A request with an idempotency key: two as well.
	keyed := runKeyed(t, e, cs, 2)
	checkOneBatch(t, e, keyed.TaskID)
}

// runKeyed runs a request of skill:r with the idempotency key "k-1" and
// checks that it took want appends of cs.
func runKeyed(t *testing.T, e *env, cs *countingStore, want int64) *protocol.Message {
	t.Helper()
	before := cs.appends.Load()
	keyed := e.request("skill:r")
	keyed.IdempotencyKey = "k-1"
	if _, err := e.wait(e.submit(keyed)); err != nil {
		t.Fatal(err)
	}
	if n := cs.appends.Load() - before; n != want {
		t.Errorf("a keyed task took %d appends, want %d", n, want)
	}
	return keyed
}

// checkOneBatch fails t unless the task's events are its request,
// decision and accept stored as one batch, then its result.
func checkOneBatch(t *testing.T, e *env, taskID string) {
	t.Helper()
	if got := e.types(taskID); !slices.Equal(got, []string{"task.request", "routing.decision", "task.accept", "task.result"}) {
		t.Fatalf("events %v", got)
	}
	if evs := e.events(taskID); evs[1].Seq != evs[0].Seq+1 || evs[2].Seq != evs[0].Seq+2 || !evs[1].Time.Equal(evs[0].Time) || !evs[2].Time.Equal(evs[0].Time) {
		t.Errorf("request, decision and accept are not one batch: %d %v, %d %v, %d %v", evs[0].Seq, evs[0].Time, evs[1].Seq, evs[1].Time, evs[2].Seq, evs[2].Time)
	}
}

// TestKeyedTwoCommitsBoltstore: on the durable store a keyed task is two
// commits too.
func TestKeyedTwoCommitsBoltstore(t *testing.T) {
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "events.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	counted, cs := counting(st)
	e := newEnvOn(t, counted, nil)
	e.register(card("agent:a", skill("skill:r")), ok())
	for i := range 3 {
		before := cs.appends.Load()
		req := e.request("skill:r")
		req.IdempotencyKey = fmt.Sprint("order-", i)
		if _, err := e.wait(e.submit(req)); err != nil {
			t.Fatal(err)
		}
		if n := cs.appends.Load() - before; n != 2 {
			t.Errorf("a keyed task took %d appends, want 2", n)
		}
		checkOneBatch(t, e, req.TaskID)
	}
}

// TestKeyedThreeCommits: a keyed request takes the usual way — its
// request alone, then its decision and accept, then its result — when
// its batch could not be dropped without a trace: on a store without
// store.Conditional, with an Observer (told of the attempt before the
// batch), and with Budget.MaxTasks (which counts the task while it is
// decided). A redelivery by key then runs nothing again either.
func TestKeyedThreeCommits(t *testing.T) {
	for _, tc := range []struct {
		name string
		cond bool
		opts *Options
	}{
		{"no Conditional", false, nil},
		{"Observer", true, &Options{Observer: &stepLog{}}},
		{"MaxTasks", true, &Options{Budget: Budget{MaxTasks: 5}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := memstore.New(nil)
			if err != nil {
				t.Fatal(err)
			}
			var counted store.Store
			cs := &countingStore{Store: st}
			counted = cs
			if tc.cond {
				counted, cs = counting(st)
			}
			e := newEnvOn(t, counted, tc.opts)
			var calls atomic.Int32
			e.register(card("agent:a", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
				calls.Add(1)
				return summary("once"), nil
			})
			keyed := runKeyed(t, e, cs, 3)
			dup := e.request("skill:r")
			dup.RunID, dup.IdempotencyKey = keyed.RunID, keyed.IdempotencyKey
			if out, err := e.wait(e.submit(dup)); err != nil || out.TaskID != keyed.TaskID {
				t.Fatalf("keyed redelivery: %+v %v", out, err)
			}
			e.ranOnce(&calls)
			if log, ok := tc.opts.observer().(*stepLog); ok {
				if got := strings.Count(log.all(), "start "); got != 1 {
					t.Errorf("the Observer was told of %d attempts, want 1:\n%s", got, log.all())
				}
			}
		})
	}
}

// observer returns o's Observer, nil for nil options.
func (o *Options) observer() Observer {
	if o == nil {
		return nil
	}
	return o.Observer
}

// TestKeyedSubmitNowDedup: keyed requests decided at Submit, through the
// store's conditional append — redeliveries by (run_id,
// idempotency_key) under new ids and task ids, concurrent with the first
// delivery, while it runs and after its end — all get the first stored
// task's handle; the handler runs once, and the log holds one request,
// decision, accept and result: a dropped batch leaves no stray decision
// or accept (docs/protocol.md §5.1, §5.2).
func TestKeyedSubmitNowDedup(t *testing.T) {
	for _, backend := range []string{"memstore", "boltstore"} {
		t.Run(backend, func(t *testing.T) {
			var st store.Store
			var err error
			if backend == "memstore" {
				st, err = memstore.New(nil)
			} else {
				st, err = boltstore.Open(filepath.Join(t.TempDir(), "events.db"), &boltstore.Options{NoSync: true})
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			counted, cs := counting(st)
			e := newEnvOn(t, counted, nil)
			var calls atomic.Int32
			release := make(chan struct{})
			e.register(card("agent:a", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
				calls.Add(1)
				<-release
				return summary("once"), nil
			})
			run := e.r.ids.RunID()
			keyed := func() *protocol.Message {
				m := e.request("skill:r")
				m.RunID, m.IdempotencyKey = run, "charge-42"
				return m
			}
			before := cs.appends.Load()
			var wg sync.WaitGroup
			handles := make([]*Handle, 8)
			errs := make([]error, 8)
			start := make(chan struct{})
			for i := range handles {
				req := keyed()
				wg.Go(func() {
					<-start
					handles[i], errs[i] = e.r.Submit(context.Background(), req)
				})
			}
			close(start)
			wg.Wait()
			var first string
			for i, h := range handles {
				if errs[i] != nil {
					t.Fatalf("delivery %d: %v", i, errs[i])
				}
				if first == "" {
					first = h.TaskID()
				}
				if h.TaskID() != first {
					t.Fatalf("deliveries follow tasks %s and %s", first, h.TaskID())
				}
			}
			// While it runs, and after its end: the same task.
			running := e.submit(keyed())
			if running.TaskID() != first {
				t.Fatalf("redelivery while running follows %s, not %s", running.TaskID(), first)
			}
			close(release)
			for i, h := range append(handles, running) {
				if out, err := e.wait(h); err != nil || out.TaskID != first {
					t.Fatalf("delivery %d: %+v %v", i, out, err)
				}
			}
			if out, err := e.wait(e.submit(keyed())); err != nil || out.TaskID != first || out.Type != protocol.TypeTaskResult {
				t.Fatalf("redelivery after the end: %+v %v", out, err)
			}
			e.ranOnce(&calls)
			checkOneBatch(t, e, first)
			// The stored task's two appends, and one call, which stored
			// nothing, for each redelivery: all were decided at Submit.
			if n, want := cs.appends.Load()-before, 2+int64(len(handles)-1)+2; n != want {
				t.Errorf("%d appends for one task and %d redeliveries, want %d", n, len(handles)+1, want)
			}
			if a, _ := e.reg.Get("agent:a"); a.InFlight() != 0 {
				t.Errorf("the agent holds %d slots", a.InFlight())
			}
		})
	}
}

// TestSubmitNowDedup: on the batched path a redelivery — after the end,
// while running, under another task id, or concurrent with the first
// delivery — runs nothing again and stores no second decision or accept
// (docs/protocol.md §5.2).
func TestSubmitNowDedup(t *testing.T) {
	e, _ := newCountedEnv(t, nil)
	var calls atomic.Int32
	release := make(chan struct{})
	e.register(card("agent:a", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
		calls.Add(1)
		<-release
		return summary("once"), nil
	})
	req := e.request("skill:r")
	if _, err := protocol.Encode(req); err != nil {
		t.Fatal(err)
	}
	// Concurrent deliveries: the same request, and the same id under
	// other task ids.
	var wg sync.WaitGroup
	handles := make([]*Handle, 8)
	errs := make([]error, 8)
	for i := range handles {
		again, err := protocol.Decode(req.Raw())
		if err != nil {
			t.Fatal(err)
		}
		if i%2 == 1 {
			again.TaskID = e.r.ids.TaskID()
			again.Reset()
		}
		wg.Go(func() { handles[i], errs[i] = e.r.Submit(context.Background(), again) })
	}
	wg.Wait()
	// The task is that of whichever delivery was stored first.
	ev, err := e.st.Get(context.Background(), req.ID)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := ev.Message()
	if err != nil {
		t.Fatal(err)
	}
	// A redelivery while it runs gets the running task.
	again, _ := protocol.Decode(req.Raw())
	running := e.submit(again)
	if running.TaskID() != stored.TaskID {
		t.Fatalf("redelivery while running follows %s, not %s", running.TaskID(), stored.TaskID)
	}
	close(release)
	for i, h := range handles {
		if errs[i] != nil {
			t.Fatalf("delivery %d: %v", i, errs[i])
		}
		if out, err := e.wait(h); err != nil || out.TaskID != stored.TaskID {
			t.Fatalf("delivery %d: %+v %v", i, out, err)
		}
	}
	if _, err := e.wait(running); err != nil {
		t.Fatal(err)
	}
	// After the end: the stored outcome.
	again, _ = protocol.Decode(req.Raw())
	if out, err := e.wait(e.submit(again)); err != nil || out.Type != protocol.TypeTaskResult {
		t.Fatalf("redelivery after the end: %+v %v", out, err)
	}
	e.ranOnce(&calls)

	// The same run_id and idempotency_key under a new id and task id.
	keyed := e.request("skill:r")
	keyed.IdempotencyKey = "charge-42"
	if _, err := e.wait(e.submit(keyed)); err != nil {
		t.Fatal(err)
	}
	dup := e.request("skill:r")
	dup.RunID, dup.IdempotencyKey = keyed.RunID, keyed.IdempotencyKey
	if out, err := e.wait(e.submit(dup)); err != nil || out.TaskID != keyed.TaskID {
		t.Fatalf("keyed redelivery: %+v %v", out, err)
	}
	if got := e.types(dup.TaskID); len(got) != 0 {
		t.Errorf("the keyed redelivery stored %v", got)
	}
}

// TestSubmitNowBudget: Budget.MaxTasks holds when the tasks of a run are
// decided at Submit concurrently; a refused task stores no decision.
func TestSubmitNowBudget(t *testing.T) {
	e := newEnv(t, &Options{Budget: Budget{MaxTasks: 3}})
	release := make(chan struct{})
	e.register(card("agent:a", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
		<-release
		return summary("ok"), nil
	})
	run := e.request("skill:r").RunID
	var wg sync.WaitGroup
	handles := make([]*Handle, 8)
	for i := range handles {
		req := e.request("skill:r")
		req.RunID = run
		wg.Go(func() { handles[i] = e.submit(req) })
	}
	wg.Wait()
	close(release)
	var done, refused int
	for _, h := range handles {
		_, err := e.wait(h)
		switch {
		case err == nil:
			done++
		case errors.Is(err, protocol.CodeBudget):
			refused++
			if got := e.types(h.TaskID()); !slices.Equal(got, []string{"task.request", "task.error"}) {
				t.Errorf("refused task %v", got)
			}
		default:
			t.Fatal(err)
		}
	}
	if done != 3 || refused != 5 {
		t.Errorf("%d done, %d refused; want 3 and 5", done, refused)
	}
}

// TestSubmitNowCancel: a task cancelled as soon as Submit returns ends
// with exactly one task.cancel after its accept.
func TestSubmitNowCancel(t *testing.T) {
	e := newEnv(t, nil)
	e.register(card("agent:a", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	for range 20 {
		h := e.submit(e.request("skill:r"))
		h.Cancel("changed my mind")
		if _, err := e.wait(h); !errors.Is(err, protocol.CodeCancelled) {
			t.Fatalf("outcome %v", err)
		}
		if got := e.types(h.TaskID()); !slices.Equal(got, []string{"task.request", "routing.decision", "task.accept", "task.cancel"}) {
			t.Fatalf("events %v", got)
		}
	}
}

// TestSubmitNowCrash: a process dies after the batch of request, decision
// and accept is committed and before the result. The log then holds a task
// accepted and not ended: Recover ends it (RecoverFail) or routes it
// again (RecoverRedispatch), and a redelivery gets that, as for a task
// stored in three commits.
func TestSubmitNowCrash(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.db")
	st, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e := newEnvOn(t, st, nil)
	release := make(chan struct{})
	started := make(chan struct{})
	e.register(card("agent:a", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
		close(started)
		<-release
		return summary("first process"), nil
	})
	req := e.request("skill:r")
	h := e.submit(req)
	<-started
	// The "crash": what a kill -9 leaves now is the file as it is, the
	// batch committed and nothing after it.
	crashed := []string{filepath.Join(dir, "fail.db"), filepath.Join(dir, "redispatch.db")}
	for _, p := range crashed {
		copyFile(t, path, p)
	}
	close(release)
	if _, err := e.wait(h); err != nil {
		t.Fatal(err)
	}

	for i, mode := range []Recovery{RecoverFail, RecoverRedispatch} {
		st2, err := boltstore.Open(crashed[i], nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st2.Close() })
		e2 := newEnvOn(t, st2, &Options{Recovery: mode})
		if got := e2.types(req.TaskID); !slices.Equal(got, []string{"task.request", "routing.decision", "task.accept"}) {
			t.Fatalf("after the crash the log holds %v", got)
		}
		e2.register(card("agent:a", skill("skill:r")), ok("second process"))
		if n, err := e2.r.Recover(context.Background()); err != nil || n != 1 {
			t.Fatalf("%v: Recover = %d, %v", mode, n, err)
		}
		again, err := protocol.Decode(req.Raw())
		if err != nil {
			t.Fatal(err)
		}
		out, err := e2.wait(e2.submit(again))
		switch mode {
		case RecoverFail:
			if !errors.Is(err, protocol.CodeInterrupted) {
				t.Fatalf("RecoverFail: %+v %v", out, err)
			}
		case RecoverRedispatch:
			if err != nil || out.Message.Attempt != 2 {
				t.Fatalf("RecoverRedispatch: %+v %v", out, err)
			}
		}
		if n, _ := e2.r.Recover(context.Background()); n != 0 {
			t.Fatalf("%v: second Recover found %d", mode, n)
		}
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// failingStore refuses the appends of task.request batches while fail
// is set.
type failingStore struct {
	store.Store
	fail atomic.Bool
}

func (f *failingStore) Append(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	if f.fail.Load() && len(msgs) > 0 && msgs[0].Type == protocol.TypeTaskRequest {
		return nil, errors.New("disk full")
	}
	return f.Store.Append(ctx, msgs...)
}

// TestSubmitNowStoreFails: when the batch is refused nothing of the task
// is stored and nothing of it is held: Submit fails, the agent's slot and
// the run's budget are given back, and the request can be submitted again.
func TestSubmitNowStoreFails(t *testing.T) {
	st, err := memstore.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	fs := &failingStore{Store: st}
	fs.fail.Store(true)
	e := newEnvOn(t, fs, &Options{Budget: Budget{MaxTasks: 1}})
	e.register(card("agent:a", skill("skill:r")), ok())
	req := e.request("skill:r")
	if _, err := e.r.Submit(context.Background(), req); err == nil {
		t.Fatal("Submit stored nothing, yet succeeded")
	}
	if a, _ := e.reg.Get("agent:a"); a.InFlight() != 0 {
		t.Errorf("the agent holds %d slots", a.InFlight())
	}
	if got := e.types(req.TaskID); len(got) != 0 {
		t.Errorf("stored %v", got)
	}
	fs.fail.Store(false)
	if _, err := e.wait(e.submit(req)); err != nil {
		t.Fatalf("the same request again: %v", err)
	}
}
