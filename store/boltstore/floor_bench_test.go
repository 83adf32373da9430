package boltstore_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/internal/benchcpu"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store/storetest"
	bolt "go.etcd.io/bbolt"
)

// BenchmarkDurableFloor is the floor under BenchmarkDurable's Append: the
// same 64 appenders, each building and encoding (validating) the same
// kind of message and then waiting for its fsync, with nothing but bbolt
// behind them (see floor). Store.Append can only be slower; the gap
// between the two is what the store itself costs. BenchmarkDurableRatio
// sets the two side by side in one run.
func BenchmarkDurableFloor(b *testing.B) {
	f := openFloor(b, b.TempDir())
	defer f.close()
	runAppenders(b, f.newSend)
	b.ReportMetric(float64(b.N)/float64(max(f.commits.Load(), 1)), "events/commit")
}

// floor is a plain group commit on bbolt alone: it gathers every waiting
// message (all 64 callers, or what came within a millisecond), puts each
// one's bytes under its seq in one transaction, commits it with fsync and
// answers the callers: no deduplication, no index, no summaries, no
// checksums, no records.
type floor struct {
	db      *bolt.DB
	mu      sync.Mutex
	queued  []*floorCall
	want    int // wake the writer when this many are queued (0: on the first)
	wake    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
	commits atomic.Int64
}

type floorCall struct {
	raw  []byte
	done chan error
}

var floorBucket = []byte("events")

func openFloor(b *testing.B, dir string) *floor {
	db, err := bolt.Open(filepath.Join(dir, "floor.db"), 0o600, &bolt.Options{FreelistType: bolt.FreelistMapType, PageSize: 16 << 10})
	if err != nil {
		b.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucketIfNotExists(floorBucket); return err }); err != nil {
		b.Fatal(err)
	}
	f := &floor{db: db, wake: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	go f.run()
	return f
}

func (f *floor) close() {
	close(f.stop)
	<-f.stopped
	f.db.Close()
}

func (f *floor) run() { // the group commit
	defer close(f.stopped)
	var seq uint64
	var key [8]byte
	var group []*floorCall
	for {
		select {
		case <-f.wake:
		case <-f.stop:
			return
		}
		// Gather: every caller, or what came within a millisecond.
		timer := time.NewTimer(time.Millisecond)
		f.mu.Lock()
	gather:
		for len(f.queued) < durableAppenders {
			f.want = durableAppenders
			f.mu.Unlock()
			select {
			case <-f.wake:
				f.mu.Lock()
			case <-timer.C:
				f.mu.Lock()
				break gather // the millisecond is over
			}
		}
		timer.Stop()
		f.want = 0
		group = append(group[:0], f.queued...)
		clear(f.queued)
		f.queued = f.queued[:0]
		f.mu.Unlock()
		if len(group) == 0 {
			continue
		}
		err := f.db.Update(func(tx *bolt.Tx) error {
			bk := tx.Bucket(floorBucket)
			bk.FillPercent = 1
			for _, c := range group {
				seq++
				binary.BigEndian.PutUint64(key[:], seq)
				if err := bk.Put(key[:], c.raw); err != nil {
					return err
				}
			}
			return nil
		})
		f.commits.Add(1)
		for _, c := range group {
			c.done <- err
		}
	}
}

// newSend returns one appender's send: encode the message, queue it, wait
// for its commit.
func (f *floor) newSend() func(*protocol.Message) error {
	c := &floorCall{done: make(chan error, 1)}
	return func(m *protocol.Message) error {
		raw, err := protocol.Encode(m)
		if err != nil {
			return err
		}
		c.raw = raw
		f.mu.Lock()
		f.queued = append(f.queued, c)
		if len(f.queued) == 1 || len(f.queued) >= f.want && f.want > 0 {
			select {
			case f.wake <- struct{}{}:
			default:
			}
		}
		f.mu.Unlock()
		return <-c.done
	}
}

