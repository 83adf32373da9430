package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/internal/nodepeer"
)

// TestRun runs the tutorial against the server-everything that `make deps`
// installs. Without node or the package it fails when CI=true and is
// skipped otherwise.
func TestRun(t *testing.T) {
	script := filepath.Join("..", "..", filepath.FromSlash(defaultServer))
	nodepeer.Need(t, "examples/mcp-tools' server-everything", script)
	cfg, err := everything(script, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, &out, cfg); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		"mcp_everything_echo",
		`5    tool.call         agent:weather       mcp:everything echo args {"message"`,
		`6    tool.result       agent:weather       answers 5: mcp:everything echo content`,
		`"echo":"Echo: weather for New York"`,
		"8    tool.result       agent:weather       answers 7: mcp:everything get-structured-content structuredContent {",
		`"temperature":`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
