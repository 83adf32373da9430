package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

func TestQuickstart(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, filepath.Join(t.TempDir(), "clutch.db")); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"gateway: verified task.request from agent:ui",
		"routing.decision",
		"selected agent:ken",
		"task.accept",
		"tool.call",
		"tool.result",
		"task.result",
		"research.summary.v1",
		"result (research.summary.v1, validated): Market analysis complete",
		"task.result  by agent:ken",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	// The log shows the §10 order.
	order := []string{"task.request", "routing.decision", "task.accept", "tool.call", "tool.result", "task.progress", "task.result"}
	pos := 0
	for _, typ := range order {
		i := strings.Index(text[pos:], typ)
		if i < 0 {
			t.Fatalf("%s missing or out of order:\n%s", typ, text)
		}
		pos += i
	}
}
