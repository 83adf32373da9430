package router

import (
	"context"
	"math"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// named is a card with a display name.
func named(id, name string, caps ...protocol.Capability) *protocol.AgentCard {
	c := card(id, caps...)
	c.Display = &protocol.Display{Name: name}
	return c
}

// explainEnv is an env whose store clock the test moves (for an agent
// that goes offline).
type explainEnv struct {
	*env
	now atomic.Int64
}

func newExplainEnv(t *testing.T, opts *Options) *explainEnv {
	t.Helper()
	x := &explainEnv{}
	x.now.Store(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC).UnixNano())
	st, err := memstore.New(&memstore.Options{Clock: func() time.Time { return time.Unix(0, x.now.Load()).UTC() }})
	if err != nil {
		t.Fatal(err)
	}
	x.env = newEnvOn(t, st, opts)
	return x
}

func (x *explainEnv) agent(id string) *registry.Agent {
	x.t.Helper()
	a, ok := x.reg.Get(id)
	if !ok {
		x.t.Fatalf("%s is not registered", id)
	}
	return a
}

// busy gives the agent n tasks in flight.
func (x *explainEnv) busy(id string, n int) {
	a := x.agent(id)
	for range n {
		if !x.reg.TryAcquire(a) {
			x.t.Fatalf("%s refused a slot", id)
		}
	}
	x.t.Cleanup(func() {
		for range n {
			x.reg.Release(a, true)
		}
	})
}

// record gives the agent ok successes out of n recent outcomes.
func (x *explainEnv) record(id string, ok, n int) {
	a := x.agent(id)
	for i := range n {
		if !x.reg.TryAcquire(a) {
			x.t.Fatalf("%s refused a slot", id)
		}
		x.reg.Release(a, i < ok)
	}
}

// offline registers an agent of another process (handler attached here)
// whose last heartbeat is older than the TTL.
func (x *explainEnv) offline(c *protocol.AgentCard) {
	x.t.Helper()
	if err := x.reg.Register(context.Background(), c, nil); err != nil {
		x.t.Fatal(err)
	}
	if err := x.r.Attach(c.AgentID, ok()); err != nil {
		x.t.Fatal(err)
	}
	x.now.Add(int64(2 * x.reg.HeartbeatTTL()))
}

func research(tags ...string) protocol.Capability { return skill("skill:research", tags...) }

func withLimit(c *protocol.AgentCard, n int) *protocol.AgentCard {
	c.Limits = &protocol.Limits{MaxConcurrency: n}
	return c
}

