package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

func runCount(t *testing.T, path string) int {
	t.Helper()
	st, err := boltstore.Open(path, &boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	n := 0
	for sum, err := range store.Runs(t.Context(), st, store.ListQuery{}) {
		if err != nil {
			t.Fatal(err)
		}
		if store.Removable(sum) == nil {
			n++
		}
	}
	return n
}

// prune --dry-run changes nothing; prune removes the oldest ended runs
// past --max-runs, archived first, and the archives import into a store
// again; bad flags are usage errors.
func TestPrune(t *testing.T) {
	db, _, _ := demoFile(t, 3)
	ended := runCount(t, db)
	if ended < 3 {
		t.Fatalf("%d ended runs in the demo file", ended)
	}
	before, _ := os.ReadFile(db)
	code, out, errs := clutch(t, "prune", "--db", db, "--max-runs", "1", "--dry-run")
	if code != exitOK || !strings.Contains(out, "would remove "+itoa(ended-1)+" of "+itoa(ended)+" ended runs") {
		t.Fatalf("dry run: %d %q %s", code, out, errs)
	}
	if after, _ := os.ReadFile(db); string(after) != string(before) {
		t.Fatal("a dry run changed the file")
	}

	dir := filepath.Join(t.TempDir(), "archive")
	code, out, errs = clutch(t, "prune", "--db", db, "--max-runs", "1", "--archive", dir, "--json")
	if code != exitOK {
		t.Fatalf("prune: %d %q %s", code, out, errs)
	}
	var rep pruneReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("prune --json: %v: %s", err, out)
	}
	if rep.DryRun || len(rep.Removed) != ended-1 || rep.Ended != ended || rep.Bytes <= 0 {
		t.Fatalf("prune --json: %+v", rep)
	}
	if n := runCount(t, db); n != 1 {
		t.Fatalf("%d ended runs left, want 1", n)
	}
	copyDB := filepath.Join(t.TempDir(), "copy.db")
	for _, ts := range rep.Removed {
		if ts.Policy != "max_runs=1" || ts.Note != "clutch prune" || filepath.Dir(ts.Archive) != dir {
			t.Fatalf("tombstone %+v", ts)
		}
		if code, out, errs := clutch(t, "import", "--db", copyDB, ts.Archive); code != exitOK {
			t.Fatalf("import of %s: %d %q %s", ts.Archive, code, out, errs)
		}
	}
	if n := runCount(t, copyDB); n != ended-1 {
		t.Fatalf("the archives import %d ended runs, want %d", n, ended-1)
	}
	if code, out, errs := clutch(t, "check", "--db", db); code != exitOK {
		t.Fatalf("check after prune: %d %q %s", code, out, errs)
	}

	for _, args := range [][]string{
		{"prune", "--db", db},
		{"prune", "--db", db, "--max-age", "soon"},
		{"prune", "--db", db, "--max-age", "-1h"},
		{"prune", "--db", db, "--max-runs", "-1"},
		{"prune", "--db", db, "--max-runs", "1", "--archive", dir, "--format", "xml"},
		{"prune", "--db", db, "--max-runs", "1", "--format", "cloudevents"}, // no --archive: not ignored
		{"prune", "--db", db, "--max-bytes", "20X"},
		{"prune", "--db", db, "--max-bytes", "-1"},
		{"prune", "--db", db, "--max-bytes", "0"},
		{"prune", "--db", db, "--max-bytes", "1.5G"},
		{"prune", "--db", db, "--max-bytes", "9000000T"},
	} {
		if code, _, errs := clutch(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d: %s", args, code, exitUsage, errs)
		}
	}
	if code, out, errs := clutch(t, "prune", "--db", db, "--max-age", "30d"); code != exitOK || !strings.Contains(out, "removed 0 of 1 ended runs") {
		t.Fatalf("prune --max-age 30d: %d %q %s", code, out, errs)
	}
}

