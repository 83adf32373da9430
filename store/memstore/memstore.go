package memstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"hash/maphash"
	"iter"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/internal/driver"
)

// Options configures a Store. Nil means defaults; zero fields take
// defaults.
type Options struct {
	// Clock gives event times; time.Now when nil. Tests pass a fixed clock
	// for reproducible events.
	Clock func() time.Time
	// MaxEventSize is the largest encoded message accepted, in bytes;
	// store.DefaultMaxEventSize when 0.
	MaxEventSize int
	// MaxArtifactSize is the largest artifact accepted, in bytes;
	// store.DefaultMaxArtifactSize when 0.
	MaxArtifactSize int
}

func (o *Options) validate() error {
	if o.MaxEventSize < 0 || uint64(o.MaxEventSize) > math.MaxUint32 {
		return &optionError{"MaxEventSize must be between 0 and 2^32-1 bytes"}
	}
	if o.MaxArtifactSize < 0 {
		return &optionError{"MaxArtifactSize must not be negative"}
	}
	return nil
}

func (o *Options) setDefaults() {
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.MaxEventSize == 0 {
		o.MaxEventSize = store.DefaultMaxEventSize
	}
	if o.MaxArtifactSize == 0 {
		o.MaxArtifactSize = store.DefaultMaxArtifactSize
	}
}

// Store is an in-memory store.Store. It is safe for concurrent use.
type Store struct {
	opts Options
	sig  driver.Signal

	mu     sync.Mutex // a plain mutex: appends, which dominate, pay two atomic operations less than with an RWMutex
	closed bool
	n      uint64    // last seq
	blocks [][]event // event seq is at blocks[(seq-1)/blockSize][(seq-1)%blockSize]
	data   [][]byte  // the events' bytes, one after the other in chunks that never move

	// The next chunk of data, prepared outside mu (see readyChunk).
	room      atomic.Int64           // free bytes in the last chunk of data
	spare     atomic.Pointer[[]byte] // the next chunk, ready
	preparing atomic.Bool            // a goroutine is readying spare
	big       atomic.Bool            // chunks have reached dataChunkMax: readyChunk makes spares

	seed      maphash.Seed
	ids       idIndex   // id → seq
	idem      hashIndex // (run_id, idempotency_key) → seq
	artifacts map[[sha256.Size]byte]store.Artifact
	extIDs    map[uint64]string // ids of events whose bytes do not hold them verbatim, by seq

	// The indexes: each attribute value (a run id, an agent id, ...) is
	// interned once as a posting list, in a shard picked by its hash,
	// before the append takes mu; the list's seqs are then guarded by mu.
	// Lists never move, and list numbers are handed out atomically, so
	// reading a list's key or seqs needs no shard lock.
	shards [keyShards]keyShard
	nl     atomic.Uint32                                      // list numbers handed out; 0 is "none"
	chunks [maxListChunks]atomic.Pointer[[listChunk]postings] // list l is chunks[l/listChunk][l%listChunk]
	agents atomic.Pointer[map[string]uint32]                  // a read-only cache of agent ids' list numbers, replaced on change
	// The event types seen, numbered in order: typeNames by number;
	// allTypes, under typesMu, by name; fastTypes, a lock-free copy of the
	// first maxFastTypes of allTypes, replaced on change.
	typeNames atomic.Pointer[[]protocol.Type]
	fastTypes atomic.Pointer[map[protocol.Type]uint32]
	typesMu   sync.Mutex
	allTypes  map[protocol.Type]uint32
	same      [sameSize]atomic.Uint32 // list numbers by the address of their key string: see sameList
	kclosed   atomic.Bool             // Close dropped the indexes
}

// A keyShard interns the attribute values whose hash falls in it, in a
// hashIndex per attribute (see there: pointer-free tables, integer
// comparisons, an exact map for colliding values). Unlike message ids,
// these are not put in tables by time window (see idIndex): spread over
// 32 shards and 3 attributes, the windows' tables cost more memory than
// they saved time.
type keyShard struct {
	mu   sync.Mutex
	keys [4]hashIndex // by the order of event.attrs: value → list number
	_    [56]byte     // keep shards on separate cache lines (TestKeyShardSize)
}

