package telemetry

import (
	"context"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// WrapStore returns st with its appends measured: clutch.store.append.duration
// (with error.type when the append failed), clutch.store.append.batch_size
// and clutch.store.events by event type. Everything else is st's own.
// Give the wrapped store to the router (and to whatever else appends).
func (t *Telemetry) WrapStore(st store.Store) store.Store {
	return &measuredStore{Store: st, t: t}
}

// measuredStore is a store.Store whose appends are measured.
type measuredStore struct {
	store.Store
	t *Telemetry
}

// Unwrap returns the store it measures, for callers that look for an
// upgrade interface of the backend.
func (s *measuredStore) Unwrap() store.Store { return s.Store }

func (s *measuredStore) Append(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	t := s.t
	if !t.appendDur.Enabled(ctx) {
		return s.Store.Append(ctx, msgs...) // no meter records: no clock reads either
	}
	start := mono()
	res, err := s.Store.Append(ctx, msgs...)
	d := (mono() - start).Seconds()
	// Recorded without the caller's span: an append measures the store,
	// and an exemplar of it (the SDK offers one per measurement made in
	// a sampled span) would name whichever task happened to append.
	bg := context.Background()
	if err != nil {
		t.appendDur.Record(bg, d, t.set(setKey{kind: kindAppend, a: code(protocol.CodeOf(err))}).rec...)
		return res, err
	}
	t.appendDur.Record(bg, d, t.appendOK.rec...)
	t.appendBatch.Record(bg, int64(len(msgs)))
	for i, m := range msgs {
		if i < len(res) && res[i].Duplicate {
			continue
		}
		set := t.eventSet[m.Type]
		if set == nil {
			set = t.set(setKey{tally: tallyEvents, kind: kindEvent, a: string(m.Type)}) // an extension type
		}
		set.n.Add(1)
	}
	return res, err
}

// epoch is the origin of mono.
var epoch = time.Now()

// mono reads the monotonic clock only (time.Now reads the wall clock too).
func mono() time.Duration { return time.Since(epoch) }
