package router

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/clutchprotocol/clutch/internal/benchcpu"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/memstore"
)

func benchRouter(b *testing.B, st store.Store) *Router {
	b.Helper()
	ctx := context.Background()
	reg, err := registry.Open(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	sch, err := schema.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	r, err := New(st, reg, &Options{Validator: sch, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	return r
}

var benchResult = &Result{PayloadType: "research.summary.v1", Payload: schema.ResearchSummary{
	Title:     "Market analysis complete",
	Findings:  []string{"Three incumbents hold 70% of volume", "Real-time rails adoption doubled"},
	Citations: []string{"https://example.com/reports/nordic-payments-2026"},
}}

// benchEndToEnd submits tasks from `submitters` goroutines, each waiting
// for its task's outcome: submit → decision → accept → result (validated) →
// wait, every event stored. It reports the store's commits per task: the
// appends a task waits for, each one atomic batch (a durable store's
// commit); and, on boltstore, its group commits (fsyncs) per task, which
// many tasks share.
func benchEndToEnd(b *testing.B, st store.Store, submitters int) {
	benchEndToEndKeyed(b, st, submitters, false)
}

// benchEndToEndKeyed is benchEndToEnd; with keyed set, each request
// carries an idempotency_key of its own.
func benchEndToEndKeyed(b *testing.B, st store.Store, submitters int, keyed bool) {
	counted, cs := counting(st)
	r := benchRouter(b, counted)
	ctx := context.Background()
	for i := range 2 {
		c := card(fmt.Sprintf("agent:research-%d", i), protocol.Capability{ID: "skill:research", Tags: []string{"fintech"}})
		if err := r.Register(ctx, c, func(ctx context.Context, t *Task) (*Result, error) { return benchResult, nil }); err != nil {
			b.Fatal(err)
		}
	}
	bolt, _ := st.(*boltstore.Store)
	var fsyncs uint64
	if bolt != nil {
		fsyncs = bolt.Stats().Commits
	}
	appends := cs.appends.Load()
	// CPU per task (benchcpu.Tasks), all goroutines and the collector
	// included: unlike tasks/s, it barely moves when other processes share
	// the machine, and 2 cores can run at most 2 s / (cpu-µs/task) tasks a
	// second.
	benchcpu.Tasks(b, submitters, func() error {
		req, err := r.NewRequest("agent:ui", "research.query.v1", schema.ResearchQuery{Query: "nordic payments"})
		if err != nil {
			return err
		}
		req.Requires = []string{"skill:research"}
		req.Prefers = []string{"domain:fintech"}
		if keyed {
			req.IdempotencyKey = "order-" + req.TaskID
		}
		h, err := r.Submit(ctx, req)
		if err != nil {
			return err
		}
		_, err = h.Wait(ctx)
		return err
	})
	b.ReportMetric(float64(cs.appends.Load()-appends)/float64(b.N), "commits/task")
	if bolt != nil {
		b.ReportMetric(float64(bolt.Stats().Commits-fsyncs)/float64(b.N), "fsyncs/task")
	}
}

func BenchmarkEndToEndMemstore(b *testing.B) {
	st, err := memstore.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	benchEndToEnd(b, st, 64)
}

// BenchmarkRouteDecision10k measures one routing pass (candidates from the
// capability index, hard filters, scoring, ranking) with 10,000 agents
// registered across 100 skills.
func BenchmarkRouteDecision10k(b *testing.B) {
	st, err := memstore.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	r := benchRouter(b, st)
	ctx := context.Background()
	tags := []string{"fintech", "health", "retail", "energy"}
	for i := range 10000 {
		c := card(fmt.Sprintf("agent:a%05d", i),
			protocol.Capability{ID: fmt.Sprintf("skill:s%02d", i%100), Tags: []string{tags[i%4]}, Tools: []string{"mcp:browser"}},
			protocol.Capability{ID: fmt.Sprintf("skill:s%02d", (i/100)%100), Tags: []string{tags[(i/3)%4]}},
		)
		if err := r.Register(ctx, c, func(ctx context.Context, t *Task) (*Result, error) { return nil, nil }); err != nil {
			b.Fatal(err)
		}
	}
	req, _ := r.NewRequest("agent:ui", "research.query.v1", schema.ResearchQuery{Query: "x"})
	req.Requires = []string{"skill:s07"}
	req.Prefers = []string{"domain:fintech", "tool:browser"}
	req.Domain = "fintech"
	b.ReportAllocs()
	b.ResetTimer()
	var m *match
	for b.Loop() {
		if m != nil {
			r.freeMatch(m) // as the router does after each attempt
		}
		m = r.route(req, nil)
	}
	if m.selected == nil || len(m.candidates) < 100 {
		b.Fatalf("selected %v among %d", m.selected, len(m.candidates))
	}
	b.ReportMetric(float64(len(m.candidates)), "candidates")
}

// BenchmarkRouteDecisionFew measures one routing pass among three agents,
// where what a decision costs beyond the registry scan (ranking, its reason
// and explanation) weighs most: decided by preference score, and by round
// robin among agents equal on everything.
func BenchmarkRouteDecisionFew(b *testing.B) {
	for _, name := range []string{"preference", "roundrobin"} {
		b.Run(name, func(b *testing.B) {
			r, req := benchFew(b, name)
			b.ReportAllocs()
			var m *match
			for b.Loop() {
				if m != nil {
					r.freeMatch(m)
				}
				m = r.route(req, nil)
			}
			if m.selected == nil || len(m.candidates) != 3 {
				b.Fatalf("selected %v among %d", m.selected, len(m.candidates))
			}
		})
	}
}

// BenchmarkExplain measures the words of one decision among three
// agents: the reason alone, as a decision had them before it had an
// explanation, and the reason with the explanation, as route builds them.
// Their difference is what the explanation costs.
func BenchmarkExplain(b *testing.B) {
	for _, name := range []string{"preference", "roundrobin"} {
		r, req := benchFew(b, name)
		m := r.route(req, nil)
		requires := capabilityRequires(req.Requires)
		var pbuf [8]pref
		ps, total := r.prefsOf(req, pbuf[:0])
		var sink string
		b.Run(name+"/reason", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var buf [96]byte
				sink = string(appendReason(buf[:0], m, requires))
			}
		})
		b.Run(name+"/reason+explanation", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sink, _ = r.explain(m, requires, nil, ps, total > 0)
			}
		})
		if sink == "" {
			b.Fatal("no reason")
		}
	}
}