// find returns the list number of value v (hash h) of attribute i, and
// whether h is taken (by v or another value), which put needs; sh.mu is
// held.
func (sh *keyShard) find(s *Store, i int, h uint64, v string) (l uint32, found, taken bool) {
	n, found, taken := sh.keys[i].lookup(h, func(n uint64) bool { return s.list(uint32(n)).key == v }, func() string { return v })
	return uint32(n), found, taken
}

// put records list number l for value v (hash h) of attribute i, which
// find did not find; sh.mu is held.
func (sh *keyShard) put(i int, h uint64, taken bool, v string, l uint32) {
	sh.keys[i].put(h, taken, func() string { return v }, uint64(l))
}

const keyShards = 32

// blockSize is the number of events per block: growing the log never
// copies events, so the time an append holds the lock stays flat.
const blockSize = 1024

// event is what a read needs: where its bytes are, the time and the fields
// a query filters on. It holds no pointer, and neither do the blocks of
// events, the chunks of bytes or the hash tables: a store of millions of
// events is marked by every garbage collection, and pointer-free memory is
// not scanned (one event per object, with two pointers, was a tenth of the
// CPU of BenchmarkEndToEndMemstore in the collector). The id is read from
// the bytes, where an encoded message has it verbatim.
type event struct {
	sec     int64     // time: Unix seconds
	chunk   uint32    // the bytes are data[chunk][off:off+n]
	off     uint32    //
	n       uint32    //
	idOff   uint32    // the id is the bytes' [idOff:idOff+idLen]
	nsec    int32     // time: nanoseconds
	typ     uint32    // the number of its type in Store.typeNames
	idLen   uint16    //
	hasIdem bool      // the message has an idempotency key
	extID   bool      // the id is not in the bytes verbatim (escaped): see Store.extIDs
	attrs   [4]uint32 // list numbers of run, thread, task, agent (0: none)
}

// maxTypes bounds the distinct event types of a store (types are 32-bit
// numbers in events): memory runs out first. A variable so that a test can
// lower it.
var maxTypes uint64 = math.MaxUint32

// maxFastTypes is how many types the lock-free map of type numbers holds:
// it is copied whenever a type is added, so it stays small; a store fed
// more distinct types than that (from outside) numbers the rest under
// typesMu.
const maxFastTypes = 256

// typeNum returns the number of type t, numbering it if it is new.
func (s *Store) typeNum(t protocol.Type) (uint32, error) {
	if n, ok := (*s.fastTypes.Load())[t]; ok {
		return n, nil
	}
	s.typesMu.Lock()
	defer s.typesMu.Unlock()
	if n, ok := s.allTypes[t]; ok {
		return n, nil
	}
	names := *s.typeNames.Load()
	if uint64(len(names)) >= maxTypes {
		return 0, errTooManyTypes
	}
	n := uint32(len(names))
	s.allTypes[t] = n
	// Readers index the slice they loaded, never past its length: an
	// append within capacity writes where none of them reads.
	names = append(names, t)
	s.typeNames.Store(&names)
	if old := *s.fastTypes.Load(); len(old) < maxFastTypes {
		next := maps.Clone(old)
		next[t] = n
		s.fastTypes.Store(&next)
	}
	return n, nil
}

// typeName returns the type numbered n.
func (s *Store) typeName(n uint32) protocol.Type { return (*s.typeNames.Load())[n] }

// dataChunkMin and dataChunkMax bound the size of the chunks event bytes
// are copied into: a store's first chunks are small (tests make many small
// stores), later ones large; a larger event gets a chunk of its own size.
const (
	dataChunkMin = 4 << 10
	dataChunkMax = 1 << 20
)

// keep copies raw after the last event's bytes and returns where; mu is
// held. The copy is made under the lock, after the duplicate check, so
// that a redelivered message costs no memory; the next chunk is
// allocated and its pages touched before the lock (see readyChunk), so
// that the lock is not held through page faults, which stalled every
// appender.
func (s *Store) keep(raw []byte) (chunk, off uint32) {
	last := len(s.data) - 1
	if last < 0 || len(s.data[last])+len(raw) > cap(s.data[last]) {
		size := dataChunkMin
		if last >= 0 {
			size = min(2*cap(s.data[last]), dataChunkMax)
		}
		var b []byte
		if p := s.spare.Swap(nil); p != nil && cap(*p) >= len(raw) {
			b = (*p)[:0]
		} else {
			b = make([]byte, 0, max(size, len(raw)))
		}
		s.data = append(s.data, b)
		last++
		s.room.Store(int64(cap(b)))
		if size == dataChunkMax {
			s.big.Store(true)
		}
	}
	c := &s.data[last]
	off = uint32(len(*c))
	*c = append(*c, raw...) // within capacity: the chunk never moves
	s.room.Store(int64(cap(*c) - len(*c)))
	return uint32(last), off
}

