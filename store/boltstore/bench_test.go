package boltstore_test

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/storetest"
)

// BenchmarkAppend is the durable append figure: fsync on, the ~1 KiB
// workload of storetest, from 1, 8 and 64 goroutines with group commit,
// and one transaction per message (MaxBatch 1) as the baseline, in the
// same run. disk-B/event is the file size after Close over the events,
// used-B/event the part of the file bbolt uses (without preallocation).
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
			file, used := diskUse(b, path)
			b.ReportMetric(float64(file)/float64(b.N), "disk-B/event")
			b.ReportMetric(float64(used)/float64(b.N), "used-B/event")
		})
	}
}

// diskUse returns the size of the file and the part of it bbolt uses (its
// high-water mark); the rest is bbolt's preallocation, up to 16 MiB.
func diskUse(b *testing.B, path string) (file, used int64) {
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.View(func(tx *bolt.Tx) error { used = tx.Size(); return nil })
	return fi.Size(), used
}

// BenchmarkAppendNaive is the baseline of research/perf-baselines.md §2 on
// this machine, in the same run: one bbolt transaction per message holding
// the message under its seq and, in the same transaction, the dedup
// lookups and puts of the id and idempotency key and the four index keys
// (attr ‖ 0 ‖ seq), from 64 goroutines.
func BenchmarkAppendNaive(b *testing.B) {
	path := filepath.Join(b.TempDir(), "naive.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{FreelistType: bolt.FreelistMapType})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	names := []string{"events", "ids", "idem", "run", "thread", "task", "agent"}
	if err := db.Update(func(tx *bolt.Tx) error {
		for _, n := range names {
			if _, err := tx.CreateBucket([]byte(n)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	work := storetest.BenchMessages(b, b.N, 64)
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for _, msgs := range work {
		wg.Go(func() {
			for _, m := range msgs {
				if err := m.Validate(); err != nil {
					b.Error(err)
					return
				}
				err := db.Update(func(tx *bolt.Tx) error {
					bk := func(n string) *bolt.Bucket { return tx.Bucket([]byte(n)) }
					idemKey := []byte(m.RunID + "\x00" + m.IdempotencyKey)
					if bk("ids").Get([]byte(m.ID)) != nil || bk("idem").Get(idemKey) != nil {
						return nil
					}
					var seq uint64 = 1
					if k, _ := bk("events").Cursor().Last(); k != nil {
						seq = binary.BigEndian.Uint64(k) + 1
					}
					sk := binary.BigEndian.AppendUint64(nil, seq)
					puts := []struct {
						b    string
						k, v []byte
					}{
						{"events", sk, m.Raw()}, {"ids", []byte(m.ID), sk}, {"idem", idemKey, sk},
						{"run", append([]byte(m.RunID+"\x00"), sk...), nil},
						{"thread", append([]byte(m.ThreadID+"\x00"), sk...), nil},
						{"task", append([]byte(m.TaskID+"\x00"), sk...), nil},
						{"agent", append([]byte(m.From.AgentID+"\x00"), sk...), nil},
					}
					for _, p := range puts {
						if err := bk(p.b).Put(p.k, p.v); err != nil {
							return err
						}
					}
					return nil
				})
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
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

// BenchmarkOpen is the cost of opening (and closing) a closed store of
// 50k ~1 KiB events: the checks of the file before bbolt opens it, bbolt's
// open and the store's state.
func BenchmarkOpen(b *testing.B) {
	path := filepath.Join(b.TempDir(), "events.db")
	s, err := boltstore.Open(path, &boltstore.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	for _, msgs := range storetest.BenchMessages(b, 50000, 50) {
		if _, err := s.Append(b.Context(), msgs...); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		s, err := boltstore.Open(path, nil)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
	fi, _ := os.Stat(path)
	b.ReportMetric(float64(fi.Size())/(1<<20), "file-MiB")
}
