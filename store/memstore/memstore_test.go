package memstore_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/clutchprotocol/clutch/store/storetest"
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

func TestConformance(t *testing.T) {
	storetest.Run(t, newStore, storetest.Options{})
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
	for _, o := range []memstore.Options{{MaxEventSize: -1}, {MaxArtifactSize: -1}} {
		if _, err := memstore.New(&o); !errors.Is(err, memstore.ErrInvalidOptions) {
			t.Errorf("New(%+v) = %v, want ErrInvalidOptions", o, err)
		}
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

// The lists found by the address of a key string (sameList) must agree with
// those found by its content: one string used as two attributes makes two
// lists, and an equal string at another address finds the same list.
func TestKeysByAddressAndContent(t *testing.T) {
	s := newStore(t)
	defer s.Close()
	ctx := context.Background()
	ids := protocol.NewIDs(nil)
	shared := ids.RunID()
	a := ids.NewMessage(protocol.TypeChatMessage, "agent:a")
	a.RunID, a.ThreadID = shared, shared // one string, two attributes
	b := ids.Reply(a, protocol.TypeChatMessage, "agent:b")
	b.RunID = strings.Clone(shared) // same content, another address
	b.ThreadID = ids.ThreadID()
	c := ids.Reply(a, protocol.TypeChatMessage, "agent:c") // the same address again
	if _, err := s.Append(ctx, a, b, c); err != nil {
		t.Fatal(err)
	}
	count := func(q store.Query) (ids []string) {
		for ev, err := range s.Read(ctx, q) {
			if err != nil {
				t.Fatal(err)
			}
			m, err := protocol.Decode(ev.Raw)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, m.ID)
		}
		return ids
	}
	if got := count(store.Query{RunID: shared}); !slices.Equal(got, []string{a.ID, b.ID, c.ID}) {
		t.Errorf("by run: %v", got)
	}
	if got := count(store.Query{ThreadID: shared}); !slices.Equal(got, []string{a.ID, c.ID}) {
		t.Errorf("by thread: %v", got)
	}
	if got := count(store.Query{ThreadID: b.ThreadID}); !slices.Equal(got, []string{b.ID}) {
		t.Errorf("by b's thread: %v", got)
	}
	if got := count(store.Query{RunID: shared, ThreadID: shared}); !slices.Equal(got, []string{a.ID, c.ID}) {
		t.Errorf("by run and thread: %v", got)
	}
}

// An id the bytes hold only escaped ("\u0041" for "A", a quote as \") is
// still found by Get and still deduplicates.
func TestEscapedIDs(t *testing.T) {
	s := newStore(t)
	defer s.Close()
	ctx := context.Background()
	for _, c := range []struct{ raw, id string }{
		{`"msg_\u0041bc"`, "msg_Abc"},
		{`"msg_q\"uote"`, `msg_q"uote`},
		{`"msg_plain"`, "msg_plain"},
	} {
		m, err := protocol.Decode([]byte(`{"v":"clutch/0.1","id":` + c.raw + `,"ts":"2026-02-01T13:20:11.123Z",
		  "thread_id":"thr_1","run_id":"run_1","task_id":"task_1","from":{"agent_id":"agent:a"},"to":[],
		  "type":"chat.message","payload":{}}`))
		if err != nil {
			t.Fatal(err)
		}
		if m.ID != c.id {
			t.Fatalf("decoded id %q, want %q", m.ID, c.id)
		}
		res, err := s.Append(ctx, m)
		if err != nil || res[0].Duplicate {
			t.Fatalf("append %s: %v %v", c.id, res, err)
		}
		ev, err := s.Get(ctx, c.id)
		if err != nil || ev.Seq != res[0].Seq {
			t.Fatalf("Get(%q) = %v, %v", c.id, ev.Seq, err)
		}
		again := m.Clone()
		again.Reset() // re-encoded by this process: the id is written escaped or not, as it needs
		res2, err := s.Append(ctx, again)
		if err != nil || !res2[0].Duplicate || res2[0].Seq != res[0].Seq {
			t.Fatalf("the same id again: %+v %v", res2, err)
		}
	}
}
