package registry_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/store"
)

// TestConcurrent runs every call at once on a few shared agent ids under
// -race, then checks the invariants: the index agrees with the cards, and
// a replay of the log gives the same registry (store order = apply order).
func TestConcurrent(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	c := newClock()
	r := open(t, st, c, nil)
	skills := []string{"skill:a", "skill:b", "skill:c", "skill:d"}
	agentID := func(i int) string { return fmt.Sprintf("agent:%d", i%6) }
	cardFor := func(g, i int) *protocol.AgentCard {
		return limited(card(agentID(g+i), skills[i%4], skills[(g+i/3)%4]), 1+i%3)
	}
	// Only "not registered" is an expected failure: the ids are shared.
	expect := func(err error) {
		if err != nil && !errors.Is(err, registry.ErrNotFound) {
			t.Error(err)
		}
	}

	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 60 {
				switch (g + i) % 6 {
				case 0:
					expect(r.Register(ctx, cardFor(g, i), &registry.RegisterOptions{Local: i%2 == 0}))
				case 1:
					expect(r.Update(ctx, cardFor(g, i)))
				case 2:
					expect(r.Heartbeat(ctx, agentID(i)))
				case 3:
					if i%4 == 3 {
						expect(r.Remove(ctx, agentID(g)))
					}
				case 4:
					for _, a := range r.Candidates([]string{skills[i%4], skills[g%4]}) {
						r.Online(a)
						if r.TryAcquire(a) {
							r.Release(a, i%3 != 0)
						}
						_ = a.SuccessRate()
					}
				case 5:
					for _, a := range r.List() {
						_ = a.LastSeen()
					}
					r.Get(agentID(i))
				}
			}
		})
	}
	wg.Wait()

	// The index agrees with the cards.
	for _, s := range skills {
		var want []string
		for _, a := range r.List() {
			if _, ok := a.Card().Capability(s); ok {
				want = append(want, a.ID())
			}
		}
		if got := ids(r.Candidates([]string{s})); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("Candidates(%s) = %v, cards say %v", s, got, want)
		}
	}
	sameAgents(t, r, open(t, st, c, nil))
}

// gateStore holds the Append of an event of one type until released.
type gateStore struct {
	store.Store
	typ     protocol.Type
	entered chan struct{}
	release chan struct{}
}

func (g *gateStore) Append(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	if len(msgs) == 1 && msgs[0].Type == g.typ {
		close(g.entered)
		<-g.release
	}
	return g.Store.Append(ctx, msgs...)
}

// TestUpdateDuringRemove: an Update that starts while a Remove of the same
// agent is being stored finds the agent gone; it must not write an
// agent.update that brings it back.
func TestUpdateDuringRemove(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	g := &gateStore{Store: newStore(t), typ: registry.TypeRemove, entered: make(chan struct{}), release: make(chan struct{})}
	r := open(t, g, c, nil)
	mustRegister(t, r, card("agent:a", "skill:x"), false)

	removed := make(chan error, 1)
	go func() { removed <- r.Remove(ctx, "agent:a") }()
	<-g.entered // the Remove is inside Append: agent:a is still registered
	updated := make(chan error, 1)
	go func() { updated <- r.Update(ctx, card("agent:a", "skill:y")) }()
	// Let the Update get as far as it can: to the writers' lock, which the
	// Remove holds. No event tells when it is there (a goroutine blocked on
	// a mutex is invisible to synctest too); the test holds either way,
	// the yields only make the interesting order likely.
	for range 100 {
		runtime.Gosched()
	}
	close(g.release)
	if err := <-removed; err != nil {
		t.Fatal(err)
	}
	if err := <-updated; !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("Update racing a Remove: %v, want ErrNotFound", err)
	}
	if _, ok := r.Get("agent:a"); ok {
		t.Error("agent:a is registered after Remove")
	}
	if _, ok := open(t, g.Store, c, nil).Get("agent:a"); ok {
		t.Error("agent:a is registered after replaying Remove")
	}
}

// TestCandidatesDuringUpdate: the capability index is read without a lock;
// while an agent's card is replaced by one that keeps the capability, the
// agent must never be missing from Candidates (a router would fail the
// task with NO_MATCH). Found by review: removal and insertion were
// published apart.
func TestCandidatesDuringUpdate(t *testing.T) {
	st := newStore(t)
	r := open(t, st, newClock(), nil)
	mustRegister(t, r, card("agent:a", "skill:x", "skill:y"), true)
	var stop atomic.Bool
	missed := make(chan int)
	go func() {
		n := 0
		for !stop.Load() {
			if len(r.Candidates([]string{"skill:x"})) != 1 || len(r.Candidates([]string{"skill:x", "skill:y"})) != 1 {
				n++
			}
		}
		missed <- n
	}()
	for i := range 2000 {
		c := card("agent:a", "skill:x", "skill:y")
		if i%2 == 1 {
			c = card("agent:a", "skill:y", "skill:z", "skill:x")
		}
		if err := r.Update(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	if n := <-missed; n > 0 {
		t.Fatalf("Candidates missed the agent %d times while its card was updated", n)
	}
	if err := r.Update(context.Background(), card("agent:a", "skill:x")); err != nil {
		t.Fatal(err)
	}
	if got := r.Candidates([]string{"skill:z"}); len(got) != 0 {
		t.Fatalf("skill:z after the last update dropped it: %d candidates", len(got))
	}
}
