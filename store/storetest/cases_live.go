package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Appends from many goroutines, some racing on the same messages, give
// seqs without gaps or duplicates while readers read along.
func testConcurrentAppends(t *testing.T, su *suite) {
	s := su.open(t)
	g := newGen(20)
	workers, per := 16, 40
	if testing.Short() {
		workers, per = 8, 20
	}
	shared := g.simple(10) // every worker appends these too: exactly one copy each is stored
	own := make([][]*protocol.Message, workers)
	for w := range own {
		own[w] = g.simple(per)
	}
	type result struct {
		id string
		r  store.AppendResult
	}
	results := make([][]result, workers)
	done := make(chan struct{})
	var readers sync.WaitGroup
	for range 3 {
		readers.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				var want uint64 = 1
				for e, err := range s.Read(t.Context(), store.Query{}) {
					if err != nil {
						t.Errorf("concurrent Read: %v", err)
						return
					}
					if e.Seq != want {
						t.Errorf("concurrent Read: seq %d, want %d (gap or reorder)", e.Seq, want)
						return
					}
					want++
				}
			}
		})
	}
	var writers sync.WaitGroup
	for w := range workers {
		writers.Go(func() {
			var batch []*protocol.Message
			flush := func() {
				res, err := s.Append(t.Context(), batch...)
				if err != nil {
					t.Errorf("worker %d: Append: %v", w, err)
				}
				for i, r := range res {
					results[w] = append(results[w], result{batch[i].ID, r})
				}
				batch = batch[:0]
			}
			for i, m := range own[w] {
				batch = append(batch, m)
				if i < len(shared) {
					batch = append(batch, shared[(i+w)%len(shared)].Clone())
				}
				if len(batch) >= 1+(i+w)%4 {
					flush()
				}
			}
			flush()
		})
	}
	writers.Wait()
	close(done)
	readers.Wait()
	if t.Failed() {
		return
	}
	total := workers*per + len(shared)
	if n := lastSeq(t, s); n != uint64(total) {
		t.Fatalf("LastSeq = %d, want %d", n, total)
	}
	evs := readAll(t, s, store.Query{})
	idAt := make(map[uint64]string, len(evs))
	seen := map[string]bool{}
	for i, e := range evs {
		if e.Seq != uint64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
		m, err := e.Message()
		if err != nil {
			t.Fatal(err)
		}
		if seen[m.ID] {
			t.Fatalf("id %s stored twice", m.ID)
		}
		seen[m.ID] = true
		idAt[e.Seq] = m.ID
	}
	fresh := map[uint64]bool{}
	for _, rs := range results {
		for _, r := range rs {
			if idAt[r.r.Seq] != r.id {
				t.Fatalf("result %+v for %s points at %s", r.r, r.id, idAt[r.r.Seq])
			}
			if !r.r.Duplicate {
				if fresh[r.r.Seq] {
					t.Fatalf("two appends were given seq %d", r.r.Seq)
				}
				fresh[r.r.Seq] = true
			}
		}
	}
	if len(fresh) != total {
		t.Fatalf("%d appends were not duplicates, want %d", len(fresh), total)
	}
}

// Follow delivers every event exactly once and in order, across the
// boundary between the backlog and live appends, and ends on cancel.
func testFollowDeliversEachEventOnce(t *testing.T, su *suite) {
	s := su.open(t)
	g := newGen(21)
	appendOK(t, s, g.simple(50)...)
	writers, per := 4, 60
	total := 50 + writers*per
	var wg sync.WaitGroup
	start := make(chan struct{})
	for w := range writers {
		msgs := g.simple(per)
		wg.Go(func() {
			<-start
			for i := 0; i < len(msgs); {
				k := min(1+(i+w)%3, len(msgs)-i)
				if _, err := s.Append(t.Context(), msgs[i:i+k]...); err != nil {
					t.Errorf("Append: %v", err)
					return
				}
				i += k
			}
		})
	}
	close(start) // appends run while the follower reads the backlog
	var got []uint64
	var ferr error
	fdone := make(chan struct{})
	go func() {
		defer close(fdone)
		for e, err := range s.Follow(t.Context(), store.Query{}) {
			if err != nil {
				ferr = err
				return
			}
			got = append(got, e.Seq)
			if len(got) == total {
				return
			}
		}
	}()
	wg.Wait()
	select {
	case <-fdone:
	case <-time.After(20 * time.Second):
		t.Fatalf("Follow did not deliver %d events in 20s", total)
	}
	if ferr != nil {
		t.Fatalf("Follow: %v", ferr)
	}
	want := make([]uint64, total)
	for i := range want {
		want[i] = uint64(i + 1)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Follow seqs (-want +got):\n%s", diff)
	}

	// A follower that has read to the end of the log waits there, wakes for
	// a new event, then ends on cancel. It starts one event before the end
	// and the append waits for that event: the follower has caught up, so
	// the new event reaches it through the wait, not the backlog read.
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f := startFollower(ctx, s, store.Query{AfterSeq: uint64(total - 1)})
	f.await(t, 1, "a follower reading the last stored event")
	appendOK(t, s, g.simple(1)...)
	f.await(t, 2, "a waiting follower woken by an append")
	cancel()
	f.end(t, "Follow after its context was cancelled")
	if diff := cmp.Diff([]uint64{uint64(total), uint64(total + 1)}, f.seqs); f.err != nil || diff != "" {
		t.Fatalf("live follower: error %v, seqs (-want +got):\n%s", f.err, diff)
	}
}