// BenchmarkDurableRatio runs BenchmarkDurable's Append (on a file of
// 10k events, or the first of CLUTCH_BENCH_SIZES) and
// BenchmarkDurableFloor in alternating rounds of ratioRound events each,
// in one process, and reports the store's throughput over the floor's
// (ratio: 1 is the floor) besides each side's events/s and cpu-µs/event,
// and the median of the rounds' ratios (ratio-median: a burst of load
// from another process moves one round's ratio, not the median). The
// machine's load changes the two alike within a round or two, so the
// ratio stays readable when the absolute figures move by a tenth from one
// run to the next. ns/op counts both sides' events.
func BenchmarkDurableRatio(b *testing.B) {
	size := 10_000
	if v := os.Getenv("CLUTCH_BENCH_SIZES"); v != "" {
		if _, err := fmt.Sscan(v, &size); err != nil {
			b.Fatal(err)
		}
	}
	dir := os.Getenv("CLUTCH_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	path := filepath.Join(dir, fmt.Sprintf("events-%d.db", size))
	prefill(b, path, size)
	s := openDurable(b, path)
	f := openFloor(b, b.TempDir())
	ids := protocol.NewIDs(nil)
	var sides [2]struct {
		sends   []func(*protocol.Message) error
		traffic []*storetest.Traffic
		elapsed time.Duration
		cpu     time.Duration
		events  int
	}
	ctx := context.Background()
	for a := range durableAppenders {
		sides[0].sends = append(sides[0].sends, func(m *protocol.Message) error { _, err := s.Append(ctx, m); return err })
		sides[1].sends = append(sides[1].sends, f.newSend())
		sides[0].traffic = append(sides[0].traffic, newTraffic(ids, a))
		sides[1].traffic = append(sides[1].traffic, newTraffic(ids, a))
	}
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	var ratios []float64 // of each round: the floor's time over the store's
	for left, round := b.N, 0; left > 0; round++ {
		n := min(left, ratioRound)
		left -= n
		var took [2]time.Duration
		for i := range sides {
			j := (round + i) % 2 // each side goes first every other round
			side := &sides[j]
			elapsed, cpu := appendRound(b, n, side.traffic, side.sends)
			side.elapsed += elapsed
			side.cpu += cpu
			side.events += n
			took[j] = elapsed
		}
		ratios = append(ratios, took[1].Seconds()/took[0].Seconds())
	}
	b.StopTimer()
	st := s.Stats()
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	f.close()
	rate := func(i int) float64 { return float64(sides[i].events) / sides[i].elapsed.Seconds() }
	b.ReportMetric(rate(0), "store-events/s")
	b.ReportMetric(rate(1), "floor-events/s")
	b.ReportMetric(rate(0)/rate(1), "ratio")
	slices.Sort(ratios)
	b.ReportMetric(ratios[len(ratios)/2], "ratio-median")
	b.ReportMetric(float64(sides[0].cpu.Microseconds())/float64(sides[0].events), "store-cpu-µs/event")
	b.ReportMetric(float64(sides[1].cpu.Microseconds())/float64(sides[1].events), "floor-cpu-µs/event")
	b.ReportMetric(float64(st.Appended)/float64(max(st.Commits, 1)), "store-events/commit")
	b.ReportMetric(float64(sides[1].events)/float64(max(f.commits.Load(), 1)), "floor-events/commit")
}

// ratioRound is how many events one round of BenchmarkDurableRatio
// appends to each side: some 60 group commits.
const ratioRound = 4096

// appendRound sends n messages from len(sends) goroutines, appender a
// building its messages with traffic[a], and returns the time taken and
// the process's CPU time over it.
func appendRound(b *testing.B, n int, traffic []*storetest.Traffic, sends []func(*protocol.Message) error) (time.Duration, time.Duration) {
	var left atomic.Int64
	left.Store(int64(n))
	start, cpu := time.Now(), benchcpu.Process()
	var wg sync.WaitGroup
	for a := range sends {
		w, send := traffic[a], sends[a]
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if err := send(w.Next()); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return time.Since(start), benchcpu.Process() - cpu
}
