package registry_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/google/go-cmp/cmp"
)

// sameAgents fails unless a and b hold the same agents with the same cards.
func sameAgents(t *testing.T, a, b *registry.Registry) {
	t.Helper()
	la, lb := a.List(), b.List()
	if !cmp.Equal(ids(la), ids(lb)) {
		t.Fatalf("agents differ: %v vs %v", ids(la), ids(lb))
	}
	for i := range la {
		if d := cmp.Diff(la[i].Card(), lb[i].Card()); d != "" {
			t.Errorf("%s: card (-a +b):\n%s", la[i].ID(), d)
		}
	}
}

func TestReplay(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	c := newClock()
	r := open(t, st, c, nil)
	mustRegister(t, r, card("agent:a", "skill:x", "skill:y"), false)
	mustRegister(t, r, card("agent:b", "skill:x"), false)
	mustRegister(t, r, card("agent:c", "skill:y"), false)
	mustRegister(t, r, card("agent:d", "skill:x"), true)
	if err := r.Update(ctx, card("agent:b", "skill:y")); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(ctx, "agent:c"); err != nil {
		t.Fatal(err)
	}
	// Removed, then registered again with another card.
	if err := r.Remove(ctx, "agent:a"); err != nil {
		t.Fatal(err)
	}
	mustRegister(t, r, card("agent:a", "skill:z"), false)

	r2 := open(t, st, c, nil)
	sameAgents(t, r, r2)
	if got := ids(r2.List()); !cmp.Equal(got, []string{"agent:a", "agent:b", "agent:d"}) {
		t.Errorf("replayed agents %v", got)
	}
	if got := ids(r2.Candidates([]string{"skill:y"})); !cmp.Equal(got, []string{"agent:b"}) {
		t.Errorf("replayed index: Candidates(skill:y) = %v, want [agent:b]", got)
	}
	if got := ids(r2.Candidates([]string{"skill:x"})); !cmp.Equal(got, []string{"agent:d"}) {
		t.Errorf("replayed index: Candidates(skill:x) = %v, want [agent:d]", got)
	}
	// Writing through the second registry continues the same log.
	if err := r2.Update(ctx, card("agent:b", "skill:x")); err != nil {
		t.Fatal(err)
	}
	sameAgents(t, r2, open(t, st, c, nil))
}

func TestReplayLiveness(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	c := newClock()
	opts := &registry.Options{HeartbeatTTL: 10 * time.Second}
	r := open(t, st, c, opts)
	mustRegister(t, r, card("agent:remote", "skill:x"), false)
	mustRegister(t, r, card("agent:old", "skill:x"), false)
	mustRegister(t, r, card("agent:local", "skill:x"), true)
	c.Advance(4 * time.Second)
	// Updates and heartbeats of a Local agent must not revive it on replay.
	if err := r.Update(ctx, card("agent:local", "skill:x", "skill:y")); err != nil {
		t.Fatal(err)
	}
	if err := r.Heartbeat(ctx, "agent:local"); err != nil {
		t.Fatal(err)
	}
	if err := r.Heartbeat(ctx, "agent:remote"); err != nil {
		t.Fatal(err)
	}
	if a := mustGet(t, r, "agent:local"); !a.Local() || !r.Online(a) {
		t.Fatal("a Local agent is offline in its own process")
	}
	c.Advance(8 * time.Second) // remote last seen 8 s ago, old 12 s ago

	r2 := open(t, st, c, opts)
	remote, old, local := mustGet(t, r2, "agent:remote"), mustGet(t, r2, "agent:old"), mustGet(t, r2, "agent:local")
	if !r2.Online(remote) {
		t.Error("agent:remote (heartbeat 8 s ago, TTL 10 s) is offline after replay")
	}
	if got, want := remote.LastSeen(), t0.Add(4*time.Second); !got.Equal(want) {
		t.Errorf("agent:remote LastSeen %v, want %v (its heartbeat's ts)", got, want)
	}
	if r2.Online(old) {
		t.Error("agent:old (last event 12 s ago, TTL 10 s) is online after replay")
	}
	if local.Local() || r2.Online(local) {
		t.Errorf("agent:local of the previous process: Local=%v Online=%v, want both false", local.Local(), r2.Online(local))
	}
	if !local.LastSeen().IsZero() {
		t.Errorf("agent:local LastSeen %v, want the zero Time", local.LastSeen())
	}
	if got := len(local.Card().Capabilities); got != 2 {
		t.Errorf("agent:local replayed with %d capabilities, want its updated card's 2", got)
	}
	// Its heartbeat does not help either: only a new registration does.
	if err := r2.Heartbeat(ctx, "agent:local"); err != nil {
		t.Fatal(err)
	}
	if r2.Online(mustGet(t, r2, "agent:local")) {
		t.Error("a heartbeat revived a Local agent of a previous process")
	}
	mustRegister(t, r2, card("agent:local", "skill:x"), true)
	if a := mustGet(t, r2, "agent:local"); !a.Local() || !r2.Online(a) {
		t.Error("a Local agent registered again is not online")
	}

	c.Advance(3 * time.Second)
	if r2.Online(mustGet(t, r2, "agent:remote")) {
		t.Error("agent:remote online 11 s after its heartbeat, TTL 10 s")
	}
}

