package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// export --out writes a file only its owner may read, also over an
// existing file of another mode, and leaves no temporary file.
func TestExportFileMode(t *testing.T) {
	src, _, _ := demoFile(t, 1)
	dir := t.TempDir()
	out := filepath.Join(dir, "events.jsonl")
	if code, _, errs := clutch(t, "export", "--db", src, "--out", out); code != exitOK {
		t.Fatalf("export: %d %s", code, errs)
	}
	if fi, err := os.Stat(out); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("export --out: %v %v, want mode 0600", fi, err)
	}
	os.Chmod(out, 0o644)
	if code, _, errs := clutch(t, "export", "--db", src, "--out", out, "--format", "cloudevents"); code != exitOK {
		t.Fatalf("export over a file: %d %s", code, errs)
	}
	fi, err := os.Stat(out)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("export over a file of mode 0644: %v %v, want mode 0600", fi, err)
	}
	if data, _ := os.ReadFile(out); !bytes.Contains(data, []byte(`"specversion":"1.0"`)) {
		t.Fatalf("the file was not replaced: %.100s", data)
	}
	if left := files(t, dir); !slices.Equal(left, []string{"events.jsonl"}) {
		t.Fatalf("export left %v", left)
	}
	if data, _ := os.ReadFile(out); bytes.Count(data, []byte("\n")) != len(readAll(t, src)) {
		t.Fatalf("the file holds %d lines, want one per event", bytes.Count(data, []byte("\n")))
	}
}
