package boltstore_test

import (
	"context"
	"encoding/json"
	"iter"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// listAll returns every run and thread summary of s, newest first, read
// in pages of 3 so that the pages cross from the summaries held in
// memory to those in the file.
func listAll(t *testing.T, s store.Store) [2][]store.Summary {
	t.Helper()
	var out [2][]store.Summary
	for kind, list := range [2]func(context.Context, store.Store, store.ListQuery) iter.Seq2[store.Summary, error]{
		store.Runs, store.Threads,
	} {
		q := store.ListQuery{Limit: 3}
		for {
			n := 0
			for sum, err := range list(context.Background(), s, q) {
				if err != nil {
					t.Fatal(err)
				}
				out[kind] = append(out[kind], sum)
				q.Before = sum.LastSeq
				n++
			}
			if n < 3 {
				break
			}
		}
	}
	return out
}

// TestSummariesDeferred checks the summaries written at the index flush
// against memstore's, counted as each event is appended: while some are
// only in memory, after Close, and after a crash (a copy of the file taken
// while the store is open, as kill -9 leaves it), which Open reads
// without writing to the file.
func TestSummariesDeferred(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.db")
	s, err := boltstore.Open(path, &boltstore.Options{IndexBatch: 40, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := memstore.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	ctx := context.Background()
	ids := protocol.NewIDs(nil)
	payload := json.RawMessage(`{"x":1}`)
	var runs, threads []string
	for range 5 {
		runs, threads = append(runs, ids.RunID()), append(threads, ids.ThreadID())
	}
	for i := range 130 { // three flushes and 10 events after the last
		k := i % 5
		req := ids.NewMessage(protocol.TypeTaskRequest, "agent:ui")
		req.RunID, req.ThreadID, req.TaskID, req.Payload = runs[k], threads[(i/2)%5], ids.TaskID(), payload
		msgs := []*protocol.Message{req}
		if i%3 != 0 {
			res := ids.Reply(req, protocol.TypeTaskResult, "agent:w")
			res.Payload = payload
			msgs = append(msgs, res)
		}
		if _, err := s.Append(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
		if _, err := ref.Append(ctx, msgs...); err != nil {
			t.Fatal(err)
		}
	}
	// Times and seqs are the store's own: compare what both count.
	strip := func(all [2][]store.Summary) [2][]store.Summary {
		for _, l := range all {
			for i := range l {
				l[i].Created, l[i].Updated = l[i].Created.UTC().Truncate(0), l[i].Updated.UTC().Truncate(0)
			}
		}
		return all
	}
	want := strip(listAll(t, ref))
	got := strip(listAll(t, s))
	opts := cmp.Options{cmp.FilterPath(func(p cmp.Path) bool {
		n := p.Last().String()
		return n == ".Created" || n == ".Updated"
	}, cmp.Ignore())}
	if d := cmp.Diff(want, got, opts); d != "" {
		t.Fatalf("open store (some summaries only in memory) differs from memstore (-want +got):\n%s", d)
	}
	if st := s.Stats(); st.Unindexed == 0 {
		t.Fatal("nothing waits for the next flush: the test does not cover the summaries in memory")
	}

	// The file as kill -9 leaves it: events after the last flush.
	crashed := filepath.Join(dir, "crashed.db")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(crashed, data, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := boltstore.Open(crashed, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, strip(listAll(t, c)), opts); d != "" {
		t.Fatalf("after a crash (-want +got):\n%s", d)
	}
	if after, _ := os.ReadFile(crashed); string(after) != string(data) {
		t.Fatal("Open wrote to the file it recovered")
	}
	// Appends after the crash fold into the recovered summaries.
	for i := range 7 {
		req := ids.NewMessage(protocol.TypeTaskRequest, "agent:ui")
		req.RunID, req.ThreadID, req.TaskID, req.Payload = runs[i%5], threads[i%5], ids.TaskID(), payload
		for _, st := range []store.Store{c, ref} {
			if _, err := st.Append(ctx, req); err != nil {
				t.Fatal(err)
			}
		}
	}
	want2 := strip(listAll(t, ref))
	if d := cmp.Diff(want2, strip(listAll(t, c)), opts); d != "" {
		t.Fatalf("appends after a crash (-want +got):\n%s", d)
	}
	for _, st := range []struct {
		s    *boltstore.Store
		want [2][]store.Summary
	}{{s, want}, {c, want2}} {
		p := st.s.Path()
		if err := st.s.Close(); err != nil {
			t.Fatal(err)
		}
		re, err := boltstore.Open(p, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(st.want, strip(listAll(t, re)), opts); d != "" {
			t.Fatalf("%s after Close (-want +got):\n%s", filepath.Base(p), d)
		}
		if err := re.Check(ctx); err != nil {
			t.Fatal(err)
		}
		re.Close()
	}
}
