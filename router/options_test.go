package router

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// TestLimitsZeroNegativeNoLimit: every limit of Options means the same by
// zero (the default), negative (refused, naming the field) and NoLimit
// (never reached).
func TestLimitsZeroNegativeNoLimit(t *testing.T) {
	e := newEnv(t, nil)
	for name, o := range map[string]Options{
		"MaxAttempts":     {MaxAttempts: -1},
		"MaxQueued":       {MaxQueued: -1},
		"QueueTimeout":    {QueueTimeout: -time.Second},
		"MaxInFlight":     {MaxInFlight: -1},
		"Budget.MaxTasks": {Budget: Budget{MaxTasks: -1}},
		"Budget.MaxDepth": {Budget: Budget{MaxDepth: -1}},
	} {
		_, err := New(e.st, e.reg, &o)
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s negative: %v, want ErrInvalidOptions naming %s", name, err, name)
		}
	}
	var zero Options
	if err := zero.setDefaults(); err != nil {
		t.Fatal(err)
	}
	if zero.MaxAttempts != DefaultMaxAttempts || zero.MaxQueued != DefaultMaxQueued || zero.QueueTimeout != DefaultQueueTimeout ||
		zero.MaxInFlight != DefaultMaxInFlight || zero.Budget.MaxDepth != DefaultMaxDepth || zero.Budget.MaxTasks != 0 {
		t.Errorf("zero Options took %+v, want the documented defaults", zero)
	}

	// NoLimit: a router that holds no more room than NoLimit still takes
	// a task, and a deep chain passes a depth budget of NoLimit.
	lifted := newEnv(t, &Options{MaxInFlight: NoLimit, Budget: Budget{MaxDepth: NoLimit, MaxTasks: NoLimit}})
	lifted.register(card("agent:ken", skill("skill:research")), ok("x"))
	if _, err := lifted.wait(lifted.submit(lifted.request("skill:research"))); err != nil {
		t.Fatal(err)
	}
}

// TestRouterTakesTheRegistryClock: a router without Options.IDs uses the
// registry's, which reads the store's clock, so events carry its time.
func TestRouterTakesTheRegistryClock(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	st, err := memstore.New(&memstore.Options{Clock: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg, err := registry.Open(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := New(st, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.IDs() != reg.IDs() {
		t.Fatal("router.New without IDs: the router does not share the registry's IDs")
	}
	if got := r.IDs().Now(); !got.Equal(at) {
		t.Fatalf("router clock reads %v, want the store's %v", got, at)
	}
}
