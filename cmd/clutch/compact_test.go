package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/store/boltstore"
)

// compact rewrites a file no process holds: the same events, a file no
// larger, that passes check; stats then shows the compaction and the
// store's events. A file a process holds is refused, naming who compacts
// it; a missing file is not created.
func TestCompactAndStoreStats(t *testing.T) {
	src, _, _ := demoFile(t, 2)
	want := readAll(t, src)
	code, out, errs := clutch(t, "compact", "--db", src, "--json")
	if code != exitOK {
		t.Fatalf("compact: %d %s", code, errs)
	}
	var rep compactReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.LastSeq != uint64(len(want)) ||
		rep.Before <= 0 || rep.After <= 0 || rep.After > rep.Before {
		t.Fatalf("compact --json: %q (%v), want last_seq %d and no larger a file", out, err, len(want))
	}
	if fi, err := os.Stat(src); err != nil || fi.Size() != rep.After {
		t.Fatalf("file after compact: %v %v, want %d bytes", fi, err, rep.After)
	}
	if code, out, errs := clutch(t, "check", "--db", src); code != exitOK || !strings.HasPrefix(out, "ok: ") {
		t.Fatalf("check after compact: %d %q %s", code, out, errs)
	}
	got := readAll(t, src)
	if len(got) != len(want) {
		t.Fatalf("%d events after compact, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Seq != want[i].Seq || !bytes.Equal(got[i].Raw, want[i].Raw) {
			t.Fatalf("event %d differs after compact", want[i].Seq)
		}
	}

	code, out, errs = clutch(t, "stats", "--db", src, "--json")
	if code != exitOK {
		t.Fatalf("stats: %d %s", code, errs)
	}
	var s stats
	if err := json.Unmarshal([]byte(out), &s); err != nil || s.Store == nil {
		t.Fatalf("stats --json: %q (%v): no store block", out, err)
	}
	u := s.Store
	if u.Events != uint64(len(want)) || u.LastSeq != uint64(len(want)) || u.OldestSeq != 1 || u.Bytes != rep.After ||
		u.LastCompaction.IsZero() || time.Since(u.LastCompaction) > time.Hour || !u.LastBackup.IsZero() {
		t.Fatalf("stats store block: %+v", u)
	}
	code, out, _ = clutch(t, "stats", "--db", src)
	if code != exitOK || !strings.Contains(out, "\nstore:\n") || !strings.Contains(out, "last backup      never") {
		t.Fatalf("stats: %q", out)
	}

	dir := t.TempDir()
	held := filepath.Join(dir, "held.db")
	st, err := boltstore.Open(held, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	code, _, errs = clutch(t, "compact", "--db", held, "--lock-timeout", "50ms")
	if code != exitFailure || !strings.Contains(errs, "let it compact the store itself") {
		t.Fatalf("compact of a held file: %d %s", code, errs)
	}
	// The process that holds it compacts it online.
	if _, err := st.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.db")
	if code, _, errs := clutch(t, "compact", "--db", missing); code != exitFailure || !strings.Contains(errs, "no such file") {
		t.Fatalf("compact of a missing file: %d %s", code, errs)
	}
	if _, err := os.Stat(missing); err == nil {
		t.Fatal("compact created a missing file")
	}
}
