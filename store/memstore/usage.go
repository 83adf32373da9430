package memstore

import (
	"context"

	"github.com/clutchprotocol/clutch/store"
)

var _ store.UsageReporter = (*Store)(nil)

// Usage implements store.UsageReporter. Bytes is the bytes of the stored
// messages and artifacts (the memory their copies take, without the maps
// and slices around them), summed on each call: a plain count, as befits
// a test double, O(events), as are Events and the oldest event, which
// skip the events of removed runs. memstore compacts nothing and backs
// nothing up: Free and the times are zero.
func (s *Store) Usage(ctx context.Context) (store.Usage, error) {
	if err := ctx.Err(); err != nil {
		return store.Usage{}, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return store.Usage{}, store.ErrClosed
	}
	u := store.Usage{LastSeq: uint64(len(s.events))}
	for i := range s.events {
		if r := &s.events[i]; !r.gone {
			u.Bytes += int64(len(r.raw))
			u.Events++
			if u.OldestSeq == 0 {
				u.OldestSeq, u.OldestTime = uint64(i+1), r.time
			}
		}
	}
	for _, a := range s.artifacts {
		u.Bytes += int64(len(a.Data) + len(a.MediaType))
	}
	return u, nil
}
