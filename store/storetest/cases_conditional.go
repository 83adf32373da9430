package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// The cases of store.Conditional, for a store that has it (they skip
// otherwise, or fail when Options.Conditional says the store must have
// it): a batch is stored only when its first message is new.

// conditional opens a fresh store and returns its Conditional, or skips.
// The upgrade is asserted on the store itself, never through Unwrap (see
// store.Conditional).
func (su *suite) conditional(t *testing.T) (store.Store, store.Conditional) {
	t.Helper()
	s := su.open(t)
	c, ok := s.(store.Conditional)
	if !ok {
		if su.opts.Conditional {
			t.Fatal("the store has no store.Conditional, and Options.Conditional says it must")
		}
		t.Skip("the store has no store.Conditional")
	}
	return s, c
}

// appendIfNewOK calls AppendIfNew and checks that it returns one result
// per message.
func appendIfNewOK(t *testing.T, c store.Conditional, msgs ...*protocol.Message) []store.AppendResult {
	t.Helper()
	res, err := c.AppendIfNew(t.Context(), msgs...)
	if err != nil {
		t.Fatalf("AppendIfNew: %v", err)
	}
	if len(res) != len(msgs) {
		t.Fatalf("AppendIfNew returned %d results for %d messages", len(res), len(msgs))
	}
	return res
}

// A batch whose first message is new is appended as Append appends it,
// a later duplicate inside it included; one whose first message is a
// duplicate, by id or by (run_id, idempotency_key), stores nothing: its
// first result names the stored event, the others are zero (not stored),
// and the next append takes the next seq.
func testConditionalAppend(t *testing.T, su *suite) {
	s, c := su.conditional(t)
	g := newGen(41)
	if res, err := c.AppendIfNew(t.Context()); err != nil || res != nil {
		t.Fatalf("AppendIfNew() = %v, %v; want nil, nil", res, err)
	}
	first := g.simple(3)
	first[0].IdempotencyKey = "charge-42"
	res := appendIfNewOK(t, c, first...)
	for i, r := range res {
		if want := (store.AppendResult{Seq: uint64(i + 1)}); r != want || !r.Stored() {
			t.Fatalf("new first message: result %d = %+v, want %+v", i, r, want)
		}
	}
	// A later duplicate in a batch whose first message is new is left
	// out on its own, as Append leaves it.
	mixed := g.simple(2)
	again := first[1].Clone()
	again.Reset()
	res = appendIfNewOK(t, c, mixed[0], again, mixed[1])
	want := []store.AppendResult{{Seq: 4}, {Seq: 2, Duplicate: true, DuplicateBy: store.DedupByID}, {Seq: 5}}
	for i := range want {
		if res[i] != want[i] {
			t.Fatalf("later duplicate: result %d = %+v, want %+v", i, res[i], want[i])
		}
	}

	last := uint64(5)
	byID := first[0].Clone()
	byID.Reset()
	byID.IdempotencyKey = ""
	byKey := g.simple(1)[0]
	byKey.RunID, byKey.IdempotencyKey = first[0].RunID, "charge-42"
	for _, tc := range []struct {
		name string
		dup  *protocol.Message
		rule store.DedupRule
	}{{"id", byID, store.DedupByID}, {"idempotency_key", byKey, store.DedupByIdempotencyKey}} {
		rest := g.simple(2)
		rest[1].IdempotencyKey = "rest-" + tc.name
		res := appendIfNewOK(t, c, tc.dup, rest[0], rest[1])
		if want := (store.AppendResult{Seq: 1, Duplicate: true, DuplicateBy: tc.rule}); res[0] != want || res[0].Stored() {
			t.Fatalf("first a duplicate by %s: result %+v, want %+v", tc.name, res[0], want)
		}
		for i, r := range res[1:] {
			if r != (store.AppendResult{}) || r.Stored() {
				t.Fatalf("first a duplicate by %s: result %d = %+v, want the zero result (not stored)", tc.name, i+1, r)
			}
		}
		if n := lastSeq(t, s); n != last {
			t.Fatalf("first a duplicate by %s: LastSeq = %d, want %d (nothing stored)", tc.name, n, last)
		}
		for _, m := range rest {
			if _, err := s.Get(t.Context(), m.ID); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("first a duplicate by %s: Get of a message left out: %v, want ErrNotFound", tc.name, err)
			}
		}
		if evs := readAll(t, s, store.Query{TaskID: rest[0].TaskID}); len(evs) != 0 {
			t.Fatalf("first a duplicate by %s: messages left out were indexed: %v", tc.name, seqsOf(evs))
		}
		checkSummaries(t, s) // the messages left out are in no summary
		// Left out, not remembered: they are new to a later append,
		// which takes the next seqs, with no gap.
		res = appendOK(t, s, rest...)
		if res[0] != (store.AppendResult{Seq: last + 1}) || res[1] != (store.AppendResult{Seq: last + 2}) {
			t.Fatalf("first a duplicate by %s: the messages left out, appended again: %+v, want seqs %d and %d", tc.name, res, last+1, last+2)
		}
		last += 2
	}
	evs := readAll(t, s, store.Query{})
	for i, e := range evs {
		if e.Seq != uint64(i+1) {
			t.Fatalf("read %v, want seqs 1…%d", seqsOf(evs), last)
		}
	}
	if uint64(len(evs)) != last {
		t.Fatalf("read %v, want seqs 1…%d", seqsOf(evs), last)
	}
	checkSummaries(t, s)
}