// follower runs a Follow in its own goroutine and reports each event it
// yields, so a test can wait until it has caught up instead of sleeping.
type follower struct {
	got  chan struct{} // one send per event yielded
	done chan struct{}
	seen int      // events counted by await
	seqs []uint64 // read after done
	errs []error  // read after done
	err  error    // the last of errs
}

func startFollower(ctx context.Context, s store.Store, q store.Query) *follower {
	f := &follower{got: make(chan struct{}, 1<<10), done: make(chan struct{})}
	go func() {
		defer close(f.done)
		for e, err := range s.Follow(ctx, q) {
			if err != nil {
				f.errs = append(f.errs, err)
				f.err = err
				continue
			}
			f.seqs = append(f.seqs, e.Seq)
			f.got <- struct{}{}
		}
	}()
	return f
}

// await waits until the follower has yielded n events in all.
func (f *follower) await(t *testing.T, n int, what string) {
	t.Helper()
	for f.seen < n {
		select {
		case <-f.got:
			f.seen++
		case <-f.done:
			t.Fatalf("%s: Follow ended after %d events, want %d", what, f.seen, n)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: %d events after 10s, want %d", what, f.seen, n)
		}
	}
}

// end waits for the follower's Follow to return.
func (f *follower) end(t *testing.T, what string) {
	t.Helper()
	select {
	case <-f.done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s did not end", what)
	}
}

// Follow honours the query (index, type prefix, AfterSeq) and Limit.
func testFollowFiltered(t *testing.T, su *suite) {
	s := su.open(t)
	g := newGen(22)
	a := key{run: g.ids.RunID(), thread: g.ids.ThreadID(), task: g.ids.TaskID(), agent: "agent:a"}
	b := key{run: g.ids.RunID(), thread: g.ids.ThreadID(), task: g.ids.TaskID(), agent: "agent:b"}
	var all model
	for i := range 200 {
		k := a
		if i%3 == 0 {
			k = b
		}
		k.typ = []protocol.Type{protocol.TypeTaskProgress, protocol.TypeTaskResult, protocol.TypeChatMessage}[i%5%3]
		all = append(all, g.msg(k))
	}
	appendOK(t, s, all[:100]...)
	queries := []store.Query{
		{RunID: a.run, AfterSeq: 50},
		{AgentID: b.agent, TypePrefix: "task."},
		{TypePrefix: "chat.", AfterSeq: 10},
		{ThreadID: a.thread, TaskID: a.task, AfterSeq: 99},
	}
	type follower struct {
		want []uint64
		got  *[]uint64
		errs *[]error
		done chan struct{}
	}
	var fs []follower
	var mus []*sync.Mutex
	for _, q := range queries {
		want := all.want(q)
		q.Limit = len(want) // ends by itself after the last one
		var mu sync.Mutex
		mus = append(mus, &mu)
		f := follower{want: want, got: new([]uint64), errs: new([]error), done: make(chan struct{})}
		go func() {
			defer close(f.done)
			for e, err := range s.Follow(t.Context(), q) {
				mu.Lock()
				if err != nil {
					*f.errs = append(*f.errs, err)
				} else {
					*f.got = append(*f.got, e.Seq)
				}
				mu.Unlock()
			}
		}()
		fs = append(fs, f)
	}
	for i := 100; i < len(all); i += 9 {
		appendOK(t, s, all[i:min(i+9, len(all))]...)
	}
	for i, f := range fs {
		select {
		case <-f.done:
		case <-time.After(20 * time.Second):
			mus[i].Lock()
			t.Fatalf("Follow(%+v) did not end after its Limit; got %d of %d", queries[i], len(*f.got), len(f.want))
		}
		if len(*f.errs) > 0 {
			t.Fatalf("Follow(%+v): %v", queries[i], *f.errs)
		}
		if diff := cmp.Diff(f.want, *f.got, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("Follow(%+v) seqs (-want +got):\n%s", queries[i], diff)
		}
	}
}

