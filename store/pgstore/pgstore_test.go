package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/pgstore"
	"github.com/clutchprotocol/clutch/store/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openStore(t, nil) }, storetest.Options{Reopen: reopen, Remover: true})
}

// Sequence numbers past PostgreSQL's bigint, given by a caller: nothing
// comes after one, everything comes before one.
func TestSeqBeyondBigint(t *testing.T) {
	s := openStore(t, nil)
	if _, err := s.Append(t.Context(), msgs(3)...); err != nil {
		t.Fatal(err)
	}
	for _, after := range []uint64{1<<63 - 1, 1 << 63, 1<<64 - 1} {
		for ev, err := range s.Read(t.Context(), store.Query{AfterSeq: after}) {
			t.Fatalf("Read after %d: seq %d, %v; want nothing", after, ev.Seq, err)
		}
	}
	// Follow would yield the events at once if it read them; nothing within
	// the bound is the pass.
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	for ev, err := range s.Follow(ctx, store.Query{AfterSeq: 1 << 63}) {
		if err != nil {
			break
		}
		t.Fatalf("Follow after 2^63: seq %d; want nothing", ev.Seq)
	}
	for _, before := range []uint64{1 << 63, 1<<64 - 1} {
		n := 0
		for _, err := range s.Runs(t.Context(), store.ListQuery{Before: before}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n != 1 {
			t.Fatalf("Runs before %d: %d runs, want 1", before, n)
		}
	}
}

// The store's sessions run without JIT compilation: its statements touch
// a few rows by index, and a compilation (milliseconds) that the planner
// starts on a high estimate cost more than the statement.
func TestSessionsWithoutJIT(t *testing.T) {
	s := openStore(t, nil)
	if v, err := pgstore.Setting(t.Context(), s, "jit"); err != nil || v != "off" {
		t.Fatalf("jit = %q, %v; want off", v, err)
	}
}