// readyChunk prepares the next chunk outside the lock once chunks are
// large and the current one is more than half full: allocated, and one
// byte written per page so that the kernel maps its pages now, not while
// an appender holds mu.
func (s *Store) readyChunk() {
	if !s.big.Load() || s.room.Load() > dataChunkMax/2 || s.spare.Load() != nil || !s.preparing.CompareAndSwap(false, true) {
		return // small chunks are cheap to make under the lock, and a small store wants no spare
	}
	defer s.preparing.Store(false)
	if s.spare.Load() != nil {
		return
	}
	b := make([]byte, dataChunkMax)
	for i := 0; i < len(b); i += 4096 {
		b[i] = 0 // a write maps the page; make may have left it unmapped
	}
	s.spare.Store(&b)
}

// raw returns the bytes of e, read-only; mu is held (the bytes themselves
// never change, so the slice may be used after mu is released).
func (s *Store) raw(e *event) []byte {
	return s.data[e.chunk][e.off : e.off+e.n : e.off+e.n]
}

// The order of event.attrs.
var attrIndex = [4]driver.Index{driver.RunIndex, driver.ThreadIndex, driver.TaskIndex, driver.AgentIndex}

func (e *event) time() time.Time { return time.Unix(e.sec, int64(e.nsec)).UTC() }

// hasID reports whether the event at seq has id id; mu is held.
func (s *Store) hasID(seq uint64, id string) bool {
	e := s.at(seq)
	if e.extID {
		return s.extIDs[seq] == id
	}
	return string(s.raw(e)[e.idOff:e.idOff+uint32(e.idLen)]) == id
}

// idOffset returns where raw holds id verbatim (any id without characters
// JSON escapes, as every id this module makes), or -1: the event then
// keeps its id in s.extIDs. It runs before the store's lock is taken.
func idOffset(raw []byte, id string) int {
	if len(id) > math.MaxUint16 {
		return -1
	}
	return bytes.Index(raw, unsafe.Slice(unsafe.StringData(id), len(id)))
}

func (s *Store) at(seq uint64) *event {
	i := seq - 1
	return &s.blocks[i/blockSize][i%blockSize]
}

// postings is the seqs of the events with one attribute value, in order:
// the first few inline, so that the many short lists (a task's events) cost
// no allocation, the rest in fixed-size chunks, so that a long list (an
// agent's) grows without copying.
type postings struct {
	key  string
	n    int
	attr int // the position in event.attrs of the attribute key is a value of
	head [postingsInline]uint64
	more [][]uint64 // chunks of postingsChunk seqs
}

const (
	postingsInline = 4
	postingsFirst  = 8
	postingsChunk  = 512
	listChunk      = 1024
	maxListChunks  = 1 << 16 // 64 Mi attribute values
)

func (p *postings) at(i int) uint64 {
	if i < postingsInline {
		return p.head[i]
	}
	i -= postingsInline
	return p.more[i/postingsChunk][i%postingsChunk]
}

func (p *postings) add(seq uint64) {
	if p.n < postingsInline {
		p.head[p.n] = seq
	} else {
		i := p.n - postingsInline
		c := i / postingsChunk
		if c == len(p.more) {
			size := postingsChunk
			if c == 0 {
				size = postingsFirst // most lists that pass the inline seqs stay short
			}
			p.more = append(p.more, make([]uint64, 0, size))
		}
		p.more[c] = append(p.more[c], seq) // the first chunk grows by doubling, up to postingsChunk
	}
	p.n++
}

// list returns list number l, which intern handed out.
func (s *Store) list(l uint32) *postings { return &s.chunks[l/listChunk].Load()[l%listChunk] }

// key returns the attribute value of list number l ("" for 0).
func (s *Store) key(l uint32) string {
	if l == 0 {
		return ""
	}
	return s.list(l).key
}