// benchFew returns a router with three agents of skill:research, and a
// request for it that their preference scores decide ("preference") or
// that they tie on ("roundrobin").
func benchFew(b *testing.B, name string) (*Router, *protocol.Message) {
	st, err := memstore.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	r := benchRouter(b, st)
	ctx := context.Background()
	for i, tag := range []string{"fintech", "health", "retail"} {
		c := card(fmt.Sprintf("agent:research-%d", i), protocol.Capability{ID: "skill:research", Tags: []string{tag}})
		c.Display = &protocol.Display{Name: fmt.Sprintf("Research %d", i)}
		if err := r.Register(ctx, c, func(ctx context.Context, t *Task) (*Result, error) { return nil, nil }); err != nil {
			b.Fatal(err)
		}
	}
	req, _ := r.NewRequest("agent:ui", "research.query.v1", schema.ResearchQuery{Query: "x"})
	req.Requires = []string{"skill:research"}
	if name == "preference" {
		req.Prefers = []string{"domain:fintech", "tool:browser"}
	}
	return r, req
}

// BenchmarkParkedTaskHeap measures the heap each in-flight task holds
// while its handler is parked, with 10,000 tasks parked at once. Events go
// to a store with no memory of its own, so only the router's share counts.
func BenchmarkParkedTaskHeap(b *testing.B) {
	const parked = 10000
	for b.Loop() {
		st, err := memstore.New(nil)
		if err != nil {
			b.Fatal(err)
		}
		r := benchRouter(b, discardStore{st})
		ctx := context.Background()
		release := make(chan struct{})
		started := make(chan struct{}, parked)
		if err := r.Register(ctx, card("agent:park", skill("skill:park")), func(ctx context.Context, t *Task) (*Result, error) {
			started <- struct{}{}
			<-release
			return nil, nil
		}); err != nil {
			b.Fatal(err)
		}
		reqs := make([]*protocol.Message, parked)
		for i := range reqs {
			reqs[i], _ = r.NewRequest("agent:ui", "research.query.v1", schema.ResearchQuery{Query: "x"})
			reqs[i].Requires = []string{"skill:park"}
			if _, err := protocol.Encode(reqs[i]); err != nil {
				b.Fatal(err)
			}
		}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		hs := make([]*Handle, parked)
		for i, req := range reqs {
			if hs[i], err = r.Submit(ctx, req); err != nil {
				b.Fatal(err)
			}
		}
		for range parked {
			<-started
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/parked, "heapB/task")
		b.ReportMetric(float64(after.StackInuse-before.StackInuse)/parked, "stackB/task")
		close(release)
		for _, h := range hs {
			h.Wait(ctx)
		}
		r.Close()
	}
}

