package router

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Sequential tasks reuse one worker; concurrent ones get one each; close
// ends idle and busy workers and waits for them.
func TestWorkersReuseAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newWorkers(time.Hour, func(f func()) { f() })
		for range 100 {
			done := make(chan struct{})
			p.run(func() { close(done) })
			<-done
			synctest.Wait()
			assertIdle(t, p, 1)
		}
		if n := p.n.Load(); n != 1 {
			t.Fatalf("%d workers for sequential tasks, want 1", n)
		}
		release := make(chan struct{})
		var started sync.WaitGroup
		started.Add(3)
		for range 3 {
			p.run(func() { started.Done(); <-release })
		}
		started.Wait()
		if n := p.n.Load(); n != 3 {
			t.Fatalf("%d workers for 3 concurrent tasks, want 3", n)
		}
		// Released once close is waiting for the busy workers.
		time.AfterFunc(time.Millisecond, func() { close(release) })
		p.close() // waits for the busy ones
		if n := p.n.Load(); n != 0 {
			t.Fatalf("%d workers alive after close", n)
		}
		ran := make(chan struct{})
		p.run(func() { close(ran) }) // after close: still runs, keeps no goroutine
		<-ran
		p.close()
		if n := p.n.Load(); n != 0 {
			t.Fatalf("%d workers alive after a task run past close", n)
		}
	})
}

// Workers idle for a whole period end; the one used more recently stays
// until its own period is over.
func TestWorkersReap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every = 20 * time.Millisecond
		p := newWorkers(every, func(f func()) { f() })
		defer p.close()
		release := make(chan struct{})
		for range 4 {
			p.run(func() { <-release })
		}
		close(release)
		synctest.Wait()
		assertIdle(t, p, 4)
		// The first reap (one period) ends no one: none has been idle for
		// a whole period since it ran.
		time.Sleep(every + every/4)
		synctest.Wait()
		if n := p.n.Load(); n != 4 {
			t.Fatalf("%d workers after one period, want 4", n)
		}
		p.run(func() {}) // one worker runs again, then idles from now
		synctest.Wait()
		// The second reap ends the three idle since before the first; the
		// one used since stays until the third.
		time.Sleep(every)
		synctest.Wait()
		if n := p.n.Load(); n != 1 {
			t.Fatalf("%d workers after two periods, want 1 (the one used since)", n)
		}
		time.Sleep(every)
		synctest.Wait()
		if n := p.n.Load(); n != 0 {
			t.Fatalf("%d idle workers still alive", n)
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if len(p.idle) != 0 || p.reaper != nil {
			t.Fatalf("after reaping: %d idle, reaper armed %v", len(p.idle), p.reaper != nil)
		}
	})
}

func assertIdle(t *testing.T, p *workers[func()], n int) {
	t.Helper()
	p.mu.Lock()
	k := len(p.idle)
	p.mu.Unlock()
	if k != n {
		t.Fatalf("%d idle workers, want %d", k, n)
	}
}
