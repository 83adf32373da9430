package memstore_test

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/clutchprotocol/clutch/store/storetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newStore(t *testing.T) store.Store {
	s, err := memstore.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// openStore returns a new store with opts, closed when the test ends.
func openStore(t *testing.T, opts *memstore.Options) *memstore.Store {
	t.Helper()
	s, err := memstore.New(opts)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, newStore, storetest.Options{Remover: true, Conditional: true})
}

// The suite with small limits: exactly-at-the-limit and over-the-limit
// cases at other sizes than the defaults.
func TestConformanceSmallLimits(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := memstore.New(&memstore.Options{MaxEventSize: 4096, MaxArtifactSize: 2 << 20})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, storetest.Options{MaxEventSize: 4096, MaxArtifactSize: 2 << 20})
}

func TestInvalidOptions(t *testing.T) {
	opts := []memstore.Options{{MaxEventSize: -1}, {MaxArtifactSize: -1}}
	if strconv.IntSize == 64 {
		over := uint64(1) << 32
		opts = append(opts, memstore.Options{MaxEventSize: int(over)})
	}
	for _, o := range opts {
		_, err := memstore.New(&o)
		assert.ErrorIs(t, err, memstore.ErrInvalidOptions, "New(%+v)", o)
		assert.ErrorIs(t, err, protocol.CodeInvalidField, "New(%+v)", o)
	}
}

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store {
		s, err := memstore.New(nil)
		if err != nil {
			b.Fatal(err)
		}
		return s
	})
}

// readIDs returns the ids of the events q selects, in order.
func readIDs(t *testing.T, s store.Store, q store.Query) (ids []string) {
	t.Helper()
	for ev, err := range s.Read(context.Background(), q) {
		require.NoError(t, err)
		m, err := ev.Message()
		require.NoError(t, err)
		ids = append(ids, m.ID)
	}
	return ids
}

// One string used as two attributes is indexed under each, and an equal
// string at another address finds the same events.
func TestKeysByAddressAndContent(t *testing.T) {
	s := openStore(t, nil)
	ctx := context.Background()
	ids := protocol.NewIDs(nil)
	shared := ids.RunID()
	a := ids.NewMessage(protocol.TypeChatMessage, "agent:a")
	a.RunID, a.ThreadID = shared, shared // one string, two attributes
	b := ids.Reply(a, protocol.TypeChatMessage, "agent:b")
	b.RunID = strings.Clone(shared) // same content, another address
	b.ThreadID = ids.ThreadID()
	c := ids.Reply(a, protocol.TypeChatMessage, "agent:c") // the same address again
	_, err := s.Append(ctx, a, b, c)
	require.NoError(t, err)

	assert.Equal(t, []string{a.ID, b.ID, c.ID}, readIDs(t, s, store.Query{RunID: shared}), "by run")
	assert.Equal(t, []string{a.ID, c.ID}, readIDs(t, s, store.Query{ThreadID: shared}), "by thread")
	assert.Equal(t, []string{b.ID}, readIDs(t, s, store.Query{ThreadID: b.ThreadID}), "by b's thread")
	assert.Equal(t, []string{a.ID, c.ID}, readIDs(t, s, store.Query{RunID: shared, ThreadID: shared}), "by run and thread")
}

// An id the bytes hold only escaped ("\u0041" for "A", a quote as \") is
// still found by Get and still deduplicates.
func TestEscapedIDs(t *testing.T) {
	s := openStore(t, nil)
	ctx := context.Background()
	for _, c := range []struct{ raw, id string }{
		{`"msg_\u0041bc"`, "msg_Abc"},
		{`"msg_q\"uote"`, `msg_q"uote`},
		{`"msg_plain"`, "msg_plain"},
	} {
		m, err := protocol.Decode([]byte(`{"v":"clutch/0.1","id":` + c.raw + `,"ts":"2026-02-01T13:20:11.123Z",
		  "thread_id":"thr_1","run_id":"run_1","task_id":"task_1","from":{"agent_id":"agent:a"},"to":[],
		  "type":"chat.message","payload":{}}`))
		require.NoError(t, err)
		require.Equal(t, c.id, m.ID, "decoded id")
		res, err := s.Append(ctx, m)
		require.NoError(t, err)
		require.False(t, res[0].Duplicate, "first append of %s", c.id)
		ev, err := s.Get(ctx, c.id)
		require.NoError(t, err)
		assert.Equal(t, res[0].Seq, ev.Seq, "Get(%q)", c.id)
		again := m.Clone()
		again.Reset() // re-encoded by this process: the id is written escaped or not, as it needs
		res2, err := s.Append(ctx, again)
		require.NoError(t, err)
		assert.Equal(t, store.AppendResult{Seq: res[0].Seq, Duplicate: true, DuplicateBy: store.DedupByID}, res2[0], "the same id again")
	}
}

