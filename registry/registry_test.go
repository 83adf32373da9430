package registry_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/store"
	"github.com/google/go-cmp/cmp"
)

// TestCallsAppendTheirEvent: over a store without store.Presence every
// call is an event, heartbeats included (TestCallsWithPresence has the
// store with it).
func TestCallsAppendTheirEvent(t *testing.T) {
	ctx := context.Background()
	st := eventsOnly{newStore(t)}
	c := newClock()
	r := open(t, st, c, nil)

	ken := card("agent:ken", "skill:research")
	ken.Capabilities[0].Tags = []string{"market"}
	ken.Limits = &protocol.Limits{MaxConcurrency: 2, MaxRuntimeSec: 600}
	if err := r.Register(ctx, ken, nil); err != nil {
		t.Fatal(err)
	}
	if err := r.Register(ctx, card("agent:local", "skill:x"), &registry.RegisterOptions{Local: true}); err != nil {
		t.Fatal(err)
	}
	ken2 := card("agent:ken", "skill:research", "skill:writing")
	if err := r.Update(ctx, ken2); err != nil {
		t.Fatal(err)
	}
	if err := r.Heartbeat(ctx, "agent:ken"); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(ctx, "agent:ken"); err != nil {
		t.Fatal(err)
	}

	evs := registryEvents(t, st, registry.DefaultRunID)
	want := []struct {
		typ  protocol.Type
		from string
		card *protocol.AgentCard // nil: not a card payload
	}{
		{protocol.TypeAgentRegister, "agent:ken", ken},
		{protocol.TypeAgentRegister, "agent:local", card("agent:local", "skill:x")},
		{protocol.TypeAgentUpdate, "agent:ken", ken2},
		{protocol.TypeAgentHeartbeat, "agent:ken", nil},
		{registry.TypeRemove, "agent:ken", nil},
	}
	if len(evs) != len(want) {
		t.Fatalf("got %d events in run %s, want %d", len(evs), registry.DefaultRunID, len(want))
	}
	if n, _ := st.LastSeq(ctx); n != uint64(len(want)) {
		t.Errorf("store holds %d events, want %d (all in the registry run)", n, len(want))
	}
	for i, w := range want {
		m := evs[i]
		if m.Type != w.typ || m.From.AgentID != w.from || m.RunID != registry.DefaultRunID {
			t.Errorf("event %d: type %s from %s run %s; want %s from %s run %s",
				i, m.Type, m.From.AgentID, m.RunID, w.typ, w.from, registry.DefaultRunID)
		}
		if got, want := m.TS, protocol.Timestamp(t0); got != want {
			t.Errorf("event %d: ts %s, want the registry clock's %s", i, got, want)
		}
		if w.card != nil {
			got, err := protocol.DecodeAgentCard(m.Payload)
			if err != nil {
				t.Fatalf("event %d: payload is not a card: %v", i, err)
			}
			if d := cmp.Diff(w.card, got); d != "" {
				t.Errorf("event %d: card (-want +got):\n%s", i, d)
			}
		}
	}
	if local, _ := evs[1].Meta["clutch_local"].(bool); !local {
		t.Errorf("Local register: meta %v, want clutch_local=true", evs[1].Meta)
	}
	if evs[0].Meta != nil {
		t.Errorf("plain register: meta %v, want none", evs[0].Meta)
	}
	if got := string(evs[4].Payload); got != `{"agent_id":"agent:ken"}` {
		t.Errorf("remove payload %s", got)
	}
}

