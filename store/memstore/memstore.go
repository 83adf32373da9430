package memstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"hash/maphash"
	"iter"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/driver"
)

// Options configures a Store. Nil means defaults; zero fields take
// defaults.
type Options struct {
	// Clock gives event times; time.Now when nil. Tests pass a fixed clock
	// for reproducible events. Concurrent Appends call it at the same time,
	// without the store locked, so it must be safe for concurrent use. An
	// event is given the latest time read by any Append up to its own, so
	// times never decrease along seqs.
	Clock func() time.Time
	// MaxEventSize is the largest encoded message accepted, in bytes, at
	// most 2^32-1; store.DefaultMaxEventSize when 0.
	MaxEventSize int
	// MaxArtifactSize is the largest artifact accepted, in bytes;
	// store.DefaultMaxArtifactSize when 0.
	MaxArtifactSize int
}

// Store is an in-memory store.Store. It is safe for concurrent use.
type Store struct {
	opts Options
	sig  driver.Signal // notified after each append and on Close; followers wait on it
	seed maphash.Seed  // of the tables' hashes

	mu        sync.RWMutex
	closed    bool
	last      time.Time                      // the time of the latest event
	events    []*[chunkSize]record           // the event with seq n is at(n)
	n         uint64                         // events stored
	slabs     [][]byte                       // the events' bytes (see keep)
	slab      int                            // the slab small events are copied into
	spare     atomic.Pointer[[slabSize]byte] // the next slab, its memory touched (see prepareSlab)
	preparing atomic.Bool                    // an Append is preparing the spare slab
	types     []protocol.Type                // the event types seen, by number
	typeNums  map[protocol.Type]uint32       // and their numbers
	byID      table                          // id → seq
	byIdem    table                          // (run_id, idempotency_key) → seq
	indexes   [driver.AgentIndex + 1]table   // value → entry number, by driver.Index
	entries   chunks[indexed]                // what the indexes hold, by entry number
	artifacts map[[sha256.Size]byte]store.Artifact
}

// Events are kept in fixed-size chunks rather than one growing slice, so
// that an append never copies the events stored before it. A chunk is a
// small allocation (32 KiB), cheap to make with the store locked.
const chunkSize = 1024

// at returns the record of seq (1 ≤ seq ≤ s.n); mu is held.
func (s *Store) at(seq uint64) *record {
	return &s.events[(seq-1)/chunkSize][(seq-1)%chunkSize]
}

// chunks is a list of T kept, like the events, in fixed-size chunks, so
// that adding to it never copies what it holds.
type chunks[T any] struct {
	list []*[chunkSize]T
	n    uint32
}

// at returns the i-th T (i < c.n).
func (c *chunks[T]) at(i uint32) *T { return &c.list[i/chunkSize][i%chunkSize] }

// add appends a zero T and returns its number.
func (c *chunks[T]) add() uint32 {
	if c.n%chunkSize == 0 {
		c.list = append(c.list, new([chunkSize]T))
	}
	c.n++
	return c.n - 1
}

// record is a stored event: its time, its type's number in Store.types,
// and where its bytes are, slabs[slab][off:off+n], followed there by its
// id's idn bytes (for byID, see hasID) and, when it has an
// idempotency_key, by its run_id and key (for byIdem, see hasIdem). Its
// run, thread, task and agent are known from the index lists its seq is
// in (see page). It holds no pointer, so the garbage collector never
// scans the events.
type record struct {
	sec               int64 // time: Unix seconds
	nsec              int32 // and nanoseconds
	typ               uint32
	slab, off, n, idn uint32
}

// event returns the stored event of seq; mu is held.
func (s *Store) event(seq uint64) store.Event {
	r := s.at(seq)
	end := r.off + r.n
	return store.Event{Seq: seq, Time: time.Unix(r.sec, int64(r.nsec)).UTC(), Raw: s.slabs[r.slab][r.off:end:end]}
}

// lookupID finds the seq of an event by id, whose hash is h; mu is held.
func (s *Store) lookupID(id string, h uint64) (uint64, bool) {
	return s.byID.find(h, func(seq uint64) bool { return s.hasID(seq, id) })
}