// Follow ends cleanly on cancel (also when cancelled before it starts)
// and with ErrClosed when the store closes under it.
func testFollowEnds(t *testing.T, su *suite) {
	s := su.open(t)
	g := newGen(23)
	// A follower waiting at the end of the log ends on cancel: it is
	// cancelled once it has yielded the one event there is.
	ctx, cancel := context.WithCancel(t.Context())
	waiting := startFollower(ctx, s, store.Query{})
	appendOK(t, s, g.simple(1)...)
	waiting.await(t, 1, "a follower reading the one stored event")
	cancel()
	waiting.end(t, "Follow waiting at the end of the log, after cancel")
	if len(waiting.seqs) != 1 || waiting.err != nil {
		t.Fatalf("cancelled follower got %v, %v; want [1] and no error", waiting.seqs, waiting.err)
	}
	appendOK(t, s, g.simple(4)...)
	n, err := drain(s.Follow(canceledContext(), store.Query{}))
	if n != 0 || err != nil {
		t.Fatalf("Follow with a cancelled context: %d events, %v; want none and no error", n, err)
	}
	// The same for a follow of one run (a store that looks the run up
	// first, for its tombstone, ends the same way).
	if m, err := readAll(t, s, store.Query{})[0].Message(); err == nil && m.RunID != "" {
		if n, err := drain(s.Follow(canceledContext(), store.Query{RunID: m.RunID})); n != 0 || err != nil {
			t.Fatalf("Follow of a run with a cancelled context: %d events, %v; want none and no error", n, err)
		}
	}
	n, err = drain(s.Follow(t.Context(), store.Query{Limit: 3}))
	if n != 3 || err != nil {
		t.Fatalf("Follow with Limit 3: %d events, %v", n, err)
	}

	var closed store.Store = su.newStore(t)
	t.Cleanup(func() { closed.Close() })
	appendOK(t, closed, g.simple(2)...)
	f := startFollower(t.Context(), closed, store.Query{})
	f.await(t, 2, "a follower of the closing store reading its backlog")
	within(t, 10*time.Second, "Close with a follower", func() {
		if err := closed.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	f.end(t, "Follow when the store closed")
	if len(f.seqs) != 2 || len(f.errs) != 1 || !errors.Is(f.errs[0], store.ErrClosed) {
		t.Fatalf("follower of a closed store got %v, errors %v; want [1 2] then ErrClosed", f.seqs, f.errs)
	}
}

// Breaking out of Read or Follow releases what the read held: appends and
// Close still complete.
func testIteratorEarlyBreak(t *testing.T, su *suite) {
	s := su.newStore(t)
	t.Cleanup(func() { s.Close() })
	g := newGen(24)
	msgs := g.simple(600)
	for i := 0; i < len(msgs); i += 100 {
		appendOK(t, s, msgs[i:i+100]...)
	}
	for _, q := range []store.Query{{}, {RunID: msgs[0].RunID}, {TypePrefix: "task."}, {AfterSeq: 300}} {
		for e, err := range s.Read(t.Context(), q) {
			if err != nil {
				t.Fatal(err)
			}
			if e.Seq == 0 {
				t.Fatal("zero seq")
			}
			break
		}
		for e, err := range s.Follow(t.Context(), q) {
			if err != nil || e.Seq == 0 {
				t.Fatal(e.Seq, err)
			}
			break
		}
	}
	// Break out of a nested read in the middle of the outer one.
	n := 0
	for range s.Read(t.Context(), store.Query{}) {
		for range s.Read(t.Context(), store.Query{RunID: msgs[0].RunID}) {
			break
		}
		if n++; n == 300 {
			break
		}
	}
	within(t, 10*time.Second, "Append after early breaks", func() { appendOK(t, s, g.simple(3)...) })
	within(t, 10*time.Second, "Close after early breaks", func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
}
