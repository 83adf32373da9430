package router

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store/storetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stubborn is a handler that ignores its context: it returns only when
// released.
type stubborn struct {
	started chan string
	release chan struct{}
}

func newStubborn() *stubborn {
	return &stubborn{started: make(chan string, 16), release: make(chan struct{})}
}

func (s *stubborn) handler(ctx context.Context, t *Task) (*Result, error) {
	s.started <- t.ID()
	<-s.release
	return summary("late"), nil
}

// TestShutdownAbandonsHandlerIgnoringContext (defect 5): Shutdown returns
// when its context ends although a handler ignores its own; it reports
// the abandoned task, whose terminal event is stored; a later Shutdown
// waits for the handler once it returns, and nothing leaks.
func TestShutdownAbandonsHandlerIgnoringContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		s := newStubborn()
		e.register(card("agent:a", skill("skill:r")), s.handler)
		e.register(card("agent:b", skill("skill:ok")), newBlocker().handler("b")) // returns on cancel
		stuck := e.submit(e.request("skill:r"))
		polite := e.submit(e.request("skill:ok"))
		<-s.started
		synctest.Wait()

		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		err := e.r.Shutdown(ctx)
		assert.Equal(t, 5*time.Second, time.Since(start), "Shutdown waits until its context ends")
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.ErrorIs(t, err, ErrAbandoned)
		assert.Equal(t, protocol.CodeInterrupted, protocol.CodeOf(err))
		var se *ShutdownError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, []string{stuck.TaskID()}, se.TaskIDs)
		assert.Contains(t, err.Error(), stuck.TaskID())

		// Both tasks ended with INTERRUPTED, stored.
		for _, h := range []*Handle{stuck, polite} {
			out, err := e.wait(h)
			require.ErrorIs(t, err, protocol.CodeInterrupted)
			assert.True(t, out.Err.Retryable)
			assert.Equal(t, []string{"task.request", "routing.decision", "task.accept", "task.error"}, e.types(h.TaskID()))
		}
		_, err = e.r.Submit(context.Background(), e.request("skill:r"))
		assert.ErrorIs(t, err, ErrClosed)

		// The handler returns at last: its result is not stored, and a
		// second Shutdown waits for its goroutine.
		close(s.release)
		require.NoError(t, e.r.Shutdown(context.Background()))
		assert.Equal(t, []string{"task.request", "routing.decision", "task.accept", "task.error"}, e.types(stuck.TaskID()))
		storetest.AssertOneTerminal(t, e.st)
	})
}

// TestCloseIsBounded: a handler past its max_runtime_sec that ignores its
// context no longer blocks Close, which gives up after
// DefaultCloseTimeout; the task keeps its one terminal event, the
// task.timeout.
func TestCloseIsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		s := newStubborn()
		c := card("agent:a", skill("skill:r"))
		c.Limits = &protocol.Limits{MaxRuntimeSec: 1}
		e.register(c, s.handler)
		h := e.submit(e.request("skill:r"))
		<-s.started
		out, err := e.wait(h)
		require.ErrorIs(t, err, protocol.CodeTimeout)
		assert.Equal(t, protocol.TypeTaskTimeout, out.Type)

		start := time.Now()
		err = e.r.Close()
		assert.Equal(t, DefaultCloseTimeout, time.Since(start))
		var se *ShutdownError
		require.ErrorAs(t, err, &se)
		assert.Equal(t, []string{h.TaskID()}, se.TaskIDs)
		assert.True(t, errors.Is(err, context.DeadlineExceeded))

		close(s.release)
		require.NoError(t, e.r.Shutdown(context.Background()))
		assert.Equal(t, []string{"task.request", "routing.decision", "task.accept", "task.timeout"}, e.types(h.TaskID()))
		storetest.AssertOneTerminal(t, e.st)
	})
}

// TestShutdownWaitsForHandlers: handlers that honour their context return
// after the cancel, and Shutdown returns nil without waiting for its
// context.
func TestShutdownWaitsForHandlers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, nil)
		b := newBlocker()
		e.register(card("agent:a", skill("skill:r")), b.handler("a"))
		var hs []*Handle
		for range 3 {
			hs = append(hs, e.submit(e.request("skill:r")))
			<-b.started
		}
		start := time.Now()
		require.NoError(t, e.r.Shutdown(context.Background()))
		assert.Zero(t, time.Since(start))
		for _, h := range hs {
			_, err := e.wait(h)
			assert.ErrorIs(t, err, protocol.CodeInterrupted)
		}
		storetest.AssertOneTerminal(t, e.st)
		require.NoError(t, e.r.Close(), "Close after Shutdown")
	})
}
