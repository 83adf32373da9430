package registry_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/google/go-cmp/cmp"
)

// clockedStore returns a memstore on c, the registry's clock.
func clockedStore(t testing.TB, c *clock) *memstore.Store {
	t.Helper()
	st, err := memstore.New(&memstore.Options{Clock: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func typesOf(t testing.TB, st store.Store) []protocol.Type {
	t.Helper()
	var out []protocol.Type
	for _, m := range registryEvents(t, st, registry.DefaultRunID) {
		out = append(out, m.Type)
	}
	return out
}

func mustBeat(t testing.TB, r *registry.Registry, id string) {
	t.Helper()
	if err := r.Heartbeat(context.Background(), id); err != nil {
		t.Fatalf("Heartbeat(%s): %v", id, err)
	}
}

func recordOffline(t testing.TB, r *registry.Registry) int {
	t.Helper()
	n, err := r.RecordOffline(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

const (
	reg     = protocol.TypeAgentRegister
	hb      = protocol.TypeAgentHeartbeat
	offline = registry.TypeOffline
)

// TestCallsWithPresence: over a store with store.Presence a heartbeat of
// an online agent is a beat, not an event.
func TestCallsWithPresence(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	st := clockedStore(t, c)
	r := open(t, st, c, nil)
	mustRegister(t, r, card("agent:ken", "skill:research"), false)
	mustRegister(t, r, card("agent:local", "skill:x"), true)
	if err := r.Update(ctx, card("agent:ken", "skill:research", "skill:writing")); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Second)
	mustBeat(t, r, "agent:ken")
	if err := r.Remove(ctx, "agent:ken"); err != nil {
		t.Fatal(err)
	}
	want := []protocol.Type{reg, reg, protocol.TypeAgentUpdate, registry.TypeRemove}
	if got := typesOf(t, st); !cmp.Equal(got, want) {
		t.Fatalf("events %v, want %v: no event for the heartbeat", got, want)
	}
	var keys []string
	for b, err := range st.Beats(ctx, "") {
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, b.Key)
		if b.Key == "run_registry/agent:ken" && !b.Time.Equal(t0.Add(time.Second)) {
			t.Errorf("beat of agent:ken at %v, want the heartbeat's %v", b.Time, t0.Add(time.Second))
		}
	}
	if !cmp.Equal(keys, []string{"run_registry/agent:ken", "run_registry/agent:local"}) {
		t.Errorf("beats %v, want one per agent, keyed by run", keys)
	}
	if err := r.Heartbeat(ctx, "agent:ken"); err == nil {
		t.Error("Heartbeat of a removed agent: no error")
	}
}

// TestTransitions: offline and online are events, once per lapse,
// whoever notices the lapse first (RecordOffline, or the beat after it).
func TestTransitions(t *testing.T) {
	c := newClock()
	st := clockedStore(t, c)
	r := open(t, st, c, &registry.Options{HeartbeatTTL: 10 * time.Second})
	mustRegister(t, r, card("agent:ken", "skill:x"), false)
	ken := mustGet(t, r, "agent:ken")
	c.Advance(5 * time.Second)
	mustBeat(t, r, "agent:ken")
	if n := recordOffline(t, r); n != 0 || !r.Online(ken) {
		t.Fatalf("5 s after the register: RecordOffline stored %d, online %v; want 0, online", n, r.Online(ken))
	}

	// A lapse nobody recorded: the beat after it stores it, then online.
	c.Advance(20 * time.Second)
	if r.Online(ken) {
		t.Fatal("online 20 s after the last beat, TTL 10 s")
	}
	mustBeat(t, r, "agent:ken")
	if got, want := typesOf(t, st), []protocol.Type{reg, offline, hb}; !cmp.Equal(got, want) {
		t.Fatalf("after a lapse and a beat: %v, want %v", got, want)
	}
	evs := registryEvents(t, st, registry.DefaultRunID)
	if got, want := string(evs[1].Payload), `{"agent_id":"agent:ken","last_seen":"2026-02-01T12:00:05Z"}`; got != want {
		t.Errorf("offline payload %s, want %s", got, want)
	}
	if !r.Online(ken) {
		t.Fatal("offline after a beat")
	}

	// A lapse RecordOffline notices: stored once, however often asked;
	// the beat after it stores only the online event.
	c.Advance(11 * time.Second)
	if n := recordOffline(t, r); n != 1 {
		t.Fatalf("RecordOffline after a lapse stored %d, want 1", n)
	}
	if n := recordOffline(t, r); n != 0 {
		t.Fatalf("RecordOffline again stored %d, want 0", n)
	}
	r2 := open(t, st, c, &registry.Options{HeartbeatTTL: 10 * time.Second}) // another process, same lapse
	if n := recordOffline(t, r2); n != 0 {
		t.Fatalf("a second registry's RecordOffline stored %d, want 0", n)
	}
	c.Advance(time.Minute)
	mustBeat(t, r, "agent:ken")
	want := []protocol.Type{reg, offline, hb, offline, hb}
	if got := typesOf(t, st); !cmp.Equal(got, want) {
		t.Fatalf("after the second lapse and a beat: %v, want %v", got, want)
	}
	// The events say the same as the beats after a restart.
	r3 := open(t, st, c, &registry.Options{HeartbeatTTL: 10 * time.Second})
	if !r3.Online(mustGet(t, r3, "agent:ken")) || !mustGet(t, r3, "agent:ken").LastSeen().Equal(c.Now()) {
		t.Fatalf("after a restart: last seen %v, want online, seen %v", mustGet(t, r3, "agent:ken").LastSeen(), c.Now())
	}
}

// TestReopenSameRegistrationWithPresence is TestReopenSameRegistration
// over beats: registering a remote agent again after its registration
// went stale stores the lapse and the online event, and a restart
// remembers its liveness from the beats.
func TestReopenSameRegistrationWithPresence(t *testing.T) {
	path := filepath.Join(t.TempDir(), "clutch.db")
	c := newClock()
	opts := &registry.Options{HeartbeatTTL: 10 * time.Second}
	start := func() (store.Store, *registry.Registry) {
		st, err := boltstore.Open(path, &boltstore.Options{Clock: c.Now})
		if err != nil {
			t.Fatal(err)
		}
		return st, open(t, st, c, opts)
	}
	st, r := start()
	mustRegister(t, r, card("agent:local", "skill:x"), true)
	mustRegister(t, r, card("agent:remote", "skill:y"), false)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Minute)
	st, r = start()
	if r.Online(mustGet(t, r, "agent:local")) || r.Online(mustGet(t, r, "agent:remote")) {
		t.Fatal("agents of the previous process are online before registering again")
	}
	mustRegister(t, r, card("agent:local", "skill:x"), true)
	mustRegister(t, r, card("agent:remote", "skill:y"), false)
	if got, want := typesOf(t, st), []protocol.Type{reg, reg, offline, hb}; !cmp.Equal(got, want) {
		t.Errorf("the same registrations after a restart: %v, want %v", got, want)
	}
	c.Advance(5 * time.Second)
	mustBeat(t, r, "agent:remote")
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	c.Advance(9 * time.Second) // 9 s after the last beat, TTL 10 s
	st, r = start()
	defer st.Close()
	if !r.Online(mustGet(t, r, "agent:remote")) || r.Online(mustGet(t, r, "agent:local")) {
		t.Errorf("after a restart: remote online %v (beat 9 s ago), local online %v (its process is gone)",
			r.Online(mustGet(t, r, "agent:remote")), r.Online(mustGet(t, r, "agent:local")))
	}
	c.Advance(2 * time.Second)
	if r.Online(mustGet(t, r, "agent:remote")) {
		t.Error("remote online 11 s after its last beat")
	}
}

// TestSharedBeats: registries of two processes over one store learn each
// other's liveness from the beats, with no event per heartbeat, and
// store an offline event once.
func TestSharedBeats(t *testing.T) {
	ctx := context.Background()
	c := newClock()
	st := clockedStore(t, c)
	opts := &registry.Options{Shared: true, HeartbeatTTL: 10 * time.Second}
	a := open(t, st, c, opts)
	b := open(t, st, c, opts)
	fb := follow(t, b)
	follow(t, a)
	mustRegister(t, a, card("agent:ken", "skill:research"), true)
	await(t, fb, "agent:ken")
	c.Advance(8 * time.Second)
	mustBeat(t, a, "agent:ken")
	c.Advance(8 * time.Second)
	if n := recordOffline(t, b); n != 0 || !b.Online(mustGet(t, b, "agent:ken")) {
		t.Fatalf("b, 8 s after a's beat: stored %d, online %v; want 0, online", n, b.Online(mustGet(t, b, "agent:ken")))
	}
	c.Advance(3 * time.Second)
	if n := recordOffline(t, b); n != 1 || b.Online(mustGet(t, b, "agent:ken")) {
		t.Fatalf("b, 11 s after a's beat: stored %d, online %v; want 1, offline", n, b.Online(mustGet(t, b, "agent:ken")))
	}
	if n, err := a.RecordOffline(ctx); err != nil || n != 0 {
		t.Fatalf("a after b stored the lapse: %d, %v; want 0", n, err)
	}
	if got, want := typesOf(t, st), []protocol.Type{reg, offline}; !cmp.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
}

// TestSimulatedDay: 100 agents beating every 10 s for a day (a test
// clock) store events for the changes only: their registrations and one
// offline and one online event per outage, not the 864,000 beats. A
// restart gives the same answers.
func TestSimulatedDay(t *testing.T) {
	const (
		agents   = 100
		interval = 10 * time.Second
		day      = 24 * time.Hour
		ttl      = 30 * time.Second
		outage   = 2 * time.Minute // of agents 0..9, at hour i+1
		outages  = 10
		sweep    = 5 * time.Minute // a checker calls RecordOffline
	)
	for _, backend := range []string{"memstore", "boltstore"} {
		t.Run(backend, func(t *testing.T) {
			c := newClock()
			path := filepath.Join(t.TempDir(), "clutch.db")
			openStore := func() store.Store {
				if backend == "memstore" {
					return clockedStore(t, c)
				}
				st, err := boltstore.Open(path, &boltstore.Options{Clock: c.Now, NoSync: true})
				if err != nil {
					t.Fatal(err)
				}
				return st
			}
			st := openStore()
			opts := &registry.Options{HeartbeatTTL: ttl}
			r := open(t, st, c, opts)
			for i := range agents {
				mustRegister(t, r, card(fmt.Sprintf("agent:%03d", i), "skill:x"), false)
			}
			down := func(i int, at time.Duration) bool {
				start := time.Duration(i+1) * time.Hour
				return i < outages && at >= start && at < start+outage
			}
			beats := 0
			for at := interval; at <= day; at += interval {
				c.Advance(interval)
				for i := range agents {
					if !down(i, at) {
						mustBeat(t, r, fmt.Sprintf("agent:%03d", i))
						beats++
					}
				}
				if at%sweep == 0 {
					recordOffline(t, r)
				}
			}
			counts := map[protocol.Type]int{}
			for _, ty := range typesOf(t, st) {
				counts[ty]++
			}
			want := map[protocol.Type]int{reg: agents, offline: outages, hb: outages}
			if !cmp.Equal(counts, want) {
				t.Fatalf("events of a day: %v, want %v", counts, want)
			}
			n, _ := st.LastSeq(context.Background())
			t.Logf("%d beats, %d events (with events for beats: %d)", beats, n, agents+beats)
			for _, a := range r.List() {
				if !r.Online(a) {
					t.Errorf("%s offline at the end of the day", a.ID())
				}
			}
			if backend == "boltstore" {
				if err := st.Close(); err != nil {
					t.Fatal(err)
				}
				st = openStore()
				defer st.Close()
			}
			r2 := open(t, st, c, opts)
			for _, a := range r2.List() {
				if !r2.Online(a) || !a.LastSeen().Equal(c.Now()) {
					t.Errorf("after a restart: %s online %v, last seen %v; want online, seen %v", a.ID(), r2.Online(a), a.LastSeen(), c.Now())
				}
			}
			c.Advance(ttl + time.Second)
			if n := recordOffline(t, r2); n != agents {
				t.Errorf("after a restart and silence: %d offline events, want %d", n, agents)
			}
		})
	}
}

// BenchmarkHeartbeat: one agent's heartbeat on a durable boltstore, as
// an event (a store without Presence, the path of earlier versions) and
// as a beat; B/beat is the growth of the file per heartbeat.
func BenchmarkHeartbeat(b *testing.B) {
	for _, mode := range []string{"events", "beats"} {
		b.Run(mode, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "clutch.db")
			bst, err := boltstore.Open(path, nil)
			if err != nil {
				b.Fatal(err)
			}
			var st store.Store = bst
			if mode == "events" {
				st = eventsOnly{bst}
			}
			r, err := registry.Open(context.Background(), st, nil)
			if err != nil {
				b.Fatal(err)
			}
			mustRegister(b, r, card("agent:ken", "skill:x"), false)
			if err := bst.Close(); err != nil { // the file as registered
				b.Fatal(err)
			}
			before := fileSize(b, path)
			if bst, err = boltstore.Open(path, nil); err != nil {
				b.Fatal(err)
			}
			st = bst
			if mode == "events" {
				st = eventsOnly{bst}
			}
			if r, err = registry.Open(context.Background(), st, nil); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if err := r.Heartbeat(context.Background(), "agent:ken"); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			if err := bst.Close(); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(fileSize(b, path)-before)/float64(b.N), "B/beat")
		})
	}
}

func fileSize(b *testing.B, path string) int64 {
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return fi.Size()
}
