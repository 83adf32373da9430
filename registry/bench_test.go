package registry_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
)

// setup10k registers 10,000 agents, each with 1 to 3 of 100 skills (and
// tags), into a registry over a memstore. Agent 0 has skill:s07 and
// skill:s42, so both requires sets of the benchmark match.
func setup10k(b *testing.B) *registry.Registry {
	st := newStore(b)
	rng := rand.New(rand.NewPCG(1, 2))
	r := open(b, st, newClock(), nil)
	for i := range 10_000 {
		c := &protocol.AgentCard{V: protocol.Version, AgentID: fmt.Sprintf("agent:%05d", i), Capabilities: []protocol.Capability{}}
		for _, s := range rng.Perm(100)[:1+rng.IntN(3)] {
			c.Capabilities = append(c.Capabilities, protocol.Capability{
				ID:   fmt.Sprintf("skill:s%02d", s),
				Tags: []string{fmt.Sprintf("domain%d", s%7), "general"},
			})
		}
		if i == 0 {
			c.Capabilities = []protocol.Capability{{ID: "skill:s07"}, {ID: "skill:s42"}}
		}
		mustRegister(b, r, c, true)
	}
	return r
}

func BenchmarkCandidates10k(b *testing.B) {
	r := setup10k(b)
	for _, bc := range []struct {
		name     string
		requires []string
	}{{"requires=1", []string{"skill:s07"}}, {"requires=2", []string{"skill:s07", "skill:s42"}}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				n = len(r.Candidates(bc.requires))
			}
			if n == 0 {
				b.Fatal("no candidates")
			}
			b.ReportMetric(float64(n), "agents/op")
		})
	}
}

func BenchmarkTryAcquireRelease(b *testing.B) {
	st := newStore(b)
	r := open(b, st, newClock(), nil)
	mustRegister(b, r, card("agent:a", "skill:x"), true)
	a := mustGet(b, r, "agent:a")
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if r.TryAcquire(a) {
				r.Release(a, true)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if r.TryAcquire(a) {
					r.Release(a, true)
				}
			}
		})
	})
}
