package team

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/internal/benchcpu"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

// countedStore counts the appends that store a task's events: the
// commits a task waits for.
type countedStore struct {
	store.Store
	appends atomic.Int64
}

func (c *countedStore) Append(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	res, err := c.Store.Append(ctx, msgs...)
	if err == nil && len(msgs) > 0 && msgs[0].TaskID != "" {
		c.appends.Add(1)
	}
	return res, err
}

// Unwrap gives the wrapped store's upgrades (presence, clock) through.
func (c *countedStore) Unwrap() store.Store { return c.Store }

var benchResult = &router.Result{PayloadType: "research.summary.v1", Payload: schema.ResearchSummary{
	Title:     "Market analysis complete",
	Findings:  []string{"Three incumbents hold 70% of volume", "Real-time rails adoption doubled"},
	Citations: []string{"https://example.com/reports/nordic-payments-2026"},
}}

// BenchmarkEndToEndTeamBoltstore is the router's BenchmarkEndToEndBoltstore
// for a router joined to a team over boltstore (fsync on), its agents
// hosted in its own process: 64 goroutines each submit a task and wait
// for its outcome. It reports the commits a task waits for (two when the
// router decides at Submit, docs/protocol.md §5.1), the group commits
// (fsyncs) per task, tasks/s and CPU per task.
func BenchmarkEndToEndTeamBoltstore(b *testing.B) {
	const submitters = 64
	bolt, err := boltstore.Open(filepath.Join(b.TempDir(), "events.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { bolt.Close() })
	cs := &countedStore{Store: bolt}
	ctx := context.Background()
	p, err := joinTeam(ctx, cs, 5*time.Second, &router.Options{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.leave)
	for i := range 2 {
		c := card(fmt.Sprintf("agent:research-%d", i), protocol.Capability{ID: "skill:research", Tags: []string{"fintech"}})
		if err := p.r.Register(ctx, c, func(ctx context.Context, t *router.Task) (*router.Result, error) { return benchResult, nil }); err != nil {
			b.Fatal(err)
		}
	}
	fsyncs, appends := bolt.Stats().Commits, cs.appends.Load()
	benchcpu.Tasks(b, submitters, func() error {
		req, err := p.r.NewRequest("agent:ui", "research.query.v1", schema.ResearchQuery{Query: "nordic payments"})
		if err != nil {
			return err
		}
		req.Requires = []string{"skill:research"}
		req.Prefers = []string{"domain:fintech"}
		h, err := p.r.Submit(ctx, req)
		if err != nil {
			return err
		}
		_, err = h.Wait(ctx)
		return err
	})
	b.ReportMetric(float64(cs.appends.Load()-appends)/float64(b.N), "commits/task")
	b.ReportMetric(float64(bolt.Stats().Commits-fsyncs)/float64(b.N), "fsyncs/task")
}
