package router

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/clutchprotocol/clutch/store/storetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sizedStores are the stores the store-level tests of the router run on.
var sizedStores = []struct {
	name string
	open func(t *testing.T, maxEventSize int) store.Store
}{
	{"memstore", func(t *testing.T, max int) store.Store {
		st, err := memstore.New(&memstore.Options{MaxEventSize: max})
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		return st
	}},
	{"boltstore", func(t *testing.T, max int) store.Store {
		st, err := boltstore.Open(filepath.Join(t.TempDir(), "events.db"), &boltstore.Options{NoSync: true, MaxEventSize: max})
		require.NoError(t, err)
		t.Cleanup(func() { st.Close() })
		return st
	}},
}

// holdStore holds the Append that stores one message (by id) after the
// store took it, until released: the window between a request being
// stored and the router running its task.
type holdStore struct {
	store.Store
	id      atomic.Pointer[string]
	stored  chan struct{}
	release chan struct{}
}

func (s *holdStore) Append(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	res, err := s.Store.Append(ctx, msgs...)
	if id := s.id.Load(); err == nil && id != nil && len(msgs) == 1 && msgs[0].ID == *id && !res[0].Duplicate {
		close(s.stored)
		<-s.release
	}
	return res, err
}

// redeliveries returns the three kinds of redelivery of req (§5.2): the
// same bytes; a new message id with the same run_id, idempotency_key and
// task_id; a new message id and task id with the same run_id and
// idempotency_key.
func redeliveries(t testing.TB, r *Router, req *protocol.Message) []*protocol.Message {
	t.Helper()
	raw, err := protocol.Encode(req)
	require.NoError(t, err)
	same, err := protocol.Decode(raw)
	require.NoError(t, err)
	newID, err := protocol.Decode(raw)
	require.NoError(t, err)
	newID.ID = r.ids.NewMessage(protocol.TypeTaskRequest, "agent:ui").ID
	newID.Reset()
	newTask, err := protocol.Decode(raw)
	require.NoError(t, err)
	fresh := r.ids.NewMessage(protocol.TypeTaskRequest, "agent:ui")
	newTask.ID, newTask.TaskID = fresh.ID, fresh.TaskID
	newTask.Reset()
	return []*protocol.Message{same, newID, newTask}
}

// TestRedeliveryBeforeTheTaskRuns (defect 1): redeliveries that arrive
// after the request is stored but before the router runs its task follow
// the task; they do not fail it with INTERRUPTED while it goes on to
// succeed. Each task has exactly one terminal event.
func TestRedeliveryBeforeTheTaskRuns(t *testing.T) {
	for _, b := range sizedStores {
		t.Run(b.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				hs := &holdStore{Store: b.open(t, 0), stored: make(chan struct{}), release: make(chan struct{})}
				e := newEnvOn(t, hs, nil)
				var calls atomic.Int32
				e.register(card("agent:a", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
					calls.Add(1)
					return summary("done"), nil
				})
				req := e.request("skill:r")
				req.IdempotencyKey = "order-42"
				dups := redeliveries(t, e.r, req)
				hs.id.Store(&req.ID)

				type submitted struct {
					h   *Handle
					err error
				}
				results := make(chan submitted, 1+len(dups))
				submit := func(m *protocol.Message) {
					h, err := e.r.Submit(context.Background(), m)
					results <- submitted{h, err}
				}
				go submit(req)
				<-hs.stored // stored, not running yet
				for _, d := range dups {
					go submit(d)
				}
				synctest.Wait() // every redelivery has done what it does before the task runs
				close(hs.release)

				var ids []string
				for range 1 + len(dups) {
					s := <-results
					require.NoError(t, s.err)
					out, err := e.wait(s.h)
					require.NoError(t, err, "a redelivery failed the task")
					assert.Equal(t, protocol.TypeTaskResult, out.Type)
					ids = append(ids, out.Message.ID)
				}
				for _, id := range ids {
					assert.Equal(t, ids[0], id, "handles disagree on the outcome")
				}
				assert.EqualValues(t, 1, calls.Load())
				storetest.AssertOneTerminal(t, hs)
			})
		})
	}
}

