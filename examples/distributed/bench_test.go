package main

import (
	"context"
	"os"
	"slices"
	"sync"
	"testing"
	"time"
)

// BenchmarkTasksAcrossProcesses measures a submitter (this process) and
// two worker processes on one PostgreSQL: "throughput" submits b.N tasks
// with 64 in flight and reports tasks/s; "latency" runs b.N tasks one
// after another and reports the p50 and p99 of Submit → Wait returning.
// Every task is routed here, claimed and run in a worker, and its result
// stored here.
func BenchmarkTasksAcrossProcesses(b *testing.B) {
	cfg := testConfig(b)
	cfg.TTL = 10 * time.Second
	ctx := context.Background()
	tm, err := openTeam(ctx, cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer tm.close()
	for _, name := range []string{"worker-1", "worker-2"} {
		w, err := startWorker(ctx, os.Args[0], cfg, name, 0, workerArgs...)
		if err != nil {
			b.Fatal(err)
		}
		defer w.stop()
	}
	if err := tm.awaitAgents(ctx, 2); err != nil {
		b.Fatal(err)
	}
	one := func() error {
		h, err := tm.submitEcho(ctx, 1)
		if err != nil {
			return err
		}
		o, err := h.Wait(ctx)
		if err == nil && !o.OK() {
			b.Fatalf("outcome %+v", o)
		}
		return err
	}
	b.Run("throughput", func(b *testing.B) {
		work := make(chan struct{})
		var wg sync.WaitGroup
		start := time.Now()
		for range 64 {
			wg.Go(func() {
				for range work {
					if err := one(); err != nil {
						b.Error(err)
					}
				}
			})
		}
		for range b.N {
			work <- struct{}{}
		}
		close(work)
		wg.Wait()
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tasks/s")
	})
	b.Run("latency", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		for range b.N {
			t := time.Now()
			if err := one(); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t))
		}
		slices.Sort(lat)
		pct := func(p int) float64 { return float64(lat[max(0, (len(lat)*p+99)/100-1)].Microseconds()) }
		b.ReportMetric(pct(50), "p50-µs")
		b.ReportMetric(pct(99), "p99-µs")
	})
}
