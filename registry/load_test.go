package registry_test

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/clutchprotocol/clutch/registry"
)

// TestTryAcquireLimit: many goroutines racing for an agent with
// max_concurrency n never have more than n tasks in flight.
func TestTryAcquireLimit(t *testing.T) {
	for _, limit := range []int{1, 3} {
		t.Run(fmt.Sprint("limit", limit), func(t *testing.T) {
			st := newStore(t)
			r := open(t, st, newClock(), nil)
			mustRegister(t, r, limited(card("agent:a", "skill:x"), limit), true)
			a := mustGet(t, r, "agent:a")

			var cur, high, acquired atomic.Int64
			var wg sync.WaitGroup
			for range 16 {
				wg.Go(func() {
					for range 300 {
						if !r.TryAcquire(a) {
							runtime.Gosched()
							continue
						}
						n := cur.Add(1)
						for {
							h := high.Load()
							if n <= h || high.CompareAndSwap(h, n) {
								break
							}
						}
						acquired.Add(1)
						if got := a.InFlight(); got > limit {
							t.Errorf("InFlight %d > limit %d", got, limit)
						}
						runtime.Gosched()
						cur.Add(-1)
						r.Release(a, true)
					}
				})
			}
			wg.Wait()
			if h := high.Load(); h > int64(limit) || h < 1 {
				t.Errorf("high-water mark %d, limit %d", h, limit)
			}
			if acquired.Load() == 0 {
				t.Error("no goroutine ever acquired")
			}
			if got := a.InFlight(); got != 0 {
				t.Errorf("InFlight %d after every Release", got)
			}
		})
	}
}

func TestTryAcquireSequence(t *testing.T) {
	st := newStore(t)
	r := open(t, st, newClock(), nil)
	mustRegister(t, r, limited(card("agent:a", "skill:x"), 2), false)
	a := mustGet(t, r, "agent:a")
	if a.MaxConcurrency() != 2 {
		t.Fatalf("MaxConcurrency %d", a.MaxConcurrency())
	}
	if !r.TryAcquire(a) || !r.TryAcquire(a) {
		t.Fatal("could not acquire up to the limit")
	}
	if r.TryAcquire(a) {
		t.Fatal("acquired past the limit")
	}
	r.Release(a, true)
	if !r.TryAcquire(a) {
		t.Fatal("could not acquire after a Release")
	}
	if a.InFlight() != 2 {
		t.Fatalf("InFlight %d, want 2", a.InFlight())
	}
}

// TestTryAcquireUnlimited: with no limit (0 or no limits at all), every
// goroutine gets a slot at once.
func TestTryAcquireUnlimited(t *testing.T) {
	st := newStore(t)
	r := open(t, st, newClock(), nil)
	mustRegister(t, r, limited(card("agent:zero", "skill:x"), 0), false)
	mustRegister(t, r, card("agent:none", "skill:x"), false)
	for _, id := range []string{"agent:zero", "agent:none"} {
		a := mustGet(t, r, id)
		if a.MaxConcurrency() != 0 {
			t.Fatalf("%s: MaxConcurrency %d", id, a.MaxConcurrency())
		}
		const n = 64
		var wg sync.WaitGroup
		var failed atomic.Int64
		for range n {
			wg.Go(func() {
				if !r.TryAcquire(a) {
					failed.Add(1)
				}
			})
		}
		wg.Wait()
		if failed.Load() != 0 || a.InFlight() != n {
			t.Errorf("%s: %d refused, InFlight %d; want 0 and %d", id, failed.Load(), a.InFlight(), n)
		}
	}
}

func TestReleaseWithoutAcquire(t *testing.T) {
	st := newStore(t)
	r := open(t, st, newClock(), nil)
	mustRegister(t, r, limited(card("agent:a", "skill:x"), 1), false)
	a := mustGet(t, r, "agent:a")
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Release without TryAcquire did not panic")
			}
		}()
		r.Release(a, true)
	}()
	if a.InFlight() != 0 {
		t.Errorf("InFlight %d after a refused Release", a.InFlight())
	}
	if !r.TryAcquire(a) || r.TryAcquire(a) {
		t.Error("the limit is off after a refused Release")
	}
	if a.SuccessRate() != 1 {
		t.Errorf("a refused Release counted an outcome: rate %v", a.SuccessRate())
	}
}

