package mcp_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/adapters/mcp"
	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/internal/backends"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store/memstore"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveStdioEnv makes the test binary an MCP server over stdio (a team of
// one research agent), so that the TypeScript client test can start it as
// a host would start any stdio server.
const serveStdioEnv = "CLUTCH_MCP_TEST_SERVE_STDIO"

// TestMain fails the package if any test leaves a goroutine behind: every
// Client and Server must stop what it started (connections, watchers,
// server processes' pipes).
func TestMain(m *testing.M) {
	if os.Getenv(serveStdioEnv) == "1" {
		if err := serveStdio(); err != nil {
			fmt.Fprintln(os.Stderr, "serve:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(backends.Main(m))
}

func serveStdio() error {
	ctx := context.Background()
	st, err := memstore.New(nil)
	if err != nil {
		return err
	}
	reg, err := registry.Open(ctx, st, nil)
	if err != nil {
		return err
	}
	sch, err := schema.New(nil)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	r, err := router.New(st, reg, &router.Options{Validator: sch, Logger: log})
	if err != nil {
		return err
	}
	defer r.Close()
	err = r.Register(ctx, &protocol.AgentCard{V: protocol.Version, AgentID: "agent:ken",
		Capabilities: []protocol.Capability{{ID: "skill:research"}}}, researchHandler)
	if err != nil {
		return err
	}
	srv, err := mcp.NewServer(r, &mcp.ServerOptions{Logger: log, Expose: []string{"agent:ken"},
		Caller: &auth.Caller{AgentID: "agent:ide", Scopes: []string{auth.ScopeSubmit, auth.ScopeAgents}}})
	if err != nil {
		return err
	}
	return srv.Run(ctx, &sdk.StdioTransport{})
}

func researchHandler(ctx context.Context, t *router.Task) (*router.Result, error) {
	q, err := router.Input[schema.ResearchQuery](t)
	if err != nil {
		return nil, err
	}
	_ = t.Progress(ctx, map[string]any{"step": "searching"})
	// A task takes a moment: the TypeScript SDK v1 client drops progress
	// notifications that reach it in the same read as the response.
	time.Sleep(50 * time.Millisecond)
	return &router.Result{PayloadType: schema.PayloadResearchSummary, Payload: schema.ResearchSummary{
		Findings: []string{"answer to " + q.Query}, Citations: []string{"https://example.org"}}}, nil
}
