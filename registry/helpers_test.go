package registry_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// t0 is the start of every test clock.
var t0 = time.Date(2026, 2, 1, 12, 0, 0, 0, time.UTC)

// clock is a test clock that only moves when told to.
// Its ids source is shared by every registry of a test, so that their
// event ids never collide.
type clock struct {
	mu  sync.Mutex
	t   time.Time
	ids *protocol.IDs
}

func newClock() *clock {
	c := &clock{t: t0}
	c.ids = newIDs(c)
	return c
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// newIDs returns a deterministic id source reading c.
func newIDs(c *clock) *protocol.IDs {
	return protocol.NewIDs(&protocol.IDOptions{Clock: c.Now, Entropy: rand.NewChaCha8([32]byte{7})})
}

// eventsOnly hides the store.Presence of the store it wraps: over it a
// registry keeps liveness as events, as over a store without Presence.
type eventsOnly struct{ store.Store }

func newStore(t testing.TB) *memstore.Store {
	t.Helper()
	st, err := memstore.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// open opens a registry over st with c as its clock; opts may be nil.
func open(t testing.TB, st store.Store, c *clock, opts *registry.Options) *registry.Registry {
	t.Helper()
	var o registry.Options
	if opts != nil {
		o = *opts
	}
	if o.IDs == nil && c != nil {
		o.IDs = c.ids
	}
	r, err := registry.Open(context.Background(), st, &o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// card returns a valid card for id with the given capability ids.
func card(id string, caps ...string) *protocol.AgentCard {
	c := &protocol.AgentCard{V: protocol.Version, AgentID: id, Capabilities: []protocol.Capability{}}
	for _, cp := range caps {
		c.Capabilities = append(c.Capabilities, protocol.Capability{ID: cp})
	}
	return c
}

// limited returns card with limits.max_concurrency n.
func limited(c *protocol.AgentCard, n int) *protocol.AgentCard {
	c.Limits = &protocol.Limits{MaxConcurrency: n}
	return c
}

func mustRegister(t testing.TB, r *registry.Registry, c *protocol.AgentCard, local bool) {
	t.Helper()
	if err := r.Register(context.Background(), c, &registry.RegisterOptions{Local: local}); err != nil {
		t.Fatalf("Register(%s): %v", c.AgentID, err)
	}
}

func mustGet(t testing.TB, r *registry.Registry, id string) *registry.Agent {
	t.Helper()
	a, ok := r.Get(id)
	if !ok {
		t.Fatalf("Get(%s): not registered", id)
	}
	return a
}

// ids returns the ids of agents, in order.
func ids(agents []*registry.Agent) []string {
	out := []string{}
	for _, a := range agents {
		out = append(out, a.ID())
	}
	return out
}

// registryEvents returns the messages of the registry run in st.
func registryEvents(t testing.TB, st store.Store, runID string) []*protocol.Message {
	t.Helper()
	var out []*protocol.Message
	for ev, err := range st.Read(context.Background(), store.Query{RunID: runID}) {
		if err != nil {
			t.Fatal(err)
		}
		m, err := ev.Message()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}