// hasID reports whether the event of seq has the given id; mu is held.
func (s *Store) hasID(seq uint64, id string) bool {
	r := s.at(seq)
	start := r.off + r.n
	return string(s.slabs[r.slab][start:start+r.idn]) == id
}

// hasIdem reports whether the event of seq, which has an
// idempotency_key, has the given run_id and key; mu is held.
func (s *Store) hasIdem(seq uint64, runID, key string) bool {
	r := s.at(seq)
	run, rest := cutLen(s.slabs[r.slab][r.off+r.n+r.idn:])
	k, _ := cutLen(rest)
	return string(run) == runID && string(k) == key
}

// hashes are the hashes of an entry's id, of its run_id and
// idempotency_key (0 when it has no key) and of the values it is indexed
// under (0 for none), by driver.Index: Append computes them before it
// locks the store.
type hashes struct {
	id, idem uint64
	ix       [driver.AgentIndex + 1]uint64
}

// touch reads the slots of the tables where the lookups of h start (see
// table.touch), before the store is locked.
func (s *Store) touch(h *hashes) {
	s.byID.touch(h.id)
	if h.idem != 0 {
		s.byIdem.touch(h.idem)
	}
	for ix := range h.ix {
		if h.ix[ix] != 0 {
			s.indexes[ix].touch(h.ix[ix])
		}
	}
}

func (s *Store) hashesOf(e *driver.Entry) hashes {
	h := hashes{id: hash(s.seed, e.ID)}
	if e.IdempotencyKey != "" {
		var mh maphash.Hash
		mh.SetSeed(s.seed)
		mh.WriteString(e.RunID)
		mh.WriteByte(0)
		mh.WriteString(e.IdempotencyKey)
		h.idem = mh.Sum64() | 1 // never 0 (table)
	}
	for ix, v := range [...]string{driver.TaskIndex: e.TaskID, driver.ThreadIndex: e.ThreadID, driver.RunIndex: e.RunID, driver.AgentIndex: e.AgentID} {
		if v != "" {
			h.ix[ix] = hash(s.seed, v)
		}
	}
	return h
}

var _ store.Store = (*Store)(nil)

