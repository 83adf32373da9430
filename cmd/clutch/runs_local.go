package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/client"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

// page of a file: the store's summaries, newest first, as a gateway
// lists them to an admin: the reserved system runs only with q.System,
// times to the millisecond. next is the Before of the next page when the
// page is full.
func (l *local) page(ctx context.Context, threads bool, q client.ListQuery) ([]client.Summary, uint64, error) {
	list := store.Runs
	if threads {
		list = store.Threads
	}
	var out []client.Summary
	var next uint64
	for s, err := range list(ctx, l.st, store.ListQuery{Before: q.Before}) {
		if errors.Is(err, boltstore.ErrNoSummaries) {
			return nil, 0, fmt.Errorf("%w\n(the file was written by an older version; opening it once for writing builds them: clutch import --db %s /dev/null)", err, l.name())
		}
		if err != nil {
			return nil, 0, err
		}
		if !q.System && system(s) {
			continue
		}
		s.Created, s.Updated = s.Created.Truncate(time.Millisecond), s.Updated.Truncate(time.Millisecond)
		out = append(out, s)
		if len(out) == q.Limit {
			next = s.LastSeq
			break
		}
	}
	return out, next, nil
}

// system reports whether a summary is of a reserved system run or thread
// (docs/protocol.md §6.7), which runs and stats leave out unless asked.
func system(s client.Summary) bool { return protocol.Reserved(s.ID) || protocol.Reserved(s.RunID) }
