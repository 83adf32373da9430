package memstore

import (
	"bytes"
	"context"
	"iter"
	"slices"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/store"
)

var _ store.Presence = (*Store)(nil)

// Beat implements store.Presence: the key's beat replaces the one before
// in a map, stamped with Options.Clock. Beats are kept until Close, like
// events.
func (s *Store) Beat(ctx context.Context, key string, data []byte) (at time.Time, prev store.Beat, err error) {
	if err := store.CheckBeat(key, data); err != nil {
		return time.Time{}, store.Beat{}, err
	}
	if err := ctx.Err(); err != nil {
		return time.Time{}, store.Beat{}, err
	}
	now := s.opts.Clock().UTC()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return time.Time{}, store.Beat{}, store.ErrClosed
	}
	if s.beats == nil {
		s.beats = map[string]store.Beat{}
	}
	prev = s.beats[key]
	s.beats[key] = store.Beat{Key: key, Time: now, Data: bytes.Clone(data)}
	return now, prev, nil
}

// Beats implements store.Presence.
func (s *Store) Beats(ctx context.Context, prefix string) iter.Seq2[store.Beat, error] {
	return func(yield func(store.Beat, error) bool) {
		if err := ctx.Err(); err != nil {
			yield(store.Beat{}, err)
			return
		}
		s.mu.RLock()
		if s.closed {
			s.mu.RUnlock()
			yield(store.Beat{}, store.ErrClosed)
			return
		}
		var out []store.Beat
		for k, b := range s.beats {
			if strings.HasPrefix(k, prefix) {
				out = append(out, b)
			}
		}
		s.mu.RUnlock()
		slices.SortFunc(out, func(a, b store.Beat) int { return strings.Compare(a.Key, b.Key) })
		for _, b := range out {
			if !yield(b, nil) {
				return
			}
		}
	}
}