// TestExplanation pins the words of every kind of decision, with the
// reason (the machine form) beside them, unchanged.
// Candidates are considered in id order (the registry's), and so are the
// rejections named.
func TestExplanation(t *testing.T) {
	cases := []struct {
		name      string
		opts      *Options
		setup     func(x *explainEnv)
		request   func(req *protocol.Message)
		ancestors []string
		selected  string
		reason    string
		want      string
	}{{
		name: "explicit recipient",
		setup: func(x *explainEnv) {
			x.register(named("agent:ken", "Ken", research("fintech")), ok())
			x.register(named("agent:research-2", "Research 2", research()), ok())
		},
		request:  func(req *protocol.Message) { req.To = []protocol.Participant{{AgentID: "agent:ken"}} },
		selected: "agent:ken",
		reason:   "explicit recipient, only eligible candidate",
		want:     "Sent to Ken, the named recipient.",
	}, {
		name: "explicit recipients, one available",
		setup: func(x *explainEnv) {
			x.register(named("agent:ken", "Ken", research()), ok())
			x.register(withLimit(named("agent:research-2", "Research 2", research()), 1), ok())
			x.busy("agent:research-2", 1)
		},
		request: func(req *protocol.Message) {
			req.To = []protocol.Participant{{AgentID: "agent:ghost"}, {AgentID: "agent:research-2"}, {AgentID: "agent:ken"}}
		},
		selected: "agent:ken",
		reason:   "explicit recipient, only eligible candidate",
		want:     "Sent to Ken, the only available one of the 3 named recipients. ghost is not registered; Research 2 is at its max_concurrency.",
	}, {
		name: "explicit recipients, by preference",
		setup: func(x *explainEnv) {
			x.register(named("agent:ken", "Ken", research("fintech")), ok())
			x.register(named("agent:research-2", "Research 2", research()), ok())
		},
		request: func(req *protocol.Message) {
			req.To = []protocol.Participant{{AgentID: "agent:research-2"}, {AgentID: "agent:ken"}}
			req.Prefers = []string{"tag:fintech"}
		},
		selected: "agent:ken",
		reason:   "explicit recipient, best preference score 1.00",
		want:     "Ken chosen over Research 2: both were named recipients; Ken matches the preferred tag fintech (score 1 vs 0).",
	}, {
		name: "explicit recipients, a tie",
		setup: func(x *explainEnv) {
			x.register(named("agent:ken", "Ken", research()), ok())
			x.register(named("agent:research-2", "Research 2", research()), ok())
			x.r.rr.Store(1) // the next turn picks the first by id
		},
		request: func(req *protocol.Message) {
			req.To = []protocol.Participant{{AgentID: "agent:research-2"}, {AgentID: "agent:ken"}}
		},
		selected: "agent:ken",
		reason:   "explicit recipient, round robin among 2 equal candidates",
		want:     "Ken and Research 2 are named recipients equal on load and success rate; Ken was picked in turn (round robin).",
	}, {
		name: "only one eligible",
		setup: func(x *explainEnv) {
			x.register(named("agent:ken", "Ken", research()), ok())
			x.register(named("agent:writer", "Writer", skill("skill:writing")), ok())
		},
		selected: "agent:ken",
		reason:   "matched requires[skill:research], only eligible candidate",
		want:     "Ken is the only available agent with skill:research.",
	}, {
		name: "only one eligible, by id, two requirements",
		setup: func(x *explainEnv) {
			x.register(card("agent:ken", research(), skill("skill:writing")), ok())
			x.register(card("agent:research-2", research()), ok())
		},
		request:  func(req *protocol.Message) { req.Requires = []string{"skill:research", "skill:writing"} },
		selected: "agent:ken",
		reason:   "matched requires[skill:research, skill:writing], only eligible candidate",
		want:     "ken is the only available agent with skill:research and skill:writing.",
	}, {
		name: "only one eligible, others rejected",
		setup: func(x *explainEnv) {
			x.offline(named("agent:research-2", "Research 2", research()))
			x.register(named("agent:ken", "Ken", research()), ok())
			x.register(withLimit(named("agent:research-3", "Analyst", research()), 2), ok())
			x.busy("agent:research-3", 2)
		},
		selected: "agent:ken",
		reason:   "matched requires[skill:research], only eligible candidate",
		want:     "Ken is the only available agent with skill:research. Research 2 is offline; Analyst is at its max_concurrency.",
	}, {
		name: "only one eligible, more rejected than named",
		setup: func(x *explainEnv) {
			x.register(named("agent:ken", "Ken", research()), ok())
			for _, id := range []string{"agent:r1", "agent:r2", "agent:r3", "agent:r4", "agent:r5"} {
				x.register(withLimit(card(id, research()), 1), ok())
				x.busy(id, 1)
			}
		},
		selected: "agent:ken",
		reason:   "matched requires[skill:research], only eligible candidate",
		want:     "Ken is the only available agent with skill:research. r1 is at its max_concurrency; r2 is at its max_concurrency; r3 is at its max_concurrency; and 2 more were ruled out.",
	}, {
		name: "only one eligible, every filter",
		setup: func(x *explainEnv) {
			x.register(named("agent:ken", "Ken", protocol.Capability{ID: "skill:research", Tools: []string{"mcp:browser"}}), ok())
			if err := x.reg.Register(context.Background(), named("agent:nohandler", "No Handler", research()), nil); err != nil {
				t.Fatal(err)
			}
			x.register(named("agent:tools", "Tools", protocol.Capability{ID: "skill:research", Tools: []string{"mcp:shell"}}), ok())
			x.register(named("agent:parent", "Parent", protocol.Capability{ID: "skill:research", Tools: []string{"mcp:browser"}}), ok())
		},
		request: func(req *protocol.Message) {
			req.Security = &protocol.Security{Policy: &protocol.Policy{ToolAllowlist: []string{"mcp:browser"}}}
		},
		ancestors: []string{"agent:parent"},
		selected:  "agent:ken",
		reason:    "matched requires[skill:research], only eligible candidate",
		want:      "Ken is the only available agent with skill:research. No Handler has no handler in this router; Parent is already on the task's delegation chain; Tools needs a tool outside the allowlist.",
	}, {
		name: "only one eligible, policy, network and a missing capability",
		setup: func(x *explainEnv) {
			sandboxed := named("agent:ken", "Ken", research())
			sandboxed.Security = &protocol.CardSecurity{Sandbox: true, Network: "open"}
			x.register(sandboxed, ok())
			x.register(named("agent:loose", "Loose", research()), ok())
			closed := named("agent:closed", "Closed", research())
			closed.Security = &protocol.CardSecurity{Sandbox: true}
			x.register(closed, ok())
			x.register(named("agent:writer", "Writer", skill("skill:writing")), ok())
		},
		request: func(req *protocol.Message) {
			req.Requires = []string{"skill:research", "network:open"}
			req.Security = &protocol.Security{Policy: &protocol.Policy{Sandbox: true}}
			req.To = []protocol.Participant{{AgentID: "agent:loose"}, {AgentID: "agent:closed"}, {AgentID: "agent:writer"}, {AgentID: "agent:ken"}}
		},
		selected: "agent:ken",
		reason:   "explicit recipient, only eligible candidate",
		want:     "Sent to Ken, the only available one of the 4 named recipients. Loose does not meet the security policy; Closed lacks the network access required; Writer lacks skill:research.",
	}, {
		name: "no requirements, one available",
		setup: func(x *explainEnv) {
			x.register(named("agent:ken", "Ken", research()), ok())
		},
		request:  func(req *protocol.Message) { req.Requires = nil },
		selected: "agent:ken",
		reason:   "no requirements, only eligible candidate",
		want:     "Any agent could take it; Ken is the only one available.",
	}, {
		name: "by preference",
		setup: func(x *explainEnv) {
			x.register(named("agent:research-2", "Research 2", research()), ok())
			x.register(named("agent:ken", "Ken", research("fintech")), ok())
		},
		request:  func(req *protocol.Message) { req.Prefers = []string{"tag:fintech", "tool:browser"} },
		selected: "agent:ken",
		reason:   "matched requires[skill:research], best preference score 0.50",
		want:     "Ken chosen over Research 2: both have skill:research; Ken matches the preferred tag fintech (score 0.5 vs 0).",
	}, {
		name: "by preference, the runner-up meets some",
		setup: func(x *explainEnv) {
			x.register(named("agent:research-2", "Research 2", protocol.Capability{ID: "skill:research", Tools: []string{"mcp:browser"}}), ok())
			x.register(named("agent:ken", "Ken", protocol.Capability{ID: "skill:research", Tags: []string{"fintech"}, Tools: []string{"mcp:browser"}}), ok())
		},
		request:  func(req *protocol.Message) { req.Prefers = []string{"tag:fintech", "tool:browser"} },
		selected: "agent:ken",
		reason:   "matched requires[skill:research], best preference score 1.00",
		want:     "Ken chosen over Research 2: both have skill:research; Ken also matches the preferred tag fintech (score 1 vs 0.5).",
	}, {
		name: "by preference, each meets its own",
		opts: &Options{Weights: Weights{Tags: 1, Tools: 3}},
		setup: func(x *explainEnv) {
			x.register(named("agent:research-2", "Research 2", research("fintech")), ok())
			x.register(named("agent:ken", "Ken", protocol.Capability{ID: "skill:research", Tools: []string{"mcp:browser"}}), ok())
		},
		request:  func(req *protocol.Message) { req.Prefers = []string{"tag:fintech", "mcp:browser"} },
		selected: "agent:ken",
		reason:   "matched requires[skill:research], best preference score 0.75",
		want:     "Ken chosen over Research 2: both have skill:research; Ken matches the preferred MCP server browser, Research 2 the preferred tag fintech (score 0.75 vs 0.25).",
	}, {
		name: "by preference, among three, the domain said once",
		setup: func(x *explainEnv) {
			x.register(named("agent:ken", "Ken", research("fintech")), ok())
			x.register(named("agent:research-2", "Research 2", research()), ok())
			x.register(named("agent:research-3", "Research 3", research()), ok())
		},
		request: func(req *protocol.Message) {
			req.Prefers = []string{"domain:fintech"}
			req.Domain = "fintech"
		},
		selected: "agent:ken",
		reason:   "matched requires[skill:research], best preference score 1.00",
		want:     "Ken chosen over Research 2 and 1 other: all have skill:research; Ken matches the preferred domain fintech (score 1 vs 0).",
	}, {
		name: "by preference, more than named",
		setup: func(x *explainEnv) {
			x.register(named("agent:ken", "Ken", research("a", "b", "c", "d"), skill("skill:writing")), ok())
			x.register(named("agent:research-2", "Research 2", research()), ok())
		},
		request: func(req *protocol.Message) {
			req.Prefers = []string{"tag:a", "tag:b", "tag:c", "tag:d", "skill:writing"}
		},
		selected: "agent:ken",
		reason:   "matched requires[skill:research], best preference score 1.00",
		want:     "Ken chosen over Research 2: both have skill:research; Ken matches the preferred tag a, tag b, tag c and 2 more (score 1 vs 0).",
	}, {
		name: "equal score, by load",
		setup: func(x *explainEnv) {
			x.register(named("agent:research-2", "Research 2", research("fintech")), ok())
			x.register(named("agent:ken", "Ken", research("fintech")), ok())
			x.busy("agent:research-2", 2)
		},
		request:  func(req *protocol.Message) { req.Prefers = []string{"tag:fintech", "tool:browser"} },
		selected: "agent:ken",
		reason:   "matched requires[skill:research], lowest load (0 in flight)",
		want:     "Ken chosen over Research 2: both have skill:research; equal preference score (0.5); Ken has fewer tasks in flight (0 vs 2).",
	}, {
		name: "no preferences, by load",
		setup: func(x *explainEnv) {
			x.register(named("agent:research-2", "Research 2", research()), ok())
			x.register(named("agent:ken", "Ken", research()), ok())
			x.busy("agent:research-2", 2)
		},
		selected: "agent:ken",
		reason:   "matched requires[skill:research], lowest load (0 in flight)",
		want:     "Ken chosen over Research 2: both have skill:research; Ken has fewer tasks in flight (0 vs 2).",
	}, {
		name: "no requirements, by load",
		setup: func(x *explainEnv) {
			x.register(named("agent:research-2", "Research 2", research()), ok())
			x.register(named("agent:ken", "Ken", skill("skill:writing")), ok())
			x.busy("agent:research-2", 1)
		},
		request:  func(req *protocol.Message) { req.Requires = nil },
		selected: "agent:ken",
		reason:   "no requirements, lowest load (0 in flight)",
		want:     "Ken chosen over Research 2: any agent could take it; Ken has fewer tasks in flight (0 vs 1).",
	}, {
		name: "equal score and load, by success rate",
		setup: func(x *explainEnv) {
			x.register(named("agent:research-2", "Research 2", research("fintech")), ok())
			x.register(named("agent:ken", "Ken", research("fintech")), ok())
			x.record("agent:ken", 19, 20)
			x.record("agent:research-2", 16, 20)
		},
		request:  func(req *protocol.Message) { req.Prefers = []string{"tag:fintech", "tool:browser"} },
		selected: "agent:ken",
		reason:   "matched requires[skill:research], best recent success rate 0.95",
		want:     "Ken chosen over Research 2: both have skill:research; equal preference score (0.5); equal load (0 in flight); Ken has the better recent success rate (95% vs 80%).",
	}, {
		name: "a tie",
		setup: func(x *explainEnv) {
			x.register(named("agent:ken", "Ken", research("fintech")), ok())
			x.register(named("agent:research-2", "Research 2", research("fintech")), ok())
			x.register(named("agent:research-3", "Research 3", research("fintech")), ok())
			x.r.rr.Store(2) // the next turn picks the first by id
		},
		request:  func(req *protocol.Message) { req.Prefers = []string{"tag:fintech"} },
		selected: "agent:ken",
		reason:   "matched requires[skill:research], round robin among 3 equal candidates",
		want:     "Ken, Research 2 and Research 3 are equal on skill:research, preference score, load and success rate; Ken was picked in turn (round robin).",
	}, {
		name: "a tie, picked in turn",
		setup: func(x *explainEnv) {
			x.register(named("agent:ken", "Ken", research()), ok())
			x.register(named("agent:research-2", "Research 2", research()), ok())
			x.register(named("agent:research-3", "Research 3", research()), ok())
			// The first turn picks the second by id, and puts it first.
		},
		selected: "agent:research-2",
		reason:   "matched requires[skill:research], round robin among 3 equal candidates",
		want:     "Research 2, Ken and Research 3 are equal on skill:research, load and success rate; Research 2 was picked in turn (round robin).",
	}, {
		name: "a tie of many, no requirements",
		setup: func(x *explainEnv) {
			x.register(named("agent:a", "Ada", research()), ok())
			for _, id := range []string{"agent:b", "agent:c", "agent:d", "agent:e"} {
				x.register(card(id, research()), ok())
			}
			x.r.rr.Store(4)
		},
		request:  func(req *protocol.Message) { req.Requires = nil },
		selected: "agent:a",
		reason:   "no requirements, round robin among 5 equal candidates",
		want:     "Any agent could take it; Ada, b, c and 2 more are equal on load and success rate; Ada was picked in turn (round robin).",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x := newExplainEnv(t, tc.opts)
			tc.setup(x)
			req := x.request("skill:research")
			if tc.request != nil {
				tc.request(req)
			}
			m := x.r.route(req, tc.ancestors)
			defer x.r.freeMatch(m)
			if m.selected == nil {
				t.Fatalf("nothing selected; rejected %v", m.rejected)
			}
			d := m.decision()
			if d.Selected != tc.selected {
				t.Errorf("selected %s, want %s", d.Selected, tc.selected)
			}
			if d.Reason != tc.reason {
				t.Errorf("reason\n got %q\nwant %q", d.Reason, tc.reason)
			}
			if d.Explanation != tc.want {
				t.Errorf("explanation\n got %q\nwant %q", d.Explanation, tc.want)
			}
		})
	}
}

