package memstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// Usage counts the events and the bytes of the messages and artifacts,
// and names the oldest event.
func TestUsage(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s, err := memstore.New(&memstore.Options{Clock: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if u, err := store.UsageOf(ctx, s); err != nil || u != (store.Usage{}) {
		t.Fatalf("usage of a new store: %+v, %v", u, err)
	}
	ids := protocol.NewIDs(nil)
	var want int64
	for range 3 {
		m := ids.NewMessage(protocol.TypeTaskProgress, "agent:a")
		m.RunID, m.ThreadID = ids.RunID(), ids.ThreadID()
		raw, err := protocol.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		want += int64(len(raw))
		if _, err := s.Append(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.PutArtifact(ctx, "text/plain", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	want += int64(len("hello") + len("text/plain"))
	u, err := store.UsageOf(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if u.Events != 3 || u.LastSeq != 3 || u.OldestSeq != 1 || !u.OldestTime.Equal(now) || u.Bytes != want {
		t.Fatalf("usage %+v, want 3 events, oldest 1 at %v, %d bytes", u, now, want)
	}
	s.Close()
	if _, err := s.Usage(ctx); !errors.Is(err, store.ErrClosed) {
		t.Fatalf("Usage of a closed store: %v", err)
	}
}