// New returns an empty store. opts may be nil; a negative size limit, or a
// MaxEventSize over 2^32-1, gives an error matching ErrInvalidOptions.
func New(opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxEventSize < 0 || uint64(o.MaxEventSize) > math.MaxUint32 {
		return nil, coded.Wrap(ErrInvalidOptions, "MaxEventSize must be between 0 and 2^32-1 bytes", nil)
	}
	if o.MaxArtifactSize < 0 {
		return nil, coded.Wrap(ErrInvalidOptions, "MaxArtifactSize must not be negative", nil)
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.MaxEventSize == 0 {
		o.MaxEventSize = store.DefaultMaxEventSize
	}
	if o.MaxArtifactSize == 0 {
		o.MaxArtifactSize = store.DefaultMaxArtifactSize
	}
	s := &Store{
		opts:      o,
		seed:      maphash.MakeSeed(),
		typeNums:  make(map[protocol.Type]uint32),
		artifacts: make(map[[sha256.Size]byte]store.Artifact),
	}
	return s, nil
}

// Append implements store.Store. The store keeps its own copy of each
// message's bytes.
func (s *Store) Append(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	var buf [4]driver.Entry // the usual batch, on the stack
	entries, err := driver.Prepare(buf[:0], msgs, s.opts.MaxEventSize)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res := make([]store.AppendResult, len(entries))
	// What needs no lock is done before the lock: hashing the keys,
	// bringing the table slots they lead to into the cache, making the
	// next slab.
	var hbuf [len(buf)]hashes
	hs := hbuf[:0]
	for i := range entries {
		hs = append(hs, s.hashesOf(&entries[i]))
	}
	for i := range hs {
		s.touch(&hs[i])
	}
	s.prepareSlab()
	now := s.opts.Clock().UTC()
	s.lock()
	if s.closed {
		s.mu.Unlock()
		return nil, store.ErrClosed
	}
	if len(entries) == 0 {
		s.mu.Unlock()
		return nil, nil
	}
	// Times follow seqs even when Appends that read the clock in one order
	// take the lock in the other.
	if now.Before(s.last) {
		now = s.last
	}
	s.last = now
	// Nothing can fail from here on, so the batch is all or nothing even
	// though it is applied one message at a time, and a message finds a
	// duplicate earlier in the same batch.
	for i := range entries {
		res[i] = s.add(&entries[i], &hs[i], now)
	}
	s.mu.Unlock()
	s.sig.Notify()
	return res, nil
}

// lock locks the store for an Append. A goroutine that finds it locked
// lets others run a few times before it waits for it: when many goroutines
// append at once, those that wait queue on the mutex, which then hands the
// lock to each in turn while it is not running yet, so that the lock sits
// idle between Appends as they line up for the scheduler.
func (s *Store) lock() {
	for range 4 {
		if s.mu.TryLock() {
			return
		}
		runtime.Gosched()
	}
	s.mu.Lock()
}

// add appends e, whose hashes are h, unless it duplicates a stored event;
// mu is held.
func (s *Store) add(e *driver.Entry, h *hashes, now time.Time) store.AppendResult {
	if seq, ok := s.lookupID(e.ID, h.id); ok {
		return store.AppendResult{Seq: seq, Duplicate: true, DuplicateBy: store.DedupByID}
	}
	if e.IdempotencyKey != "" {
		if seq, ok := s.byIdem.find(h.idem, func(seq uint64) bool { return s.hasIdem(seq, e.RunID, e.IdempotencyKey) }); ok {
			return store.AppendResult{Seq: seq, Duplicate: true, DuplicateBy: store.DedupByIdempotencyKey}
		}
	}
	seq := s.n + 1
	if s.n%chunkSize == 0 {
		s.events = append(s.events, new([chunkSize]record))
	}
	s.n = seq
	slab, off := s.keep(e.Raw, e.ID, e.RunID, e.IdempotencyKey)
	*s.at(seq) = record{sec: now.Unix(), nsec: int32(now.Nanosecond()), typ: s.typeNum(e.Type),
		slab: slab, off: off, n: uint32(len(e.Raw)), idn: uint32(len(e.ID))}
	s.byID.put(h.id, seq)
	if e.IdempotencyKey != "" {
		s.byIdem.put(h.idem, seq)
	}
	// The task first: its state gives the change to the summaries of the
	// run and the thread (summary.go).
	var d driver.Delta
	if e.TaskID != "" {
		v := s.entry(driver.TaskIndex, e.TaskID, h.ix[driver.TaskIndex], true)
		v.add(seq)
		if driver.NeedsTask(e) {
			d = v.step(e)
		}
	}
	for _, f := range [...]struct {
		ix    driver.Index
		value string
	}{{driver.RunIndex, e.RunID}, {driver.ThreadIndex, e.ThreadID}} {
		if f.value != "" {
			v := s.entry(f.ix, f.value, h.ix[f.ix], true)
			v.fold(e, seq, d)
			v.add(seq)
		}
	}
	if e.AgentID != "" {
		v := s.entry(driver.AgentIndex, e.AgentID, h.ix[driver.AgentIndex], true)
		v.add(seq)
	}
	return store.AppendResult{Seq: seq}
}

// keep copies b and tail into the store's slabs, and then, when idemKey
// is set, runID and idemKey, each after its length (see cutLen); it
// returns where b starts. It keeps an event's bytes and id (whose length
// is in its record), or an index value (tail alone). Small ones are
// packed into slabs of slabSize bytes, a small allocation each; a larger
// one gets a slab of its own. mu is held.
func (s *Store) keep(b []byte, tail, runID, idemKey string) (slab, off uint32) {
	n := len(b) + len(tail)
	if idemKey != "" {
		n += 2*binary.MaxVarintLen64 + len(runID) + len(idemKey)
	}
	if n > slabSize/4 {
		s.slabs = append(s.slabs, make([]byte, 0, n))
		slab, off = uint32(len(s.slabs)-1), 0
	} else {
		if s.slabs == nil || len(s.slabs[s.slab])+n > slabSize {
			next := s.spare.Swap(nil)
			if next == nil {
				next = new([slabSize]byte)
			}
			s.slabs = append(s.slabs, next[:0])
			s.slab = len(s.slabs) - 1
		}
		slab, off = uint32(s.slab), uint32(len(s.slabs[s.slab]))
	}
	dst := append(append(s.slabs[slab], b...), tail...)
	if idemKey != "" {
		dst = append(binary.AppendUvarint(dst, uint64(len(runID))), runID...)
		dst = append(binary.AppendUvarint(dst, uint64(len(idemKey))), idemKey...)
	}
	s.slabs[slab] = dst
	return slab, off
}

// cutLen cuts from b a string written by keep with its length before it.
func cutLen(b []byte) (str, rest []byte) {
	n, k := binary.Uvarint(b)
	return b[k : k+int(n)], b[k+int(n):]
}

const slabSize = 32 << 10

// prepareSlab makes the spare slab, unless there is one or another
// Append is making it, and touches each page of it: the memory of a new
// slab is usually new to the process, and the kernel's work of giving it
// a page at its first write is then done here, with the store unlocked,
// instead of by keep with the store locked.
func (s *Store) prepareSlab() {
	if s.spare.Load() != nil || !s.preparing.CompareAndSwap(false, true) {
		return
	}
	b := new([slabSize]byte)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 0
	}
	s.spare.Store(b)
	s.preparing.Store(false)
}

