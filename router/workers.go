package router

import (
	"sync"
	"sync/atomic"
	"time"
)

// workerIdle is about how long a worker goroutine waits for its next task
// before it exits (see workers).
const workerIdle = 2 * time.Second

// workers runs tasks on goroutines that live on for a while after their
// task: a task that runs on a worker whose stack has already grown does not
// pay for growing it again, the largest single cost of a short task.
//
// Each idle worker waits on a channel of its own, in a LIFO list: handing
// a task over is one send to one receiver, where a channel shared by every
// worker, selected on with a timer and a quit channel, would lock three
// channels per hand-over and be contended by every submitter. The most
// recently idle worker is handed the next
// task, so the ones at the bottom of the list are those idle longest; a
// single timer, armed while any worker is idle, ends those that have been
// idle for a whole period (idle to twice that).
type workers[T any] struct {
	fn     func(T) // what a worker does with a job
	mu     sync.Mutex
	idle   []*worker[T] // LIFO
	gen    uint64       // periods of the reaper so far
	reaper *time.Timer
	closed bool

	every time.Duration // workerIdle; tests shorten it
	wg    sync.WaitGroup
	n     atomic.Int32 // worker goroutines alive
}

type worker[T any] struct {
	ch  chan T // the next job; closed to end the worker
	gen uint64 // workers.gen when it went idle
}

// newWorkers returns a pool whose workers call fn with each job. Jobs are
// values, not closures: handing one over allocates nothing.
func newWorkers[T any](every time.Duration, fn func(T)) *workers[T] {
	return &workers[T]{every: every, fn: fn}
}

// run runs fn(job) on an idle worker, or on a new one when none is idle.
func (p *workers[T]) run(job T) {
	p.mu.Lock()
	if n := len(p.idle); n > 0 {
		w := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		w.ch <- job // buffered: never blocks
		return
	}
	closed := p.closed
	p.mu.Unlock()
	p.wg.Add(1)
	p.n.Add(1)
	if closed {
		// Close has ended the pool (the router's own tasks are over by
		// then): run the job without keeping the goroutine.
		go func() {
			defer p.wg.Done()
			defer p.n.Add(-1)
			p.fn(job)
		}()
		return
	}
	go p.loop(&worker[T]{ch: make(chan T, 1)}, job)
}

func (p *workers[T]) loop(w *worker[T], job T) {
	defer p.wg.Done()
	defer p.n.Add(-1)
	for {
		p.fn(job)
		var zero T
		job = zero // nothing of the job stays reachable from an idle worker
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return
		}
		w.gen = p.gen
		p.idle = append(p.idle, w)
		if p.reaper == nil {
			p.reaper = time.AfterFunc(p.every, p.reap)
		}
		p.mu.Unlock()
		var ok bool
		if job, ok = <-w.ch; !ok {
			return // reaped or closed
		}
	}
}

// reap ends the workers that have been idle for a whole period, and runs
// again in a period while any worker is idle.
func (p *workers[T]) reap() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.gen++
	// Idle since an earlier period than the previous one: a whole period
	// has passed. They are at the bottom of the list.
	k := 0
	for k < len(p.idle) && p.idle[k].gen+2 <= p.gen {
		close(p.idle[k].ch)
		p.idle[k] = nil
		k++
	}
	p.idle = append(p.idle[:0], p.idle[k:]...)
	if len(p.idle) > 0 {
		p.reaper.Reset(p.every)
	} else {
		p.reaper = nil
	}
}

// close ends every worker: idle ones at once, busy ones when their task
// returns. It waits for them.
func (p *workers[T]) close() {
	p.stop()
	p.wg.Wait()
}

// stop is close without the wait: busy workers end when their task
// returns.
func (p *workers[T]) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	for _, w := range p.idle {
		close(w.ch)
	}
	p.idle = nil
	if p.reaper != nil {
		p.reaper.Stop()
		p.reaper = nil
	}
}
