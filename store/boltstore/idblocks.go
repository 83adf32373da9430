package boltstore

import (
	"bytes"
	"encoding/binary"

	bolt "go.etcd.io/bbolt"
)

// The two indexes by key — ids, and idempotency keys (their idem bucket
// keys) — each in two buckets:
//
//	ids, idem                   key → seq (uint64 BE): one key each
//	ids.blocks, idem.blocks     first key → block: up to idBlockLen keys
//
// An index flush writes the keys that sort after every key of their index
// in the file — all of them when they are time-ordered, as the ids and
// keys of protocol.NewIDs are — as blocks of idBlockLen consecutive keys,
// one put per block instead of one per key, and the others (a key that
// sorts before the index's last) one key each. The blocks' ranges never
// overlap: each holds keys past all those of the blocks before it. A key
// is found by a lookup among the single keys, then in the one block whose
// range could hold it: the last block whose first key is not after it.
//
// A block's value is the seq of its first key (the block's key), then for
// each next key, in increasing order, uvarint(bytes shared with the key
// before) ‖ uvarint(len(rest)) ‖ rest ‖ uvarint(seq).
var (
	bucketIDBlocks   = []byte("ids.blocks")
	bucketIdemBlocks = []byte("idem.blocks")
	blockBuckets     = [...][]byte{bucketIDBlocks, bucketIdemBlocks}
)

// idBlockLen is the most keys a block holds: a lookup decodes at most
// this many, a flush writes 1/idBlockLen puts per key.
const idBlockLen = 64

// appendIDBlock appends the value of the block of ids (sorted, distinct;
// ids[0].key is its key).
func appendIDBlock(dst []byte, ids []keyed) []byte {
	dst = binary.AppendUvarint(dst, binary.BigEndian.Uint64(ids[0].val))
	prev := ids[0].key
	for _, e := range ids[1:] {
		n := 0
		for n < len(prev) && n < len(e.key) && prev[n] == e.key[n] {
			n++
		}
		dst = binary.AppendUvarint(dst, uint64(n))
		dst = binary.AppendUvarint(dst, uint64(len(e.key)-n))
		dst = append(dst, e.key[n:]...)
		dst = binary.AppendUvarint(dst, binary.BigEndian.Uint64(e.val))
		prev = e.key
	}
	return dst
}

// eachInBlock calls f with each id of the block (first, v) and its seq,
// in order, until f returns false. The id passed to f is valid only
// during the call. A block that does not decode, or whose ids do not
// increase, is corrupt.
func eachInBlock(first, v []byte, f func(id []byte, seq uint64) bool) error {
	bad := func(after []byte) error {
		return corrupt("ids block %q: malformed after %q", clip(first), clip(after))
	}
	seq, k := binary.Uvarint(v)
	if k <= 0 {
		return bad(nil)
	}
	v = v[k:]
	prev := append(make([]byte, 0, len(first)+16), first...)
	cur := make([]byte, 0, cap(prev))
	if !f(prev, seq) {
		return nil
	}
	for len(v) > 0 {
		shared, k1 := binary.Uvarint(v)
		if k1 <= 0 || shared > uint64(len(prev)) {
			return bad(prev)
		}
		v = v[k1:]
		n, k2 := binary.Uvarint(v)
		if k2 <= 0 || n > uint64(len(v)-k2) {
			return bad(prev)
		}
		cur = append(append(cur[:0], prev[:shared]...), v[k2:k2+int(n)]...)
		v = v[k2+int(n):]
		s, k3 := binary.Uvarint(v)
		if k3 <= 0 {
			return bad(prev)
		}
		v = v[k3:]
		if bytes.Compare(cur, prev) <= 0 {
			return corrupt("ids block %q: %q does not follow %q", clip(first), clip(cur), clip(prev))
		}
		prev, cur = cur, prev
		if !f(prev, s) {
			return nil
		}
	}
	return nil
}

// lookupKey returns the seq an index by key (single keys and blocks)
// gives id: the single keys, then the block that could hold it.
func lookupKey(single, blocks *bolt.Bucket, id []byte) (uint64, bool, error) {
	if v := single.Get(id); v != nil {
		seq, err := parseSeqKey(v)
		return seq, err == nil, err
	}
	c := blocks.Cursor()
	k, v := c.Seek(id)
	if k == nil {
		k, v = c.Last()
	} else if !bytes.Equal(k, id) {
		k, v = c.Prev()
	}
	if k == nil {
		return 0, false, nil
	}
	var seq uint64
	var found bool
	err := eachInBlock(k, v, func(e []byte, s uint64) bool {
		switch bytes.Compare(e, id) {
		case 0:
			seq, found = s, true
			return false
		case 1:
			return false // past id: not in the block
		}
		return true
	})
	return seq, found && err == nil, err
}

// lastKey returns the largest key of an index by key (nil when it is
// empty).
func lastKey(single, blocks *bolt.Bucket) ([]byte, error) {
	last, _ := single.Cursor().Last()
	k, v := blocks.Cursor().Last()
	if k == nil {
		return bytes.Clone(last), nil
	}
	var end []byte
	if err := eachInBlock(k, v, func(id []byte, _ uint64) bool { end = append(end[:0], id...); return true }); err != nil {
		return nil, err
	}
	if bytes.Compare(end, last) > 0 {
		return end, nil
	}
	return bytes.Clone(last), nil
}
