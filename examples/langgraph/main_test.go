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

// TestRun runs the tutorial against the Agent Server that `make deps`
// installs. Without node or the package it fails when CI=true and is
// skipped otherwise.
func TestRun(t *testing.T) {
	dir := filepath.Join("..", "..", filepath.FromSlash(defaultServerDir))
	nodepeer.Need(t, "examples/langgraph's LangGraph Agent Server", filepath.Join(dir, "node_modules", "@langchain", "langgraph-cli", "package.json"))
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Second)
	defer cancel()
	srv, err := startServer(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.stop()
	var out bytes.Buffer
	if err := run(ctx, &out, srv.url); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, want := range []string{
		"agent:writer",
		"agent:langgraph-agent",
		`tool.call        agent:langgraph-agent  task#2   {"args":{"a":2,"b":3},"call_id":"call_add_1"`,
		"tool.result",
		`result: {"text":"You asked: what is 2 + 3?. The answer is 5, says the LangGraph agent."}`,
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