func TestUnknownAgent(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	r := open(t, st, newClock(), nil)
	mustRegister(t, r, card("agent:a", "skill:x"), false)
	if err := r.Remove(ctx, "agent:a"); err != nil {
		t.Fatal(err)
	}
	before, _ := st.LastSeq(ctx)

	for name, call := range map[string]func() error{
		"Update":            func() error { return r.Update(ctx, card("agent:nobody", "skill:x")) },
		"Update removed":    func() error { return r.Update(ctx, card("agent:a", "skill:x")) },
		"Remove":            func() error { return r.Remove(ctx, "agent:nobody") },
		"Remove removed":    func() error { return r.Remove(ctx, "agent:a") },
		"Remove bad id":     func() error { return r.Remove(ctx, "nobody") },
		"Heartbeat":         func() error { return r.Heartbeat(ctx, "agent:nobody") },
		"Heartbeat removed": func() error { return r.Heartbeat(ctx, "agent:a") },
		"Heartbeat empty":   func() error { return r.Heartbeat(ctx, "") },
	} {
		err := call()
		if !errors.Is(err, registry.ErrNotFound) {
			t.Errorf("%s: %v, want ErrNotFound", name, err)
		}
		if got := protocol.CodeOf(err); got != protocol.CodeNotFound {
			t.Errorf("%s: code %s, want %s", name, got, protocol.CodeNotFound)
		}
	}
	if after, _ := st.LastSeq(ctx); after != before {
		t.Errorf("refused calls appended %d events", after-before)
	}
	if _, ok := r.Get("agent:a"); ok {
		t.Error("Update of a removed agent brought it back")
	}
}

func TestInvalidCard(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	r := open(t, st, newClock(), nil)
	mustRegister(t, r, card("agent:a", "skill:x"), false)
	before, _ := st.LastSeq(ctx)

	for _, tc := range []struct {
		name string
		card *protocol.AgentCard
		code protocol.Code // "" for no protocol error (nil card)
	}{
		{"nil", nil, ""},
		{"version", &protocol.AgentCard{V: "clutch/9", AgentID: "agent:a", Capabilities: []protocol.Capability{}}, protocol.CodeUnsupportedVersion},
		{"agent id", card("ken", "skill:x"), protocol.CodeInvalidField},
		{"no capabilities", &protocol.AgentCard{V: protocol.Version, AgentID: "agent:a"}, protocol.CodeMissingField},
		{"capability id", card("agent:a", "research"), protocol.CodeInvalidField},
		{"negative limit", limited(card("agent:a", "skill:x"), -1), protocol.CodeInvalidField},
		{"trust level", func() *protocol.AgentCard {
			c := card("agent:a", "skill:x")
			c.Capabilities[0].TrustLevel = "root"
			return c
		}(), protocol.CodeInvalidField},
	} {
		for call, fn := range map[string]func(*protocol.AgentCard) error{
			"Register": func(c *protocol.AgentCard) error { return r.Register(ctx, c, nil) },
			"Update":   func(c *protocol.AgentCard) error { return r.Update(ctx, c) },
		} {
			err := fn(tc.card)
			if !errors.Is(err, registry.ErrInvalidCard) {
				t.Errorf("%s %s: %v, want ErrInvalidCard", call, tc.name, err)
				continue
			}
			if tc.code != "" {
				if !errors.Is(err, tc.code) {
					t.Errorf("%s %s: %v does not match %s", call, tc.name, err, tc.code)
				}
				var pe *protocol.Error
				if !errors.As(err, &pe) {
					t.Errorf("%s %s: %v does not wrap a *protocol.Error", call, tc.name, err)
				}
			}
		}
	}
	if after, _ := st.LastSeq(ctx); after != before {
		t.Errorf("invalid cards appended %d events", after-before)
	}
	if got := mustGet(t, r, "agent:a").Card(); len(got.Capabilities) != 1 {
		t.Errorf("agent:a changed by refused updates: %+v", got)
	}
}

