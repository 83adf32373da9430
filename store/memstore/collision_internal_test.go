package memstore

import (
	"context"
	"errors"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// Hash collisions cannot be provoked through the public API (64-bit
// seeded hashes), so these tests force them: two values with the same hash
// must still get their own list and seq.

func TestKeyShardCollision(t *testing.T) {
	s := openStore(t, nil)
	sh := &s.shards[0]
	const h = 42
	la, _ := s.newList(0, "run_a")
	lb, _ := s.newList(0, "run_b")
	sh.put(0, h, false, "run_a", la)
	_, ok, taken := sh.find(s, 0, h, "run_b")
	if ok {
		t.Fatal("run_b found under run_a's hash")
	}
	sh.put(0, h, taken, "run_b", lb)
	for v, want := range map[string]uint32{"run_a": la, "run_b": lb} {
		if l, ok, _ := sh.find(s, 0, h, v); !ok || l != want {
			t.Errorf("find(%s) = %d, %v; want %d", v, l, ok, want)
		}
	}
	if _, ok, _ := sh.find(s, 1, h, "run_a"); ok {
		t.Error("a run id found in the thread index")
	}
}

// indexOps are the lookup and put of an index under test.
type indexOps struct {
	lookup func(h uint64, is func(uint64) bool, key func() string) (uint64, bool, bool)
	put    func(h uint64, taken bool, key func() string, v uint64)
	exact  func() int // keys in the exact map
}

// collide puts msg_a under hash ha, then msg_b under hb, which collides
// with ha in the index (same hash, or same table and fingerprint): msg_b
// must see the fingerprint taken, go to the exact map, and both keys must
// then be found with their own values.
func collide(t *testing.T, x indexOps, ha, hb uint64) {
	t.Helper()
	stored := map[uint64]string{}
	is := func(key string) func(uint64) bool { return func(seq uint64) bool { return stored[seq] == key } }
	if _, found, taken := x.lookup(ha, is("msg_a"), func() string { return "msg_a" }); found || taken {
		t.Fatal("empty index found something")
	}
	x.put(ha, false, func() string { return "msg_a" }, 1)
	stored[1] = "msg_a"
	_, found, taken := x.lookup(hb, is("msg_b"), func() string { return "msg_b" })
	if found || !taken {
		t.Fatalf("msg_b: found %v taken %v", found, taken)
	}
	x.put(hb, taken, func() string { return "msg_b" }, 2)
	stored[2] = "msg_b"
	if n := x.exact(); n != 1 {
		t.Fatalf("%d keys in the exact map, want 1", n)
	}
	for key, c := range map[string]struct{ h, seq uint64 }{"msg_a": {ha, 1}, "msg_b": {hb, 2}} {
		if seq, found, _ := x.lookup(c.h, is(key), func() string { return key }); !found || seq != c.seq {
			t.Errorf("lookup(%s) = %d, %v; want %d", key, seq, found, c.seq)
		}
	}
}

// The hash-split index: two keys of one hash, and two keys whose hashes
// differ but pick the same table and share the fingerprint it keeps.
func TestDedupIndexCollision(t *testing.T) {
	for name, c := range map[string]struct{ ha, hb uint64 }{
		"same hash":        {7, 7},
		"same fingerprint": {uint64(0xabcd)<<32 | 5, uint64(0xabcd)<<32 | (5 + dedupParts)},
	} {
		t.Run(name, func(t *testing.T) {
			d := newHashIndex(dedupParts)
			collide(t, indexOps{lookup: d.lookup, put: d.put, exact: func() int { return len(d.exact) }}, c.ha, c.hb)
		})
	}
}

// Past the most events the indexes can number, Append fails with
// ErrTooLarge and stores nothing of the batch.
func TestTooManyEvents(t *testing.T) {
	defer func(n uint64) { maxEvents = n }(maxEvents)
	maxEvents = 3
	s := openStore(t, nil)
	ctx := context.Background()
	ids := protocol.NewIDs(nil)
	a := ids.NewMessage(protocol.TypeChatMessage, "agent:a")
	b, c := ids.Reply(a, protocol.TypeChatMessage, "agent:b"), ids.Reply(a, protocol.TypeChatMessage, "agent:c")
	if _, err := s.Append(ctx, a, b); err != nil {
		t.Fatal(err)
	}
	d := ids.Reply(a, protocol.TypeChatMessage, "agent:d")
	if _, err := s.Append(ctx, c, d); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("a batch past the limit: %v", err)
	}
	if n, _ := s.LastSeq(ctx); n != 2 {
		t.Fatalf("last seq %d after a refused batch, want 2", n)
	}
	if res, err := s.Append(ctx, c); err != nil || res[0].Seq != 3 {
		t.Fatalf("the last event that fits: %v %v", res, err)
	}
}

// Past the last list number an append with a new attribute value fails
// with ErrTooLarge and stores nothing; values already known still work.
func TestTooManyKeys(t *testing.T) {
	s := openStore(t, nil)
	ctx := context.Background()
	ids := protocol.NewIDs(nil)
	known := ids.NewMessage(protocol.TypeChatMessage, "agent:a")
	if _, err := s.Append(ctx, known); err != nil {
		t.Fatal(err)
	}
	s.nl.Store(maxListChunks * listChunk)
	fresh := ids.NewMessage(protocol.TypeChatMessage, "agent:a")
	if _, err := s.Append(ctx, fresh); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("append with new ids past the limit: %v", err)
	}
	again := ids.Reply(known, protocol.TypeChatMessage, "agent:a")
	if res, err := s.Append(ctx, again); err != nil || res[0].Seq != 2 {
		t.Fatalf("append with known ids: %v %v", res, err)
	}
}

// openStore returns a new store, closed when the test ends.
func openStore(t *testing.T, opts *Options) *Store {
	t.Helper()
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
