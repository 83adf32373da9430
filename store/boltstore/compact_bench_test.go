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

// BenchmarkCompact measures Compact of a store of 50,000 events (fsync
// on) in MB/s of the file before, and the latency of one appender's
// appends while compactions run against the same appender without them:
// append-p50/p99-µs during, idle-append-p50/p99-µs without; paused-ms is
// the mean time reads and appends waited for a swap.
func BenchmarkCompact(b *testing.B) {
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
	var bytes, after int64
	var paused time.Duration
	b.ResetTimer()
	for b.Loop() {
		res, err := s.Compact(ctx)
		if err != nil {
			b.Fatal(err)
		}
		bytes += res.BytesBefore
		after = res.BytesAfter
		paused += res.Paused
	}
	elapsed := b.Elapsed()
	stop.Store(true)
	lat := <-during
	b.ReportMetric(float64(bytes)/1e6/elapsed.Seconds(), "MB/s")
	b.ReportMetric(float64(after), "B-after")
	b.ReportMetric(float64(paused.Microseconds())/1e3/float64(b.N), "paused-ms")
	report := func(name string, d []time.Duration) {
		if len(d) == 0 {
			return
		}
		slices.Sort(d)
		b.ReportMetric(float64(d[len(d)/2].Microseconds()), name+"-p50-µs")
		b.ReportMetric(float64(d[len(d)*99/100].Microseconds()), name+"-p99-µs")
	}
	report("append", lat)
	report("idle-append", idle)
	b.ReportMetric(float64(len(lat)), "appends-during")
}
