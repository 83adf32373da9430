package boltstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/store/boltstore"
)

// BenchmarkCompact measures Compact of a store of 50,000 events (fsync
// on) in MB/s of the file before, and the latency of one appender's
// appends while compactions run against the same appender without them:
// append-p50/p99-µs during, idle-append-p50/p99-µs without
// (underAppends); paused-ms is the mean time reads and appends waited for
// a swap.
func BenchmarkCompact(b *testing.B) {
	var after int64
	var paused time.Duration
	underAppends(b, func(ctx context.Context, s *boltstore.Store, _ string) int64 {
		res, err := s.Compact(ctx)
		if err != nil {
			b.Fatal(err)
		}
		after = res.BytesAfter
		paused += res.Paused
		return res.BytesBefore
	})
	b.ReportMetric(float64(after), "B-after")
	b.ReportMetric(float64(paused.Microseconds())/1e3/float64(b.N), "paused-ms")
}
