package boltstore_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/storetest"
	bolt "go.etcd.io/bbolt"
)

// BenchmarkDurable is the durable workload at two sizes of the log, in one
// run, so that the figures at 1M events can be set against those at 10k:
//
//   - Append: 64 appenders, fsync on, each building its ~1.1 KiB message
//     per Append (ids, payload, encoding: the real cost of a new event),
//     spread over many runs, a new task every 4 events and a new run every
//     256; events/s and cpu-µs/event (the whole process's user+sys time
//     over the events, message building included);
//   - ReadRun/raw and /decoded: one 1000-event run whose events are spread
//     evenly over the whole file;
//   - Get: by id, ids picked at random over the whole file;
//   - Dedup: appending a message stored long ago (a duplicate by id);
//   - Reopen: Open after the writing process was killed with SIGKILL while
//     appending, with a full in-memory index tail to rebuild; reports
//     the heap Open keeps (heap-MiB) and the time of Check (check-s);
//   - Disk: file size and bbolt's free pages over the events.
//
// CLUTCH_BENCH_SIZES (comma-separated event counts) replaces the default
// sizes "10000,1000000"; the files are built fast (batches of 1000, no
// fsync) before the timed parts. CLUTCH_BENCH_DIR keeps them in a
// directory, to be used again by the next run (which appends to them).
func BenchmarkDurable(b *testing.B) {
	sizes := []int{10_000, 1_000_000}
	if v := os.Getenv("CLUTCH_BENCH_SIZES"); v != "" {
		sizes = sizes[:0]
		for f := range strings.SplitSeq(v, ",") {
			n, err := strconv.Atoi(f)
			if err != nil {
				b.Fatal(err)
			}
			sizes = append(sizes, n)
		}
	}
	dir := os.Getenv("CLUTCH_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	for _, size := range sizes {
		path := filepath.Join(dir, fmt.Sprintf("events-%d.db", size))
		pre := prefill(b, path, size)
		name := fmt.Sprintf("events=%s", humanCount(size))
		b.Run(name+"/Append", func(b *testing.B) { benchDurableAppend(b, path) })
		for _, decode := range []bool{false, true} {
			b.Run(name+"/ReadRun/"+map[bool]string{false: "raw", true: "decoded"}[decode], func(b *testing.B) {
				benchReadSpread(b, path, pre.Run, decode)
			})
		}
		b.Run(name+"/Get", func(b *testing.B) { benchGet(b, path, pre.Sample) })
		b.Run(name+"/Dedup", func(b *testing.B) { benchDedup(b, path, pre.Sample) })
		b.Run(name+"/Reopen", func(b *testing.B) { benchReopen(b, path) })
		b.Run(name+"/Disk", func(b *testing.B) { benchDisk(b, path) })
	}
}

