package externalstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"iter"
	"sync"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/driver"
)

// Store is an in-memory store.Store. Every method is safe for concurrent
// use.
type Store struct {
	sig driver.Signal
	hub *driver.Hub

	mu        sync.RWMutex
	closed    bool
	events    []store.Event  // events[i].Seq == i+1
	entries   []driver.Entry // the index fields of events[i]; Raw unused
	byID      map[string]uint64
	byKey     map[[2]string]uint64 // (run_id, idempotency_key)
	artifacts map[[sha256.Size]byte]store.Artifact
}

var _ store.Store = (*Store)(nil)

// New returns an empty store.
func New() *Store {
	s := &Store{
		byID:      map[string]uint64{},
		byKey:     map[[2]string]uint64{},
		artifacts: map[[sha256.Size]byte]store.Artifact{},
	}
	s.hub = driver.NewHub(&s.sig, s.page, s.LastSeq)
	return s
}

// Append implements store.Store.
func (s *Store) Append(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	entries, err := driver.Prepare(nil, msgs, store.DefaultMaxEventSize)
	if err != nil {
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
	res := make([]store.AppendResult, len(entries))
	now := time.Now().UTC()
	for i, e := range entries {
		if seq, ok := s.byID[e.ID]; ok {
			res[i] = store.AppendResult{Seq: seq, Duplicate: true, DuplicateBy: store.DedupByID}
			continue
		}
		key := [2]string{e.RunID, e.IdempotencyKey}
		if e.IdempotencyKey != "" {
			if seq, ok := s.byKey[key]; ok {
				res[i] = store.AppendResult{Seq: seq, Duplicate: true, DuplicateBy: store.DedupByIdempotencyKey}
				continue
			}
		}
		seq := uint64(len(s.events) + 1)
		s.events = append(s.events, store.Event{Seq: seq, Time: now, Raw: bytes.Clone(e.Raw)})
		e.Raw = nil
		s.entries = append(s.entries, e)
		s.byID[e.ID] = seq
		if e.IdempotencyKey != "" {
			s.byKey[key] = seq
		}
		res[i] = store.AppendResult{Seq: seq}
	}
	s.mu.Unlock()
	s.sig.Notify()
	return res, nil
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
	return s.events[seq-1], nil
}

// Read implements store.Store.
func (s *Store) Read(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	return driver.Read(ctx, q, s.LastSeq, s.page)
}

// Follow implements store.Store.
func (s *Store) Follow(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	return s.hub.Follow(ctx, q)
}

// page is the driver.PageFunc of the store: a scan of the log.
func (s *Store) page(ctx context.Context, q store.Query, after, upTo uint64, n int) ([]store.Event, uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, after, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, after, store.ErrClosed
	}
	end := min(upTo, uint64(len(s.events)))
	var out []store.Event
	for seq := after + 1; seq <= end; seq++ {
		e := &s.entries[seq-1]
		if !q.Match(e.RunID, e.ThreadID, e.TaskID, e.AgentID, e.Type) {
			continue
		}
		out = append(out, s.events[seq-1])
		if len(out) == n {
			return out, seq, nil
		}
	}
	return out, max(end, after), nil
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
	return uint64(len(s.events)), nil
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
	if len(data) > store.DefaultMaxArtifactSize {
		return "", &store.TooLargeError{What: "artifact", Index: -1, Size: len(data), Limit: store.DefaultMaxArtifactSize}
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

// GetArtifact implements store.Store.
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

// Close implements store.Store: it drops everything, and followers end
// with store.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.events, s.entries, s.byID, s.byKey, s.artifacts = nil, nil, nil, nil, nil
	s.mu.Unlock()
	s.sig.Notify()
	return nil
}
