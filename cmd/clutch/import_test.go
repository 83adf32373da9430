package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// exported returns the JSON lines of a demo store's events, and the store.
func exported(t *testing.T) ([]string, string) {
	t.Helper()
	src, _, _ := demoFile(t, 1)
	code, stdout, errs := clutch(t, "export", "--db", src)
	if code != exitOK {
		t.Fatalf("export: %d %s", code, errs)
	}
	return strings.Split(strings.TrimSuffix(stdout, "\n"), "\n"), src
}

// writeLines writes lines as a file in dir.
func writeLines(t *testing.T, dir, name string, lines []string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// badAt returns lines with line n (from 1) replaced by a message without
// an id.
func badAt(lines []string, n int) []string {
	bad := slices.Clone(lines)
	bad[n-1] = `{"seq":4,"message":{"v":"clutch/0.1"}}`
	return bad
}

// files lists the names in dir.
func files(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// importStdin runs import with in as stdin.
func importStdin(in string, args ...string) (int, string, string) {
	var o, e bytes.Buffer
	code := runContext(context.Background(), append([]string{"import"}, args...), strings.NewReader(in), &o, &e)
	return code, o.String(), e.String()
}

// A bad line mid-input stores nothing: a new store file is not made (from
// a file or from stdin, whose spool is removed too), and an existing
// store keeps exactly its events.
func TestImportAllOrNothing(t *testing.T) {
	lines, _ := exported(t)
	if len(lines) < 8 {
		t.Fatalf("%d lines", len(lines))
	}
	in := t.TempDir()
	bad := writeLines(t, in, "bad.jsonl", badAt(lines, 6))

	dir := t.TempDir()
	db := filepath.Join(dir, "new.db")
	code, stdout, errs := clutch(t, "import", "--db", db, "--batch", "2", bad)
	if code != exitFailure || stdout != "" || !strings.Contains(errs, "line 6") || !strings.Contains(errs, "nothing imported") {
		t.Fatalf("import of a bad line into a new file: %d %s%s", code, stdout, errs)
	}
	code, stdout, errs = importStdin(strings.Join(badAt(lines, 6), "\n"), "--db", db, "-")
	if code != exitFailure || !strings.Contains(errs, "line 6") || !strings.Contains(errs, "nothing imported") {
		t.Fatalf("import of a bad line from stdin: %d %s%s", code, stdout, errs)
	}
	if left := files(t, dir); len(left) != 0 {
		t.Fatalf("a failed import left %v", left)
	}

	// An existing store: its events stay as they are.
	if code, stdout, errs := clutch(t, "import", "--db", db, writeLines(t, in, "head.jsonl", lines[:3])); code != exitOK {
		t.Fatalf("import of the first lines: %d %s%s", code, stdout, errs)
	}
	before := readAll(t, db)
	for _, args := range [][]string{{"--db", db, bad}, {"--db", db, "--batch", "1", bad}} {
		if code, stdout, errs := clutch(t, append([]string{"import"}, args...)...); code != exitFailure || !strings.Contains(errs, "line 6") {
			t.Fatalf("import %v: %d %s%s", args, code, stdout, errs)
		}
	}
	if code, _, errs := importStdin(strings.Join(badAt(lines, 6), "\n"), "--db", db, "-"); code != exitFailure || !strings.Contains(errs, "line 6") {
		t.Fatalf("import from stdin: %d %s", code, errs)
	}
	after := readAll(t, db)
	if len(after) != len(before) {
		t.Fatalf("a failed import changed the store: %d events, was %d", len(after), len(before))
	}
	for i := range before {
		if !bytes.Equal(after[i].Raw, before[i].Raw) || after[i].Seq != before[i].Seq {
			t.Fatalf("event %d changed", i+1)
		}
	}
	if left := files(t, dir); !slices.Equal(left, []string{"new.db"}) {
		t.Fatalf("files after failed imports: %v", left)
	}
	// The whole input from stdin (read twice through a spool): appended.
	code, stdout, errs = importStdin(strings.Join(lines, "\n"), "--db", db, "-")
	if code != exitOK || stdout != "imported "+itoa(len(lines)-3)+" events into "+db+" (3 duplicates skipped)\n" {
		t.Fatalf("import from stdin: %d %s%s", code, stdout, errs)
	}
	if left := files(t, dir); !slices.Equal(left, []string{"new.db"}) {
		t.Fatalf("files after an import from stdin: %v", left)
	}
}

// --resume stores the lines before a bad one, and an import of the fixed
// input adds the rest.
func TestImportResume(t *testing.T) {
	lines, src := exported(t)
	in := t.TempDir()
	bad := writeLines(t, in, "bad.jsonl", badAt(lines, 6))
	db := filepath.Join(t.TempDir(), "copy.db")
	code, _, errs := clutch(t, "import", "--db", db, "--resume", "--batch", "2", bad)
	if code != exitFailure || !strings.Contains(errs, "line 6") || !strings.Contains(errs, "5 events appended before it") {
		t.Fatalf("import --resume of a bad line: %d %s", code, errs)
	}
	want := readAll(t, src)
	got := readAll(t, db)
	if len(got) != 5 {
		t.Fatalf("%d events kept, want the 5 before the bad line", len(got))
	}
	for i := range got {
		if !bytes.Equal(got[i].Raw, want[i].Raw) {
			t.Fatalf("event %d is not line %d", i+1, i+1)
		}
	}
	// A bad first line with --resume: nothing to keep, no file.
	dir := t.TempDir()
	if code, _, errs := clutch(t, "import", "--db", filepath.Join(dir, "x.db"), "--resume", writeLines(t, in, "bad1.jsonl", badAt(lines, 1))); code != exitFailure || !strings.Contains(errs, "line 1") {
		t.Fatalf("import --resume of a bad first line: %d %s", code, errs)
	}
	if left := files(t, dir); len(left) != 0 {
		t.Fatalf("import --resume with nothing stored left %v", left)
	}
	code, stdout, errs := clutch(t, "import", "--db", db, writeLines(t, in, "good.jsonl", lines))
	if code != exitOK || !strings.Contains(stdout, "imported "+itoa(len(lines)-5)+" events") || !strings.Contains(stdout, "(5 duplicates skipped)") {
		t.Fatalf("import of the fixed input: %d %s%s", code, stdout, errs)
	}
	if n := len(readAll(t, db)); n != len(want) {
		t.Fatalf("%d events after the rerun, want %d", n, len(want))
	}
	if code, _, errs := clutch(t, "import", "--db", db, "--resume", "--dry-run", bad); code != exitUsage {
		t.Fatalf("--resume --dry-run: %d %s", code, errs)
	}
}

// --dry-run counts what an import would append and writes nothing: no new
// file, an existing one byte for byte as it was; the import then does
// what it said.
func TestImportDryRun(t *testing.T) {
	lines, _ := exported(t)
	in := t.TempDir()
	// The last line twice: a duplicate within the input.
	all := writeLines(t, in, "all.jsonl", append(slices.Clone(lines), lines[len(lines)-1]))
	dir := t.TempDir()
	db := filepath.Join(dir, "copy.db")
	code, stdout, errs := clutch(t, "import", "--db", db, "--dry-run", all)
	if want := "dry run: would import " + itoa(len(lines)) + " events into " + db + ", a new file (1 duplicates skipped); nothing written\n"; code != exitOK || stdout != want {
		t.Fatalf("dry run into a new file: %d %q%s, want %q", code, stdout, errs, want)
	}
	code, stdout, _ = importStdin(strings.Join(lines, "\n"), "--db", db, "--dry-run", "-")
	if code != exitOK || !strings.Contains(stdout, "would import "+itoa(len(lines))+" events") {
		t.Fatalf("dry run from stdin: %d %s", code, stdout)
	}
	if left := files(t, dir); len(left) != 0 {
		t.Fatalf("a dry run left %v", left)
	}

	if code, _, errs := clutch(t, "import", "--db", db, writeLines(t, in, "head.jsonl", lines[:4])); code != exitOK {
		t.Fatalf("import: %d %s", code, errs)
	}
	before, err := os.ReadFile(db)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, errs = clutch(t, "import", "--db", db, "--dry-run", all)
	if want := "dry run: would import " + itoa(len(lines)-4) + " events into " + db + " (5 duplicates skipped); nothing written\n"; code != exitOK || stdout != want {
		t.Fatalf("dry run into a store: %d %q%s, want %q", code, stdout, errs, want)
	}
	code, _, errs = clutch(t, "import", "--db", db, "--dry-run", writeLines(t, in, "bad.jsonl", badAt(lines, 6)))
	if code != exitFailure || !strings.Contains(errs, "line 6") || !strings.Contains(errs, "nothing would be imported") {
		t.Fatalf("dry run of a bad line: %d %s", code, errs)
	}
	if after, _ := os.ReadFile(db); !bytes.Equal(after, before) {
		t.Fatal("a dry run changed the store file")
	}
	if left := files(t, dir); !slices.Equal(left, []string{"copy.db"}) {
		t.Fatalf("files after dry runs: %v", left)
	}
	code, stdout, _ = clutch(t, "import", "--db", db, all)
	if want := "imported " + itoa(len(lines)-4) + " events into " + db + " (5 duplicates skipped)\n"; code != exitOK || stdout != want {
		t.Fatalf("the import after the dry run: %q, want %q", stdout, want)
	}
}
