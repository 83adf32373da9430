package memstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/internal/driver"
)

// Options configures a Store. Nil means defaults; zero fields take
// defaults.
type Options struct {
	// Clock gives event times; time.Now when nil. Tests pass a fixed clock
	// for reproducible events. Append calls it with the store locked, so
	// it must not call the store.
	Clock func() time.Time
	// MaxEventSize is the largest encoded message accepted, in bytes;
	// store.DefaultMaxEventSize when 0.
	MaxEventSize int
	// MaxArtifactSize is the largest artifact accepted, in bytes;
	// store.DefaultMaxArtifactSize when 0.
	MaxArtifactSize int
}

// Store is an in-memory store.Store. It is safe for concurrent use.
type Store struct {
	opts Options
	sig  driver.Signal // notified after each append and on Close; followers wait on it

	mu        sync.RWMutex
	closed    bool
	events    []*[chunkSize]record                       // the event with seq n is at(n)
	n         uint64                                     // events stored
	slab      []byte                                     // where keep copies event bytes
	byID      map[idKey]uint64                           // id → seq, for ids up to 31 bytes
	byLongID  map[string]uint64                          // id → seq, for longer ids
	byIdem    map[idemKey]uint64                         // (run_id, idempotency_key) → seq
	indexes   [driver.AgentIndex + 1]map[string][]uint64 // index → value → seqs, ascending
	artifacts map[[sha256.Size]byte]store.Artifact
	sums      driver.Summaries
}

// Events are kept in fixed-size chunks rather than one growing slice, so
// that an append never copies the events stored before it.
const chunkSize = 1024

// at returns the record of seq (1 ≤ seq ≤ s.n); mu is held.
func (s *Store) at(seq uint64) *record {
	return &s.events[(seq-1)/chunkSize][(seq-1)%chunkSize]
}

// record is a stored event and the fields queries filter on.
type record struct {
	event                            store.Event
	runID, threadID, taskID, agentID string
	typ                              protocol.Type
}

// idKey holds an id of up to 31 bytes (its length, then its bytes): the
// ids this SDK makes are 30 bytes. Keys without pointers keep the largest
// map of the store out of the garbage collector's way, and let the
// message's id string go once its event is stored.
type idKey [32]byte

func shortID(id string) (k idKey, ok bool) {
	if len(id) >= len(k) {
		return k, false
	}
	k[0] = byte(len(id))
	copy(k[1:], id)
	return k, true
}

// lookupID finds the seq of an event by id; mu is held.
func (s *Store) lookupID(id string) (uint64, bool) {
	if k, ok := shortID(id); ok {
		seq, found := s.byID[k]
		return seq, found
	}
	seq, found := s.byLongID[id]
	return seq, found
}

type idemKey struct{ runID, key string }

var _ store.Store = (*Store)(nil)

// New returns an empty store. opts may be nil; a negative size limit gives
// an error matching ErrInvalidOptions.
func New(opts *Options) (*Store, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxEventSize < 0 {
		return nil, coded.Wrap(ErrInvalidOptions, "MaxEventSize must not be negative", nil)
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
	return &Store{
		opts:      o,
		byID:      make(map[idKey]uint64),
		byLongID:  make(map[string]uint64),
		byIdem:    make(map[idemKey]uint64),
		indexes:   [...]map[string][]uint64{driver.TaskIndex: {}, driver.ThreadIndex: {}, driver.RunIndex: {}, driver.AgentIndex: {}},
		artifacts: make(map[[sha256.Size]byte]store.Artifact),
	}, nil
}

// Append implements store.Store. The store keeps its own copy of each
// message's bytes.
func (s *Store) Append(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	entries, err := driver.Prepare(nil, msgs, s.opts.MaxEventSize)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, store.ErrClosed
	}
	if len(entries) == 0 {
		s.mu.Unlock()
		return nil, nil
	}
	// The clock is read under the lock, so that times follow seqs.
	now := s.opts.Clock().UTC()
	res := make([]store.AppendResult, len(entries))
	// Nothing can fail from here on, so the batch is all or nothing even
	// though it is applied one message at a time, and a message finds a
	// duplicate earlier in the same batch.
	for i := range entries {
		res[i] = s.add(&entries[i], now)
	}
	s.mu.Unlock()
	s.sig.Notify()
	return res, nil
}