func TestSuccessRate(t *testing.T) {
	st := newStore(t)
	r := open(t, st, newClock(), &registry.Options{SuccessWindow: 4})
	mustRegister(t, r, card("agent:a", "skill:x"), false)
	a := mustGet(t, r, "agent:a")
	if got := a.SuccessRate(); got != 1 {
		t.Errorf("rate with no tasks %v, want 1", got)
	}
	// s f s s f s: the rate is over the last 4 outcomes only.
	for i, step := range []struct {
		ok   bool
		want float64
	}{
		{true, 1}, {false, 0.5}, {true, 2.0 / 3}, {true, 0.75},
		{false, 0.5},  // f s s f
		{true, 0.75},  // s s f s
		{false, 0.5},  // s f s f
		{false, 0.25}, // f s f f
	} {
		if !r.TryAcquire(a) {
			t.Fatal("TryAcquire failed with no limit")
		}
		r.Release(a, step.ok)
		if got := a.SuccessRate(); math.Abs(got-step.want) > 1e-9 {
			t.Errorf("after outcome %d: rate %v, want %v", i+1, got, step.want)
		}
	}
}

func TestSuccessRateWideWindow(t *testing.T) {
	for _, w := range []int{1, 63, 64} {
		st := newStore(t)
		r := open(t, st, newClock(), &registry.Options{SuccessWindow: w})
		mustRegister(t, r, card("agent:a", "skill:x"), false)
		a := mustGet(t, r, "agent:a")
		// 100 failures, then w-1 successes and one failure: the window
		// holds exactly those w.
		for i := range 100 + w {
			r.TryAcquire(a)
			r.Release(a, i >= 100 && i < 100+w-1)
		}
		want := float64(w-1) / float64(w)
		if got := a.SuccessRate(); math.Abs(got-want) > 1e-9 {
			t.Errorf("window %d: rate %v, want %v", w, got, want)
		}
	}
}

// TestCountersSurvive: load and success are the agent's, not its card's:
// they carry over an update, a re-registration and a remove + register,
// and a Release through an old *Agent counts for the current one.
func TestCountersSurvive(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	r := open(t, st, newClock(), nil)
	mustRegister(t, r, limited(card("agent:a", "skill:x"), 3), false)
	old := mustGet(t, r, "agent:a")
	r.TryAcquire(old)
	r.TryAcquire(old)
	r.Release(old, false) // 1 in flight, rate 0

	check := func(step string, inFlight int, rate float64) *registry.Agent {
		t.Helper()
		a := mustGet(t, r, "agent:a")
		if a.InFlight() != inFlight || a.SuccessRate() != rate {
			t.Errorf("%s: InFlight %d rate %v, want %d and %v", step, a.InFlight(), a.SuccessRate(), inFlight, rate)
		}
		return a
	}
	if err := r.Update(ctx, limited(card("agent:a", "skill:x", "skill:y"), 3)); err != nil {
		t.Fatal(err)
	}
	check("update", 1, 0)
	mustRegister(t, r, limited(card("agent:a", "skill:y"), 3), true)
	check("re-register", 1, 0)
	if err := r.Remove(ctx, "agent:a"); err != nil {
		t.Fatal(err)
	}
	mustRegister(t, r, limited(card("agent:a", "skill:y"), 3), false)
	a := check("remove and register", 1, 0)

	r.Release(old, true) // the task acquired through the first card ends
	check("release via old pointer", 0, 0.5)
	if a == old {
		t.Fatal("Get returned the same *Agent after the card changed")
	}
}

// TestUpdateChangesLimit: a new limit applies to the *Agent Get returns
// after the update, counting the tasks already in flight.
func TestUpdateChangesLimit(t *testing.T) {
	st := newStore(t)
	r := open(t, st, newClock(), nil)
	mustRegister(t, r, limited(card("agent:a", "skill:x"), 4), false)
	a := mustGet(t, r, "agent:a")
	for range 3 {
		r.TryAcquire(a)
	}
	if err := r.Update(context.Background(), limited(card("agent:a", "skill:x"), 2)); err != nil {
		t.Fatal(err)
	}
	a = mustGet(t, r, "agent:a")
	if r.TryAcquire(a) {
		t.Error("acquired with 3 in flight and a new limit of 2")
	}
	r.Release(a, true)
	r.Release(a, true)
	if !r.TryAcquire(a) {
		t.Error("could not acquire with 1 in flight and a limit of 2")
	}
}