// intern returns the list numbers of the attributes of e, creating lists
// for values seen for the first time. prev is the previous entry of the
// batch and its list numbers: the events of one batch mostly share their
// run, thread and task.
func (s *Store) intern(e, prev *driver.Entry, prevAttrs *[4]uint32) (attrs [4]uint32, err error) {
	vals := [4]string{e.RunID, e.ThreadID, e.TaskID, e.AgentID}
	var pvals [4]string
	if prev != nil {
		pvals = [4]string{prev.RunID, prev.ThreadID, prev.TaskID, prev.AgentID}
	}
	for i, v := range vals {
		if v == "" {
			continue
		}
		if prev != nil && pvals[i] == v {
			attrs[i] = prevAttrs[i]
			continue
		}
		if l := s.sameList(i, v); l != 0 {
			attrs[i] = l
			continue
		}
		if i == agentAttr {
			if l, ok := (*s.agents.Load())[v]; ok {
				attrs[i] = l
				continue
			}
		}
		h := maphash.String(s.seed, v)
		sh := &s.shards[h%keyShards]
		sh.mu.Lock()
		l, ok, taken := sh.find(s, i, h, v)
		if !ok {
			if s.kclosed.Load() {
				sh.mu.Unlock()
				return attrs, store.ErrClosed
			}
			if l, err = s.newList(i, v); err != nil {
				sh.mu.Unlock()
				return attrs, err
			}
			sh.put(i, h, taken, v, l)
			s.same[sameSlot(i, v)].Store(l)
		}
		sh.mu.Unlock()
		attrs[i] = l
		if i == agentAttr {
			s.cacheAgent(v, l)
		}
	}
	return attrs, nil
}

// sameSize is the number of slots of the cache of list numbers by key
// address.
const sameSize = 4096

// sameSlot is the slot of value v of attribute i in the cache by address.
func sameSlot(i int, v string) uint64 {
	return (uint64(uintptr(unsafe.Pointer(unsafe.StringData(v))))*0x9E3779B97F4A7C15 + uint64(i)) >> (64 - 12)
}

// sameList returns the list number of value v of attribute i when v is the
// very string a list was made from (same address, same length), else 0.
// The events of one task repeat its run, thread and task ids, and a
// program building replies copies the request's strings rather than making
// new ones: this finds their lists without hashing v, taking a shard lock or
// probing a large table (which misses the cache). A list keeps its key
// string alive and never changes it, so an address can only match the
// string the list was made from.
func (s *Store) sameList(i int, v string) uint32 {
	l := s.same[sameSlot(i, v)].Load()
	if l == 0 {
		return 0
	}
	p := s.list(l)
	if p.attr != i || len(p.key) != len(v) || unsafe.StringData(p.key) != unsafe.StringData(v) {
		return 0
	}
	return l
}

// agentAttr is the position of the agent id in event.attrs.
const agentAttr = 3

// maxCachedAgents bounds the agent cache: a store fed from outside may see
// any number of sender ids, and the cache is copied on every addition.
const maxCachedAgents = 256

// cacheAgent adds agent id v, list number l, to the lock-free agent cache.
// Every event names its sender, and a program has few agents, so without
// the cache the shard locks of its busiest agents are taken by every
// append (measured: the top source of lock contention after the store's
// own lock).
func (s *Store) cacheAgent(v string, l uint32) {
	for {
		old := s.agents.Load()
		if len(*old) >= maxCachedAgents {
			return
		}
		if _, ok := (*old)[v]; ok {
			return
		}
		next := maps.Clone(*old)
		next[v] = l
		if s.agents.CompareAndSwap(old, &next) {
			return
		}
	}
}

// newList hands out the next list number for value v of attribute i.
func (s *Store) newList(i int, v string) (uint32, error) {
	if s.nl.Load() >= maxListChunks*listChunk {
		return 0, errTooManyKeys // checked first, so that the counter never wraps
	}
	l := s.nl.Add(1) - 1
	c := l / listChunk
	if c >= maxListChunks {
		return 0, errTooManyKeys
	}
	chunk := s.chunks[c].Load()
	if chunk == nil {
		s.chunks[c].CompareAndSwap(nil, new([listChunk]postings))
		chunk = s.chunks[c].Load()
	}
	chunk[l%listChunk].key = v
	chunk[l%listChunk].attr = i
	return l, nil
}

