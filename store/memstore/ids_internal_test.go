package memstore

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/oklog/ulid/v2"
)

// idWindowRef is idWindow written with the ulid package.
func idWindowRef(id string) (uint64, bool) {
	if len(id) < 26 {
		return 0, false
	}
	u := id[len(id)-26:]
	for i := range len(u) {
		if !strings.ContainsRune("0123456789ABCDEFGHJKMNPQRSTVWXYZ", rune(u[i])) {
			return 0, false
		}
	}
	v, err := ulid.ParseStrict(u)
	if err != nil {
		return 0, false // the first character is past '7': a time over 48 bits
	}
	return v.Time() >> idWindowShift, true
}

func TestIDWindow(t *testing.T) {
	ids := protocol.NewIDs(nil)
	for _, id := range []string{ids.MessageID(), ids.RunID(), ids.TaskID(), ids.ThreadID()} {
		w, ok := idWindow(id)
		u, err := ulid.Parse(id[strings.IndexByte(id, '_')+1:])
		if err != nil || !ok || w != u.Time()>>idWindowShift {
			t.Fatalf("idWindow(%s) = %d, %v; want %d", id, w, ok, u.Time()>>idWindowShift)
		}
	}
	for _, id := range []string{"", "msg_1", "msg_01KGCNRRQW4ZQ3J69ZFQGMEMP", "msg_81KGCNRRQW4ZQ3J69ZFQGMEMPZ",
		"msg_01kgcnrrqw4zq3j69zfqgmempz", "msg_01KGCNRRQW4ZQ3J69ZFQGMEMPU", "550e8400-e29b-41d4-a716-446655440000"} {
		if w, ok := idWindow(id); ok {
			t.Errorf("idWindow(%q) = %d, want no window", id, w)
		}
	}
}

func FuzzIDWindow(f *testing.F) {
	for _, s := range []string{"msg_01KGCNRRQW4ZQ3J69ZFQGMEMPZ", "7ZZZZZZZZZZZZZZZZZZZZZZZZZ", "80000000000000000000000000",
		"00000000000000000000000000", "msg_01kgcnrrqw4zq3j69zfqgmempz", "x", "msg_01KGCNRRQW4ZQ3J69ZFQGMEMPI"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		w, ok := idWindow(id)
		rw, rok := idWindowRef(id)
		if ok != rok || w != rw {
			t.Fatalf("idWindow(%q) = %d, %v; the ulid package says %d, %v", id, w, ok, rw, rok)
		}
	})
}

// Duplicates are found whichever index their id goes to, however much
// later they come: ids with a ULID time (several windows of it), ids
// without one, and two ids of one window whose fingerprints collide.
func TestIDIndexDedup(t *testing.T) {
	now := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	s := openStore(t, &Options{Clock: func() time.Time { return now }})
	ctx := context.Background()
	var msgs []*protocol.Message
	for i := range 50 {
		at := now.Add(time.Duration(i*37) * time.Millisecond) // across windows
		g := protocol.NewIDs(&protocol.IDOptions{Clock: func() time.Time { return at }})
		m := g.NewMessage(protocol.TypeChatMessage, "agent:a")
		if i%5 == 0 {
			m.ID = fmt.Sprintf("external-%d", i) // no ULID time
		}
		msgs = append(msgs, m)
	}
	for _, m := range msgs {
		if res, err := s.Append(ctx, m); err != nil || res[0].Duplicate {
			t.Fatalf("first append of %s: %+v %v", m.ID, res, err)
		}
	}
	if len(s.ids.windows) < 10 {
		t.Fatalf("%d windows, want the ids spread over many", len(s.ids.windows))
	}
	for i, m := range msgs {
		again := m.Clone()
		again.Reset()
		res, err := s.Append(ctx, again)
		if err != nil || !res[0].Duplicate || res[0].Seq != uint64(i+1) {
			t.Fatalf("%s again: %+v %v", m.ID, res, err)
		}
		if ev, err := s.Get(ctx, m.ID); err != nil || ev.Seq != uint64(i+1) {
			t.Fatalf("Get(%s) = %d, %v", m.ID, ev.Seq, err)
		}
	}
	if _, err := s.Get(ctx, "msg_01KGCNRRQW4ZQ3J69ZFQGMEMPZ"); err != store.ErrNotFound {
		t.Fatalf("an unknown id of no stored window: %v", err)
	}

	// A forced fingerprint collision inside one window; another window
	// does not see its keys.
	x := newIDIndex(dedupParts)
	const w = 99
	in := func(w uint64) indexOps {
		return indexOps{
			lookup: func(h uint64, is func(uint64) bool, key func() string) (uint64, bool, bool) {
				return x.lookup(h, w, true, is, key)
			},
			put:   func(h uint64, taken bool, key func() string, v uint64) { x.put(h, w, true, taken, key, v) },
			exact: func() int { return len(x.exact) },
		}
	}
	const h = uint64(0xabcd) << 32
	collide(t, in(w), h, h)
	if _, found, _ := in(w+1).lookup(h, func(uint64) bool { return true }, func() string { return "a" }); found {
		t.Fatal("found in another window")
	}
}

// Shards sit on cache lines of their own: appenders lock different shards
// at once.
func TestKeyShardSize(t *testing.T) {
	if n := unsafe.Sizeof(keyShard{}); n%64 != 0 {
		t.Fatalf("keyShard is %d bytes, not a multiple of 64: adjust its padding", n)
	}
}
