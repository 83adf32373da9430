package fanout_test

import (
	"context"
	"encoding/json"
	"iter"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/clutchprotocol/clutch/internal/fanout"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/clutchprotocol/clutch/store/storetest"
)

// The follower stops when its last reader goes.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// hubStore is a store whose Follow goes through a hub.
type hubStore struct {
	store.Store
	hub *fanout.Hub
}

func (s hubStore) Follow(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	return s.hub.Follow(ctx, q)
}

// Unwrap gives the suite's listings memstore's own summaries: the hub
// changes Follow only (without it every page of a listing projects the
// whole log).
func (s hubStore) Unwrap() store.Store { return s.Store }

// The hub's Follow keeps store.Follow's contract, also when its readers
// fall behind (a buffer of two events) or always do (one byte) and go
// back to the store.
func TestConformance(t *testing.T) {
	for name, o := range map[string]*fanout.Options{"defaults": nil, "small": {Events: 2}, "tiny": {Events: 1, Bytes: 1}} {
		t.Run(name, func(t *testing.T) {
			storetest.Run(t, func(t *testing.T) store.Store {
				st, err := memstore.New(nil)
				if err != nil {
					t.Fatal(err)
				}
				return hubStore{st, fanout.New(st, o)}
			}, storetest.Options{})
		})
	}
}

func msg(run, thread, task, agent string, typ protocol.Type) *protocol.Message {
	m := protocol.NewMessage(typ, agent)
	m.RunID, m.ThreadID, m.TaskID = run, thread, task
	if task == "" {
		m.TaskID = "task_" + run
	}
	m.Payload = json.RawMessage(`{"text":"x"}`)
	return m
}

// A reader that takes nothing holds up neither the writer nor the other
// readers; when it reads again it gets every event once, in order.
func TestSlowReader(t *testing.T) {
	st, _ := memstore.New(nil)
	defer st.Close()
	h := fanout.New(st, &fanout.Options{Events: 4})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	const n = 200
	type reader struct {
		next func() (store.Event, error, bool)
		stop func()
	}
	open := func() reader {
		next, stop := iter.Pull2(h.Follow(ctx, store.Query{RunID: "run_a"}))
		return reader{next, stop}
	}
	slow, fast := open(), open()
	defer slow.stop()
	defer fast.stop()
	// Both have joined once they return their first event.
	if _, err := st.Append(ctx, msg("run_a", "thr_a", "", "agent:w", protocol.TypeChatMessage)); err != nil {
		t.Fatal(err)
	}
	for _, r := range []reader{slow, fast} {
		if ev, err, ok := r.next(); !ok || err != nil || ev.Seq != 1 {
			t.Fatalf("first event: %v %v %v", ev.Seq, err, ok)
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range n {
			run := "run_a"
			if i%3 == 0 {
				run = "run_b" // not the readers'
			}
			if _, err := st.Append(ctx, msg(run, "thr_a", "", "agent:w", protocol.TypeChatMessage)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	want := []uint64{}
	for i := range n {
		if i%3 != 0 {
			want = append(want, uint64(i+2))
		}
	}
	check := func(r reader, what string) {
		for _, w := range want {
			ev, err, ok := r.next()
			if !ok || err != nil || ev.Seq != w {
				t.Fatalf("%s: got seq %d (%v, %v), want %d", what, ev.Seq, err, ok, w)
			}
		}
	}
	check(fast, "fast reader")
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the writer waited for the slow reader")
	}
	check(slow, "slow reader")
}
