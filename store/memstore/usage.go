package memstore

import (
	"context"

	"github.com/clutchprotocol/clutch/store"
)

var _ store.UsageReporter = (*Store)(nil)

// Usage implements store.UsageReporter. Bytes is the bytes of the stored
// messages and artifacts (the memory their copies take, without the maps
// and slices around them), summed on each call: a plain count, as befits
// a test double, O(events). memstore removes nothing, compacts nothing and
// backs nothing up: Events is LastSeq, Free and the times are zero.
func (s *Store) Usage(ctx context.Context) (store.Usage, error) {
	if err := ctx.Err(); err != nil {
		return store.Usage{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.Usage{}, store.ErrClosed
	}
	u := store.Usage{Events: uint64(len(s.events)), LastSeq: uint64(len(s.events))}
	for i := range s.events {
		u.Bytes += int64(len(s.events[i].raw))
	}
	for _, a := range s.artifacts {
		u.Bytes += int64(len(a.Data) + len(a.MediaType))
	}
	if len(s.events) > 0 {
		u.OldestSeq, u.OldestTime = 1, s.events[0].time
	}
	return u, nil
}