// TestExplanationIsStored: the routing.decision event a task leaves
// carries the explanation.
func TestExplanationIsStored(t *testing.T) {
	e := newEnv(t, nil)
	e.register(named("agent:ken", "Ken", research("fintech")), ok("ken"))
	e.register(named("agent:research-2", "Research 2", research()), ok("r2"))
	req := e.request("skill:research")
	req.Prefers = []string{"tag:fintech"}
	h := e.submit(req)
	if _, err := e.wait(h); err != nil {
		t.Fatal(err)
	}
	d := decisionOf(t, e, h.TaskID())
	const want = "Ken chosen over Research 2: both have skill:research; Ken matches the preferred tag fintech (score 1 vs 0)."
	if d.Explanation != want || d.Reason != "matched requires[skill:research], best preference score 1.00" {
		t.Fatalf("stored decision %+v, want explanation %q", d, want)
	}
}

// TestAppendScore: the short path writes a score as AppendFloat writes it
// rounded to three decimals, for every score it can see and beyond.
func TestAppendScore(t *testing.T) {
	check := func(f float64) {
		t.Helper()
		want := strconv.AppendFloat(nil, math.Round(f*1000)/1000, 'f', -1, 64)
		if got := appendScore(nil, f); string(got) != string(want) {
			t.Fatalf("appendScore(%v) = %s, want %s", f, got, want)
		}
	}
	for k := range 1001 {
		check(float64(k) / 1000)
	}
	for _, f := range []float64{1.0 / 3, 2.0 / 3, 0.0005, 0.9995, 0.99949, 1e-9, 1.5, 12.25, -0.5, math.Copysign(0, -1)} {
		check(f)
	}
	for i := range 10000 {
		check(float64(i) / 9973)
	}
}

