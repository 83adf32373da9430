package atomicfile_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/atomicfile"
)

// only lists dir's entries: no temporary file may be left.
func only(t *testing.T, dir string, want ...string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if len(got) != len(want) {
		t.Fatalf("%s holds %q, want %q", dir, got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s holds %q, want %q", dir, got, want)
		}
	}
}

func TestWriteFileReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	if err := os.WriteFile(path, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := atomicfile.WriteFile(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if string(b) != "new" {
		t.Fatalf("path holds %q", b)
	}
	if fi, _ := os.Stat(path); runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, want 0600", fi.Mode().Perm())
	}
	only(t, dir, "out")
}

func TestAbortLeavesPathAsItWas(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out")
	os.WriteFile(path, []byte("old"), 0o600)
	f, err := atomicfile.Create(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("half"))
	f.Abort()
	f.Abort() // twice is harmless
	b, _ := os.ReadFile(path)
	if string(b) != "old" {
		t.Fatalf("path holds %q after Abort", b)
	}
	only(t, dir, "out")
	if err := f.Commit(); err == nil {
		t.Fatal("Commit after Abort succeeded")
	}
}

func TestCommitNewNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "keys")
	f, _ := atomicfile.Create(path, 0o600)
	f.Write([]byte("first"))
	if err := f.CommitNew(); err != nil {
		t.Fatal(err)
	}
	f.Abort() // after a commit: does nothing
	g, _ := atomicfile.Create(path, 0o600)
	g.Write([]byte("second"))
	if err := g.CommitNew(); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("CommitNew over a file: %v, want fs.ErrExist", err)
	}
	b, _ := os.ReadFile(path)
	if string(b) != "first" {
		t.Fatalf("path holds %q", b)
	}
	only(t, dir, "keys")
}

// Finish lets the whole file be read by name before it is committed.
func TestFinishThenCommit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "db")
	f, _ := atomicfile.Create(path, 0o600)
	f.Write([]byte("checked"))
	if err := f.Finish(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(f.Name()); string(b) != "checked" {
		t.Fatalf("temporary file holds %q", b)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	only(t, dir, "db")
}
