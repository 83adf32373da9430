package registry_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/google/go-cmp/cmp"
)

// restartScenario writes through a registry over the store from first,
// closes it, and checks that a registry over the store from second (the
// same data: reopened file, same server, same memstore) is rebuilt from
// it.
func restartScenario(t *testing.T, first, second func(t *testing.T) store.Store) {
	ctx := context.Background()
	c := newClock()
	opts := &registry.Options{HeartbeatTTL: 10 * time.Second}

	st := first(t)
	r := open(t, st, c, opts)
	mustRegister(t, r, card("agent:local", "skill:x"), true)
	mustRegister(t, r, limited(card("agent:remote", "skill:x", "skill:y"), 2), false)
	mustRegister(t, r, card("agent:gone", "skill:y"), false)
	if err := r.Update(ctx, limited(card("agent:remote", "skill:y"), 3)); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove(ctx, "agent:gone"); err != nil {
		t.Fatal(err)
	}
	c.Advance(5 * time.Second)
	if err := r.Heartbeat(ctx, "agent:remote"); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	c.Advance(5 * time.Second)
	st = second(t)
	r2 := open(t, st, c, opts)
	if got := ids(r2.List()); !cmp.Equal(got, []string{"agent:local", "agent:remote"}) {
		t.Fatalf("after restart: agents %v", got)
	}
	remote := mustGet(t, r2, "agent:remote")
	if remote.MaxConcurrency() != 3 || !r2.Online(remote) {
		t.Errorf("agent:remote: limit %d online %v, want its updated card and online (heartbeat 5 s ago)", remote.MaxConcurrency(), r2.Online(remote))
	}
	if r2.Online(mustGet(t, r2, "agent:local")) {
		t.Error("a Local agent of the previous process is online")
	}
	if got := ids(r2.Candidates([]string{"skill:y"})); !cmp.Equal(got, []string{"agent:remote"}) {
		t.Errorf("after restart: Candidates(skill:y) = %v", got)
	}
}

// TestRestart: a registry restarted over the same store (a memstore that
// outlives it) comes back as it was.
func TestRestart(t *testing.T) {
	st := newStore(t)
	same := func(*testing.T) store.Store { return nopClose{st} }
	restartScenario(t, same, same)
}

type nopClose struct{ store.Store }

func (nopClose) Close() error { return nil }

// TestBoltstoreReopen runs the restart on a real bbolt file, closed and
// opened again.
func TestBoltstoreReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clutch.db")
	open := func(t *testing.T) store.Store {
		st, err := boltstore.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { st.Close() })
		return st
	}
	restartScenario(t, open, open)
}

// TestReopenSameRegistration: a process that registers the same agents
// at every start, over a bbolt file reopened each time, appends no second
// agent.register; a changed card, or a change of Local, still does.
func TestReopenSameRegistration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clutch.db")
	c := newClock()
	opts := &registry.Options{HeartbeatTTL: 10 * time.Second}
	// start opens the file and a registry over it, as a process does.
	start := func() (store.Store, *registry.Registry) {
		bst, err := boltstore.Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		st := eventsOnly{bst} // heartbeats as events; TestReopenSameRegistrationWithPresence has beats
		return st, open(t, st, c, opts)
	}
	types := func(st store.Store) []protocol.Type {
		var out []protocol.Type
		for _, m := range registryEvents(t, st, registry.DefaultRunID) {
			out = append(out, m.Type)
		}
		return out
	}
	reg, hb := protocol.TypeAgentRegister, protocol.TypeAgentHeartbeat

	st, r := start()
	mustRegister(t, r, card("agent:local", "skill:x"), true)
	mustRegister(t, r, card("agent:remote", "skill:y"), false)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	c.Advance(time.Minute) // the remote agent's registration is stale now
	st, r = start()
	if r.Online(mustGet(t, r, "agent:local")) || r.Online(mustGet(t, r, "agent:remote")) {
		t.Fatal("agents of the previous process are online before registering again")
	}
	mustRegister(t, r, card("agent:local", "skill:x"), true)
	if got := types(st); !cmp.Equal(got, []protocol.Type{reg, reg}) {
		t.Errorf("the same Local registration after a restart: events %v, want nothing appended", got)
	}
	if !r.Online(mustGet(t, r, "agent:local")) {
		t.Error("agent:local registered again is not online")
	}
	mustRegister(t, r, card("agent:remote", "skill:y"), false)
	if got := types(st); !cmp.Equal(got, []protocol.Type{reg, reg, hb}) {
		t.Errorf("the same remote registration: events %v, want one agent.heartbeat appended", got)
	}
	if !r.Online(mustGet(t, r, "agent:remote")) {
		t.Error("agent:remote registered again is not online")
	}
	mustRegister(t, r, card("agent:local", "skill:x", "skill:z"), true) // a changed card
	mustRegister(t, r, card("agent:remote", "skill:y"), true)           // now Local
	if got := types(st); !cmp.Equal(got, []protocol.Type{reg, reg, hb, reg, reg}) {
		t.Errorf("changed registrations: events %v, want two more agent.register", got)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st, r = start()
	defer st.Close()
	if got := ids(r.Candidates([]string{"skill:z"})); !cmp.Equal(got, []string{"agent:local"}) {
		t.Errorf("after the second restart: Candidates(skill:z) = %v, want the changed card", got)
	}
	mustRegister(t, r, card("agent:local", "skill:x", "skill:z"), true)
	mustRegister(t, r, card("agent:remote", "skill:y"), true)
	if got := len(types(st)); got != 5 {
		t.Errorf("the same registrations after a second restart: %d events, want 5", got)
	}
}

// TestRegisterDefaultsVersion: a card without v is registered as
// protocol.Version, the caller's card untouched; a wrong v is refused.
func TestRegisterDefaultsVersion(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	r := open(t, st, newClock(), nil)
	c := card("agent:ken", "skill:x")
	c.V = ""
	mustRegister(t, r, c, true)
	if c.V != "" {
		t.Errorf("Register changed the caller's card: v %q", c.V)
	}
	if got := mustGet(t, r, "agent:ken").Card().V; got != protocol.Version {
		t.Errorf("registered card: v %q, want %q", got, protocol.Version)
	}
	evs := registryEvents(t, st, registry.DefaultRunID)
	stored, err := protocol.DecodeAgentCard(evs[len(evs)-1].Payload)
	if err != nil || stored.V != protocol.Version {
		t.Fatalf("stored card: %+v, %v; want v %q", stored, err, protocol.Version)
	}
	up := card("agent:ken", "skill:y")
	up.V = ""
	if err := r.Update(ctx, up); err != nil {
		t.Fatalf("Update with an empty v: %v", err)
	}
	bad := card("agent:ana", "skill:x")
	bad.V = "clutch/9"
	err = r.Register(ctx, bad, nil)
	if !errors.Is(err, registry.ErrInvalidCard) || protocol.CodeOf(err) != protocol.CodeUnsupportedVersion {
		t.Errorf("Register with v %q: %v, want ErrInvalidCard with UNSUPPORTED_VERSION", bad.V, err)
	}
	if _, ok := r.Get("agent:ana"); ok {
		t.Error("a card with a wrong v was registered")
	}
}
