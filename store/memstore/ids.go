package memstore

// idIndex is the dedup index of message ids: id → seq. Ids made by a ULID
// source (<prefix>_<26 characters>, as every id this module makes)
// carry the time they were made, and an append's new ids were made
// moments ago: they go to a small table per window of that time, so the
// table a new id is checked against is one that recent appends have kept
// in the cache, where one table (or 64) for every id of the store made
// that check a cache and TLB miss, under the store's lock (measured: the
// largest cost of the locked section). An id decides its own window, so a
// duplicate sent any time later finds the first. Other ids go to a
// hash-split index. Fingerprints taken by another id of the same window go
// to one exact map. The store's lock guards it. A window costs a map
// entry and a table of 8 slots and up: about 150 B for a store that
// appends once per 128 ms, nothing noticeable for a busy one.
type idIndex struct {
	windows map[uint64]*hashTable // by idWindow
	other   hashIndex             // ids without a ULID time
	exact   map[string]uint64     // ids whose fingerprint was taken in their window's table
	last    *hashTable            // the window of the latest id, and its number
	lastW   uint64
}

// newIDIndex returns an index whose ids without a ULID time go to a
// hashIndex of parts tables.
func newIDIndex(parts int) idIndex {
	return idIndex{windows: map[uint64]*hashTable{}, other: newHashIndex(parts), exact: map[string]uint64{}}
}

// idWindowShift sets the window of time whose ids share a table: 2^7 ms.
const idWindowShift = 7

// idWindow returns the window of id's ULID time, and false for an id that
// does not end in a ULID (26 characters of Crockford base32, the first at
// most '7'). It depends on the id alone.
func idWindow(id string) (uint64, bool) {
	if len(id) < 26 {
		return 0, false
	}
	u := id[len(id)-26:]
	var ms uint64
	for i := range 10 { // the 48-bit time; the other 16 characters are random
		d := crockford[u[i]]
		if d == 0xff || i == 0 && d > 7 {
			return 0, false
		}
		ms = ms<<5 | uint64(d)
	}
	for i := 10; i < 26; i++ {
		if crockford[u[i]] == 0xff {
			return 0, false
		}
	}
	return ms >> idWindowShift, true
}

// crockford maps the upper-case Crockford base32 digits to their values,
// anything else to 0xff.
var crockford = func() (t [256]byte) {
	for i := range t {
		t[i] = 0xff
	}
	for v, c := range "0123456789ABCDEFGHJKMNPQRSTVWXYZ" {
		t[c] = byte(v)
	}
	return t
}()

// table returns the table of window w, creating it if create.
func (x *idIndex) table(w uint64, create bool) *hashTable {
	if x.last != nil && x.lastW == w {
		return x.last
	}
	t := x.windows[w]
	if t == nil {
		if !create {
			return nil
		}
		t = &hashTable{}
		x.windows[w] = t
	}
	x.last, x.lastW = t, w
	return t
}

// lookup is hashIndex.lookup for an id with hash h and window w (ok:
// whether it has one).
func (x *idIndex) lookup(h, w uint64, ok bool, is func(v uint64) bool, key func() string) (v uint64, found, taken bool) {
	if !ok {
		return x.other.lookup(h, is, key)
	}
	if x.windows == nil {
		return 0, false, false // dropped by Close
	}
	return find(x.table(w, false), x.exact, h, is, key)
}

// put is hashIndex.put for an id with hash h and window w (ok: whether it
// has one).
func (x *idIndex) put(h, w uint64, ok, taken bool, key func() string, v uint64) {
	if !ok {
		x.other.put(h, taken, key, v)
		return
	}
	if putExact(x.exact, taken, key, v) {
		return
	}
	x.table(w, true).put(fingerprint(h), uint32(v))
}
