package protocol

import (
	"io"
	"math/big"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIDsSortByCreation(t *testing.T) {
	g := NewIDs(nil)
	var ids []string
	for range 10000 { // many within one millisecond: the monotonic part orders them
		ids = append(ids, g.MessageID())
	}
	if !slices.IsSorted(ids) {
		t.Fatal("ids from one source are not sorted by creation")
	}
	for _, id := range ids[:3] {
		if !strings.HasPrefix(id, "msg_") || len(id) != 4+26 {
			t.Fatalf("id %q", id)
		}
	}
	for prefix, f := range map[string]func() string{"run_": g.RunID, "task_": g.TaskID, "thr_": g.ThreadID} {
		if id := f(); !strings.HasPrefix(id, prefix) {
			t.Fatalf("%s id %q", prefix, id)
		}
	}
}

func TestIDsConcurrentUnique(t *testing.T) {
	g := NewIDs(nil)
	const workers, each = 8, 2000
	var mu sync.Mutex
	seen := make(map[string]bool, workers*each)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			local := make([]string, 0, each)
			for range each {
				local = append(local, g.New("x_"))
			}
			mu.Lock()
			defer mu.Unlock()
			for _, id := range local {
				if seen[id] {
					t.Errorf("duplicate id %s", id)
				}
				seen[id] = true
			}
		}()
	}
	wg.Wait()
}

func TestIDsDeterministic(t *testing.T) {
	clock := func() time.Time { return time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC) }
	mk := func() *IDs {
		return NewIDs(&IDOptions{Clock: clock, Entropy: rand.NewChaCha8([32]byte{1})})
	}
	a, b := mk(), mk()
	for range 5 {
		if x, y := a.TaskID(), b.TaskID(); x != y {
			t.Fatalf("same clock and seed gave %s and %s", x, y)
		}
	}
	m := a.NewMessage(TypeTaskRequest, "agent:a")
	if m.TS != "2026-11-25T12:00:00.000Z" {
		t.Fatalf("ts = %s", m.TS)
	}
	if err := m.Validate(); err != nil {
		t.Fatalf("NewMessage is not valid: %v", err)
	}
}

// TestIDsMonotonicStep checks the ULID specification's monotonic mode:
// in one millisecond each id's random part is the previous one's plus a
// step, which is random (1 to 2^32: an id does not tell the next one), for
// the default source and a seeded one alike.
func TestIDsMonotonicStep(t *testing.T) {
	clock := func() time.Time { return time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC) }
	for name, g := range map[string]*IDs{
		"default": NewIDs(&IDOptions{Clock: clock}),
		"seeded":  NewIDs(&IDOptions{Clock: clock, Entropy: rand.NewChaCha8([32]byte{2})}),
	} {
		var prev ulid.ULID
		steps := map[string]bool{}
		for i := range 200 {
			id, err := ulid.Parse(strings.TrimPrefix(g.MessageID(), "msg_"))
			if err != nil {
				t.Fatal(err)
			}
			if id.Time() != ulid.Timestamp(clock()) {
				t.Fatalf("%s: id time %d, want %d", name, id.Time(), ulid.Timestamp(clock()))
			}
			if i > 0 {
				step := new(big.Int).Sub(new(big.Int).SetBytes(id.Entropy()), new(big.Int).SetBytes(prev.Entropy()))
				if step.Sign() <= 0 || step.Cmp(big.NewInt(1<<32)) > 0 {
					t.Fatalf("%s: id %d: step %s, want 1 to 2^32", name, i, step)
				}
				steps[step.String()] = true
			}
			prev = id
		}
		if len(steps) < 190 {
			t.Fatalf("%s: %d distinct steps in 199: not random", name, len(steps))
		}
	}
}

// TestIDsClockBack: after the clock steps back, ids keep the latest
// millisecond seen, so they stay unique and strictly increasing; once the
// clock passes that millisecond again, ids take its readings.
func TestIDsClockBack(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 11, 25, 12, 0, 0, 5e6, time.UTC)
	g := NewIDs(&IDOptions{Clock: func() time.Time { mu.Lock(); defer mu.Unlock(); return now }})
	set := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
	parse := func(id string) ulid.ULID {
		u, err := ulid.Parse(strings.TrimPrefix(id, "msg_"))
		require.NoError(t, err)
		return u
	}
	base := now
	first := g.MessageID()
	ids := []string{first}
	latest := parse(first).Time()
	for _, back := range []time.Duration{3, 2, 0} { // back, still back, back at the latest
		set(base.Add(-back * time.Millisecond))
		for range 50 {
			id := g.MessageID()
			assert.Equal(t, latest, parse(id).Time(), "id made %s before the latest id's time", back*time.Millisecond)
			ids = append(ids, id)
		}
		// ts is the clock reading, the id keeps the latest millisecond.
		m := g.NewMessage(TypeTaskRequest, "agent:a")
		assert.Equal(t, Timestamp(base.Add(-back*time.Millisecond)), m.TS)
		ids = append(ids, m.ID)
	}
	set(base.Add(10 * time.Millisecond))
	for range 2 {
		id := g.MessageID()
		assert.Equal(t, latest+10, parse(id).Time(), "id made after the clock passed the latest id's time")
		ids = append(ids, id)
	}
	for i := 1; i < len(ids); i++ {
		require.Less(t, ids[i-1], ids[i], "ids %d and %d are not strictly increasing", i-1, i)
	}
}

