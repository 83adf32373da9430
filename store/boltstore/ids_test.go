package boltstore_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	bolt "go.etcd.io/bbolt"
)

// checkIDs asserts that every message is found by Get at seq i+1, is a
// duplicate by id when appended again, and a copy of it under a new id a
// duplicate by idempotency key.
func checkIDs(t *testing.T, s *boltstore.Store, msgs []*protocol.Message) {
	t.Helper()
	for i, m := range msgs {
		ev, err := s.Get(t.Context(), m.ID)
		if err != nil || ev.Seq != uint64(i+1) {
			t.Fatalf("Get(%s) = %d, %v; want seq %d", m.ID, ev.Seq, err, i+1)
		}
	}
	res, err := s.Append(t.Context(), msgs...)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !r.Duplicate || r.Seq != uint64(i+1) || r.DuplicateBy != store.DedupByID {
			t.Fatalf("append again of %s: %+v; want a duplicate of %d", msgs[i].ID, r, i+1)
		}
	}
	copies := make([]*protocol.Message, len(msgs))
	for i, m := range msgs {
		c := m.Clone()
		c.ID += "-copy"
		c.Reset()
		copies[i] = c
	}
	if res, err = s.Append(t.Context(), copies...); err != nil {
		t.Fatal(err)
	}
	for i, r := range res {
		if !r.Duplicate || r.Seq != uint64(i+1) || r.DuplicateBy != store.DedupByIdempotencyKey {
			t.Fatalf("a copy of %s under a new id: %+v; want a duplicate of %d by key", msgs[i].ID, r, i+1)
		}
	}
	if err := s.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
}

// Ids and idempotency keys that are not time-ordered (clients choose
// them) are found and deduplicated like time-ordered ones, across many
// index flushes, before and after reopening.
func TestIDsOutOfOrder(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 2))
	msgs := messages(t, 600)
	ids, keys := make([]string, len(msgs)), make([]string, len(msgs))
	for i, m := range msgs {
		ids[i], keys[i] = m.ID, m.IdempotencyKey
	}
	// Runs of ascending ids, shuffled runs, and in the second half runs
	// that go back in time, as several clients give.
	for _, list := range [][]string{ids, keys} {
		for i := 0; i < len(list); i += 50 {
			if rng.IntN(2) == 0 {
				w := list[i:min(i+50, len(list))]
				rng.Shuffle(len(w), func(a, b int) { w[a], w[b] = w[b], w[a] })
			}
		}
		slices.Reverse(list[len(list)/2:])
	}
	for i, m := range msgs {
		m.ID, m.IdempotencyKey = ids[i], keys[i]
		m.Reset()
	}
	path := filepath.Join(t.TempDir(), "events.db")
	opts := &boltstore.Options{IndexBatch: 16, NoSync: true}
	s := openT(t, path, opts)
	for i := 0; i < len(msgs); i += 7 {
		if _, err := s.Append(t.Context(), msgs[i:min(i+7, len(msgs))]...); err != nil {
			t.Fatal(err)
		}
	}
	checkIDs(t, s, msgs)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openT(t, path, opts)
	checkIDs(t, s, msgs)
	s.Close()
	// Both kinds of entries were written: blocks and single keys.
	viewFile(t, path, func(tx *bolt.Tx) {
		for _, names := range [][2]string{{"ids", "ids.blocks"}, {"idem", "idem.blocks"}} {
			singles, blocks := tx.Bucket([]byte(names[0])).Stats().KeyN, tx.Bucket([]byte(names[1])).Stats().KeyN
			if singles < 100 || blocks < 5 {
				t.Errorf("%d single keys in %s and %d blocks: the test does not mix them", singles, names[0], blocks)
			}
		}
	})
}

// entryEnd returns where entry n (0 the block's first, whose seq opens
// the value) of an ids block value ends, decoding the format of
// idblocks.go on its own.
func entryEnd(v []byte, n int) int {
	_, off := binary.Uvarint(v)
	for range n {
		_, a := binary.Uvarint(v[off:])
		l, b := binary.Uvarint(v[off+a:])
		_, c := binary.Uvarint(v[off+a+b+int(l):])
		off += a + b + int(l) + c
	}
	return off
}

// A damaged block of the ids index is found by Check. A Get that reaches
// a block cut inside an entry fails with ErrCorrupt; one cut between
// entries reads as shorter (the package doc: index damage may read as
// ErrNotFound, which Check reports), and never gives another event.
func TestDamagedIDBlock(t *testing.T) {
	for _, c := range []struct {
		name string
		cut  func(v []byte) []byte
		get  []error // what Get of an id past the cut may give
	}{
		{"inside an entry", func(v []byte) []byte { return v[:entryEnd(v, 0)+1] }, []error{boltstore.ErrCorrupt}},
		{"between entries", func(v []byte) []byte { return v[:entryEnd(v, 10)] }, []error{boltstore.ErrCorrupt, store.ErrNotFound}},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.db")
			s := openT(t, path, &boltstore.Options{IndexBatch: 100, NoSync: true})
			msgs := messages(t, 100)
			if _, err := s.Append(t.Context(), msgs...); err != nil {
				t.Fatal(err)
			}
			s.Close()
			id := []byte(msgs[40].ID)
			editFile(t, path, func(tx *bolt.Tx) error {
				b := tx.Bucket([]byte("ids.blocks"))
				cur := b.Cursor()
				k, v := cur.Seek(id)
				if !bytes.Equal(k, id) {
					k, v = cur.Prev()
				}
				if k == nil || bytes.Equal(k, id) {
					t.Fatalf("the id is not inside a block (block %q)", k)
				}
				return b.Put(bytes.Clone(k), bytes.Clone(c.cut(v)))
			})
			s = openT(t, path, nil)
			if err := s.Check(t.Context()); !errors.Is(err, boltstore.ErrCorrupt) {
				t.Fatalf("Check: %v, want ErrCorrupt", err)
			}
			_, err := s.Get(t.Context(), msgs[40].ID)
			if !slices.ContainsFunc(c.get, func(want error) bool { return errors.Is(err, want) }) {
				t.Fatalf("Get of an id past the cut: %v, want one of %v", err, c.get)
			}
		})
	}
}