// Of concurrent conditional batches whose first messages share a run and
// idempotency key, exactly one is stored, whole; the others store
// nothing and name the stored one. The seqs stay contiguous.
func testConditionalConcurrent(t *testing.T, su *suite) {
	s, c := su.conditional(t)
	g := newGen(42)
	const callers, perBatch = 16, 3
	run := g.ids.RunID()
	batches := make([][]*protocol.Message, callers)
	for i := range batches {
		batches[i] = g.simple(perBatch)
		for _, m := range batches[i] {
			m.RunID = run
		}
		batches[i][0].IdempotencyKey = "once"
		// The rest of each batch is new on its own: only the condition
		// keeps it out.
		batches[i][1].IdempotencyKey = fmt.Sprintf("rest-%d", i)
	}
	results := make([][]store.AppendResult, callers)
	errs := make([]error, callers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range batches {
		wg.Go(func() {
			<-start
			results[i], errs[i] = c.AppendIfNew(t.Context(), batches[i]...)
		})
	}
	close(start)
	wg.Wait()
	winner := -1
	for i, res := range results {
		if errs[i] != nil {
			t.Fatalf("AppendIfNew %d: %v", i, errs[i])
		}
		if res[0].Stored() {
			if winner >= 0 {
				t.Fatalf("batches %d and %d were both stored", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("no batch was stored")
	}
	w := results[winner]
	for j, r := range w {
		if r != (store.AppendResult{Seq: w[0].Seq + uint64(j)}) {
			t.Fatalf("the stored batch: result %d = %+v, want seq %d", j, r, w[0].Seq+uint64(j))
		}
	}
	for i, res := range results {
		if i == winner {
			continue
		}
		if want := (store.AppendResult{Seq: w[0].Seq, Duplicate: true, DuplicateBy: store.DedupByIdempotencyKey}); res[0] != want {
			t.Fatalf("batch %d: first result %+v, want %+v", i, res[0], want)
		}
		for j, r := range res[1:] {
			if r != (store.AppendResult{}) {
				t.Fatalf("batch %d: result %d = %+v, want the zero result (not stored)", i, j+1, r)
			}
		}
	}
	checkSummaries(t, s)
	evs := readAll(t, s, store.Query{})
	if len(evs) != perBatch || lastSeq(t, s) != perBatch {
		t.Fatalf("the store holds %v, want one batch of %d", seqsOf(evs), perBatch)
	}
	for j, e := range evs {
		if e.Seq != uint64(j+1) {
			t.Fatalf("seqs %v, want 1…%d", seqsOf(evs), perBatch)
		}
		m, err := e.Message()
		if err != nil || m.ID != batches[winner][j].ID {
			t.Fatalf("event %d is %v (%v), want message %d of the stored batch", e.Seq, m, err, j)
		}
	}
}