// TestRedeliveryWithNewIDWhileRunning (defect 2): a redelivery with a new
// message id but the task's run_id, idempotency_key and task_id, sent
// while the task runs, follows the task (dedup first, then validity);
// another request for the running task id is still refused.
func TestRedeliveryWithNewIDWhileRunning(t *testing.T) {
	e := newEnv(t, nil)
	b := newBlocker()
	var calls atomic.Int32
	e.register(card("agent:a", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
		calls.Add(1)
		return b.handler("a")(ctx, t)
	})
	req := e.request("skill:r")
	req.IdempotencyKey = "order-7"
	h1 := e.submit(req)
	<-b.started

	again := redeliveries(t, e.r, req)[1]
	h2, err := e.r.Submit(context.Background(), again)
	require.NoError(t, err, "a legitimate redelivery was refused")
	assert.Equal(t, h1.TaskID(), h2.TaskID())

	for name, mutate := range map[string]func(m *protocol.Message){
		"another key":  func(m *protocol.Message) { m.IdempotencyKey = "order-8" },
		"no key":       func(m *protocol.Message) { m.IdempotencyKey = "" },
		"another run":  func(m *protocol.Message) { m.RunID = e.r.ids.NewMessage(protocol.TypeTaskRequest, "agent:ui").RunID },
		"another body": func(m *protocol.Message) { m.IdempotencyKey = ""; m.Payload = []byte(`{"query":"other"}`) },
	} {
		other := redeliveries(t, e.r, req)[1]
		mutate(other)
		other.Reset()
		_, err := e.r.Submit(context.Background(), other)
		assert.ErrorIs(t, err, ErrInvalidRequest, name)
		assert.ErrorIs(t, err, protocol.CodeInvalidField, name)
	}

	close(b.release)
	o1, err1 := e.wait(h1)
	o2, err2 := e.wait(h2)
	require.NoError(t, err1)
	require.NoError(t, err2)
	assert.Equal(t, o1.Message.ID, o2.Message.ID)
	assert.EqualValues(t, 1, calls.Load())
	storetest.AssertOneTerminal(t, e.st)
}

// TestTerminalEventOverSizeLimit (defect 3): a result (or an error) over
// the store's event size limit ends its task with a stored task.error
// TOO_LARGE; Wait reports what the log holds; a restart with redispatch
// has nothing to run again.
func TestTerminalEventOverSizeLimit(t *testing.T) {
	const limit = 4096
	big := strings.Repeat("x", 2*limit)
	handlers := map[string]Handler{
		"result": func(ctx context.Context, t *Task) (*Result, error) { return summary(big), nil },
		"error": func(ctx context.Context, t *Task) (*Result, error) {
			return nil, Fail(protocol.CodeToolFailed, "tool failed", false, map[string]any{"log": big})
		},
		"invalid result": func(ctx context.Context, t *Task) (*Result, error) {
			return &Result{PayloadType: "research.summary.v1", Payload: map[string]any{"junk": big}}, nil
		},
	}
	for _, b := range sizedStores {
		for name, h := range handlers {
			t.Run(b.name+"/"+name, func(t *testing.T) {
				st := b.open(t, limit)
				e := newEnvOn(t, st, nil)
				e.register(card("agent:a", skill("skill:r")), h)
				req := e.request("skill:r")
				out, err := e.wait(e.submit(req))
				require.ErrorIs(t, err, protocol.CodeTooLarge)
				assert.Equal(t, protocol.TypeTaskError, out.Type)
				assert.False(t, out.Err.Retryable)
				assert.Equal(t, limit, out.Err.Details["limit"])

				// Wait reported what the log holds.
				types := e.types(req.TaskID)
				assert.Equal(t, []string{"task.request", "routing.decision", "task.accept", "task.error"}, types)
				stored, err := st.Get(context.Background(), out.Message.ID)
				require.NoError(t, err)
				assert.Equal(t, out.Message.Raw(), stored.Raw)
				storetest.AssertOneTerminal(t, st)

				// A restart that redispatches finds nothing to run again.
				e2 := newEnvOn(t, st, &Options{Recovery: RecoverRedispatch})
				e2.register(card("agent:a", skill("skill:r")), h)
				n, err := e2.r.Recover(context.Background())
				require.NoError(t, err)
				assert.Zero(t, n)
			})
		}
	}
}

