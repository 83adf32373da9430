package rulesmcp_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/adapters/mcp"
	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/rules"
	"github.com/clutchprotocol/clutch/rules/rulesmcp"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// serveStdioEnv makes the test binary an MCP server over stdio, serving
// the rules tools over the boltstore file named by dbEnv (seeded with the
// test documents when empty), so that clients can start it as a host
// starts any stdio server.
const (
	serveStdioEnv = "CLUTCH_RULESMCP_SERVE_STDIO"
	dbEnv         = "CLUTCH_RULESMCP_DB"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	if os.Getenv(serveStdioEnv) == "1" {
		if err := serveStdio(os.Getenv(dbEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "serve:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

func serveStdio(file string) error {
	ctx := context.Background()
	st, err := boltstore.Open(file, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	h, err := newHost(ctx, st, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		return err
	}
	defer h.router.Close()
	return h.srv.Run(ctx, &sdk.StdioTransport{})
}

// The callers: ide over stdio (and with ideKey over HTTP), other over
// HTTP.
const (
	ideKey   = "ide-key-0123456789abcdef"
	otherKey = "other-key-0123456789abcdef"
)

var ide = &auth.Caller{AgentID: "agent:ide", Scopes: []string{auth.ScopeSubmit}}

// host is a router, a rules library and the MCP server serving both.
type host struct {
	router *router.Router
	lib    *rules.Library
	srv    *mcp.Server
	docs   map[string]rules.Document // by path
}

// The seeded documents.
const (
	codingMD = "# Coding\n\n## Steps\n\nInspect the diff and suggest a commit message.\n\n## Checks\n\n1. Run the tests.\n2. Run go vet.\n"
	reviewMD = "# Review\n\n## Tone\n\n- Be kind.\n- Be specific.\n"
	setupMD  = "# Setup\n\nRun make deps.\n"
)

func newHost(ctx context.Context, st store.Store, log *slog.Logger) (*host, error) {
	reg, err := registry.Open(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	sch, err := schema.New(nil)
	if err != nil {
		return nil, err
	}
	r, err := router.New(st, reg, &router.Options{Validator: sch, Logger: log})
	if err != nil {
		return nil, err
	}
	lib, err := rules.Open(ctx, st, &rules.Options{Workspace: "team", Schemas: sch})
	if err != nil {
		r.Close()
		return nil, err
	}
	h := &host{router: r, lib: lib, docs: map[string]rules.Document{}}
	if len(lib.Documents()) == 0 {
		for _, d := range []rules.Publish{
			{Path: "workflow/CODING.md", Content: codingMD, Description: "how we code"},
			{Path: "rules/REVIEW.md", Content: reviewMD},
			{Path: "context/SETUP.md", Content: setupMD},
		} {
			if _, err := lib.Publish(ctx, "agent:lead", d); err != nil {
				r.Close()
				return nil, err
			}
		}
	}
	for _, d := range lib.Documents() {
		h.docs[d.Path] = d
	}
	keys, err := auth.APIKeys(map[string]auth.Caller{
		ideKey:   *ide,
		otherKey: {AgentID: "agent:other", Scopes: []string{auth.ScopeSubmit}},
	})
	if err != nil {
		r.Close()
		return nil, err
	}
	tools, err := rulesmcp.Tools(lib, nil)
	if err != nil {
		r.Close()
		return nil, err
	}
	h.srv, err = mcp.NewServer(r, &mcp.ServerOptions{Caller: ide, Auth: keys, Expose: []string{"agent:none"}, Logger: log,
		ExtraTools: tools})
	if err != nil {
		r.Close()
		return nil, err
	}
	return h, nil
}

// TestToolsRefusesNegativeMaxSessions: a negative limit is refused, as
// every Options of the module refuses one where none makes no sense.
func TestToolsRefusesNegativeMaxSessions(t *testing.T) {
	_, err := rulesmcp.Tools(nil, &rulesmcp.Options{MaxSessions: -1})
	if !errors.Is(err, rulesmcp.ErrInvalidOptions) || !strings.Contains(err.Error(), "MaxSessions") {
		t.Fatalf("Tools with MaxSessions -1: %v, want ErrInvalidOptions naming MaxSessions", err)
	}
}
