package benchcpu

import (
	"sync"
	"testing"
	"time"
)

// Tasks runs one b.N times, spread over workers goroutines, from a reset
// timer, and reports tasks/s and cpu-µs/task (the process's CPU time, when
// the platform gives it). A call of one that fails is reported with
// b.Error and ends its goroutine. Metrics a benchmark reports on its own
// (commits, fsyncs) are read around the call.
func Tasks(b *testing.B, workers int, one func() error) {
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu := time.Now(), Process()
	var wg sync.WaitGroup
	per := b.N / workers
	for w := range workers {
		n := per
		if w == 0 {
			n += b.N % workers
		}
		wg.Go(func() {
			for range n {
				if err := one(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "tasks/s")
	if used := Process() - cpu; used > 0 {
		b.ReportMetric(float64(used.Microseconds())/float64(b.N), "cpu-µs/task")
	}
}
