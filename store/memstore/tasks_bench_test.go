package memstore_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

	"github.com/clutchprotocol/clutch/internal/benchcpu"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// BenchmarkAppendTasks appends what the router stores for each task — the
// request, then the decision and accept together, then the result — from
// one goroutine and from 64, the messages encoded beforehand: the store's
// own cost per task. cpu-ns/task counts every goroutine and the collector.
func BenchmarkAppendTasks(b *testing.B) {
	for _, workers := range []int{1, 64} {
		b.Run(strconv.Itoa(workers), func(b *testing.B) { benchAppendTasks(b, workers) })
	}
}

func benchAppendTasks(b *testing.B, workers int) {
	ids := protocol.NewIDs(nil)
	type task struct{ req, dec, acc, res *protocol.Message }
	tasks := make([]task, b.N)
	for i := range tasks {
		req := ids.NewMessage(protocol.TypeTaskRequest, "agent:ui")
		dec := ids.Reply(req, protocol.TypeRoutingDecision, "agent:router")
		acc := ids.Reply(req, protocol.TypeTaskAccept, "agent:research-0")
		res := ids.Reply(req, protocol.TypeTaskResult, "agent:research-0")
		for _, m := range []*protocol.Message{req, dec, acc, res} {
			if err := m.SetPayload(map[string]any{"text": "Three incumbents hold 70% of volume"}); err != nil {
				b.Fatal(err)
			}
			if _, err := protocol.Encode(m); err != nil {
				b.Fatal(err)
			}
		}
		tasks[i] = task{req, dec, acc, res}
	}
	s, err := memstore.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchcpu.Process()
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(tasks); i += workers {
				t := tasks[i]
				for _, batch := range [][]*protocol.Message{{t.req}, {t.dec, t.acc}, {t.res}} {
					if _, err := s.Append(ctx, batch...); err != nil {
						b.Error(err)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64((benchcpu.Process()-cpu).Nanoseconds())/float64(b.N), "cpu-ns/task")
}