// TestAppendFixed2: the reason's numbers are what AppendFloat writes with
// two decimals, halves (0.125, 0.005, 0.015...) included.
func TestAppendFixed2(t *testing.T) {
	check := func(f float64) {
		t.Helper()
		want := strconv.AppendFloat(nil, f, 'f', 2, 64)
		if got := appendFixed2(nil, f); string(got) != string(want) {
			t.Fatalf("appendFixed2(%v) = %s, want %s", f, got, want)
		}
	}
	for n := 1; n <= 1000; n++ {
		for k := 0; k <= n; k++ {
			check(float64(k) / float64(n))
		}
	}
	for _, f := range []float64{0.005, 0.015, 0.125, 0.375, 0.995, 0.9949999999, 1e-300, math.Nextafter(1, 2), 1.5, -0.25, math.Copysign(0, -1), math.NaN(), math.Inf(1)} {
		check(f)
	}
	const lo, hi, n = 0x3f00000000000000, 0x3ff0000000000000, 200000 // 2^-15 and 1
	for i := range uint64(n) {
		check(math.Float64frombits(lo + i*((hi-lo)/n)))
	}
	for k := range 100 { // the halves between hundredths, and their neighbours
		h := (float64(k) + 0.5) / 100
		check(h)
		check(math.Nextafter(h, 0))
		check(math.Nextafter(h, 1))
	}
}