// countingStore counts the appends that store something.
type countingStore struct {
	store.Store
	appends atomic.Int64
}

func (c *countingStore) Append(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	res, err := c.Store.Append(ctx, msgs...)
	if err == nil && len(msgs) > 0 {
		c.appends.Add(1)
	}
	return res, err
}

// Unwrap gives the wrapped store's upgrades (its clock) through.
func (c *countingStore) Unwrap() store.Store { return c.Store }

// countingCond is a countingStore over a store.Conditional, which it
// keeps (the router looks for it on the store it is given) and counts.
type countingCond struct{ *countingStore }

func (c countingCond) AppendIfNew(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	res, err := c.Store.(store.Conditional).AppendIfNew(ctx, msgs...)
	if err == nil && len(msgs) > 0 {
		c.appends.Add(1)
	}
	return res, err
}

// counting returns st with its appends counted in cs: a countingCond
// when st is a store.Conditional, else cs itself.
func counting(st store.Store) (store.Store, *countingStore) {
	cs := &countingStore{Store: st}
	if _, ok := st.(store.Conditional); ok {
		return countingCond{cs}, cs
	}
	return cs, cs
}

// discardStore keeps registry events but drops the bytes of task events, so
// that a heap measurement sees the router, not the store.
type discardStore struct{ store.Store }

func (d discardStore) Append(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	if len(msgs) > 0 && msgs[0].Type.Family() == "agent" {
		return d.Store.Append(ctx, msgs...)
	}
	res := make([]store.AppendResult, len(msgs))
	for i := range res {
		res[i].Seq = uint64(i + 1)
	}
	return res, nil
}

// BenchmarkEndToEndBoltstore is BenchmarkEndToEndMemstore on the default
// durable store, fsync on: every task is ≥ 4 durable events, in two
// commits when the router decides at Submit (docs/protocol.md §5.1).
func BenchmarkEndToEndBoltstore(b *testing.B) {
	st, err := boltstore.Open(filepath.Join(b.TempDir(), "events.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	benchEndToEnd(b, st, 64)
}

// BenchmarkEndToEndBoltstoreKeyed is BenchmarkEndToEndBoltstore with an
// idempotency_key on every request: two commits per task too, the
// request's dedup by key checked by the store's conditional append
// (docs/protocol.md §5.1, §8.1).
func BenchmarkEndToEndBoltstoreKeyed(b *testing.B) {
	st, err := boltstore.Open(filepath.Join(b.TempDir(), "events.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	benchEndToEndKeyed(b, st, 64, true)
}

// BenchmarkEndToEndBoltstoreStored is BenchmarkEndToEndBoltstore on a file
// that already holds the events of 10k and of 200k tasks (request,
// decision, accept, result, ~1 KiB each; written fast, in batches without
// fsync), in one run, so that the rate with 200k tasks stored can be set
// against the rate with 10k.
func BenchmarkEndToEndBoltstoreStored(b *testing.B) {
	for _, tasks := range []int{10_000, 200_000} {
		path := filepath.Join(b.TempDir(), "events.db")
		st, err := boltstore.Open(path, &boltstore.Options{NoSync: true, MaxBatch: 1 << 20})
		if err != nil {
			b.Fatal(err)
		}
		ids := protocol.NewIDs(nil)
		payload := []byte(`{"title":"Market analysis complete","findings":["Three incumbents hold 70% of volume","Real-time rails adoption doubled"],"citations":["https://example.com/reports/nordic-payments-2026"]}`)
		batch := make([]*protocol.Message, 0, 1000)
		for i := range tasks {
			req := ids.NewMessage(protocol.TypeTaskRequest, "agent:ui")
			req.TaskID, req.Payload = ids.TaskID(), payload
			batch = append(batch, req)
			for _, t := range []protocol.Type{protocol.TypeRoutingDecision, protocol.TypeTaskAccept, protocol.TypeTaskResult} {
				m := ids.Reply(req, t, "agent:research-0")
				m.Payload = payload
				batch = append(batch, m)
			}
			if len(batch) >= 1000 || i == tasks-1 {
				if _, err := st.Append(context.Background(), batch...); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		if err := st.Close(); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("tasks=%dk", tasks/1000), func(b *testing.B) {
			st, err := boltstore.Open(path, nil)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { st.Close() })
			benchEndToEnd(b, st, 64)
		})
	}
}