// lookupList returns the list of attribute value attr in index ix, or nil.
func (s *Store) lookupList(ix driver.Index, attr string) *postings {
	h := maphash.String(s.seed, attr)
	sh := &s.shards[h%keyShards]
	sh.mu.Lock()
	l, ok, _ := sh.find(s, slices.Index(attrIndex[:], ix), h, attr) // not found after Close
	sh.mu.Unlock()
	if !ok {
		return nil
	}
	return s.list(l)
}

var _ store.Store = (*Store)(nil)

// New returns an empty store. opts may be nil; invalid options give an
// error matching ErrInvalidOptions.
func New(opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	o.setDefaults()
	s := &Store{
		opts:      o,
		seed:      maphash.MakeSeed(),
		ids:       newIDIndex(dedupParts),
		idem:      newHashIndex(dedupParts),
		artifacts: make(map[[sha256.Size]byte]store.Artifact),
		extIDs:    make(map[uint64]string),
	}
	s.nl.Store(1) // list 0 means "no value"
	s.agents.Store(&map[string]uint32{})
	s.typeNames.Store(new([]protocol.Type))
	s.fastTypes.Store(&map[protocol.Type]uint32{})
	s.allTypes = map[protocol.Type]uint32{}
	s.chunks[0].Store(new([listChunk]postings))
	for i := range s.shards {
		for j := range attrIndex {
			s.shards[i].keys[j] = newHashIndex(1)
		}
	}
	return s, nil
}

// Append implements store.Store.
func (s *Store) Append(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	var buf [4]driver.Entry
	entries, err := driver.Prepare(buf[:0], msgs, s.opts.MaxEventSize)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, s.checkOpen()
	}
	res := make([]store.AppendResult, len(entries))
	// Hash and intern outside the lock.
	type prepared struct {
		idHash, idemHash uint64
		idWin            uint64
		hasWin           bool
		attrs            [4]uint32
		typ              uint32
		idOff            int // see idOffset
	}
	var pbuf [4]prepared
	pre := pbuf[:0]
	if len(entries) > len(pbuf) {
		pre = make([]prepared, 0, len(entries))
	}
	for i := range entries {
		e := &entries[i]
		p := prepared{idHash: maphash.String(s.seed, e.ID)}
		p.idWin, p.hasWin = idWindow(e.ID)
		var prev *driver.Entry
		var prevAttrs *[4]uint32
		if i > 0 {
			prev, prevAttrs = &entries[i-1], &pre[i-1].attrs
		}
		if p.attrs, err = s.intern(e, prev, prevAttrs); err != nil {
			return nil, err
		}
		if e.IdempotencyKey != "" {
			p.idemHash = s.idemHash(e.RunID, e.IdempotencyKey)
		}
		if p.typ, err = s.typeNum(e.Type); err != nil {
			return nil, err
		}
		p.idOff = idOffset(e.Raw, e.ID)
		pre = append(pre, p)
	}
	s.readyChunk()
	now := s.opts.Clock().UTC()
	sec, nsec := now.Unix(), int32(now.Nanosecond())
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, store.ErrClosed
	}
	if s.n+uint64(len(entries)) > maxEvents { // checked for the whole batch, duplicates or not
		s.mu.Unlock()
		return nil, errTooManyEvents
	}
	for i := range entries {
		e, p := &entries[i], &pre[i]
		// Nothing can fail from here on, so the batch is atomic even
		// though it is applied one message at a time; a duplicate inside
		// the batch finds the earlier message already applied.
		seq, found, idTaken := s.ids.lookup(p.idHash, p.idWin, p.hasWin, func(seq uint64) bool { return s.hasID(seq, e.ID) }, func() string { return e.ID })
		if found {
			res[i] = store.AppendResult{Seq: seq, Duplicate: true, DuplicateBy: store.DedupByID}
			continue
		}
		var idemTaken bool
		if e.IdempotencyKey != "" {
			seq, found, idemTaken = s.idem.lookup(p.idemHash, func(seq uint64) bool {
				run, idem := s.idemAt(seq)
				return idem == e.IdempotencyKey && run == e.RunID
			}, func() string { return e.RunID + "\x00" + e.IdempotencyKey })
			if found {
				res[i] = store.AppendResult{Seq: seq, Duplicate: true, DuplicateBy: store.DedupByIdempotencyKey}
				continue
			}
		}
		if s.n%blockSize == 0 {
			s.blocks = append(s.blocks, make([]event, 0, blockSize))
		}
		b := &s.blocks[len(s.blocks)-1]
		chunk, off := s.keep(e.Raw)
		*b = append(*b, event{chunk: chunk, off: off, n: uint32(len(e.Raw)), typ: p.typ, sec: sec, nsec: nsec, hasIdem: e.IdempotencyKey != "", attrs: p.attrs})
		s.n++
		seq = s.n
		if ev := &(*b)[len(*b)-1]; p.idOff >= 0 {
			ev.idOff, ev.idLen = uint32(p.idOff), uint16(len(e.ID))
		} else {
			ev.extID = true
			s.extIDs[seq] = e.ID
		}
		s.ids.put(p.idHash, p.idWin, p.hasWin, idTaken, func() string { return e.ID }, seq)
		if e.IdempotencyKey != "" {
			s.idem.put(p.idemHash, idemTaken, func() string { return e.RunID + "\x00" + e.IdempotencyKey }, seq)
		}
		for _, l := range p.attrs {
			if l != 0 {
				s.list(l).add(seq)
			}
		}
		res[i] = store.AppendResult{Seq: seq}
	}
	s.mu.Unlock()
	s.sig.Notify()
	return res, nil
}

