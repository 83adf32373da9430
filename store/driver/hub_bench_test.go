package driver_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/internal/benchcpu"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// BenchmarkFollowers appends one event at a time while N followers each
// follow a task of their own (store.Query{TaskID}), and waits for the
// follower of the event's task to get it before the next append. It
// reports the append's p50 and p99 and the process's CPU per append: with
// one follower per store, neither grows with N. boltstore runs with
// NoSync, so that an fsync does not hide what the followers cost.
func BenchmarkFollowers(b *testing.B) {
	stores := []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"memstore", func(b *testing.B) store.Store {
			st, err := memstore.New(nil)
			if err != nil {
				b.Fatal(err)
			}
			return st
		}},
		{"boltstore", func(b *testing.B) store.Store {
			st, err := boltstore.Open(filepath.Join(b.TempDir(), "events.db"), &boltstore.Options{NoSync: true})
			if err != nil {
				b.Fatal(err)
			}
			return st
		}},
	}
	for _, s := range stores {
		for _, n := range []int{0, 1, 100, 1000} {
			b.Run(s.name+"/followers="+strconv.Itoa(n), func(b *testing.B) {
				st := s.open(b)
				defer st.Close()
				benchFollowers(b, st, n)
			})
		}
	}
}

func benchFollowers(b *testing.B, st store.Store, n int) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	task := func(i int) string {
		if n == 0 {
			return "task_none"
		}
		return "task_" + strconv.Itoa(i%n)
	}
	msg := func(i int) *protocol.Message {
		m := protocol.NewMessage(protocol.TypeTaskProgress, "agent:bench")
		m.RunID, m.ThreadID, m.TaskID = "run_bench", "thr_bench", task(i)
		m.Payload = json.RawMessage(`{"text":"half way"}`)
		return m
	}
	got := make(chan struct{}, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			for _, err := range st.Follow(ctx, store.Query{TaskID: task(i)}) {
				if err != nil {
					return
				}
				got <- struct{}{}
			}
		})
	}
	// Every follower has joined once it has had its task's first event.
	for i := range n {
		if _, err := st.Append(ctx, msg(i)); err != nil {
			b.Fatal(err)
		}
	}
	for range n {
		<-got
	}
	appends := make([]time.Duration, 0, b.N)
	cpu := benchcpu.Process()
	b.ResetTimer()
	for i := range b.N {
		m := msg(i)
		t0 := time.Now()
		if _, err := st.Append(ctx, m); err != nil {
			b.Fatal(err)
		}
		appends = append(appends, time.Since(t0))
		if n > 0 {
			<-got
		}
	}
	b.StopTimer()
	used := benchcpu.Process() - cpu
	cancel()
	wg.Wait()
	slices.Sort(appends)
	b.ReportMetric(float64(appends[len(appends)/2].Nanoseconds())/1e3, "append-p50-µs")
	b.ReportMetric(float64(appends[len(appends)*99/100].Nanoseconds())/1e3, "append-p99-µs")
	b.ReportMetric(float64(used.Nanoseconds())/float64(b.N)/1e3, "cpu-µs/append")
}
