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
// When st is a store.Conditional, so is the wrapped store, its
// AppendIfNew measured the same way.
func (t *Telemetry) WrapStore(st store.Store) store.Store {
	m := &measuredStore{Store: st, t: t}
	if c, ok := st.(store.Conditional); ok {
		return &measuredConditional{measuredStore: m, c: c}
	}
	return m
}

// measuredConditional is a measuredStore over a store.Conditional.
type measuredConditional struct {
	*measuredStore
	c store.Conditional
}

// AppendIfNew implements store.Conditional, measured as Append is.
func (s *measuredConditional) AppendIfNew(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	return s.measure(ctx, msgs, s.c.AppendIfNew)
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
	return s.measure(ctx, msgs, s.Store.Append)
}

// measure runs an append of msgs and records it.
func (s *measuredStore) measure(ctx context.Context, msgs []*protocol.Message, appendFn func(context.Context, ...*protocol.Message) ([]store.AppendResult, error)) ([]store.AppendResult, error) {
	t := s.t
	if !t.appendDur.Enabled(ctx) {
		return appendFn(ctx, msgs...) // no meter records: no clock reads either
	}
	start := mono()
	res, err := appendFn(ctx, msgs...)
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
		if i < len(res) && !res[i].Stored() {
			continue // a duplicate, or left out with one (store.Conditional)
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
