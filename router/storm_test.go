package router

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/clutchprotocol/clutch/store/storetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// delivery is one request sent in a storm: an original or a redelivery
// of original number task.
type delivery struct {
	m    *protocol.Message
	task int
	dup  bool
}

// stormDeliveries builds n originals, each with an idempotency key, and
// redeliveries of them (the three kinds of redeliveries, picked at
// random) making about dupShare of all deliveries, each shuffled near
// its original so that many arrive while it is being stored or started.
func stormDeliveries(tb testing.TB, r *Router, rng *rand.Rand, n int, dupShare float64) []delivery {
	var out []delivery
	for i := range n {
		req, err := r.NewRequest("agent:ui", "research.query.v1", map[string]any{"query": fmt.Sprint("q", i)})
		require.NoError(tb, err)
		req.Requires = []string{"skill:r"}
		req.IdempotencyKey = fmt.Sprint("key-", i)
		out = append(out, delivery{m: req, task: i})
		for rng.Float64() < dupShare { // geometric: dups/(all) ≈ dupShare
			kinds := redeliveries(tb, r, req)
			out = append(out, delivery{m: kinds[rng.IntN(len(kinds))], task: i, dup: true})
		}
	}
	for i := range out { // local shuffle
		j := min(len(out)-1, i+rng.IntN(8))
		out[i], out[j] = out[j], out[i]
	}
	return out
}

type stormResult struct {
	tasks, deliveries, dups int
	refused                 int // submissions that failed
	failed                  int // handles whose task did not succeed
	disagree                int // redeliveries whose outcome is not their original's
	doubleRuns              int // tasks whose handler ran more than once
	report                  storetest.TerminalReport
}

// storm submits deliveries from submitters goroutines and checks every
// outcome.
func storm(tb testing.TB, r *Router, st store.Store, calls *sync.Map, deliveries []delivery, submitters int) stormResult {
	res := stormResult{deliveries: len(deliveries)}
	handles := make([]*Handle, len(deliveries))
	errs := make([]error, len(deliveries))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(deliveries) {
					return
				}
				handles[i], errs[i] = r.Submit(context.Background(), deliveries[i].m)
			}
		}()
	}
	wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	results := map[int]string{} // task → id of its outcome's event
	for i, d := range deliveries {
		if d.dup {
			res.dups++
		} else {
			res.tasks++
		}
		if errs[i] != nil {
			res.refused++
			tb.Logf("delivery %d (task %d, dup %v) refused: %v", i, d.task, d.dup, errs[i])
			continue
		}
		out, err := handles[i].Wait(ctx)
		if out == nil {
			tb.Fatalf("delivery %d: %v", i, err)
		}
		if err != nil {
			res.failed++
			tb.Logf("delivery %d (task %d, dup %v) failed: %v", i, d.task, d.dup, err)
		}
		if id, seen := results[d.task]; seen && id != out.Message.ID {
			res.disagree++
		} else {
			results[d.task] = out.Message.ID
		}
	}
	calls.Range(func(_, n any) bool {
		if n.(*atomic.Int32).Load() > 1 {
			res.doubleRuns++
		}
		return true
	})
	rep, err := storetest.CheckTerminals(context.Background(), st)
	require.NoError(tb, err)
	res.report = rep
	return res
}

func countingHandler(calls *sync.Map) Handler {
	return func(ctx context.Context, t *Task) (*Result, error) {
		n, _ := calls.LoadOrStore(t.ID(), new(atomic.Int32))
		n.(*atomic.Int32).Add(1)
		return summary("done"), nil
	}
}

// TestRedeliveryStorm: concurrent submitters send tasks of which 30 % of
// the deliveries are redeliveries (same id; new id with the same run_id,
// idempotency_key and task_id; new id and task id with the same run_id
// and idempotency_key), on memstore and boltstore. Every delivery gets a
// handle, every handle the task's one outcome, every handler runs once,
// and every task has exactly one terminal event.
func TestRedeliveryStorm(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	tasks := 400
	if testing.Short() {
		tasks = 100
	}
	for _, b := range sizedStores {
		t.Run(b.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 0x5707))
			st := b.open(t, 0)
			e := newEnvOn(t, st, nil)
			var calls sync.Map
			c := card("agent:a", skill("skill:r"))
			e.register(c, countingHandler(&calls))
			ds := stormDeliveries(t, e.r, rng, tasks, 0.3)
			res := storm(t, e.r, st, &calls, ds, 8)
			t.Logf("%d tasks, %d deliveries, %d redeliveries (%.0f %%): %d refused, %d failed, %d disagreeing, %d double runs, %d terminal problems, %d open",
				res.tasks, res.deliveries, res.dups, 100*float64(res.dups)/float64(res.deliveries), res.refused, res.failed, res.disagree, res.doubleRuns, len(res.report.Problems), len(res.report.Open))
			assert.Zero(t, res.refused, "wrongly refused redeliveries")
			assert.Zero(t, res.failed)
			assert.Zero(t, res.disagree)
			assert.Zero(t, res.doubleRuns)
			assert.Empty(t, res.report.Problems, "double terminal events")
			assert.Empty(t, res.report.Open)
			assert.Equal(t, tasks, res.report.Tasks)
		})
	}
}

// BenchmarkRedeliveryStorm measures tasks/s of a storm with 30 %
// redeliveries from 8 submitters, on memstore and on boltstore (NoSync),
// each iteration one task with its redeliveries.
func BenchmarkRedeliveryStorm(b *testing.B) {
	b.Run("memstore", func(b *testing.B) {
		st, err := memstore.New(nil)
		require.NoError(b, err)
		defer st.Close()
		benchStorm(b, st)
	})
	b.Run("boltstore", func(b *testing.B) {
		st, err := boltstore.Open(filepath.Join(b.TempDir(), "events.db"), &boltstore.Options{NoSync: true})
		require.NoError(b, err)
		defer st.Close()
		benchStorm(b, st)
	})
}

func benchStorm(b *testing.B, st store.Store) {
	reg, err := registry.Open(context.Background(), st, nil)
	require.NoError(b, err)
	sch, err := schema.New(nil)
	require.NoError(b, err)
	// All b.N tasks are submitted before any is waited for: no limit.
	r, err := New(st, reg, &Options{Validator: sch, Logger: slog.New(slog.DiscardHandler), MaxInFlight: NoLimit})
	require.NoError(b, err)
	defer r.Close()
	var calls sync.Map
	require.NoError(b, r.Register(context.Background(), card("agent:a", skill("skill:r")), countingHandler(&calls)))
	rng := rand.New(rand.NewPCG(1, 2))
	ds := stormDeliveries(b, r, rng, b.N, 0.3)
	b.ResetTimer()
	start := time.Now()
	res := storm(b, r, st, &calls, ds, 8)
	elapsed := time.Since(start)
	b.StopTimer()
	if res.refused+res.failed+res.disagree+res.doubleRuns+len(res.report.Problems) > 0 {
		b.Fatalf("%+v", res)
	}
	b.ReportMetric(float64(res.tasks)/elapsed.Seconds(), "tasks/s")
	b.ReportMetric(float64(res.deliveries)/elapsed.Seconds(), "deliveries/s")
}