// typeNum returns the number of an event type, numbering it when it is
// new; mu is held.
func (s *Store) typeNum(t protocol.Type) uint32 {
	n, ok := s.typeNums[t]
	if !ok {
		n = uint32(len(s.types))
		t = protocol.Type(strings.Clone(string(t))) // not a part of a larger string
		s.types = append(s.types, t)
		s.typeNums[t] = n
	}
	return n
}

// An index (Store.indexes) maps each value of a field (a run id, an
// agent id, ...) to the number of its entry in Store.entries: the value
// (kept in the slabs), the seqs of the events that have it, ascending,
// and what summaries count of it (see indexed). One lookup finds a known
// value's entry, which is then changed in place.

// entry returns the entry of value, whose hash is h, in index ix; when
// there is none, a new empty one when add is set, else nil. mu is held,
// for writing when add is set.
func (s *Store) entry(ix driver.Index, value string, h uint64, add bool) *indexed {
	x := &s.indexes[ix]
	n, ok := x.find(h, func(n uint64) bool { return s.isKey(s.entries.at(uint32(n)), value) })
	if ok {
		return s.entries.at(uint32(n))
	}
	if !add {
		return nil
	}
	i := s.entries.add()
	v := s.entries.at(i)
	v.keySlab, v.keyOff = s.keep(nil, value, "", "")
	v.keyLen = uint32(len(value))
	x.put(h, uint64(i))
	return v
}

// key returns the value of an index entry: the slab's bytes, to be
// read only. mu is held.
func (s *Store) key(v *indexed) []byte {
	return s.slabs[v.keySlab][v.keyOff : v.keyOff+v.keyLen]
}

// isKey reports whether value is the value of entry v; mu is held.
func (s *Store) isKey(v *indexed, value string) bool { return string(s.key(v)) == value }

// seqs returns the seqs of value in index ix; mu is held.
func (s *Store) seqs(ix driver.Index, value string) []uint64 {
	if v := s.entry(ix, value, hash(s.seed, value), false); v != nil {
		return v.seqs
	}
	return nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, id string) (store.Event, error) {
	if err := ctx.Err(); err != nil {
		return store.Event{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.Event{}, store.ErrClosed
	}
	seq, ok := s.lookupID(id, hash(s.seed, id))
	if !ok {
		return store.Event{}, store.ErrNotFound
	}
	return s.event(seq), nil
}

// LastSeq implements store.Store.
func (s *Store) LastSeq(ctx context.Context) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return 0, store.ErrClosed
	}
	return s.n, nil
}

// Read implements store.Store.
func (s *Store) Read(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	return driver.Read(ctx, q, s.LastSeq, s.page)
}

// Follow implements store.Store.
func (s *Store) Follow(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	return driver.Follow(ctx, q, &s.sig, s.page)
}

