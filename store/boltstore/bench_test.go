package boltstore_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/storetest"
)

// BenchmarkAppend is the durable append figure: fsync on, the ~1 KiB
// workload of storetest, from 1, 8 and 64 goroutines with group commit,
// and one transaction per message (MaxBatch 1) as the baseline, in the
// same run. disk-B/event is the file size after Close over the events.
func BenchmarkAppend(b *testing.B) {
	for _, c := range []struct {
		name      string
		appenders int
		opts      boltstore.Options
	}{
		{"group/appenders=1", 1, boltstore.Options{}},
		{"group/appenders=8", 8, boltstore.Options{}},
		{"group/appenders=64", 64, boltstore.Options{}},
		{"tx-per-message/appenders=64", 64, boltstore.Options{MaxBatch: 1}},
		{"nosync/appenders=64", 64, boltstore.Options{NoSync: true}},
	} {
		b.Run(c.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "events.db")
			s, err := boltstore.Open(path, &c.opts)
			if err != nil {
				b.Fatal(err)
			}
			storetest.BenchAppend(b, s, c.appenders)
			st := s.Stats()
			b.ReportMetric(float64(st.Appended)/float64(max(st.Commits, 1)), "events/commit")
			if err := s.Close(); err != nil {
				b.Fatal(err)
			}
			fi, err := os.Stat(path)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(fi.Size())/float64(b.N), "disk-B/event")
		})
	}
}

func BenchmarkReadRun(b *testing.B) {
	for _, decode := range []bool{false, true} {
		b.Run(fmt.Sprintf("decode=%v", decode), func(b *testing.B) {
			s, err := boltstore.Open(filepath.Join(b.TempDir(), "events.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			storetest.BenchReadRun(b, s, decode)
		})
	}
}

func BenchmarkFollowLatency(b *testing.B) {
	s, err := boltstore.Open(filepath.Join(b.TempDir(), "events.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	storetest.BenchFollowLatency(b, s)
}