// add appends e unless it duplicates a stored event; mu is held.
func (s *Store) add(e *driver.Entry, now time.Time) store.AppendResult {
	if seq, ok := s.lookupID(e.ID); ok {
		return store.AppendResult{Seq: seq, Duplicate: true, DuplicateBy: store.DedupByID}
	}
	key := idemKey{e.RunID, e.IdempotencyKey}
	if e.IdempotencyKey != "" {
		if seq, ok := s.byIdem[key]; ok {
			return store.AppendResult{Seq: seq, Duplicate: true, DuplicateBy: store.DedupByIdempotencyKey}
		}
	}
	seq := s.n + 1
	if s.n%chunkSize == 0 {
		s.events = append(s.events, new([chunkSize]record))
	}
	s.n = seq
	*s.at(seq) = record{
		event: store.Event{Seq: seq, Time: now, Raw: s.keep(e.Raw)},
		runID: e.RunID, threadID: e.ThreadID, taskID: e.TaskID, agentID: e.AgentID,
		typ: e.Type,
	}
	if k, ok := shortID(e.ID); ok {
		s.byID[k] = seq
	} else {
		s.byLongID[e.ID] = seq
	}
	if e.IdempotencyKey != "" {
		s.byIdem[key] = seq
	}
	s.index(driver.RunIndex, e.RunID, seq)
	s.index(driver.ThreadIndex, e.ThreadID, seq)
	s.index(driver.TaskIndex, e.TaskID, seq)
	s.index(driver.AgentIndex, e.AgentID, seq)
	s.summarize(e, seq, now)
	return store.AppendResult{Seq: seq}
}

// keep returns the store's own copy of an event's bytes, with no room past
// its end, so that a reader's append to Raw cannot write into memory other
// readers see. Copies are packed into slabs of slabSize bytes (larger
// events get their own), so that stored events are not one object each
// for the garbage collector to track; mu is held.
func (s *Store) keep(b []byte) []byte {
	if len(b) > slabSize/16 {
		return slices.Clip(bytes.Clone(b))
	}
	if len(s.slab)+len(b) > cap(s.slab) {
		s.slab = make([]byte, 0, slabSize)
	}
	start := len(s.slab)
	s.slab = append(s.slab, b...)
	return s.slab[start:len(s.slab):len(s.slab)]
}

const slabSize = 1 << 20

// index adds seq to the list of value in index ix; mu is held.
func (s *Store) index(ix driver.Index, value string, seq uint64) {
	if value != "" {
		list := s.indexes[ix][value]
		if list == nil {
			list = make([]uint64, 0, 8) // room for a task's usual events
		}
		s.indexes[ix][value] = append(list, seq)
	}
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
	seq, ok := s.lookupID(id)
	if !ok {
		return store.Event{}, store.ErrNotFound
	}
	return s.at(seq).event, nil
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
	var evs []store.Event
	for seq := range s.candidates(q, after, upTo) {
		r := s.at(seq)
		if !q.Match(r.runID, r.threadID, r.taskID, r.agentID, r.typ) {
			continue
		}
		evs = append(evs, r.event)
		if len(evs) == limit {
			return evs, seq, nil
		}
	}
	return evs, max(after, upTo), nil
}

// candidates yields in order the seqs in (after, upTo] of the index list
// that serves q, or every seq there when q sets no indexed field; mu is
// held.
func (s *Store) candidates(q store.Query, after, upTo uint64) iter.Seq[uint64] {
	return func(yield func(uint64) bool) {
		ix, value := driver.IndexOf(q)
		if ix == driver.NoIndex {
			for seq := after + 1; seq <= upTo; seq++ {
				if !yield(seq) {
					return
				}
			}
			return
		}
		list := s.indexes[ix][value]
		i, _ := slices.BinarySearch(list, after+1)
		for _, seq := range list[i:] {
			if seq > upTo || !yield(seq) {
				return
			}
		}
	}
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
	s.events, s.byID, s.byLongID, s.byIdem, s.indexes, s.artifacts = nil, nil, nil, nil, [len(s.indexes)]map[string][]uint64{}, nil
	s.sums = driver.Summaries{}
	s.mu.Unlock()
	s.sig.Notify()
	return nil
}
