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
// stored here. Both report the commits per task (all processes'), and log
// the p50 and p99 of each step of a task; "throughput" reports the CPU
// per task of the three processes and of the database's backends.
func BenchmarkTasksAcrossProcesses(b *testing.B) {
	cfg := testConfig(b)
	cfg.TTL = 10 * time.Second
	ctx := context.Background()
	tm, err := openTeam(ctx, cfg, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer tm.close()
	pm := postmasterPID(cluster.Need(b).Dir())
	pids := []int{os.Getpid()}
	for _, name := range []string{"worker-1", "worker-2"} {
		w, err := startWorker(ctx, os.Args[0], cfg, name, 0, workerArgs...)
		if err != nil {
			b.Fatal(err)
		}
		defer w.stop()
		pids = append(pids, w.cmd.Process.Pid)
	}
	cpu := func() (pg, g time.Duration) {
		for _, p := range pids {
			g += procCPU(p, false)
		}
		return procCPU(pm, true), g
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
		from, _ := tm.st.LastSeq(ctx)
		pg0, g0 := cpu()
		defer func() {
			pg1, g1 := cpu()
			b.ReportMetric(float64((pg1-pg0).Microseconds())/float64(b.N), "pg-cpu-µs/task")
			b.ReportMetric(float64((g1-g0).Microseconds())/float64(b.N), "go-cpu-µs/task")
			b.ReportMetric(profileLog(b, tm.st, from), "commits/task")
		}()
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
		from, _ := tm.st.LastSeq(ctx)
		defer func() { b.ReportMetric(profileLog(b, tm.st, from), "commits/task") }()
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
