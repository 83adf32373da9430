package router

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"testing/synctest"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
)

// A task is cancelled while no handler runs it: waiting in the capacity
// queue, or waiting out the backoff before a retry. Its task.cancel must be
// stored and its handle resolved at once, not when the wait would have
// ended (there is no handler to notice the context).

// queued starts a router whose one agent has max_concurrency 1, a task h1
// running on it (blocked until b.release is closed) and a task h2 waiting
// in the capacity queue. It runs in a synctest bubble.
func queued(t *testing.T) (e *env, b *blocker, h1, h2 *Handle) {
	t.Helper()
	e = newEnv(t, &Options{QueueTimeout: time.Hour})
	c := card("agent:one", skill("skill:r"))
	c.Limits = &protocol.Limits{MaxConcurrency: 1}
	b = newBlocker()
	e.register(c, b.handler("one"))
	h1 = e.submit(e.request("skill:r"))
	<-b.started
	h2 = e.submit(e.request("skill:r"))
	synctest.Wait() // h2 waits for a slot
	if e.r.waiting.Load() != 1 {
		t.Fatalf("%d tasks waiting for a slot, want 1", e.r.waiting.Load())
	}
	return e, b, h1, h2
}

func TestCancelWhileQueued(t *testing.T) { synctest.Test(t, testCancelWhileQueued) }

func testCancelWhileQueued(t *testing.T) {
	e, b, h1, h2 := queued(t)
	h2.Cancel("no longer needed")
	out, err := e.wait(h2)
	if !errors.Is(err, protocol.CodeCancelled) || out.Type != protocol.TypeTaskCancel || out.Err.Message != "no longer needed" {
		t.Fatalf("queued task: %+v, %v", out, err)
	}
	if got := e.types(h2.TaskID()); got[len(got)-1] != string(protocol.TypeTaskCancel) {
		t.Fatalf("events of the queued task: %v", got)
	}
	close(b.release)
	if _, err := e.wait(h1); err != nil {
		t.Fatal(err)
	}
}

func TestCancelDuringBackoff(t *testing.T) {
	e := newEnv(t, &Options{MaxAttempts: 3, Backoff: func(int) time.Duration { return time.Hour }})
	failed := make(chan struct{}, 1)
	e.register(card("agent:a", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
		failed <- struct{}{}
		return nil, &protocol.ErrorPayload{Code: protocol.CodeRateLimited, Message: "try later", Retryable: true}
	})
	h := e.submit(e.request("skill:r"))
	<-failed
	h.Cancel("")
	done := make(chan struct{})
	var out *Outcome
	var err error
	go func() { out, err = e.wait(h); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a task cancelled during its backoff did not end")
	}
	if !errors.Is(err, protocol.CodeCancelled) || out.Type != protocol.TypeTaskCancel {
		t.Fatalf("%+v, %v", out, err)
	}
}

func TestCloseEndsQueuedTask(t *testing.T) { synctest.Test(t, testCloseEndsQueuedTask) }

func testCloseEndsQueuedTask(t *testing.T) {
	e, _, h1, h2 := queued(t)
	if err := e.r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, h := range []*Handle{h1, h2} {
		if out, err := e.wait(h); !errors.Is(err, protocol.CodeInterrupted) {
			t.Fatalf("%s after Close: %+v, %v", h.TaskID(), out, err)
		}
	}
}

// Idle workers exit after a while without tasks (not only at Close), and
// a task after that starts a new one.
func TestIdleWorkersExit(t *testing.T) { synctest.Test(t, testIdleWorkersExit) }

func testIdleWorkersExit(t *testing.T) {
	e := newEnv(t, nil)
	e.r.pool.every = 10 * time.Millisecond
	e.register(card("agent:a", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) { return summary("x"), nil })
	for round := range 2 {
		hs := []*Handle{e.submit(e.request("skill:r")), e.submit(e.request("skill:r"))}
		for _, h := range hs {
			if _, err := e.wait(h); err != nil {
				t.Fatal(err)
			}
		}
		// Three periods of the bubble's clock: a worker is reaped after
		// one to two whole idle periods.
		time.Sleep(3 * e.r.pool.every)
		synctest.Wait()
		if n := e.r.pool.n.Load(); n > 0 {
			t.Fatalf("round %d: %d workers still alive after three idle periods", round, n)
		}
	}
}

// Cancel flips the context first and stores the task.cancel second; the
// task's goroutine may return in between (it was waiting in the queue) and
// leave nothing to end the task. It must end anyway (Cancel's two steps
// are forced apart here).
func TestCancelRacingTheTaskGoroutine(t *testing.T) {
	synctest.Test(t, testCancelRacingTheTaskGoroutine)
}

func testCancelRacingTheTaskGoroutine(t *testing.T) {
	e, b, h1, h2 := queued(t)
	h2.ts.cancel(&cancelCause{"gone"}) // Cancel's first step only
	synctest.Wait()                    // the task's goroutine returns meanwhile
	h2.r.cancelled(h2.ts)              // its second step finds the task gone
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := h2.Wait(ctx)
	if out == nil || out.Type != protocol.TypeTaskCancel {
		t.Fatalf("the task never ended: %v; events %v", err, e.types(h2.TaskID()))
	}
	close(b.release)
	if _, err := e.wait(h1); err != nil {
		t.Fatal(err)
	}
}

// Cancels at random moments of a retry loop (handler fails, zero backoff):
// every task ends as cancelled, none hangs, and -race sees no data race on
// the attempt number.
func TestCancelDuringRetryLoopStress(t *testing.T) {
	e := newEnv(t, &Options{MaxAttempts: 1 << 30, Backoff: func(int) time.Duration { return 0 }})
	e.register(card("agent:a", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
		return nil, &protocol.ErrorPayload{Code: protocol.CodeRateLimited, Message: "try later", Retryable: true}
	})
	for i := range 200 {
		h := e.submit(e.request("skill:r"))
		for range i % 5 * 20 { // cancel after a varying number of retries
			runtime.Gosched()
		}
		h.Cancel("")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		out, err := h.Wait(ctx)
		cancel()
		if out == nil || out.Type != protocol.TypeTaskCancel {
			t.Fatalf("iteration %d: %+v, %v", i, out, err)
		}
	}
}
