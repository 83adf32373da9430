package telemetry

import (
	"context"
	"errors"
	"time"

	"github.com/clutchprotocol/clutch/store"
	"go.opentelemetry.io/otel/metric"
)

// The store usage gauges of ObserveStore. clutch.store.events is the
// counter of appended events (WrapStore): the events a store holds are
// clutch.store.stored_events.
const (
	MetricStoreBytes         = "clutch.store.bytes"
	MetricStoreFreeBytes     = "clutch.store.free_bytes"
	MetricStoreStoredEvents  = "clutch.store.stored_events"
	MetricStoreOldestAge     = "clutch.store.oldest.age"
	MetricStoreCompactionAge = "clutch.store.compaction.age"
	MetricStoreBackupAge     = "clutch.store.backup.age"
)

// ObserveStore exports the usage of st (store.UsageOf) as gauges read on
// each collection, not on a timer: clutch.store.bytes,
// clutch.store.free_bytes, clutch.store.stored_events, and the ages in
// seconds of its oldest event, its last compaction and its last backup
// (clutch.store.oldest.age, clutch.store.compaction.age,
// clutch.store.backup.age), by the store's clock (store.ClockOf, else
// time.Now). A figure the store does not know, or an event that never
// happened, is not observed. Call it once per store; Unregister the
// returned registration when the store closes (a closed store is not
// observed either).
func (t *Telemetry) ObserveStore(st store.Store) (metric.Registration, error) {
	m := t.meter
	bytes, err1 := m.Int64ObservableGauge(MetricStoreBytes, metric.WithUnit("By"),
		metric.WithDescription("Space the event store takes: its file, its relations, or memory."))
	free, err2 := m.Int64ObservableGauge(MetricStoreFreeBytes, metric.WithUnit("By"),
		metric.WithDescription("Space in the event store that a compaction would give back."))
	events, err3 := m.Int64ObservableGauge(MetricStoreStoredEvents, metric.WithUnit("{event}"),
		metric.WithDescription("Events the event store holds."))
	oldest, err4 := m.Float64ObservableGauge(MetricStoreOldestAge, metric.WithUnit("s"),
		metric.WithDescription("Age of the oldest event the event store holds."))
	compaction, err5 := m.Float64ObservableGauge(MetricStoreCompactionAge, metric.WithUnit("s"),
		metric.WithDescription("Time since the event store was last compacted."))
	backup, err6 := m.Float64ObservableGauge(MetricStoreBackupAge, metric.WithUnit("s"),
		metric.WithDescription("Time since the event store was last backed up."))
	if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
		return nil, wrap(ErrInvalidOptions, "making the store gauges", err)
	}
	now := store.ClockOf(st)
	if now == nil {
		now = time.Now
	}
	observe := func(ctx context.Context, o metric.Observer) error {
		u, err := store.UsageOf(ctx, st)
		if errors.Is(err, store.ErrClosed) {
			return nil
		}
		if err != nil {
			return err
		}
		at := now()
		if u.Bytes > 0 {
			o.ObserveInt64(bytes, u.Bytes)
		}
		if u.Free > 0 {
			o.ObserveInt64(free, u.Free)
		}
		o.ObserveInt64(events, int64(u.Events))
		for _, g := range []struct {
			in metric.Float64Observable
			t  time.Time
		}{{oldest, u.OldestTime}, {compaction, u.LastCompaction}, {backup, u.LastBackup}} {
			if !g.t.IsZero() {
				o.ObserveFloat64(g.in, at.Sub(g.t).Seconds())
			}
		}
		return nil
	}
	return m.RegisterCallback(observe, bytes, free, events, oldest, compaction, backup)
}
