package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/client"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

// runs of a file: the store's summaries, newest first. next is the before
// of the next page when the page is full.
func (l *local) runs(ctx context.Context, threads bool, before uint64, limit int) ([]client.Summary, uint64, error) {
	list := store.Runs
	if threads {
		list = store.Threads
	}
	var out []client.Summary
	for s, err := range list(ctx, l.st, store.ListQuery{Before: before, Limit: limit}) {
		if errors.Is(err, boltstore.ErrNoSummaries) {
			return nil, 0, fmt.Errorf("%w\n(the file was written by an older version; opening it once for writing builds them: clutch import --db %s /dev/null)", err, l.name())
		}
		if err != nil {
			return nil, 0, err
		}
		out = append(out, s)
	}
	var next uint64
	if len(out) == limit && limit > 0 {
		next = out[len(out)-1].LastSeq
	}
	return out, next, nil
}