// TestIDsOverflow: when a millisecond's random part would overflow, ids go
// on in the next millisecond, still increasing, and later ids of the
// clock's millisecond keep that next one.
func TestIDsOverflow(t *testing.T) {
	clock := func() time.Time { return time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC) }
	g := NewIDs(&IDOptions{Clock: clock, Entropy: &topFirst{r: rand.NewChaCha8([32]byte{3})}})
	ms := ulid.Timestamp(clock())
	var prev string
	for i := range 5 {
		id := g.MessageID()
		u, err := ulid.Parse(strings.TrimPrefix(id, "msg_"))
		require.NoError(t, err)
		want := ms + 1
		if i == 0 {
			want = ms
			assert.Equal(t, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, u.Entropy(), "the first id takes the top random part")
		}
		assert.Equal(t, want, u.Time(), "id %d", i)
		assert.Less(t, prev, id, "id %d", i)
		prev = id
	}
}

// topFirst is r, except that the first 10 bytes it gives are 0xff: the
// first id of a millisecond takes the largest random part there is.
type topFirst struct {
	r    io.Reader
	done bool
}

func (e *topFirst) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if !e.done {
		for i := 0; i < n && i < 10; i++ {
			p[i] = 0xff
		}
		e.done = n >= 10
	}
	return n, err
}

// TestIDsEntropyFailure: a failing entropy source does not fail id making
// (crypto/rand takes over) nor give duplicates.
func TestIDsEntropyFailure(t *testing.T) {
	g := NewIDs(&IDOptions{Entropy: failingReader{}})
	seen := map[string]bool{}
	for range 1000 {
		id := g.TaskID()
		if seen[id] || len(id) != len("task_")+26 {
			t.Fatalf("id %q (duplicate: %v)", id, seen[id])
		}
		seen[id] = true
	}
}

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

// TestNewMessageFields: the ids and timestamp NewMessage cuts from one
// string are each exactly what they should be.
func TestNewMessageFields(t *testing.T) {
	g := NewIDs(&IDOptions{Clock: func() time.Time { return time.Date(2026, 11, 25, 12, 0, 0, 7e6, time.UTC) }})
	m := g.NewMessage(TypeTaskRequest, "agent:a")
	for _, c := range []struct{ v, prefix string }{{m.ID, "msg_"}, {m.ThreadID, "thr_"}, {m.RunID, "run_"}, {m.TaskID, "task_"}} {
		if !strings.HasPrefix(c.v, c.prefix) || len(c.v) != len(c.prefix)+26 {
			t.Fatalf("%q: want %s and 26 characters", c.v, c.prefix)
		}
		if _, err := ulid.Parse(c.v[len(c.prefix):]); err != nil {
			t.Fatalf("%q: %v", c.v, err)
		}
	}
	if m.TS != "2026-11-25T12:00:00.007Z" {
		t.Fatalf("ts = %q", m.TS)
	}
	r := g.Reply(m, TypeTaskAccept, "agent:b")
	if r.TS != m.TS || !strings.HasPrefix(r.ID, "msg_") || len(r.ID) != 30 || r.ID <= m.ID {
		t.Fatalf("reply id %q ts %q", r.ID, r.TS)
	}
}

func TestReply(t *testing.T) {
	g := NewIDs(nil)
	req := g.NewMessage(TypeTaskRequest, "agent:orchestrator")
	req.Domain = "research"
	req.ParentTaskID = "task_parent"
	req.Trace = &Trace{TraceID: "t1"}
	r := g.Reply(req, TypeTaskAccept, "agent:ken")
	if r.RunID != req.RunID || r.TaskID != req.TaskID || r.ThreadID != req.ThreadID ||
		r.ParentTaskID != "task_parent" || r.Domain != "research" || r.Trace.TraceID != "t1" ||
		r.To[0].AgentID != "agent:orchestrator" || r.ID == req.ID {
		t.Fatalf("reply = %+v", r)
	}
	r.Trace.TraceID = "changed"
	if req.Trace.TraceID != "t1" {
		t.Fatal("reply shares the request's trace")
	}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
}

// Timestamp writes its digits itself; it must agree with the layout it
// replaces for every instant, including the edges of the years it handles.
func TestTimestampMatchesLayout(t *testing.T) {
	r := seededRand(t, 1, 2)
	times := []time.Time{
		time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 3, 14, 9, 26, 53, 589_999_999, time.FixedZone("X", -7*3600)),
		{},
	}
	for range 10000 {
		times = append(times, time.Unix(r.Int64N(400*365*86400)-100*365*86400, r.Int64N(1e9)))
	}
	for _, tm := range times {
		want := tm.UTC().Format("2006-01-02T15:04:05.000Z07:00")
		if got := Timestamp(tm); got != want {
			t.Fatalf("Timestamp(%v) = %s, want %s", tm, got, want)
		}
	}
}
