package telemetry_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/telemetry"
)

// ObserveStore's gauges are read from the store's usage at each
// collection: its size, events, and the ages of its oldest event, last
// compaction and last backup by the store's clock; the ages of what never
// happened are not observed, and Unregister stops them all.
func TestObserveStore(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	tel, err := telemetry.New(&telemetry.Options{MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	require.NoError(t, err)
	dir := t.TempDir()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	st, err := boltstore.Open(filepath.Join(dir, "events.db"), &boltstore.Options{Clock: func() time.Time { return now }})
	require.NoError(t, err)
	defer st.Close()
	ctx := context.Background()
	ids := protocol.NewIDs(nil)
	for range 5 {
		m := ids.NewMessage(protocol.TypeTaskProgress, "agent:a")
		m.RunID, m.ThreadID = ids.RunID(), ids.ThreadID()
		_, err := st.Append(ctx, m)
		require.NoError(t, err)
	}
	reg, err := tel.ObserveStore(st)
	require.NoError(t, err)

	collect := func() map[string]float64 {
		var rm metricdata.ResourceMetrics
		require.NoError(t, reader.Collect(ctx, &rm))
		out := map[string]float64{}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				switch d := m.Data.(type) {
				case metricdata.Gauge[int64]:
					for _, p := range d.DataPoints {
						out[m.Name] = float64(p.Value)
					}
				case metricdata.Gauge[float64]:
					for _, p := range d.DataPoints {
						out[m.Name] = p.Value
					}
				}
			}
		}
		return out
	}
	now = now.Add(time.Minute)
	got := collect()
	require.Equal(t, float64(5), got[telemetry.MetricStoreStoredEvents])
	require.Positive(t, got[telemetry.MetricStoreBytes])
	require.Equal(t, float64(60), got[telemetry.MetricStoreOldestAge])
	require.NotContains(t, got, telemetry.MetricStoreCompactionAge)
	require.NotContains(t, got, telemetry.MetricStoreBackupAge)

	_, err = st.BackupFile(ctx, filepath.Join(dir, "backup.db"))
	require.NoError(t, err)
	now = now.Add(time.Minute)
	_, err = st.Compact(ctx)
	require.NoError(t, err)
	now = now.Add(30 * time.Second)
	got = collect()
	require.Equal(t, float64(150), got[telemetry.MetricStoreOldestAge])
	require.Equal(t, float64(90), got[telemetry.MetricStoreBackupAge])
	require.Equal(t, float64(30), got[telemetry.MetricStoreCompactionAge])

	require.NoError(t, reg.Unregister())
	got = collect()
	require.NotContains(t, got, telemetry.MetricStoreStoredEvents)
}