// page is the store's driver.PageFunc: it copies up to limit matching
// events with after < seq ≤ upTo out under the read lock and holds
// nothing once it returns, so a loop body may append to the store.
func (s *Store) page(ctx context.Context, q store.Query, after, upTo uint64, limit int) ([]store.Event, uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, 0, store.ErrClosed
	}
	upTo = min(upTo, s.n)
	// The index lists of the fields q sets, the first the one that serves
	// it: an event has those fields when its seq is in each list.
	lists, ok := s.lists(q)
	if !ok {
		return nil, max(after, upTo), nil // a value no event has
	}
	var evs []store.Event
	for seq := range candidates(lists, after, upTo) {
		if !strings.HasPrefix(string(s.types[s.at(seq).typ]), q.TypePrefix) || !inAll(lists, seq) {
			continue
		}
		evs = append(evs, s.event(seq))
		if len(evs) == limit {
			return evs, seq, nil
		}
	}
	return evs, max(after, upTo), nil
}

// lists returns the index lists of the indexed fields q sets, the list
// that serves q (driver.IndexOf) first; ok is false when a field has a
// value no event has. mu is held.
func (s *Store) lists(q store.Query) (lists [][]uint64, ok bool) {
	first, _ := driver.IndexOf(q)
	fields := [...]struct {
		ix    driver.Index
		value string
	}{{driver.TaskIndex, q.TaskID}, {driver.ThreadIndex, q.ThreadID}, {driver.RunIndex, q.RunID}, {driver.AgentIndex, q.AgentID}}
	for _, f := range fields {
		if f.value == "" {
			continue
		}
		list := s.seqs(f.ix, f.value)
		if list == nil {
			return nil, false
		}
		if f.ix == first {
			lists = append([][]uint64{list}, lists...)
		} else {
			lists = append(lists, list)
		}
	}
	return lists, true
}

// candidates yields in order the seqs in (after, upTo] of the first list,
// or every seq there when there is none.
func candidates(lists [][]uint64, after, upTo uint64) iter.Seq[uint64] {
	return func(yield func(uint64) bool) {
		if len(lists) == 0 {
			for seq := after + 1; seq <= upTo; seq++ {
				if !yield(seq) {
					return
				}
			}
			return
		}
		list := lists[0]
		i, _ := slices.BinarySearch(list, after+1)
		for _, seq := range list[i:] {
			if seq > upTo || !yield(seq) {
				return
			}
		}
	}
}

// inAll reports whether seq is in each list but the first, which it comes
// from.
func inAll(lists [][]uint64, seq uint64) bool {
	for _, list := range lists[min(1, len(lists)):] {
		if _, found := slices.BinarySearch(list, seq); !found {
			return false
		}
	}
	return true
}

// PutArtifact implements store.Store. The store keeps its own copy of
// data.
func (s *Store) PutArtifact(ctx context.Context, mediaType string, data []byte) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	mt, err := store.CheckMediaType(mediaType)
	if err != nil {
		return "", err
	}
	if len(data) > s.opts.MaxArtifactSize {
		return "", &store.TooLargeError{What: "artifact", Index: -1, Size: len(data), Limit: s.opts.MaxArtifactSize}
	}
	sum := sha256.Sum256(data)
	ref := store.ArtifactRefFromDigest(sum)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return "", store.ErrClosed
	}
	if _, ok := s.artifacts[sum]; !ok {
		s.artifacts[sum] = store.Artifact{Ref: ref, MediaType: mt, Data: bytes.Clone(data)}
	}
	return ref, nil
}

// GetArtifact implements store.Store. The returned Data is a copy.
func (s *Store) GetArtifact(ctx context.Context, ref string) (store.Artifact, error) {
	if err := ctx.Err(); err != nil {
		return store.Artifact{}, err
	}
	sum, err := store.ParseArtifactRef(ref)
	if err != nil {
		return store.Artifact{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.Artifact{}, store.ErrClosed
	}
	a, ok := s.artifacts[sum]
	if !ok {
		return store.Artifact{}, store.ErrNotFound
	}
	a.Data = bytes.Clone(a.Data)
	return a, nil
}

// Close implements store.Store. It drops every event and artifact;
// followers end with store.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.events, s.slabs, s.entries, s.artifacts = nil, nil, chunks[indexed]{}, nil
	s.spare.Store(nil)
	s.byID.reset()
	s.byIdem.reset()
	for i := range s.indexes {
		s.indexes[i].reset()
	}
	s.mu.Unlock()
	s.sig.Notify()
	return nil
}