func (s *Store) idemHash(run, key string) uint64 {
	var h maphash.Hash
	h.SetSeed(s.seed)
	h.WriteString(run)
	h.WriteByte(0)
	h.WriteString(key)
	return h.Sum64()
}

// idemAt returns the run and idempotency key of the event at seq, which
// has a key. They are not kept apart from the bytes: this runs only when a
// key's hash is already taken, that is, for a duplicate (or a collision).
func (s *Store) idemAt(seq uint64) (run, key string) {
	e := s.at(seq)
	if !e.hasIdem {
		return "", ""
	}
	m, err := protocol.Decode(s.raw(e))
	if err != nil {
		return "", "" // cannot happen: the bytes were validated
	}
	return m.RunID, m.IdempotencyKey
}

func (s *Store) checkOpen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.ErrClosed
	}
	return nil
}

// Get implements store.Store.
func (s *Store) Get(ctx context.Context, id string) (store.Event, error) {
	if err := ctx.Err(); err != nil {
		return store.Event{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.Event{}, store.ErrClosed
	}
	w, hasWin := idWindow(id)
	seq, ok, _ := s.ids.lookup(maphash.String(s.seed, id), w, hasWin, func(seq uint64) bool { return s.hasID(seq, id) }, func() string { return id })
	if !ok {
		return store.Event{}, store.ErrNotFound
	}
	return s.eventAt(seq), nil
}

func (s *Store) eventAt(seq uint64) store.Event {
	e := s.at(seq)
	return store.Event{Seq: seq, Time: e.time(), Raw: s.raw(e)}
}

// LastSeq implements store.Store.
func (s *Store) LastSeq(ctx context.Context) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
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

// page is the driver.PageFunc of the store. It copies a page of events
// out under the lock and holds nothing once it returns.
func (s *Store) page(ctx context.Context, q store.Query, after, upTo uint64, max int) ([]store.Event, uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, 0, store.ErrClosed
	}
	upTo = min(upTo, s.n)
	if after >= upTo {
		return nil, after, nil
	}
	var evs []store.Event
	add := func(seq uint64) bool {
		e := s.at(seq)
		if s.match(&q, e) {
			if evs == nil {
				evs = make([]store.Event, 0, min(max, 16))
			}
			evs = append(evs, store.Event{Seq: seq, Time: e.time(), Raw: s.raw(e)})
		}
		return len(evs) < max
	}
	ix, attr := driver.IndexOf(q)
	if ix == driver.NoIndex {
		for seq := after + 1; seq <= upTo; seq++ {
			if !add(seq) {
				return evs, seq, nil
			}
		}
		return evs, upTo, nil
	}
	p := s.lookupList(ix, attr)
	if p == nil {
		return nil, upTo, nil
	}
	for i := sort.Search(p.n, func(i int) bool { return p.at(i) > after }); i < p.n; i++ {
		seq := p.at(i)
		if seq > upTo {
			break
		}
		if !add(seq) {
			return evs, seq, nil
		}
	}
	return evs, upTo, nil
}

// match reports whether e matches q; mu is held.
func (s *Store) match(q *store.Query, e *event) bool {
	if q.TypePrefix != "" && !strings.HasPrefix(string(s.typeName(e.typ)), q.TypePrefix) {
		return false
	}
	want := [4]string{q.RunID, q.ThreadID, q.TaskID, q.AgentID}
	for i, w := range want {
		if w != "" && s.key(e.attrs[i]) != w {
			return false
		}
	}
	return true
}