// Ids of many times and ids of no known form deduplicate however much
// later they come again, and Get finds each.
func TestDedupOfManyIDs(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	s := openStore(t, &memstore.Options{Clock: func() time.Time { return now }})
	ctx := context.Background()
	var msgs []*protocol.Message
	for i := range 50 {
		at := now.Add(time.Duration(i*37) * time.Millisecond)
		g := protocol.NewIDs(&protocol.IDOptions{Clock: func() time.Time { return at }})
		m := g.NewMessage(protocol.TypeChatMessage, "agent:a")
		if i%5 == 0 {
			m.ID = fmt.Sprintf("external-%d", i)
		}
		msgs = append(msgs, m)
	}
	for _, m := range msgs {
		res, err := s.Append(ctx, m)
		require.NoError(t, err)
		require.False(t, res[0].Duplicate, "first append of %s", m.ID)
	}
	for i, m := range msgs {
		again := m.Clone()
		again.Reset()
		res, err := s.Append(ctx, again)
		require.NoError(t, err)
		assert.Equal(t, store.AppendResult{Seq: uint64(i + 1), Duplicate: true, DuplicateBy: store.DedupByID}, res[0], "%s again", m.ID)
		ev, err := s.Get(ctx, m.ID)
		require.NoError(t, err)
		assert.Equal(t, uint64(i+1), ev.Seq, "Get(%s)", m.ID)
	}
	_, err := s.Get(ctx, "msg_01KGCNRRQW4ZQ3J69ZFQGMEMPZ")
	assert.ErrorIs(t, err, store.ErrNotFound)
}

// Events of many sizes, from many goroutines, read back byte for byte,
// each with no room past its end.
func TestEventBytes(t *testing.T) {
	s := openStore(t, &memstore.Options{MaxEventSize: 4 << 20})
	ctx := context.Background()
	ids := protocol.NewIDs(nil)
	sizes := []int{10, 3000, 100, 1<<20 + 5000, 700, 50000, 2 << 20, 1}
	want := map[uint64][]byte{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 40 {
				m := ids.NewMessage(protocol.TypeChatMessage, "agent:a")
				m.Meta = map[string]any{"pad": strings.Repeat("x", sizes[(g+i)%len(sizes)])}
				res, err := s.Append(ctx, m)
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				want[res[0].Seq] = m.Raw()
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	n := 0
	for ev, err := range s.Read(ctx, store.Query{}) {
		require.NoError(t, err)
		require.True(t, bytes.Equal(ev.Raw, want[ev.Seq]), "event %d: bytes differ from those appended", ev.Seq)
		require.Equal(t, len(ev.Raw), cap(ev.Raw), "event %d: Raw has room past its end", ev.Seq)
		n++
	}
	assert.Equal(t, len(want), n, "events read")
}

// The store keeps its own copy of a message's bytes: changing the bytes
// the message holds afterwards changes no event.
func TestAppendCopiesBytes(t *testing.T) {
	s := openStore(t, nil)
	ctx := context.Background()
	m := protocol.NewIDs(nil).NewMessage(protocol.TypeChatMessage, "agent:a")
	raw, err := protocol.Encode(m)
	require.NoError(t, err)
	want := bytes.Clone(raw)
	_, err = s.Append(ctx, m)
	require.NoError(t, err)
	for i := range raw {
		raw[i] = 'x'
	}
	ev, err := s.Get(ctx, m.ID)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(ev.Raw))
}

// Times never decrease along seqs, however appends from many goroutines
// interleave.
func TestTimesFollowSeqs(t *testing.T) {
	var mu sync.Mutex
	tick := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		tick = tick.Add(time.Millisecond)
		return tick
	}
	s := openStore(t, &memstore.Options{Clock: clock})
	ctx := context.Background()
	ids := protocol.NewIDs(nil)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				_, err := s.Append(ctx, ids.NewMessage(protocol.TypeChatMessage, "agent:a"))
				if !assert.NoError(t, err) {
					return
				}
			}
		})
	}
	wg.Wait()
	var last time.Time
	n := 0
	for ev, err := range s.Read(ctx, store.Query{}) {
		require.NoError(t, err)
		require.False(t, ev.Time.Before(last), "event %d at %v, before %v", ev.Seq, ev.Time, last)
		last = ev.Time
		n++
	}
	assert.Equal(t, 400, n)
}

