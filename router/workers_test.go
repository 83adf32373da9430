package router

import (
	"sync"
	"testing"
	"time"
)

// Sequential tasks reuse one worker; concurrent ones get one each; close
// ends idle and busy workers and waits for them.
func TestWorkersReuseAndClose(t *testing.T) {
	p := newWorkers(time.Hour, func(f func()) { f() })
	for range 100 {
		done := make(chan struct{})
		p.run(func() { close(done) })
		<-done
		waitIdle(t, p, 1)
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
	go func() { time.Sleep(10 * time.Millisecond); close(release) }()
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
}

// Workers idle for a whole period end; the one used more recently stays
// until its own period is over.
func TestWorkersReap(t *testing.T) {
	p := newWorkers(20*time.Millisecond, func(f func()) { f() })
	defer p.close()
	release := make(chan struct{})
	for range 4 {
		p.run(func() { <-release })
	}
	close(release)
	waitIdle(t, p, 4)
	deadline := time.Now().Add(5 * time.Second)
	for p.n.Load() > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d idle workers still alive after 5 s", p.n.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.idle) != 0 || p.reaper != nil {
		t.Fatalf("after reaping: %d idle, reaper armed %v", len(p.idle), p.reaper != nil)
	}
}

func waitIdle(t *testing.T, p *workers[func()], n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.mu.Lock()
		k := len(p.idle)
		p.mu.Unlock()
		if k == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d idle workers, want %d", k, n)
		}
		time.Sleep(time.Millisecond)
	}
}
