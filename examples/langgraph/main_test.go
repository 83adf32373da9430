package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRun runs the tutorial against the Agent Server that `make deps`
// installs. Without node or the package it fails when CI=true and is
// skipped otherwise.
func TestRun(t *testing.T) {
	dir := filepath.Join("..", "..", filepath.FromSlash(defaultServerDir))
	_, errNode := exec.LookPath("node")
	_, errPkg := os.Stat(filepath.Join(dir, "node_modules", "@langchain", "langgraph-cli", "package.json"))
	if errNode != nil || errPkg != nil {
		msg := "examples/langgraph needs node and the LangGraph Agent Server (run `make deps`)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
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
