package memstore

import (
	"context"
	"crypto/sha256"
	"hash/maphash"
	"iter"
	"sort"
	"sync"
	"time"

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
	if o.MaxEventSize < 0 {
		return &optionError{"MaxEventSize must not be negative"}
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

	mu        sync.RWMutex
	closed    bool
	n         uint64    // last seq
	blocks    [][]event // event seq is at blocks[(seq-1)/blockSize][(seq-1)%blockSize]
	seed      maphash.Seed
	ids       dedupIndex              // id → seq
	idem      dedupIndex              // (run_id, idempotency_key) → seq
	postings  [5]map[string]*[]uint64 // by driver.Index: attribute → seqs
	artifacts map[[sha256.Size]byte]store.Artifact
}

// blockSize is the number of events per block: growing the log never
// copies events, so the time an append holds the lock stays flat.
const blockSize = 1024

// event is what a read needs: the bytes, the time and the fields a query
// filters on.
type event struct {
	id, idem                 string // idem: the idempotency key
	raw                      []byte
	time                     time.Time
	run, thread, task, agent string
	typ                      protocol.Type
}

func (s *Store) at(seq uint64) *event {
	i := seq - 1
	return &s.blocks[i/blockSize][i%blockSize]
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
		ids:       newDedupIndex(),
		idem:      newDedupIndex(),
		artifacts: make(map[[sha256.Size]byte]store.Artifact),
	}
	for i := range s.postings {
		s.postings[i] = make(map[string]*[]uint64)
	}
	return s, nil
}

// Append implements store.Store.
func (s *Store) Append(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	entries, err := driver.Prepare(msgs, s.opts.MaxEventSize)
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
	// Hash outside the lock: the hashes are the map keys.
	hashes := make([]uint64, 2*len(entries))
	for i, e := range entries {
		hashes[2*i] = maphash.String(s.seed, e.ID)
		if e.IdempotencyKey != "" {
			var h maphash.Hash
			h.SetSeed(s.seed)
			h.WriteString(e.RunID)
			h.WriteByte(0)
			h.WriteString(e.IdempotencyKey)
			hashes[2*i+1] = h.Sum64()
		}
	}
	now := s.opts.Clock().UTC().Round(0)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, store.ErrClosed
	}
	for i := range entries {
		e := &entries[i]
		// Nothing can fail from here on, so the batch is atomic even
		// though it is applied one message at a time; a duplicate inside
		// the batch finds the earlier message already applied.
		idHash, idemHash := hashes[2*i], hashes[2*i+1]
		seq, found, idTaken := s.ids.lookup(idHash, func(seq uint64) bool { return s.at(seq).id == e.ID }, func() string { return e.ID })
		if found {
			res[i] = store.AppendResult{Seq: seq, Duplicate: true, DuplicateBy: store.DedupByID}
			continue
		}
		var idemTaken bool
		if e.IdempotencyKey != "" {
			seq, found, idemTaken = s.idem.lookup(idemHash, func(seq uint64) bool {
				ev := s.at(seq)
				return ev.idem == e.IdempotencyKey && ev.run == e.RunID
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
		*b = append(*b, event{id: e.ID, idem: e.IdempotencyKey, raw: e.Raw, time: now, run: e.RunID, thread: e.ThreadID, task: e.TaskID, agent: e.AgentID, typ: e.Type})
		s.n++
		seq = s.n
		s.ids.put(idHash, idTaken, func() string { return e.ID }, seq)
		if e.IdempotencyKey != "" {
			s.idem.put(idemHash, idemTaken, func() string { return e.RunID + "\x00" + e.IdempotencyKey }, seq)
		}
		s.post(driver.RunIndex, e.RunID, seq)
		s.post(driver.ThreadIndex, e.ThreadID, seq)
		s.post(driver.TaskIndex, e.TaskID, seq)
		s.post(driver.AgentIndex, e.AgentID, seq)
		res[i] = store.AppendResult{Seq: seq}
	}
	s.mu.Unlock()
	s.sig.Notify()
	return res, nil
}

func (s *Store) post(ix driver.Index, attr string, seq uint64) {
	m := s.postings[ix]
	if p := m[attr]; p != nil {
		*p = append(*p, seq)
		return
	}
	m[attr] = &[]uint64{seq}
}

func (s *Store) checkOpen() error {
	s.mu.RLock()
	defer s.mu.RUnlock()
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
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.Event{}, store.ErrClosed
	}
	seq, ok, _ := s.ids.lookup(maphash.String(s.seed, id), func(seq uint64) bool { return s.at(seq).id == id }, func() string { return id })
	if !ok {
		return store.Event{}, store.ErrNotFound
	}
	return s.eventAt(seq), nil
}

func (s *Store) eventAt(seq uint64) store.Event {
	e := s.at(seq)
	return store.Event{Seq: seq, Time: e.time, Raw: e.raw}
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

// page is the driver.PageFunc of the store. It copies a page of events
// out under the read lock and holds nothing once it returns.
func (s *Store) page(ctx context.Context, q store.Query, after, upTo uint64, max int) ([]store.Event, uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
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
		if q.Match(e.run, e.thread, e.task, e.agent, e.typ) {
			if evs == nil {
				evs = make([]store.Event, 0, min(max, 16))
			}
			evs = append(evs, store.Event{Seq: seq, Time: e.time, Raw: e.raw})
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
	var list []uint64
	if p := s.postings[ix][attr]; p != nil {
		list = *p
	}
	for i := sort.Search(len(list), func(i int) bool { return list[i] > after }); i < len(list) && list[i] <= upTo; i++ {
		if !add(list[i]) {
			return evs, list[i], nil
		}
	}
	return evs, upTo, nil
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
	s.mu.RLock()
	defer s.mu.RUnlock()
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
	s.blocks, s.ids, s.idem, s.artifacts = nil, dedupIndex{}, dedupIndex{}, nil
	for i := range s.postings {
		s.postings[i] = nil
	}
	s.mu.Unlock()
	s.sig.Notify()
	return nil
}

// dedupIndex maps keys to seqs by their 64-bit hashes: a map without
// pointers, which the garbage collector does not scan and which grows
// without hashing strings again. A key whose hash is already taken by
// another key goes to a small exact map.
type dedupIndex struct {
	byHash map[uint64]uint64
	exact  map[string]uint64
}

func newDedupIndex() dedupIndex {
	return dedupIndex{byHash: make(map[uint64]uint64), exact: make(map[string]uint64)}
}

// lookup finds the seq stored for a key with hash h; is reports whether
// the event at a seq has the key, and key returns it (only called after a
// collision). taken reports that h is in use (by this
// key or another), which put needs.
func (d *dedupIndex) lookup(h uint64, is func(seq uint64) bool, key func() string) (seq uint64, found, taken bool) {
	seq, taken = d.byHash[h]
	if !taken {
		return 0, false, false
	}
	if is(seq) {
		return seq, true, true
	}
	seq, found = d.exact[key()]
	return seq, found, true
}

// put records a key that lookup did not find.
func (d *dedupIndex) put(h uint64, taken bool, key func() string, seq uint64) {
	if taken {
		d.exact[key()] = seq
		return
	}
	d.byHash[h] = seq
}
