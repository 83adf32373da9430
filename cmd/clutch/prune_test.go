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
	} {
		if code, _, errs := clutch(t, args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d: %s", args, code, exitUsage, errs)
		}
	}
	if code, out, errs := clutch(t, "prune", "--db", db, "--max-age", "30d"); code != exitOK || !strings.Contains(out, "removed 0 of 1 ended runs") {
		t.Fatalf("prune --max-age 30d: %d %q %s", code, out, errs)
	}
}
