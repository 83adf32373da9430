package boltstore_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

// Usage reports the file's size, the events, the oldest one, and the
// times of the last compaction and backup, recorded in the file: they
// survive a reopen, and store.UsageOf finds them through a wrapper.
func TestUsage(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.db")
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	s := openT(t, path, &boltstore.Options{Clock: clock})
	ctx := context.Background()

	u, err := s.Usage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if u.Events != 0 || u.LastSeq != 0 || u.OldestSeq != 0 || !u.OldestTime.IsZero() || u.Bytes <= 0 ||
		!u.LastBackup.IsZero() || !u.LastCompaction.IsZero() {
		t.Fatalf("usage of a new store: %+v", u)
	}
	if _, err := s.Append(ctx, messages(t, 40)...); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	info, err := s.BackupFile(ctx, filepath.Join(dir, "backup.db"))
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	res, err := s.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	check := func(st store.Store) {
		t.Helper()
		u, err := store.UsageOf(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		want := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		if u.Events != 40 || u.LastSeq != 40 || u.OldestSeq != 1 || !u.OldestTime.Equal(want) {
			t.Errorf("events %d, last seq %d, oldest %d at %v; want 40, 40, 1 at %v", u.Events, u.LastSeq, u.OldestSeq, u.OldestTime, want)
		}
		if !u.LastBackup.Equal(info.Time) || !u.LastBackup.Equal(want.Add(time.Hour)) {
			t.Errorf("LastBackup %v, the backup was at %v", u.LastBackup, info.Time)
		}
		if !u.LastCompaction.Equal(res.Time) || !u.LastCompaction.Equal(want.Add(2*time.Hour)) {
			t.Errorf("LastCompaction %v, the compaction was at %v", u.LastCompaction, res.Time)
		}
		if u.Bytes <= 0 {
			t.Errorf("Bytes %d", u.Bytes)
		}
	}
	check(wrapped{s})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Usage(ctx); err == nil {
		t.Fatal("Usage of a closed store: no error")
	}
	ro := openT(t, path, &boltstore.Options{ReadOnly: true})
	check(ro)
}

// wrapped is a store that wraps another, as a measuring or filtering
// wrapper would, and unwraps to it.
type wrapped struct{ store.Store }

func (w wrapped) Unwrap() store.Store { return w.Store }
