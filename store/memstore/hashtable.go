package memstore

import "math/bits"

// hashTable maps 64-bit hashes to non-zero values: an open-addressing table
// with linear probing in one pointer-free array. Against a Go map of the
// same content it does one memory access where the map does two or three
// (directory, table, group) — the dominant cost of an append to a large
// store, since every new key lands in a cold cache line. It is at most half
// full, so that looking up an absent hash (the common case: a new id)
// probes 2.5 slots on average. Growth doubles the array and reinserts
// everything at once (about 10 ms per million entries), a pause the
// in-memory store accepts. It is not safe for concurrent use.
type hashTable struct {
	slots []hashSlot // a power of two long
	shift uint       // 64 - log2(len(slots))
	n     int        // slots in use
}

type hashSlot struct {
	h uint64
	v uint64 // 0: empty
}

const hashTableMin = 64

// home is the first slot h probes: the top bits of h times the golden
// ratio, which do not depend on the low bits a caller may have used to
// pick this table (the key shards do).
func (t *hashTable) home(h uint64) uint64 { return (h * 0x9E3779B97F4A7C15) >> t.shift }

// get returns the value of h, or 0.
func (t *hashTable) get(h uint64) uint64 {
	if len(t.slots) == 0 {
		return 0
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.home(h); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.v == 0 {
			return 0
		}
		if s.h == h {
			return s.v
		}
	}
}

// put sets the value of h, which get does not find, to v (≠ 0).
func (t *hashTable) put(h, v uint64) {
	if (t.n+1)*2 > len(t.slots) { // load factor at most 1/2: a miss probes 2.5 slots on average
		t.grow()
	}
	t.insert(h, v)
	t.n++
}

func (t *hashTable) insert(h, v uint64) {
	mask := uint64(len(t.slots) - 1)
	i := t.home(h)
	for t.slots[i].v != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = hashSlot{h, v}
}

func (t *hashTable) grow() {
	old := t.slots
	n := max(2*len(old), hashTableMin)
	t.slots = make([]hashSlot, n)
	t.shift = uint(64 - bits.TrailingZeros(uint(n)))
	for _, s := range old {
		if s.v != 0 {
			t.insert(s.h, s.v)
		}
	}
}
