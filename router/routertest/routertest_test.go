package routertest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/schema"
)

func research(ctx context.Context, t *router.Task) (*router.Result, error) {
	q, err := router.Input[schema.ResearchQuery](t)
	if err != nil {
		return nil, err
	}
	return &router.Result{PayloadType: "research.summary.v1", Payload: schema.ResearchSummary{
		Findings: []string{"about " + q.Query}, Citations: []string{"https://example.com"},
	}}, nil
}

func TestEnv(t *testing.T) {
	env := routertest.New(t, nil)
	env.Agent("agent:ken", []string{"skill:research"}, research)
	out, err := env.Run(env.Request("research.query.v1", schema.ResearchQuery{Query: "payments"}, "skill:research"))
	if err != nil {
		t.Fatal(err)
	}
	env.AssertTypes(out.TaskID, protocol.TypeTaskRequest, protocol.TypeRoutingDecision, protocol.TypeTaskAccept, protocol.TypeTaskResult)
	env.AssertRoutedTo(out.TaskID, "agent:ken")
	if out.Message.TS != "2026-01-01T00:00:00.000Z" {
		t.Fatalf("timestamps do not follow the test clock: %s", out.Message.TS)
	}
	env.Clock.Advance(time.Hour)
	if got := env.IDs.Now(); !got.Equal(time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)) {
		t.Fatalf("clock %v", got)
	}
}

func TestDeterministicIDs(t *testing.T) {
	ids := func() []string {
		env := routertest.New(t, &routertest.Options{Seed: 7})
		var out []string
		for range 3 {
			out = append(out, env.Request("research.query.v1", schema.ResearchQuery{Query: "x"}).TaskID)
		}
		return out
	}
	a, b := ids(), ids()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("same seed, different ids: %v %v", a, b)
		}
	}
}

func TestHeartbeatTTLWithClock(t *testing.T) {
	env := routertest.New(t, &routertest.Options{})
	card := &protocol.AgentCard{V: protocol.Version, AgentID: "agent:remote", Capabilities: []protocol.Capability{{ID: "skill:research"}}}
	if err := env.Registry.Register(context.Background(), card, nil); err != nil {
		t.Fatal(err)
	}
	if err := env.Router.Attach("agent:remote", research); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Run(env.Request("research.query.v1", schema.ResearchQuery{Query: "x"}, "skill:research")); err != nil {
		t.Fatal(err)
	}
	env.Clock.Advance(time.Minute) // past the 30 s TTL, no heartbeat
	_, err := env.Run(env.Request("research.query.v1", schema.ResearchQuery{Query: "x"}, "skill:research"))
	if !errors.Is(err, protocol.CodeNoMatch) {
		t.Fatalf("offline agent still routable: %v", err)
	}
	if err := env.Registry.Heartbeat(context.Background(), "agent:remote"); err != nil {
		t.Fatal(err)
	}
	if _, err := env.Run(env.Request("research.query.v1", schema.ResearchQuery{Query: "x"}, "skill:research")); err != nil {
		t.Fatalf("after a heartbeat: %v", err)
	}
}
