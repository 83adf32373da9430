package memstore

import (
	"hash/maphash"
	"sync/atomic"
)

// table is a hash index from keys — event ids, the values of an index —
// to numbers: seqs, entry numbers. It holds each key's hash and number
// only, 16 bytes and no pointer per slot; the key itself is kept where its
// number leads (the event's bytes, the entry), and the caller says whether
// a number's key is the one looked up (eq), which it is asked only for a
// number whose full 64-bit hash matches. The caller hashes keys (hash)
// before it locks the store, and reads there the slot a lookup will start
// from (touch): the lock is then held for a probe that finds its slots in
// the cache, not for the wait for memory, and the reads of a batch's
// slots wait for memory together.
//
// The table is split into parts by the top bits of the hash, each an
// open-addressing table (linear probing) at most half full that doubles
// on its own: a growth moves the entries of one part only, so that no
// append waits for the whole table to be copied. Keys are never removed.
type table struct {
	parts [tableParts]part
}

const tableParts = 256 // the top 8 bits of a hash choose the part

// A part is read and changed under the store's lock, except by touch,
// which reads slot hashes through view (slot hashes are therefore stored
// atomically once the slots are in view) and makes the slots of the
// part's next growth (want, next).
type part struct {
	slots []slot                 // a power of two long, or nil
	n     int                    // slots in use
	view  atomic.Pointer[[]slot] // slots, for touch
	want  atomic.Int64           // how many slots the next growth needs, once prepare should make them
	next  atomic.Pointer[[]slot] // what prepare made
}

// prepareFrom is the fewest slots of a part whose next slots prepare
// makes: smaller growths are cheap enough under the lock.
const prepareFrom = 1024

// slot is an entry of a part: h is 0 when the slot is empty (hash never
// returns 0).
type slot struct{ h, v uint64 }

// touch reads, without the store's lock, the hash in the slot where a
// lookup of h starts, so that it is in the cache when the lookup runs.
// (The compiler never drops an atomic load, even of a value not used.)
func (t *table) touch(h uint64) {
	p := &t.parts[h>>56]
	if p.want.Load() != 0 {
		p.prepare()
	}
	if v := p.view.Load(); v != nil {
		s := *v
		atomic.LoadUint64(&s[h&uint64(len(s)-1)].h)
	}
}

// prepare makes the slots of the part's next growth and writes to each
// page of them, without the store's lock, so that grow, with the lock
// held, writes to memory the kernel has already given the process. Of
// the callers that find the part wanting them, one makes them.
func (p *part) prepare() {
	n := p.want.Swap(0)
	if n == 0 {
		return
	}
	s := make([]slot, n)
	for i := 0; i < len(s); i += 4096 / 16 { // a slot is 16 bytes
		s[i].h = 0
	}
	p.next.Store(&s)
}

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
	if 8*p.n == 3*len(p.slots) && len(p.slots) >= prepareFrom {
		p.want.Store(int64(2 * len(p.slots))) // the next touch makes them
	}
}

// place puts (h, v) in the first empty slot from h's; there is one.
func (p *part) place(h, v uint64) {
	mask := uint64(len(p.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		if s := &p.slots[i]; s.h == 0 {
			s.v = v
			atomic.StoreUint64(&s.h, h) // touch may be reading it
			return
		}
	}
}

// grow doubles the part's slots.
func (p *part) grow() {
	old := p.slots
	n := max(8, 2*len(old))
	if next := p.next.Swap(nil); next != nil && len(*next) == n {
		p.slots = *next
	} else {
		p.slots = make([]slot, n)
	}
	for _, s := range old {
		if s.h != 0 {
			p.place(s.h, s.v)
		}
	}
	view := p.slots
	p.view.Store(&view)
}

// reset empties the table.
func (t *table) reset() {
	for i := range t.parts {
		p := &t.parts[i]
		p.view.Store(nil)
		p.want.Store(0)
		p.next.Store(nil)
		p.slots, p.n = nil, 0
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