func TestOptions(t *testing.T) {
	st := newStore(t)
	for _, o := range []registry.Options{
		{HeartbeatTTL: -time.Second},
		{SuccessWindow: -1},
		{SuccessWindow: 65},
		{RunID: "run_" + strings.Repeat("x", protocol.MaxIDLength)},
	} {
		_, err := registry.Open(context.Background(), st, &o)
		if !errors.Is(err, registry.ErrInvalidOptions) {
			t.Errorf("Open(%+v): %v, want ErrInvalidOptions", o, err)
		}
	}
	for _, o := range []*registry.Options{nil, {}, {SuccessWindow: 1}, {SuccessWindow: 64}, {HeartbeatTTL: time.Millisecond}} {
		if _, err := registry.Open(context.Background(), st, o); err != nil {
			t.Errorf("Open(%+v): %v", o, err)
		}
	}
	r := open(t, st, nil, nil)
	if got := r.HeartbeatTTL(); got != registry.DefaultHeartbeatTTL {
		t.Errorf("default TTL %v, want %v", got, registry.DefaultHeartbeatTTL)
	}
	r = open(t, st, nil, &registry.Options{HeartbeatTTL: time.Minute})
	if got := r.HeartbeatTTL(); got != time.Minute {
		t.Errorf("TTL %v, want 1m", got)
	}
}

func TestOwnRunID(t *testing.T) {
	st := newStore(t)
	c := newClock()
	a := open(t, st, c, nil)
	b := open(t, st, c, &registry.Options{RunID: "run_other"})
	mustRegister(t, a, card("agent:a", "skill:x"), false)
	mustRegister(t, b, card("agent:b", "skill:x"), false)
	if n := len(registryEvents(t, st, "run_other")); n != 1 {
		t.Fatalf("run_other holds %d events, want 1", n)
	}
	a2 := open(t, st, c, nil)
	b2 := open(t, st, c, &registry.Options{RunID: "run_other"})
	if got := ids(a2.List()); !cmp.Equal(got, []string{"agent:a"}) {
		t.Errorf("default run replays %v", got)
	}
	if got := ids(b2.List()); !cmp.Equal(got, []string{"agent:b"}) {
		t.Errorf("run_other replays %v", got)
	}
}

func TestStoreErrors(t *testing.T) {
	st := newStore(t)
	r := open(t, st, newClock(), nil)
	mustRegister(t, r, card("agent:a", "skill:x"), false)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := r.Register(ctx, card("agent:b", "skill:x"), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("Register with a cancelled ctx: %v", err)
	}
	if _, ok := r.Get("agent:b"); ok {
		t.Error("an agent whose event was not stored is registered")
	}

	st.Close()
	if err := r.Heartbeat(context.Background(), "agent:a"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Heartbeat on a closed store: %v, want store.ErrClosed", err)
	}
	if _, err := registry.Open(context.Background(), st, nil); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Open on a closed store: %v, want store.ErrClosed", err)
	}
}

// TestCardIsCopied: the registry keeps the card as stored, so a caller
// changing its card afterwards changes neither routing nor what a replay
// would give.
func TestCardIsCopied(t *testing.T) {
	st := newStore(t)
	r := open(t, st, newClock(), nil)
	c := card("agent:a", "skill:x")
	mustRegister(t, r, c, false)
	c.Capabilities[0].ID = "skill:y"
	if got := ids(r.Candidates([]string{"skill:x"})); !cmp.Equal(got, []string{"agent:a"}) {
		t.Errorf("Candidates(skill:x) = %v after the caller changed its card", got)
	}
	if got := mustGet(t, r, "agent:a").Card().Capabilities[0].ID; got != "skill:x" {
		t.Errorf("registered card changed with the caller's: %s", got)
	}
}

// TestDuplicateEventID: two registries given id sources seeded alike make
// the same event ids; the second write is refused, not applied without
// being stored.
func TestDuplicateEventID(t *testing.T) {
	st := newStore(t)
	c := newClock()
	a := open(t, st, c, &registry.Options{IDs: newIDs(c)})
	b := open(t, st, c, &registry.Options{IDs: newIDs(c)})
	mustRegister(t, a, card("agent:a", "skill:x"), false)
	err := b.Register(context.Background(), card("agent:b", "skill:x"), nil)
	if !errors.Is(err, registry.ErrDuplicateEvent) || protocol.CodeOf(err) != protocol.CodeConflict {
		t.Fatalf("Register with a colliding id: %v (code %s), want ErrDuplicateEvent", err, protocol.CodeOf(err))
	}
	if _, ok := b.Get("agent:b"); ok {
		t.Error("an agent whose event was not stored is registered")
	}
}