// TestTerminalEventNotStorable: when the store refuses even the fallback
// task.error, the outcome says no terminal event was stored.
func TestTerminalEventNotStorable(t *testing.T) {
	st, err := memstore.New(nil)
	require.NoError(t, err)
	e := newEnvOn(t, st, nil)
	release := make(chan struct{})
	started := make(chan struct{})
	e.register(card("agent:a", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
		close(started)
		<-release
		return summary("late"), nil
	})
	h := e.submit(e.request("skill:r"))
	<-started
	require.NoError(t, st.Close())
	close(release)
	out, err := e.wait(h)
	require.ErrorIs(t, err, protocol.CodeInternal)
	assert.True(t, out.Err.Retryable)
	assert.Contains(t, out.Err.Message, "no terminal event could be stored")
	assert.Equal(t, protocol.TypeTaskError, out.Type)
}

// TestMaxInFlight: past Options.MaxInFlight a new task is refused at once
// with CAPACITY (retryable, with a retry-after hint); nothing is stored.
// Redeliveries of running tasks are not refused.
func TestMaxInFlight(t *testing.T) {
	e := newEnv(t, &Options{MaxInFlight: 2})
	b := newBlocker()
	e.register(card("agent:a", skill("skill:r")), b.handler("a"))
	r1, r2 := e.request("skill:r"), e.request("skill:r")
	h1, h2 := e.submit(r1), e.submit(r2)
	<-b.started
	<-b.started

	r3 := e.request("skill:r")
	_, err := e.r.Submit(context.Background(), r3)
	require.ErrorIs(t, err, ErrCapacity)
	require.ErrorIs(t, err, protocol.CodeCapacity)
	ep := protocol.NewErrorPayload(err)
	assert.True(t, ep.Retryable)
	assert.Equal(t, 1, ep.Details["retry_after_sec"])
	_, err = e.st.Get(context.Background(), r3.ID)
	assert.ErrorIs(t, err, store.ErrNotFound, "a refused request was stored")

	// A redelivery of a running task is a handle, not a new task.
	again := redeliveries(t, e.r, r1)[0]
	h, err := e.r.Submit(context.Background(), again)
	require.NoError(t, err)
	assert.Equal(t, h1.TaskID(), h.TaskID())

	close(b.release)
	_, err = e.wait(h1)
	require.NoError(t, err)
	_, err = e.wait(h2)
	require.NoError(t, err)
	// Room again once the task goroutines have returned, just after the
	// outcomes.
	require.NoError(t, e.r.waitDrained(context.Background()))
	_, err = e.wait(e.submit(r3))
	require.NoError(t, err)
}

