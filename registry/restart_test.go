package registry_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

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