func humanCount(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

// durableTypes are one task's events: an appender makes a new task every
// 4 events and a new run every 256.
var durableTypes = []protocol.Type{protocol.TypeTaskRequest, protocol.TypeTaskAccept, protocol.TypeTaskProgress, protocol.TypeTaskResult}

func newTraffic(ids *protocol.IDs, a int) *storetest.Traffic {
	return storetest.NewTraffic(ids, a, durableTypes, 256)
}

type prefilled struct {
	Run    string   // a run of spreadRun events spread evenly over the file
	Sample []string // ids of events spread over the file
}

const spreadRun = 1000

var prefillCache sync.Map // path → prefilled

// prefill builds a file of n events of the appenders' traffic, in batches
// of 1000 without fsync, with one run of spreadRun events spread evenly
// over it.
func prefill(b *testing.B, path string, n int) prefilled {
	if p, ok := prefillCache.Load(path); ok {
		return p.(prefilled)
	}
	side := path + ".json"
	if data, err := os.ReadFile(side); err == nil {
		var p prefilled
		if err := json.Unmarshal(data, &p); err != nil {
			b.Fatal(err)
		}
		prefillCache.Store(path, p)
		return p
	}
	start := time.Now()
	ps, _ := strconv.Atoi(os.Getenv("CLUTCH_BENCH_PAGESIZE"))
	s, err := boltstore.Open(path, &boltstore.Options{NoSync: true, MaxBatch: 1 << 20, IndexBatch: 1 << 16, PageSize: ps})
	if err != nil {
		b.Fatal(err)
	}
	ids := protocol.NewIDs(&protocol.IDOptions{Entropy: rand.NewChaCha8([32]byte{7})})
	workers := make([]*storetest.Traffic, 64)
	for a := range workers {
		workers[a] = newTraffic(ids, a)
	}
	spread := storetest.NewTraffic(ids, 0, durableTypes, 0)
	p := prefilled{}
	every := max(n/spreadRun, 1)
	rng := rand.New(rand.NewPCG(1, 2))
	batch := make([]*protocol.Message, 0, 1000)
	for i := range n {
		var m *protocol.Message
		if i%every == 0 && spread.Sent() < spreadRun {
			m = spread.Next()
			m.RunID, m.ThreadID = ids.New("run_spread"), "thr_spread"
			if p.Run == "" {
				p.Run = m.RunID
			}
			m.RunID = p.Run
		} else {
			m = workers[i%len(workers)].Next()
		}
		if rng.IntN(max(n/1000, 1)) == 0 {
			p.Sample = append(p.Sample, m.ID)
		}
		batch = append(batch, m)
		if len(batch) == cap(batch) || i == n-1 {
			if _, err := s.Append(context.Background(), batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	// Written without fsync: the file's dirty pages go to the disk now,
	// not during the measurements.
	if f, err := os.OpenFile(path, os.O_RDWR, 0); err != nil {
		b.Fatal(err)
	} else {
		err := f.Sync()
		f.Close()
		if err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("prefill %d events: %v", n, time.Since(start).Round(time.Millisecond))
	prefillCache.Store(path, p)
	data, err := json.Marshal(p)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(side, data, 0o600); err != nil {
		b.Fatal(err)
	}
	return p
}

func openDurable(b *testing.B, path string) *boltstore.Store {
	s, err := boltstore.Open(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

// benchDurableAppend appends b.N messages from 64 goroutines, each
// message built just before its Append, fsync on.
func benchDurableAppend(b *testing.B, path string) {
	s := openDurable(b, path)
	runAppenders(b, func() func(*protocol.Message) error {
		ctx := context.Background()
		return func(m *protocol.Message) error {
			_, err := s.Append(ctx, m)
			return err
		}
	})
	st := s.Stats()
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(st.Appended)/float64(max(st.Commits, 1)), "events/commit")
}

// durableAppenders is how many goroutines append at once in the durable
// benchmarks.
const durableAppenders = 64

// runAppenders sends b.N messages of the appenders' traffic from
// durableAppenders goroutines, each building its message just before it
// sends it with its own send (made by newSend), and reports events/s and
// cpu-µs/event (the whole process over the timed part).
func runAppenders(b *testing.B, newSend func() func(*protocol.Message) error) {
	ids := protocol.NewIDs(nil)
	traffic := make([]*storetest.Traffic, durableAppenders)
	sends := make([]func(*protocol.Message) error, durableAppenders)
	for a := range durableAppenders {
		traffic[a], sends[a] = newTraffic(ids, a), newSend()
	}
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	elapsed, used := appendRound(b, b.N, traffic, sends)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
	b.ReportMetric(float64(used.Microseconds())/float64(b.N), "cpu-µs/event")
}

func benchReadSpread(b *testing.B, path, run string, decode bool) {
	s := openDurable(b, path)
	defer s.Close()
	storetest.BenchRead(b, s, run, spreadRun, decode)
}

func benchGet(b *testing.B, path string, sample []string) {
	s := openDurable(b, path)
	defer s.Close()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 4))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		id := sample[rng.IntN(len(sample))]
		ev, err := s.Get(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		if len(ev.Raw) == 0 {
			b.Fatal("empty event")
		}
	}
}

// benchDedup appends, one at a time, copies of messages stored long ago:
// each is found a duplicate by id, and nothing is written.
func benchDedup(b *testing.B, path string, sample []string) {
	s := openDurable(b, path)
	defer s.Close()
	ctx := context.Background()
	msgs := make([]*protocol.Message, 0, len(sample))
	for _, id := range sample[:min(len(sample), 200)] {
		ev, err := s.Get(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		m, err := ev.Message()
		if err != nil {
			b.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	b.ReportAllocs()
	b.ResetTimer()
	i := 0
	for b.Loop() {
		res, err := s.Append(ctx, msgs[i%len(msgs)])
		if err != nil {
			b.Fatal(err)
		}
		if !res[0].Duplicate {
			b.Fatal("not a duplicate")
		}
		i++
	}
}

// The child side of benchReopen: the test binary re-executed with
// reopenChildEnv set to a file path. It appends from 64 goroutines and
// says "ready" once the index tail is nearly full; the parent kills it.
const reopenChildEnv = "CLUTCH_BOLTSTORE_REOPEN_CHILD"

func reopenChild() bool {
	path := os.Getenv(reopenChildEnv)
	if path == "" {
		return false
	}
	s := childStore(path, nil)
	const target = 8000 // just under the default IndexBatch
	ids := protocol.NewIDs(nil)
	var n atomic.Int64
	var stop atomic.Bool
	var once sync.Once
	for a := range 64 {
		w := newTraffic(ids, a)
		go func() {
			// Stopping leaves at most 63 appends in flight: the tail stays
			// under IndexBatch, unflushed.
			for !stop.Load() {
				if _, err := s.Append(context.Background(), w.Next()); err != nil {
					fmt.Fprintln(os.Stderr, "append:", err)
					os.Exit(3)
				}
				if n.Add(1) >= target && s.Stats().Unindexed >= target {
					stop.Store(true)
					once.Do(func() { fmt.Println("ready") })
				}
			}
		}()
	}
	select {}
}

// benchReopen times Open of the file after a writer was killed with
// SIGKILL holding about 8000 events whose index entries were only in
// memory, and reports the heap the open store holds and Check's time. It
// measures once, whatever b.N: see open-ms, not ns/op.
func benchReopen(b *testing.B, path string) {
	var openTime time.Duration
	var heap uint64
	const rounds = 1
	for range rounds {
		b.StopTimer()
		cmd, out, stderr := startChild(b, reopenChildEnv, path)
		line, _ := bufio.NewReader(out).ReadString('\n')
		cmd.Process.Kill()
		cmd.Wait()
		if line != "ready\n" {
			b.Fatalf("child said %q (stderr: %s)", line, stderr)
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		b.StartTimer()
		t := time.Now()
		s, err := boltstore.Open(path, nil)
		openTime += time.Since(t)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap = max(heap, after.HeapAlloc-min(after.HeapAlloc, before.HeapAlloc))
		if st := s.Stats(); st.Unindexed < 8000 {
			b.Fatalf("reopened with %d events to reindex, want ≥ 8000", st.Unindexed)
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(openTime.Microseconds())/1000/rounds, "open-ms")
	b.ReportMetric(float64(heap)/(1<<20), "heap-MiB")
	s := openDurable(b, path)
	defer s.Close()
	t := time.Now()
	if err := s.Check(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(time.Since(t).Seconds(), "check-s")
}

// benchDisk reports the file size and bbolt's free pages over the events
// (measured once, whatever b.N).
func benchDisk(b *testing.B, path string) {
	var events uint64
	{
		s := openDurable(b, path)
		last, err := s.LastSeq(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		events = last
		s.Close()
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var used int64
	db.View(func(tx *bolt.Tx) error { used = tx.Size(); return nil })
	st := db.Stats()
	b.ReportMetric(float64(fi.Size())/float64(events), "file-B/event")
	b.ReportMetric(float64(used)/float64(events), "used-B/event")
	b.ReportMetric(float64(st.FreePageN+st.PendingPageN), "free-pages")
	b.ReportMetric(float64(fi.Size())/(1<<20), "file-MiB")
	b.ReportMetric(float64(events), "events")
}
