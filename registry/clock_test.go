package registry_test

import (
	"context"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// TestClockFromTheStore: a registry opened without IDs takes the store's
// clock, so one clock set on the store stamps events and measures liveness.
func TestClockFromTheStore(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2031, 5, 6, 7, 8, 9, 0, time.UTC)
	st, err := memstore.New(&memstore.Options{Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, err := registry.Open(ctx, st, &registry.Options{HeartbeatTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.IDs().Now(); !got.Equal(now) {
		t.Fatalf("IDs().Now() = %v, want the store's %v", got, now)
	}
	if err := r.Register(ctx, card("agent:ken", "skill:research"), nil); err != nil {
		t.Fatal(err)
	}
	var ts time.Time
	for ev, err := range st.Read(ctx, store.Query{TypePrefix: string(protocol.TypeAgentRegister)}) {
		if err != nil {
			t.Fatal(err)
		}
		m, err := ev.Message()
		if err != nil {
			t.Fatal(err)
		}
		ts, err = m.Time()
		if err != nil {
			t.Fatal(err)
		}
	}
	if !ts.Equal(now) {
		t.Fatalf("agent.register ts = %v, want the store's clock %v", ts, now)
	}
	a, _ := r.Get("agent:ken")
	if !r.Online(a) {
		t.Fatal("agent:ken is offline right after registering")
	}
	now = now.Add(2 * time.Minute) // the store's clock moves; liveness follows it
	if r.Online(a) {
		t.Fatal("agent:ken is still online a TTL after its last event on the store's clock")
	}
}

// TestClockWithoutStoreClock: a store that has no clock leaves the
// registry on protocol.DefaultIDs().
func TestClockWithoutStoreClock(t *testing.T) {
	st, err := memstore.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r, err := registry.Open(context.Background(), struct{ store.Store }{st}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.IDs() != protocol.DefaultIDs() {
		t.Fatal("a store without a clock: the registry's IDs are not protocol.DefaultIDs()")
	}
}
