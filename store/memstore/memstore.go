package memstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"iter"
	"math"
	"sync"
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
	sig  driver.Signal // notified after each append and on Close; the hub waits on it
	hub  *driver.Hub   // the one follower of the store, shared by every Follow

	// mu guards everything below. Appends, PutArtifact and Close hold it
	// for writing, every read for reading.
	mu     sync.RWMutex
	closed bool
	last   time.Time // the time of the latest event
	// events holds the event with seq n at n-1, with the fields of its
	// message that queries match.
	events    []record
	byID      map[string]uint64  // id → seq
	byIdem    map[idemKey]uint64 // (run_id, idempotency_key) → seq
	artifacts map[[sha256.Size]byte]store.Artifact
	beats     map[string]store.Beat // the last beat of each key (presence.go)

	graves map[string]store.Tombstone // removed runs (remove.go)
}

// record is a stored event: its time, the store's copy of its bytes, the
// fields queries match, and its dedup keys.
type record struct {
	time                     time.Time
	raw                      []byte
	run, thread, task, agent string
	typ                      protocol.Type
	id, idem                 string // id and idempotency key
	gone                     bool   // removed with its run (remove.go)
}

// idemKey is the key of the second dedup rule.
type idemKey struct{ runID, key string }

var (
	_ store.Store       = (*Store)(nil)
	_ store.Clock       = (*Store)(nil)
	_ store.Conditional = (*Store)(nil)
)

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
		byID:      make(map[string]uint64),
		byIdem:    make(map[idemKey]uint64),
		artifacts: make(map[[sha256.Size]byte]store.Artifact),
	}
	s.hub = driver.NewHub(&s.sig, s.page, s.LastSeq)
	return s, nil
}

// Append implements store.Store. The store keeps its own copy of each
// message's bytes.
func (s *Store) Append(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	return s.append(ctx, msgs, false)
}

// AppendIfNew implements store.Conditional: Append, storing nothing when
// the first message is a duplicate.
func (s *Store) AppendIfNew(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	return s.append(ctx, msgs, true)
}

// append is Append, or AppendIfNew when cond is set.
func (s *Store) append(ctx context.Context, msgs []*protocol.Message, cond bool) ([]store.AppendResult, error) {
	entries, err := driver.Prepare(nil, msgs, s.opts.MaxEventSize)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// The clock is read before the lock (Options.Clock), so two Appends
	// may take the lock in the other order than they read it: the later
	// seqs are then given the time already stored.
	now := s.opts.Clock().UTC()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, store.ErrClosed
	}
	if len(entries) == 0 {
		s.mu.Unlock()
		return nil, nil
	}
	if now.Before(s.last) {
		now = s.last
	}
	s.last = now
	// Nothing can fail from here on, so the batch is all or nothing even
	// though it is applied one message at a time, and a message finds a
	// duplicate earlier in the same batch.
	res := make([]store.AppendResult, len(entries))
	for i := range entries {
		res[i] = s.add(&entries[i], now)
		if cond && i == 0 && res[0].Duplicate {
			break // nothing stored; the rest stay zero (store.Conditional)
		}
	}
	s.mu.Unlock()
	s.sig.Notify()
	return res, nil
}

// add appends e at time now unless it duplicates a stored event; mu is
// held for writing.
func (s *Store) add(e *driver.Entry, now time.Time) store.AppendResult {
	if seq, ok := s.byID[e.ID]; ok {
		return store.AppendResult{Seq: seq, Duplicate: true, DuplicateBy: store.DedupByID}
	}
	idem := idemKey{e.RunID, e.IdempotencyKey}
	if e.IdempotencyKey != "" {
		if seq, ok := s.byIdem[idem]; ok {
			return store.AppendResult{Seq: seq, Duplicate: true, DuplicateBy: store.DedupByIdempotencyKey}
		}
	}
	// The store's own copy, with no room past its end: a reader appending
	// to an Event.Raw never writes into the store.
	raw := make([]byte, len(e.Raw))
	copy(raw, e.Raw)
	s.events = append(s.events, record{time: now, raw: raw, run: e.RunID, thread: e.ThreadID, task: e.TaskID,
		agent: e.AgentID, typ: e.Type, id: e.ID, idem: e.IdempotencyKey})
	seq := uint64(len(s.events))
	s.byID[e.ID] = seq
	if e.IdempotencyKey != "" {
		s.byIdem[idem] = seq
	}
	return store.AppendResult{Seq: seq}
}

// event returns the stored event of seq (1 ≤ seq ≤ len(s.events)); mu
// is held.
func (s *Store) event(seq uint64) store.Event {
	r := &s.events[seq-1]
	return store.Event{Seq: seq, Time: r.time, Raw: r.raw}
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
	seq, ok := s.byID[id]
	if !ok {
		return store.Event{}, store.ErrNotFound
	}
	return s.event(seq), nil
}

// Now implements store.Clock: a reading of Options.Clock, in UTC.
func (s *Store) Now() time.Time { return s.opts.Clock().UTC() }

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
	return uint64(len(s.events)), nil
}

// Read implements store.Store. A read of a removed run yields its
// *store.RemovedError.
func (s *Store) Read(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	return driver.GoneRead(q, s.tombstone, driver.Read(ctx, q, s.LastSeq, s.page))
}

// Follow implements store.Store. A follow of a removed run yields its
// *store.RemovedError.
func (s *Store) Follow(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	return driver.Gone(q, s.tombstone, s.hub.Follow(ctx, q))
}

// page is the store's driver.PageFunc: it scans the events with after <
// seq ≤ upTo, copying up to limit matching ones out under the read lock,
// and holds nothing once it returns, so a loop body may append to the
// store.
func (s *Store) page(ctx context.Context, q store.Query, after, upTo uint64, limit int) ([]store.Event, uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, 0, store.ErrClosed
	}
	upTo = min(upTo, uint64(len(s.events)))
	var evs []store.Event
	for seq := after + 1; seq <= upTo; seq++ {
		r := &s.events[seq-1]
		if r.gone || !q.Match(r.run, r.thread, r.task, r.agent, r.typ) {
			continue
		}
		evs = append(evs, s.event(seq))
		if len(evs) == limit {
			return evs, seq, nil
		}
	}
	return evs, max(after, upTo), nil
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
	s.events, s.byID, s.byIdem = nil, nil, nil
	s.artifacts, s.graves = nil, nil
	s.mu.Unlock()
	s.sig.Notify()
	return nil
}
