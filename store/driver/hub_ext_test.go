package driver_test

import (
	"encoding/json"
	"iter"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/driver"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/clutchprotocol/clutch/store/storetest"
)

// A hub's follower stops when its last reader goes and when its store
// closes.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// The Follow contract holds through the hub also when every reader falls
// behind at each event (a buffer of one event or one byte) and goes back
// to the store, or does so often (two events), on the in-tree stores that
// wire it.
func TestHubConformanceSmallBuffers(t *testing.T) {
	for name, b := range map[string]struct {
		events int
		bytes  int64
	}{"tiny": {1, 1}, "small": {2, 1 << 20}} {
		t.Run(name, func(t *testing.T) {
			t.Cleanup(driver.SetHubBuffers(b.events, b.bytes))
			t.Run("memstore", func(t *testing.T) {
				storetest.Run(t, func(t *testing.T) store.Store {
					st, err := memstore.New(nil)
					if err != nil {
						t.Fatal(err)
					}
					return st
				}, storetest.Options{})
			})
			if name != "tiny" || testing.Short() {
				return
			}
			t.Run("boltstore", func(t *testing.T) {
				storetest.Run(t, func(t *testing.T) store.Store {
					st, err := boltstore.Open(filepath.Join(t.TempDir(), "events.db"), &boltstore.Options{NoSync: true})
					if err != nil {
						t.Fatal(err)
					}
					return st
				}, storetest.Options{})
			})
		})
	}
}

func msg(run string) *protocol.Message {
	m := protocol.NewMessage(protocol.TypeChatMessage, "agent:w")
	m.RunID, m.ThreadID, m.TaskID = run, "thr_"+run, "task_"+run
	m.Payload = json.RawMessage(`{"text":"x"}`)
	return m
}

// A reader that takes nothing holds up neither the writer nor the other
// readers; when it reads again it gets every event once, in order.
func TestHubSlowReader(t *testing.T) {
	t.Cleanup(driver.SetHubBuffers(4, 1<<20))
	st, _ := memstore.New(nil)
	defer st.Close()
	ctx := t.Context()
	const n = 200
	type reader struct {
		next func() (store.Event, error, bool)
		stop func()
	}
	open := func() reader {
		next, stop := iter.Pull2(st.Follow(ctx, store.Query{RunID: "run_a"}))
		return reader{next, stop}
	}
	slow, fast := open(), open()
	defer slow.stop()
	defer fast.stop()
	// Both have joined once they return their first event.
	if _, err := st.Append(ctx, msg("run_a")); err != nil {
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
			if _, err := st.Append(ctx, msg(run)); err != nil {
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

// The follower runs only while a Follow does: when the last reader of an
// open store leaves, no goroutine of the hub is left.
func TestHubStopsWithTheLastReader(t *testing.T) {
	st, _ := memstore.New(nil)
	defer st.Close()
	before := goleak.IgnoreCurrent()
	ctx := t.Context()
	if _, err := st.Append(ctx, msg("run_a"), msg("run_b")); err != nil {
		t.Fatal(err)
	}
	for _, run := range []string{"run_a", "run_b", "run_a"} {
		next, stop := iter.Pull2(st.Follow(ctx, store.Query{RunID: run}))
		defer stop()
		if ev, err, ok := next(); !ok || err != nil || ev.Seq == 0 {
			t.Fatalf("follow %s: %v %v %v", run, ev.Seq, err, ok)
		}
	}
	// Three readers share one follower; a new event reaches them while
	// they are open, and stopping them stops it.
	if _, err := st.Append(ctx, msg("run_a")); err != nil {
		t.Fatal(err)
	}
	for ev, err := range st.Follow(ctx, store.Query{RunID: "run_a", AfterSeq: 2, Limit: 1}) {
		if err != nil || ev.Seq != 3 {
			t.Fatalf("a fourth reader: %d %v", ev.Seq, err)
		}
	}
	if err := goleak.Find(before); err == nil {
		t.Fatal("no follower ran while three readers were open")
	}
	t.Cleanup(func() { goleak.VerifyNone(t, before) })
}
