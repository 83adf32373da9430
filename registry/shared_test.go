package registry_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/registry"
)

// follower runs r.Follow and reports each change on a channel.
func follow(t *testing.T, r *registry.Registry) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan string, 64)
	done := make(chan error, 1)
	go func() { done <- r.Follow(ctx, func(id string) { ch <- id }) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Follow: %v", err)
		}
	})
	return ch
}

func await(t *testing.T, ch <-chan string, id string) {
	t.Helper()
	for {
		select {
		case got := <-ch:
			if got == id {
				return
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no change of %s within 10s", id)
		}
	}
}

// Two registries over one store, as in two processes: each follows the
// other's writes; an agent registered Local by one is online for the
// other while it heartbeats, and goes offline after the TTL when its
// process stops; a removal reaches the other; own writes are not applied
// twice (the Local agent stays Local where it was registered).
//
// The store has no store.Presence, so heartbeats are events;
// TestSharedBeats has the store with it.
func TestSharedRegistriesFollowEachOther(t *testing.T) {
	st := eventsOnly{newStore(t)}
	c := newClock()
	opts := &registry.Options{Shared: true, HeartbeatTTL: 10 * time.Second}
	a := open(t, st, c, opts)
	mustRegister(t, a, card("agent:early", "skill:x"), true) // before b exists
	b := open(t, st, c, opts)
	if ag := mustGet(t, b, "agent:early"); !b.Online(ag) || ag.Local() {
		t.Fatalf("b after Open: agent:early online=%v local=%v; want online, not local", b.Online(ag), ag.Local())
	}
	fa, fb := follow(t, a), follow(t, b)
	mustRegister(t, a, card("agent:ken", "skill:research"), true)
	await(t, fb, "agent:ken")
	ken := mustGet(t, b, "agent:ken")
	if !b.Online(ken) || ken.Local() || len(b.Candidates([]string{"skill:research"})) != 1 {
		t.Fatalf("b sees agent:ken online=%v local=%v", b.Online(ken), ken.Local())
	}
	c.Advance(8 * time.Second)
	if err := a.Heartbeat(context.Background(), "agent:ken"); err != nil {
		t.Fatal(err)
	}
	await(t, fb, "agent:ken")
	c.Advance(8 * time.Second) // 16s after the registration, 8s after the heartbeat
	if !b.Online(mustGet(t, b, "agent:ken")) {
		t.Fatal("b: agent:ken offline 8s after a heartbeat, TTL 10s")
	}
	c.Advance(3 * time.Second)
	if b.Online(mustGet(t, b, "agent:ken")) {
		t.Fatal("b: agent:ken online 11s after its last heartbeat, TTL 10s")
	}
	if !a.Online(mustGet(t, a, "agent:ken")) || !mustGet(t, a, "agent:ken").Local() {
		t.Fatal("a: its own Local agent must stay Local (its write applied once)")
	}
	if err := b.Remove(context.Background(), "agent:early"); err != nil {
		t.Fatal(err)
	}
	await(t, fa, "agent:early")
	if _, ok := a.Get("agent:early"); ok {
		t.Fatal("a still has agent:early after b removed it")
	}
}

func TestFollowNeedsShared(t *testing.T) {
	st := newStore(t)
	r := open(t, st, newClock(), nil)
	if err := r.Follow(context.Background(), nil); !errors.Is(err, registry.ErrInvalidOptions) {
		t.Fatalf("Follow on a registry that is not Shared: %v", err)
	}
}
