package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/pgstore"
)

// Usage reports the relations' size, the events, the oldest one, and a
// VACUUM of the events table as the last compaction.
func TestUsage(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	schema := newSchema()
	s := openStore(t, &pgstore.Options{Schema: schema, Clock: func() time.Time { return now }})
	ctx := context.Background()
	u, err := store.UsageOf(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if u.Events != 0 || u.OldestSeq != 0 || !u.OldestTime.IsZero() || u.Bytes <= 0 || !u.LastBackup.IsZero() {
		t.Fatalf("usage of a new store: %+v", u)
	}
	ids := protocol.NewIDs(nil)
	for range 7 {
		m := ids.NewMessage(protocol.TypeTaskProgress, "agent:a")
		m.RunID, m.ThreadID = ids.RunID(), ids.ThreadID()
		if _, err := s.Append(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := pgx.Connect(ctx, cluster.Need(t).DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "VACUUM "+schema+".events"); err != nil {
		t.Fatal(err)
	}
	u, err = s.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if u.Events != 7 || u.LastSeq != 7 || u.OldestSeq != 1 || !u.OldestTime.Equal(now) || u.Bytes <= 0 ||
		u.LastCompaction.IsZero() || !u.LastBackup.IsZero() {
		t.Fatalf("usage after 7 appends and a VACUUM: %+v", u)
	}
}
