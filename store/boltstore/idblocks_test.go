package boltstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// keyedIDs returns ids as sorted keyed entries, the seq of ids[i] i+1.
func keyedIDs(ids []string) []keyed {
	slices.Sort(ids)
	kv := make([]keyed, len(ids))
	for i, id := range ids {
		kv[i] = keyed{id, seqKey(uint64(i + 1))}
	}
	return kv
}

// A block gives back its ids and seqs, in order, whatever the ids share.
func TestIDBlockRoundTrip(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	for range 200 {
		n := 1 + rng.IntN(idBlockLen)
		set := map[string]bool{}
		for len(set) < n {
			// Shared prefixes, one-byte ids, long ids, ids that are
			// prefixes of others.
			id := []byte("msg_01J")[:rng.IntN(8)]
			for range rng.IntN(6) {
				id = append(id, "ab0z\xff"[rng.IntN(5)])
			}
			if len(id) > 0 {
				set[string(id)] = true
			}
		}
		kv := keyedIDs(slices.Collect(func(yield func(string) bool) {
			for id := range set {
				if !yield(id) {
					return
				}
			}
		}))
		v := appendIDBlock(nil, kv)
		var got []keyed
		if err := eachInBlock([]byte(kv[0].key), v, func(id []byte, seq uint64) bool {
			got = append(got, keyed{string(id), seqKey(seq)})
			return true
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.EqualFunc(got, kv, func(a, b keyed) bool { return a.key == b.key && bytes.Equal(a.val, b.val) }) {
			t.Fatalf("block of %q gave %q", kv, got)
		}
	}
}

// lookupID finds every id in a file of blocks and single keys, and no
// other: before, between and after the blocks, inside a block's range,
// and a single key inside a block's range.
func TestLookupID(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "ids.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var all []string
	for i := range 300 {
		all = append(all, fmt.Sprintf("msg_%04d", 2*i+10)) // even numbers: odd ones are absent
	}
	kv := keyedIDs(all)
	singles := map[string]uint64{"msg_0011": 1001, "msg_0301": 1002, "msg_0000": 1003, "zzz": 1004}
	err = db.Update(func(tx *bolt.Tx) error {
		ids, _ := tx.CreateBucket(bucketIDs)
		blocks, _ := tx.CreateBucket(bucketIDBlocks)
		for rest := kv; len(rest) > 0; {
			n := min(len(rest), idBlockLen)
			if err := blocks.Put([]byte(rest[0].key), appendIDBlock(nil, rest[:n])); err != nil {
				return err
			}
			rest = rest[n:]
		}
		for id, seq := range singles {
			if err := ids.Put([]byte(id), seqKey(seq)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	db.View(func(tx *bolt.Tx) error {
		ids, blocks := tx.Bucket(bucketIDs), tx.Bucket(bucketIDBlocks)
		for i, e := range kv {
			if seq, ok, err := lookupKey(ids, blocks, []byte(e.key)); err != nil || !ok || seq != uint64(i+1) {
				t.Errorf("lookupKey(%s) = %d, %v, %v; want %d", e.key, seq, ok, err, i+1)
			}
		}
		for id, want := range singles {
			if seq, ok, err := lookupKey(ids, blocks, []byte(id)); err != nil || !ok || seq != want {
				t.Errorf("lookupKey(%s) = %d, %v, %v; want %d", id, seq, ok, err, want)
			}
		}
		for _, id := range []string{"a", "msg_", "msg_0009", "msg_0013", "msg_0139", "msg_0140x", "msg_0609", "msg_9999", "z"} {
			if seq, ok, err := lookupKey(ids, blocks, []byte(id)); err != nil || ok {
				t.Errorf("lookupKey(%s) = %d, %v, %v; want not found", id, seq, ok, err)
			}
		}
		last, err := lastKey(ids, blocks)
		if err != nil || string(last) != "zzz" {
			t.Errorf("lastID = %q, %v; want zzz", last, err)
		}
		n, err := checkIDBlocks(t.Context(), blocks)
		if err != nil || n != uint64(len(kv)) {
			t.Errorf("checkIDBlocks = %d, %v; want %d", n, err, len(kv))
		}
		return nil
	})
}

// A damaged block is reported, never read as ids it does not hold.
func TestIDBlockDamage(t *testing.T) {
	kv := keyedIDs([]string{"msg_a", "msg_b", "msg_c"})
	v := appendIDBlock(nil, kv)
	for name, bad := range map[string][]byte{
		"empty":              {},
		"truncated":          v[:len(v)-2],
		"shared past the id": append(binary.AppendUvarint(nil, 1), 9, 1, 'x', 2),
		"repeated id":        append(binary.AppendUvarint(nil, 1), 5, 0, 2),
		"decreasing":         append(binary.AppendUvarint(nil, 1), 4, 1, '0', 2),
	} {
		err := eachInBlock([]byte("msg_a"), bad, func([]byte, uint64) bool { return true })
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}

// Decoding a block from the file never panics, and what it yields
// increases.
func FuzzIDBlock(f *testing.F) {
	f.Add([]byte("msg_a"), appendIDBlock(nil, keyedIDs([]string{"msg_a", "msg_b", "msg_bc", "n"})))
	f.Add([]byte("x"), []byte{})
	f.Add([]byte(""), []byte{1, 0, 0, 2})
	f.Add([]byte("ab"), []byte{0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, first, v []byte) {
		var prev []byte
		_ = eachInBlock(first, v, func(id []byte, _ uint64) bool {
			if prev != nil && bytes.Compare(id, prev) <= 0 {
				t.Fatalf("%q after %q", id, prev)
			}
			prev = append(prev[:0], id...)
			return true
		})
	})
}