// prune --max-bytes: a limit above what the runs hold removes nothing; one
// of a byte removes every ended run (running ones count but stay), each
// tombstone naming the limit; a dry run says the same first.
func TestPruneMaxBytes(t *testing.T) {
	db, _, _ := demoFile(t, 3)
	ended := runCount(t, db)
	if code, out, errs := clutch(t, "prune", "--db", db, "--max-bytes", "1T"); code != exitOK || !strings.Contains(out, "removed 0 of "+itoa(ended)+" ended runs") {
		t.Fatalf("prune --max-bytes 1T: %d %q %s", code, out, errs)
	}
	code, out, errs := clutch(t, "prune", "--db", db, "--max-bytes", "1", "--dry-run")
	if code != exitOK || !strings.Contains(out, "would remove "+itoa(ended)+" of "+itoa(ended)+" ended runs") || !strings.Contains(out, "max_bytes=1") {
		t.Fatalf("dry run: %d %q %s", code, out, errs)
	}
	code, out, errs = clutch(t, "prune", "--db", db, "--max-bytes", "1", "--json")
	if code != exitOK {
		t.Fatalf("prune: %d %q %s", code, out, errs)
	}
	var rep pruneReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("prune --json: %v: %s", err, out)
	}
	if len(rep.Removed) != ended || rep.Bytes <= 0 {
		t.Fatalf("prune --json: %+v", rep)
	}
	for _, ts := range rep.Removed {
		if ts.Policy != "max_bytes=1" {
			t.Fatalf("tombstone %+v", ts)
		}
	}
	if n := runCount(t, db); n != 0 {
		t.Fatalf("%d ended runs left", n)
	}
}

func TestSizeFlag(t *testing.T) {
	for in, want := range map[string]int64{
		"1": 1, "1024": 1024, "1K": 1 << 10, "1k": 1 << 10, "512M": 512 << 20, "20G": 20 << 30, "2T": 2 << 40, "007": 7,
		"8388607T": 8388607 << 40,
	} {
		var f sizeFlag
		if err := f.Set(in); err != nil || f.n != want {
			t.Errorf("Set(%q) = %d, %v; want %d", in, f.n, err, want)
		}
	}
	for _, in := range []string{"", "K", "0", "0K", "-1", "+1", "1.5G", "1 G", "1KB", "1P", "20X", "8388608T", "9223372036854775808"} {
		var f sizeFlag
		if err := f.Set(in); err == nil {
			t.Errorf("Set(%q) = %d, want an error", in, f.n)
		}
	}
}

// FuzzSizeFlag: whatever --max-bytes is given, Set never panics, and a
// size it accepts is positive and reads back as its decimal bytes.
func FuzzSizeFlag(f *testing.F) {
	for _, s := range []string{"1", "20G", "512m", "0", "-1", "1.5G", "K", "", "8388608T", "9223372036854775807"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v sizeFlag
		if err := v.Set(s); err != nil {
			return
		}
		if v.n <= 0 {
			t.Fatalf("Set(%q) accepted %d", s, v.n)
		}
		var again sizeFlag
		if err := again.Set(v.String()); err != nil || again.n != v.n {
			t.Fatalf("Set(%q) = %d; its String %q reads as %d, %v", s, v.n, v.String(), again.n, err)
		}
	})
}

// serve applies its retention policy at start: of a file's ended runs
// only the newest --retain-max-runs stay, and it says what went.
func TestServeRetention(t *testing.T) {
	db, _, _ := demoFile(t, 3)
	ended := runCount(t, db)
	s := startServe(t, "clutch: retention removed", "--db", db, "--retain-max-runs", "1", "--no-ui")
	if _, ok := s.line("clutch: retention every 1h0m0s: at most 1 ended runs kept"); !ok {
		t.Fatalf("serve did not say its policy:\n%s", strings.Join(s.start, "\n"))
	}
	last := s.start[len(s.start)-1]
	if !strings.HasPrefix(last, "clutch: retention removed "+itoa(ended-1)+" runs (") {
		t.Fatalf("retention said %q, want %d runs removed", last, ended-1)
	}
	if code := s.stop(); code != exitOK {
		t.Fatalf("serve: exit %d: %s", code, s.errb)
	}
	if n := runCount(t, db); n != 1 {
		t.Fatalf("%d ended runs after serve's retention, want 1", n)
	}
	if code, _, errs := clutch(t, "serve", "--db", db, "--retain-every", "0"); code != exitUsage {
		t.Fatalf("--retain-every 0: exit %d: %s", code, errs)
	}
	// Without a limit, an archive or a period would be ignored: refused
	// before serving (the unusable address makes a serve that ignored
	// them end, not run).
	for _, args := range [][]string{
		{"serve", "--db", db, "--addr", "256.0.0.1:bad", "--retain-archive", t.TempDir()},
		{"serve", "--db", db, "--addr", "256.0.0.1:bad", "--retain-every", "1m"},
	} {
		if code, _, errs := clutch(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d: %s", args, code, exitUsage, errs)
		}
	}
}
