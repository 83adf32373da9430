package router

import (
	"context"
	"encoding/json"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// requestsOnly keeps registry events and task.requests (which Ask reads
// back) and drops the bytes of every other event, so that a heap
// measurement sees the router and the requests, not the whole log.
type requestsOnly struct{ store.Store }

func (d requestsOnly) Append(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	if len(msgs) > 0 && (msgs[0].Type.Family() == "agent" || msgs[0].Type == protocol.TypeTaskRequest) {
		return d.Store.Append(ctx, msgs...)
	}
	return discardStore{d.Store}.Append(ctx, msgs...)
}

// BenchmarkWaitingHeap: the heap a task holds while it waits for an
// answer (Task.Ask), with 100,000 tasks waiting at once — against
// BenchmarkParkedTaskHeap, where a task's handler blocks. The store keeps
// only the requests (requestsOnly). heapB/task is everything live once
// the tasks wait; endedB/task the same for tasks that ended at once (the
// stored requests and what an ended task leaves); waitB/task, their
// difference, is what waiting costs.
func BenchmarkWaitingHeap(b *testing.B) {
	const n = 100_000
	for b.Loop() {
		waiting := heapPerTask(b, n, func(ctx context.Context, t *Task) (*Result, error) {
			_, err := t.Ask(ctx, protocol.Question{Text: "Go on?"})
			return nil, err
		})
		ended := heapPerTask(b, n, func(ctx context.Context, t *Task) (*Result, error) { return nil, nil })
		b.ReportMetric(waiting, "heapB/task")
		b.ReportMetric(ended, "endedB/task")
		b.ReportMetric(waiting-ended, "waitB/task")
	}
}

// heapPerTask runs n tasks on h over a fresh store and returns the heap
// they leave, per task.
func heapPerTask(b *testing.B, n int, h Handler) float64 {
	st, err := memstore.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	r := benchRouter(b, requestsOnly{st})
	defer r.Close()
	ctx := context.Background()
	if err := r.Register(ctx, card("agent:a", skill("skill:a")), h); err != nil {
		b.Fatal(err)
	}
	reqs := make([]*protocol.Message, n)
	for i := range reqs {
		reqs[i], _ = r.NewRequest("agent:ui", "research.query.v1", schema.ResearchQuery{Query: "x"})
		reqs[i].Requires = []string{"skill:a"}
		if _, err := protocol.Encode(reqs[i]); err != nil {
			b.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	settle()
	runtime.ReadMemStats(&before)
	for _, req := range reqs {
		h, err := r.Submit(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		h.Wait(ctx)
	}
	settle()
	runtime.ReadMemStats(&after)
	return float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
}

// settle collects twice, so that what sync.Pools keep for one cycle is
// gone before the heap is read.
func settle() {
	runtime.GC()
	runtime.GC()
}

// BenchmarkAnswerToRun: from Router.Answer to the handler running again
// (the answer stored, the task claimed, routed and accepted), on memstore
// and on boltstore with fsync.
func BenchmarkAnswerToRun(b *testing.B) {
	for _, tc := range []struct {
		name string
		open func(b *testing.B) store.Store
	}{
		{"memstore", func(b *testing.B) store.Store { st, _ := memstore.New(nil); return st }},
		{"boltstore", func(b *testing.B) store.Store {
			st, err := boltstore.Open(filepath.Join(b.TempDir(), "events.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			return st
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			st := tc.open(b)
			b.Cleanup(func() { st.Close() })
			r := benchRouter(b, st)
			ctx := context.Background()
			resumed := make(chan struct{}, 1)
			if err := r.Register(ctx, card("agent:ask", skill("skill:ask")), func(ctx context.Context, t *Task) (*Result, error) {
				v, err := t.Ask(ctx, protocol.Question{Text: "Go on?"})
				if err != nil {
					return nil, err
				}
				resumed <- struct{}{}
				return &Result{Payload: v}, nil
			}); err != nil {
				b.Fatal(err)
			}
			by := Answerer{AgentID: "agent:ui"}
			for b.Loop() {
				b.StopTimer()
				req, _ := r.NewRequest("agent:ui", "research.query.v1", schema.ResearchQuery{Query: "x"})
				req.Requires = []string{"skill:ask"}
				h, err := r.Submit(ctx, req)
				if err != nil {
					b.Fatal(err)
				}
				out, _ := h.Wait(ctx)
				b.StartTimer()
				h, err = r.Answer(ctx, out.Question.ID, by, json.RawMessage(`true`))
				if err != nil {
					b.Fatal(err)
				}
				<-resumed
				b.StopTimer()
				if _, err := h.Wait(ctx); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}
