package memstore

import "hash/maphash"

// table is a hash index from keys — event ids, the values of an index —
// to numbers: seqs, entry numbers. It holds each key's hash and number
// only, 16 bytes and no pointer per slot; the key itself is kept where its
// number leads (the event's bytes, the entry), and the caller says whether
// a number's key is the one looked up (eq), which it is asked only for a
// number whose full 64-bit hash matches. The caller hashes keys (hash)
// before it locks the store, so the lock is held for the probe alone.
//
// The table is split into parts by the top bits of the hash, each an
// open-addressing table (linear probing) at most half full that doubles
// on its own: a growth moves the entries of one part only, so that no
// append waits for the whole table to be copied. Keys are never removed.
type table struct {
	parts [tableParts]part
}

const tableParts = 256 // the top 8 bits of a hash choose the part

type part struct {
	slots []slot // a power of two long, or nil
	n     int    // slots in use
}

// slot is an entry of a part: h is 0 when the slot is empty (hash never
// returns 0).
type slot struct{ h, v uint64 }

// hash is the hash of key under seed, never 0.
func hash(seed maphash.Seed, key string) uint64 {
	if h := maphash.String(seed, key); h != 0 {
		return h
	}
	return 1
}

// find returns the number of the key whose hash is h, eq telling the
// key's number from those of other keys with the same hash.
func (t *table) find(h uint64, eq func(v uint64) bool) (uint64, bool) {
	p := &t.parts[h>>56]
	if p.slots == nil {
		return 0, false
	}
	mask := uint64(len(p.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &p.slots[i]
		if s.h == 0 {
			return 0, false
		}
		if s.h == h && eq(s.v) {
			return s.v, true
		}
	}
}

// put adds the number v of a key whose hash is h; the key is not in the
// table.
func (t *table) put(h, v uint64) {
	p := &t.parts[h>>56]
	if 2*(p.n+1) > len(p.slots) {
		p.grow()
	}
	p.n++
	p.place(h, v)
}

// place puts (h, v) in the first empty slot from h's; there is one.
func (p *part) place(h, v uint64) {
	mask := uint64(len(p.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		if s := &p.slots[i]; s.h == 0 {
			*s = slot{h, v}
			return
		}
	}
}

// grow doubles the part's slots.
func (p *part) grow() {
	old := p.slots
	p.slots = make([]slot, max(8, 2*len(old)))
	for _, s := range old {
		if s.h != 0 {
			p.place(s.h, s.v)
		}
	}
}

// each calls f with every number in the table, in no particular order.
func (t *table) each(f func(v uint64)) {
	for i := range t.parts {
		for _, s := range t.parts[i].slots {
			if s.h != 0 {
				f(s.v)
			}
		}
	}
}