// TestMaxInFlightBoundsGoroutines: a burst of concurrent submissions
// never runs more than MaxInFlight handlers at once; every caller is
// answered, with a handle or CAPACITY.
func TestMaxInFlightBoundsGoroutines(t *testing.T) {
	const limit, callers = 8, 200
	e := newEnv(t, &Options{MaxInFlight: limit})
	b := newBlocker()
	b.started = make(chan string, callers)
	e.register(card("agent:a", skill("skill:r")), b.handler("a"))
	var accepted, refused atomic.Int32
	var handles sync.Map
	var wg sync.WaitGroup
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h, err := e.r.Submit(context.Background(), e.request("skill:r"))
			switch {
			case err == nil:
				accepted.Add(1)
				handles.Store(i, h)
			case errors.Is(err, ErrCapacity):
				refused.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	assert.EqualValues(t, limit, accepted.Load())
	assert.EqualValues(t, callers-limit, refused.Load())
	close(b.release)
	handles.Range(func(_, h any) bool {
		_, err := e.wait(h.(*Handle))
		assert.NoError(t, err)
		return true
	})
}

func TestMaxInFlightOption(t *testing.T) {
	e := newEnv(t, nil)
	assert.Equal(t, DefaultMaxInFlight, e.r.opts.MaxInFlight)
	e = newEnv(t, &Options{MaxInFlight: NoLimit})
	e.register(card("agent:a", skill("skill:r")), ok())
	_, err := e.wait(e.submit(e.request("skill:r")))
	assert.NoError(t, err)
}

// TestConcurrentRecoveryEndsOnce: redeliveries of an interrupted task and
// Recover, all at once, end it once (RecoverFail) or run it once
// (RecoverRedispatch).
func TestConcurrentRecoveryEndsOnce(t *testing.T) {
	for _, policy := range []Recovery{RecoverFail, RecoverRedispatch} {
		for _, b := range sizedStores {
			t.Run(fmt.Sprint(b.name, "/", policy), func(t *testing.T) {
				st := b.open(t, 0)
				e := newEnvOn(t, st, &Options{Recovery: policy})
				var calls atomic.Int32
				e.register(card("agent:a", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
					calls.Add(1)
					return summary("again"), nil
				})
				req := crashedTaskKeyed(t, e, "order-9")
				var dups []*protocol.Message // one message per goroutine
				for range 10 {
					dups = append(dups, redeliveries(t, e.r, req)...)
				}
				go1 := make(chan struct{})
				var wg sync.WaitGroup
				var outs sync.Map
				for i := range 10 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						<-go1
						if i == 0 {
							_, err := e.r.Recover(context.Background())
							assert.NoError(t, err)
							return
						}
						h, err := e.r.Submit(context.Background(), dups[i*3+i%3])
						if assert.NoError(t, err) {
							out, _ := e.wait(h)
							outs.Store(out.Message.ID, true)
						}
					}()
				}
				close(go1)
				wg.Wait()
				n := 0
				outs.Range(func(any, any) bool { n++; return true })
				assert.Equal(t, 1, n, "redeliveries saw different outcomes")
				if policy == RecoverRedispatch {
					assert.EqualValues(t, 1, calls.Load())
				} else {
					assert.Zero(t, calls.Load())
				}
				storetest.AssertOneTerminal(t, st)
			})
		}
	}
}

// TestConcurrentRetryRunsOnce: concurrent Retry calls of a failed task
// start one new attempt; the others are told it is running.
func TestConcurrentRetryRunsOnce(t *testing.T) {
	e := newEnv(t, &Options{MaxAttempts: 1})
	var calls atomic.Int32
	e.register(card("agent:a", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
		if calls.Add(1) == 1 {
			return nil, Fail(protocol.CodeToolFailed, "broken", false, nil)
		}
		return summary("fixed"), nil
	})
	h := e.submit(e.request("skill:r"))
	_, err := e.wait(h)
	require.ErrorIs(t, err, protocol.CodeToolFailed)
	start := make(chan struct{})
	var wg sync.WaitGroup
	var started, refused atomic.Int32
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			rh, err := e.r.Retry(context.Background(), h.TaskID())
			if errors.Is(err, ErrNotRetryable) {
				refused.Add(1)
				return
			}
			if assert.NoError(t, err) {
				started.Add(1)
				_, err := e.wait(rh)
				assert.NoError(t, err)
			}
		}()
	}
	close(start)
	wg.Wait()
	assert.EqualValues(t, 1, started.Load())
	assert.EqualValues(t, 7, refused.Load())
	assert.EqualValues(t, 2, calls.Load())
	storetest.AssertOneTerminal(t, e.st)
}