// PutArtifact implements store.Store.
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
		s.artifacts[sum] = store.Artifact{Ref: ref, MediaType: mt, Data: append([]byte{}, data...)}
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return store.Artifact{}, store.ErrClosed
	}
	a, ok := s.artifacts[sum]
	if !ok {
		return store.Artifact{}, store.ErrNotFound
	}
	a.Data = append([]byte{}, a.Data...)
	return a, nil
}

// Close implements store.Store. It drops the events; followers end with
// store.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.spare.Store(nil)
	s.blocks, s.data, s.ids, s.idem, s.artifacts, s.extIDs = nil, nil, idIndex{}, hashIndex{}, nil, nil
	s.kclosed.Store(true)
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		sh.keys = [4]hashIndex{}
		sh.mu.Unlock()
	}
	s.mu.Unlock()
	s.sig.Notify()
	return nil
}

// hashIndex maps string keys to non-zero values below 2^32 (seqs, list
// numbers) by their 64-bit hashes: tables without pointers, which the
// garbage collector does not scan and which grow without hashing strings
// again. The low bits of a hash pick the table, the high 32 bits are the
// fingerprint the table keeps. A key whose fingerprint is already taken in
// its table by another key goes to a small exact map. The keys themselves
// are not kept: the caller tells whether the value found for a hash
// belongs to its key.
type hashIndex struct {
	byHash []hashTable // by the hash modulo their number
	exact  map[string]uint64
}

// dedupParts splits the id and idempotency indexes into tables that grow
// one at a time: a table grows under the store's lock, and one table of
// millions of ids would stop every appender for the tens of milliseconds
// its rehash takes.
const dedupParts = 64

func newHashIndex(parts int) hashIndex {
	return hashIndex{byHash: make([]hashTable, parts), exact: make(map[string]uint64)}
}

func (x *hashIndex) table(h uint64) *hashTable { return &x.byHash[h%uint64(len(x.byHash))] }

func fingerprint(h uint64) uint32 { return uint32(h >> 32) }

// lookup finds the value stored for a key with hash h; is reports whether
// a value belongs to the key, and key returns it (only called after a
// collision). taken reports that h's fingerprint is in use (by this key or
// another), which put needs.
func (x *hashIndex) lookup(h uint64, is func(v uint64) bool, key func() string) (v uint64, found, taken bool) {
	if len(x.byHash) == 0 {
		return 0, false, false // dropped by Close
	}
	return find(x.table(h), x.exact, h, is, key)
}

// find is the lookup of a key with hash h in table t (nil: none), whose
// keys with a taken fingerprint are in exact; see hashIndex.lookup.
func find(t *hashTable, exact map[string]uint64, h uint64, is func(v uint64) bool, key func() string) (v uint64, found, taken bool) {
	if t == nil {
		return 0, false, false
	}
	if v = uint64(t.get(fingerprint(h))); v == 0 {
		return 0, false, false
	}
	if is(v) {
		return v, true, true
	}
	v, found = exact[key()]
	return v, found, true
}

// put records value v (0 < v < 2^32) for a key that lookup did not find
// (never after Close).
func (x *hashIndex) put(h uint64, taken bool, key func() string, v uint64) {
	if putExact(x.exact, taken, key, v) {
		return
	}
	x.table(h).put(fingerprint(h), uint32(v))
}

// putExact checks value v (0 < v < 2^32) of a key that lookup did not
// find and, when its fingerprint is taken, records it in exact; it reports
// whether it did (else the caller puts it in a table).
func putExact(exact map[string]uint64, taken bool, key func() string, v uint64) bool {
	if v == 0 || v > maxIndexValue {
		panic("memstore: index value out of range") // the callers' limits make this unreachable
	}
	if taken {
		exact[key()] = v
	}
	return taken
}

// maxIndexValue is the largest value a hashIndex keeps: the store holds at
// most this many events (see maxEvents) and hands out fewer list numbers.
const maxIndexValue = 1<<32 - 1

// maxEvents is the most events a store holds (about 4 billion, terabytes
// of memory): seqs are kept in 32 bits in its indexes.
var maxEvents uint64 = maxIndexValue // a variable so that a test can lower it