// Ids and index values of any length, in small events and in large ones,
// deduplicate and are found by Get, Read and the summaries.
func TestLongIDsAndValues(t *testing.T) {
	s := openStore(t, &memstore.Options{MaxEventSize: 1 << 20})
	ctx := context.Background()
	ids := protocol.NewIDs(nil)
	for i, n := range []int{1, 31, 32, 200, 240} {
		for _, pad := range []int{0, 9000} {
			m := ids.NewMessage(protocol.TypeChatMessage, "agent:a")
			tag := fmt.Sprintf("%d-%d-", i, pad)
			m.ID = "msg_" + tag + strings.Repeat("i", n)
			m.RunID = "run_" + tag + strings.Repeat("r", n)
			m.ThreadID = "thr_" + tag + strings.Repeat("t", n)
			m.TaskID = "task_" + tag + strings.Repeat("k", n)
			m.Meta = map[string]any{"pad": strings.Repeat("x", pad)}
			what := fmt.Sprintf("id of %d bytes, %d bytes of padding", len(m.ID), pad)

			res, err := s.Append(ctx, m)
			require.NoError(t, err)
			require.False(t, res[0].Duplicate, "first append, %s", what)
			again := m.Clone()
			again.Reset()
			res2, err := s.Append(ctx, again)
			require.NoError(t, err)
			assert.Equal(t, store.AppendResult{Seq: res[0].Seq, Duplicate: true, DuplicateBy: store.DedupByID}, res2[0], "again, %s", what)
			ev, err := s.Get(ctx, m.ID)
			require.NoError(t, err)
			assert.Equal(t, string(m.Raw()), string(ev.Raw), "Get, %s", what)
			assert.Equal(t, len(ev.Raw), cap(ev.Raw), "Raw has no room past its end, %s", what)
			_, err = s.Get(ctx, m.ID[:len(m.ID)-1])
			assert.ErrorIs(t, err, store.ErrNotFound, "a prefix of the id, %s", what)
			for _, q := range []store.Query{{RunID: m.RunID}, {ThreadID: m.ThreadID}, {TaskID: m.TaskID}} {
				assert.Equal(t, []string{m.ID}, readIDs(t, s, q), "%+v, %s", q, what)
			}
			found := false
			for sum, err := range store.Runs(ctx, s, store.ListQuery{}) {
				require.NoError(t, err)
				found = found || sum.ID == m.RunID
			}
			assert.True(t, found, "Runs lists the run, %s", what)
		}
	}
}

// Many runs, tasks, agents and idempotency keys: every id and key
// deduplicates, every index value finds exactly its events, and Runs lists
// every run once, with its counts.
func TestManyKeys(t *testing.T) {
	s := openStore(t, nil)
	ctx := context.Background()
	ids := protocol.NewIDs(nil)
	const runs, agents = 500, 7
	type run struct{ req, acc, res *protocol.Message }
	var all []run
	for i := range runs {
		agent := fmt.Sprintf("agent:w%d", i%agents)
		req := ids.NewMessage(protocol.TypeTaskRequest, "agent:ui")
		acc := ids.Reply(req, protocol.TypeTaskAccept, agent)
		res := ids.Reply(req, protocol.TypeTaskResult, agent)
		res.IdempotencyKey = "result" // the same key in every run
		_, err := s.Append(ctx, req, acc, res)
		require.NoError(t, err)
		all = append(all, run{req, acc, res})
	}
	byAgent := map[string][]string{}
	for i, r := range all {
		for j, m := range []*protocol.Message{r.req, r.acc, r.res} {
			seq := uint64(3*i + j + 1)
			if j > 0 {
				byAgent[m.From.AgentID] = append(byAgent[m.From.AgentID], m.ID)
			}
			ev, err := s.Get(ctx, m.ID)
			require.NoError(t, err)
			require.Equal(t, seq, ev.Seq, "Get(%s)", m.ID)
			again := m.Clone()
			again.Reset()
			res, err := s.Append(ctx, again)
			require.NoError(t, err)
			require.Equal(t, store.AppendResult{Seq: seq, Duplicate: true, DuplicateBy: store.DedupByID}, res[0], "%s again", m.ID)
		}
		key := ids.Reply(r.req, protocol.TypeTaskResult, "agent:ui")
		key.IdempotencyKey = "result"
		res, err := s.Append(ctx, key)
		require.NoError(t, err)
		require.Equal(t, store.AppendResult{Seq: uint64(3*i + 3), Duplicate: true, DuplicateBy: store.DedupByIdempotencyKey}, res[0], "run %d: the key again", i)
		want := []string{r.req.ID, r.acc.ID, r.res.ID}
		require.Equal(t, want, readIDs(t, s, store.Query{RunID: r.req.RunID}), "run %d", i)
		require.Equal(t, want, readIDs(t, s, store.Query{TaskID: r.req.TaskID}), "task of run %d", i)
	}
	for agent, want := range byAgent {
		assert.Equal(t, want, readIDs(t, s, store.Query{AgentID: agent}), agent)
	}
	last, err := s.LastSeq(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(3*runs), last, "no duplicate was appended")
	listed := map[string]bool{}
	for sum, err := range store.Runs(ctx, s, store.ListQuery{}) {
		require.NoError(t, err)
		require.False(t, listed[sum.ID], "%s listed twice", sum.ID)
		listed[sum.ID] = true
		assert.Equal(t, []int{3, 1, 1}, []int{sum.Events, sum.Tasks, sum.Ended}, "%s: events, tasks, ended", sum.ID)
		assert.Equal(t, store.StatusCompleted, sum.Status, sum.ID)
	}
	assert.Len(t, listed, runs)
}