func TestHeartbeatTTL(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	c := newClock()
	const ttl = 10 * time.Second
	r := open(t, st, c, &registry.Options{HeartbeatTTL: ttl})
	mustRegister(t, r, card("agent:hb", "skill:x"), false)
	mustRegister(t, r, card("agent:quiet", "skill:x"), false)
	mustRegister(t, r, card("agent:local", "skill:x"), true)
	online := func(id string) bool { return r.Online(mustGet(t, r, id)) }

	c.Advance(ttl)
	if !online("agent:hb") || !online("agent:quiet") {
		t.Fatal("offline exactly one TTL after registering; the TTL is inclusive")
	}
	if err := r.Heartbeat(ctx, "agent:hb"); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Millisecond)
	if online("agent:quiet") {
		t.Error("agent:quiet online past its TTL without heartbeats")
	}
	// Heartbeats every TTL/2 keep agent:hb online for many TTLs.
	for range 10 {
		c.Advance(ttl / 2)
		if !online("agent:hb") {
			t.Fatalf("agent:hb offline at %v with heartbeats every %v", c.Now().Sub(t0), ttl/2)
		}
		if err := r.Heartbeat(ctx, "agent:hb"); err != nil {
			t.Fatal(err)
		}
	}
	if got := mustGet(t, r, "agent:hb").LastSeen(); !got.Equal(c.Now()) {
		t.Errorf("LastSeen %v, want %v", got, c.Now())
	}
	c.Advance(ttl + time.Millisecond)
	if online("agent:hb") {
		t.Error("agent:hb online a TTL after its last heartbeat")
	}
	if !online("agent:local") {
		t.Error("a Local agent went offline without heartbeats")
	}
	// Update counts as a sign of life too.
	if err := r.Update(ctx, card("agent:quiet", "skill:y")); err != nil {
		t.Fatal(err)
	}
	if !online("agent:quiet") {
		t.Error("agent:quiet offline right after an update")
	}
}

// TestCorruptLog: a registry event Open cannot apply stops it, naming the
// seq, instead of giving a registry that differs from the log.
func TestCorruptLog(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		typ     protocol.Type
		payload string
	}{
		{"payload not a card", protocol.TypeAgentRegister, `{"status":"ok"}`},
		{"update payload not a card", protocol.TypeAgentUpdate, `[1,2]`},
		{"card of another agent", protocol.TypeAgentRegister, `{"v":"clutch/0.1","agent_id":"agent:other","capabilities":[]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newStore(t)
			c := newClock()
			r := open(t, st, c, nil)
			mustRegister(t, r, card("agent:bad", "skill:x"), false)
			m := c.ids.NewMessage(tc.typ, "agent:bad")
			m.RunID = registry.DefaultRunID
			if err := m.SetPayload([]byte(tc.payload)); err != nil {
				t.Fatal(err)
			}
			res, err := st.Append(ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			_, err = registry.Open(ctx, st, nil)
			if !errors.Is(err, registry.ErrCorruptLog) {
				t.Fatalf("Open: %v, want ErrCorruptLog", err)
			}
			var ce *registry.CorruptEventError
			if !errors.As(err, &ce) || ce.Seq != res[0].Seq {
				t.Fatalf("Open: %v, want a *CorruptEventError with Seq %d", err, res[0].Seq)
			}
			if !strings.Contains(err.Error(), "seq 2") {
				t.Errorf("error %q does not name seq 2", err)
			}
		})
	}
}

// TestReplayIgnores: events of the registry run that are not the
// registry's, and updates or heartbeats of agents not registered, do not
// change the replayed registry or fail Open.
func TestReplayIgnores(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	c := newClock()
	r := open(t, st, c, nil)
	mustRegister(t, r, card("agent:a", "skill:x"), false)
	g := c.ids
	var msgs []*protocol.Message
	for _, x := range []struct {
		typ     protocol.Type
		from    string
		payload string
	}{
		{protocol.TypeChatMessage, "agent:a", `{"text":"hi"}`},
		{protocol.TypeAgentUpdate, "agent:ghost", `{"v":"clutch/0.1","agent_id":"agent:ghost","capabilities":[]}`},
		{protocol.TypeAgentHeartbeat, "agent:ghost", `{"status":"ok"}`},
		{registry.TypeRemove, "agent:ghost", `{"agent_id":"agent:ghost"}`},
		{"x.acme.agent.poke", "agent:a", `{}`},
	} {
		m := g.NewMessage(x.typ, x.from)
		m.RunID = registry.DefaultRunID
		if err := m.SetPayload([]byte(x.payload)); err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	if _, err := st.Append(ctx, msgs...); err != nil {
		t.Fatal(err)
	}
	r2 := open(t, st, c, nil)
	sameAgents(t, r, r2)
}

// TestStoreClockIgnored: liveness counts from the ts the registry wrote,
// by its own clock, not from the store's append time: here the store's
// clock is a year ahead.
func TestStoreClockIgnored(t *testing.T) {
	c := newClock()
	st, err := memstore.New(&memstore.Options{Clock: func() time.Time { return t0.AddDate(1, 0, 0) }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	opts := &registry.Options{HeartbeatTTL: time.Second}
	r := open(t, st, c, opts)
	mustRegister(t, r, card("agent:a", "skill:x"), false)
	if got := mustGet(t, r, "agent:a").LastSeen(); !got.Equal(t0) {
		t.Errorf("LastSeen %v, want the registry clock's %v", got, t0)
	}
	c.Advance(2 * time.Second)
	if r.Online(mustGet(t, r, "agent:a")) {
		t.Error("online 2 s after registering with a 1 s TTL")
	}
	if r2 := open(t, st, c, opts); r2.Online(mustGet(t, r2, "agent:a")) {
		t.Error("online after replay 2 s after registering with a 1 s TTL")
	}
}
