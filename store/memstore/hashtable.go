package memstore

import "math/bits"

// hashTable maps 32-bit fingerprints to non-zero 32-bit values: an
// open-addressing table with linear probing in one pointer-free array of
// 8-byte slots. Against a Go map of the same content it does one memory
// access where the map does two or three (directory, table, group) — the
// dominant cost of an append to a large store, since every new key lands in
// a cold cache line — and its slots are half the size of a 64-bit hash and
// value, so a store of millions of events touches half the memory (each new
// page is a page fault) and half the TLB entries. It is at most half full,
// so that looking up an absent fingerprint (the common case: a new id)
// probes 2.5 slots on average. Growth doubles the array and reinserts
// everything at once (about 10 ms per million entries), a pause the
// in-memory store accepts. It is not safe for concurrent use.
//
// Two keys may share a fingerprint; hashIndex, which picks the fingerprint
// from a 64-bit hash, tells them apart.
type hashTable struct {
	slots []hashSlot // a power of two long
	shift uint       // 64 - log2(len(slots))
	n     int        // slots in use
}

type hashSlot struct {
	fp uint32
	v  uint32 // 0: empty
}

// hashTableMin is the size of a table's first array: small, because a
// store makes a table per 128 ms of message ids (see idIndex), and
// sparse appends leave most of them nearly empty.
const hashTableMin = 8

// home is the first slot fp probes: fp times the golden ratio, top bits.
func (t *hashTable) home(fp uint32) uint64 { return (uint64(fp) * 0x9E3779B97F4A7C15) >> t.shift }

// get returns the value of fp, or 0.
func (t *hashTable) get(fp uint32) uint32 {
	if len(t.slots) == 0 {
		return 0
	}
	mask := uint64(len(t.slots) - 1)
	for i := t.home(fp); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.v == 0 {
			return 0
		}
		if s.fp == fp {
			return s.v
		}
	}
}

// put sets the value of fp, which get does not find, to v (≠ 0).
func (t *hashTable) put(fp, v uint32) {
	if (t.n+1)*2 > len(t.slots) { // load factor at most 1/2: a miss probes 2.5 slots on average
		t.grow()
	}
	t.insert(fp, v)
	t.n++
}

func (t *hashTable) insert(fp, v uint32) {
	mask := uint64(len(t.slots) - 1)
	i := t.home(fp)
	for t.slots[i].v != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = hashSlot{fp, v}
}

func (t *hashTable) grow() {
	old := t.slots
	n := max(2*len(old), hashTableMin)
	t.slots = make([]hashSlot, n)
	t.shift = uint(64 - bits.TrailingZeros(uint(n)))
	for _, s := range old {
		if s.v != 0 {
			t.insert(s.fp, s.v)
		}
	}
}
