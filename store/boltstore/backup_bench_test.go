package boltstore_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/clutchprotocol/clutch/store/boltstore"
)

// BenchmarkBackup measures BackupFile of a store of 50,000 events (fsync
// on) in MB/s, and the latency of one appender's appends while backups
// run against the same appender without them: append-p50/p99-µs during,
// idle-append-p50/p99-µs without (underAppends).
func BenchmarkBackup(b *testing.B) {
	var bytes int64
	underAppends(b, func(ctx context.Context, s *boltstore.Store, dir string) int64 {
		info, err := s.BackupFile(ctx, filepath.Join(dir, "backup.db"))
		if err != nil {
			b.Fatal(err)
		}
		bytes += info.Bytes
		return info.Bytes
	})
	b.ReportMetric(float64(bytes)/float64(b.N), "B/backup")
}
