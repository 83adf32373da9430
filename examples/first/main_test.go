package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestRun runs the README's first program against a store file of its own
// and checks that the task succeeded and that every step is in the store.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, filepath.Join(t.TempDir(), "events.db")); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	for _, want := range []string{
		`task.result {"findings":["Three incumbents hold most of Nordic payments"],"citations":["https://example.com/report"]}`,
		"task.request agent:ui",
		"routing.decision agent:orchestrator",
		"task.accept agent:ken",
		"task.result agent:ken",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
}
