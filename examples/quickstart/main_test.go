package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
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
		"candidates: agent:ken (score 0.67), agent:research-2 (score 0.00)",
		"selected agent:ken; reason: matched requires[skill:research]",
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
	// It reads as a tutorial: no Go map syntax, no bare JSON null.
	if strings.Contains(text, "map[") {
		t.Errorf("output shows Go map syntax:\n%s", text)
	}
	if regexp.MustCompile(`\bnull\b`).MatchString(text) {
		t.Errorf("output shows a bare null:\n%s", text)
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
