package boltstore_test

import (
	"context"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

// underAppends opens a store of 50,000 events (fsync on) in a directory
// of its own and runs op in b.Loop while one appender appends to it. It
// reports op's rate in MB/s (op returns the bytes each call moved), and
// the appender's latency while op runs (append-p50/p99/max-µs) and before,
// without it (idle-append-p50/p99/max-µs), with appends-during.
func underAppends(b *testing.B, op func(ctx context.Context, s *boltstore.Store, dir string) int64) {
	dir := b.TempDir()
	s, err := boltstore.Open(filepath.Join(dir, "events.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	all := messages(b, 50_000)
	for len(all) > 0 {
		n := min(len(all), 1000)
		if _, err := s.Append(ctx, all[:n]...); err != nil {
			b.Fatal(err)
		}
		all = all[n:]
	}
	ids := protocol.NewIDs(nil)
	run, thread := ids.RunID(), ids.ThreadID()
	i := 0
	appendOne := func() time.Duration {
		m := loadMessage(ids, run, thread, 0, i)
		i++
		start := time.Now()
		if _, err := s.Append(ctx, m); err != nil {
			b.Error(err)
		}
		return time.Since(start)
	}
	var idle []time.Duration
	for range 300 {
		idle = append(idle, appendOne())
	}
	var stop atomic.Bool
	during := make(chan []time.Duration)
	go func() {
		var lat []time.Duration
		for !stop.Load() {
			lat = append(lat, appendOne())
		}
		during <- lat
	}()
	var bytes int64
	b.ResetTimer()
	for b.Loop() {
		bytes += op(ctx, s, dir)
	}
	elapsed := b.Elapsed()
	stop.Store(true)
	lat := <-during
	b.ReportMetric(float64(bytes)/1e6/elapsed.Seconds(), "MB/s")
	report := func(name string, d []time.Duration) {
		if len(d) == 0 {
			return
		}
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2].Microseconds()), name+"-p50-µs")
		b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), name+"-p99-µs")
		// The longest stall: a pause that hits a few appends of many
		// hides below the p99.
		b.ReportMetric(float64(d[len(d)-1].Microseconds()), name+"-max-µs")
	}
	report("append", lat)
	report("idle-append", idle)
	b.ReportMetric(float64(len(lat)), "appends-during")
}
