package boltstore_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/google/go-cmp/cmp"
)

// removalWorkload returns the events of n ended runs of about ten events
// each, some sharing threads, with idempotency keys, interleaved at
// random, and the run ids.
func removalWorkload(r *rand.Rand, ids *protocol.IDs, n int) ([]*protocol.Message, []string) {
	threads := []string{ids.ThreadID(), ids.ThreadID(), ids.ThreadID()}
	var runs [][]*protocol.Message
	var runIDs []string
	for i := range n {
		run, thread := ids.RunID(), ids.ThreadID()
		if i%3 == 0 {
			thread = threads[r.IntN(len(threads))]
		}
		runIDs = append(runIDs, run)
		var evs []*protocol.Message
		for range 1 + r.IntN(2) {
			task := ids.TaskID()
			for _, typ := range []protocol.Type{protocol.TypeTaskRequest, protocol.TypeTaskAccept, protocol.TypeTaskProgress, protocol.TypeTaskProgress, protocol.TypeTaskResult} {
				m := ids.NewMessage(typ, "agent:a"+strconv.Itoa(r.IntN(3)))
				m.RunID, m.ThreadID, m.TaskID = run, thread, task
				m.To = []protocol.Participant{{AgentID: "agent:orchestrator"}}
				m.Payload = json.RawMessage(`{"title":"run ` + strconv.Itoa(i) + `"}`)
				if r.IntN(3) == 0 {
					m.IdempotencyKey = "k-" + m.ID[len(m.ID)-8:]
				}
				evs = append(evs, m)
			}
		}
		runs = append(runs, evs)
	}
	var out []*protocol.Message
	for len(runs) > 0 {
		i := r.IntN(len(runs))
		out = append(out, runs[i][0])
		if runs[i] = runs[i][1:]; len(runs[i]) == 0 {
			runs = append(runs[:i], runs[i+1:]...)
		}
	}
	return out, runIDs
}

// TestRemoveMatchesMemstore removes random runs from a boltstore and from
// memstore (the plain model) under the same appends: every read by every
// index, the listings and the tombstones agree, and Check passes after
// each step and after a reopen.
func TestRemoveMatchesMemstore(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	for _, opts := range []*boltstore.Options{
		{NoSync: true},
		{IndexBatch: 1, NoSync: true},
		{IndexBatch: 7, PageSize: 4096, NoSync: true},
	} {
		r := rand.New(rand.NewPCG(seed, 1))
		clock := func() time.Time { return time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC) }
		ids := protocol.NewIDs(&protocol.IDOptions{Entropy: rand.NewChaCha8([32]byte{byte(seed)})})
		path := filepath.Join(t.TempDir(), "events.db")
		o := *opts
		o.Clock = clock
		b := openT(t, path, &o)
		m, err := memstore.New(&memstore.Options{Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		defer m.Close()
		var runs []string
		compare := func(step string) {
			t.Helper()
			if err := b.Check(t.Context()); err != nil {
				t.Fatalf("%s: Check: %v", step, err)
			}
			evs := readAllT(t, m, store.Query{})
			queries := []store.Query{{}, {TypePrefix: "task.result"}}
			for _, e := range evs {
				msg, _ := e.Message()
				queries = append(queries, store.Query{RunID: msg.RunID}, store.Query{ThreadID: msg.ThreadID},
					store.Query{TaskID: msg.TaskID}, store.Query{AgentID: msg.From.AgentID, AfterSeq: e.Seq})
			}
			for _, run := range runs {
				queries = append(queries, store.Query{RunID: run})
			}
			seen := map[store.Query]bool{}
			for _, q := range queries {
				if seen[q] {
					continue
				}
				seen[q] = true
				want, werr := readOrErr(m, q)
				got, gerr := readOrErr(b, q)
				if !sameEvents(want, got) || (werr == nil) != (gerr == nil) {
					t.Fatalf("%s: Read(%+v): errors %v, %v (-memstore +boltstore):\n%s", step, q, werr, gerr, cmp.Diff(want, got))
				}
			}
			for _, list := range []func(store.Store) []store.Summary{
				func(s store.Store) []store.Summary { return listT(t, store.Runs(t.Context(), s, store.ListQuery{})) },
				func(s store.Store) []store.Summary { return listT(t, store.Threads(t.Context(), s, store.ListQuery{})) },
			} {
				if diff := cmp.Diff(list(m), list(b)); diff != "" {
					t.Fatalf("%s: summaries (-memstore +boltstore):\n%s", step, diff)
				}
			}
			for _, id := range []string{"x", ids.NewMessage(protocol.TypeChatMessage, "agent:x").ID} {
				_, werr := m.Get(t.Context(), id)
				_, gerr := b.Get(t.Context(), id)
				if (werr == nil) != (gerr == nil) {
					t.Fatalf("%s: Get(%s): %v, %v", step, id, werr, gerr)
				}
			}
			wl, _ := m.LastSeq(t.Context())
			gl, _ := b.LastSeq(t.Context())
			if wl != gl {
				t.Fatalf("%s: LastSeq %d (memstore) %d (boltstore)", step, wl, gl)
			}
		}
		for round := range 4 {
			msgs, more := removalWorkload(r, ids, 12)
			runs = append(runs, more...)
			for len(msgs) > 0 {
				n := min(len(msgs), 1+r.IntN(8))
				rb, err := b.Append(t.Context(), msgs[:n]...)
				if err != nil {
					t.Fatal(err)
				}
				rm, err := m.Append(t.Context(), msgs[:n]...)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(rm, rb); diff != "" {
					t.Fatalf("round %d: append results (-memstore +boltstore):\n%s", round, diff)
				}
				msgs = msgs[n:]
			}
			var pick []string
			for _, run := range runs {
				if r.IntN(3) == 0 {
					pick = append(pick, run)
				}
			}
			tb, errB := b.RemoveRuns(t.Context(), pick, store.Removal{Policy: "test"})
			tm, errM := m.RemoveRuns(t.Context(), pick, store.Removal{Policy: "test"})
			if errB != nil || errM != nil {
				t.Fatalf("round %d: RemoveRuns: %v (boltstore), %v (memstore)", round, errB, errM)
			}
			if diff := cmp.Diff(tm, tb); diff != "" {
				t.Fatalf("round %d: tombstones (-memstore +boltstore):\n%s", round, diff)
			}
			compare("round " + strconv.Itoa(round))
		}
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		b = openT(t, path, &o)
		compare("after reopen")
	}
}

func sameEvents(a, b []store.Event) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Seq != b[i].Seq || !a[i].Time.Equal(b[i].Time) || string(a[i].Raw) != string(b[i].Raw) {
			return false
		}
	}
	return true
}

func readOrErr(s store.Store, q store.Query) ([]store.Event, error) {
	var out []store.Event
	for e, err := range s.Read(context.Background(), q) {
		if err != nil {
			return out, err
		}
		out = append(out, e)
	}
	return out, nil
}

func readAllT(t *testing.T, s store.Store, q store.Query) []store.Event {
	t.Helper()
	evs, err := readOrErr(s, q)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func listT(t *testing.T, seq func(func(store.Summary, error) bool)) []store.Summary {
	t.Helper()
	var out []store.Summary
	for s, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}
