package rulesmcp_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/clutchprotocol/clutch/adapters/mcp"
	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/rules"
	"github.com/clutchprotocol/clutch/rules/rulesmcp"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store/memstore"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Example serves a library of rules next to the task tools, and calls
// memsetup and memload as an MCP host would (here over an in-memory
// transport; Run(ctx, &sdk.StdioTransport{}) serves a host that started the
// process, Handler serves Streamable HTTP).
func Example() {
	ctx := context.Background()
	st, _ := memstore.New(nil)
	defer st.Close()
	reg, _ := registry.Open(ctx, st, nil)
	schemas, _ := schema.New(nil)
	r, _ := router.New(st, reg, &router.Options{Validator: schemas})
	defer r.Close()

	lib, _ := rules.Open(ctx, st, &rules.Options{Workspace: "team", Schemas: schemas})
	doc, _ := lib.Publish(ctx, "agent:lead", rules.Publish{Path: "workflow/CODING.md",
		Content: "# Coding\n\n## Steps\n\nInspect the diff and suggest a commit message.\n"})

	tools, _ := rulesmcp.Tools(lib, nil)
	srv, _ := mcp.NewServer(r, &mcp.ServerOptions{
		Caller:     &auth.Caller{AgentID: "agent:ide"},
		Expose:     []string{"agent:none"},
		Logger:     slog.New(slog.DiscardHandler),
		ExtraTools: tools,
	})

	serverEnd, clientEnd := sdk.NewInMemoryTransports()
	sctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Run(sctx, serverEnd) }()
	cs, _ := sdk.NewClient(&sdk.Implementation{Name: "host", Version: "1"}, nil).Connect(ctx, clientEnd, nil)

	res, _ := cs.CallTool(ctx, &sdk.CallToolParams{Name: "memsetup",
		Arguments: map[string]any{"session_id": "thread-42", "knownHashes": map[string]any{"META_PROMPT.md": ""}}})
	fmt.Println("memsetup isError:", res.IsError)
	res, _ = cs.CallTool(ctx, &sdk.CallToolParams{Name: "memload",
		Arguments: map[string]any{"ids": []string{doc.ID}, "knownHashes": map[string]any{doc.ID: doc.Hash}}})
	item := res.StructuredContent.(map[string]any)["items"].([]any)[0].(map[string]any)
	fmt.Println("changed:", item["changed"], "content:", item["content"])
	c := item["constraints"].([]any)[0].(map[string]any)
	fmt.Println("constraint:", c["id"], "-", c["text"])
	res, _ = cs.CallTool(ctx, &sdk.CallToolParams{Name: "memref",
		Arguments: map[string]any{"refs": []any{map[string]any{"ruleId": doc.ID, "constraintId": "Step"}}}})
	sc := res.StructuredContent.(map[string]any)
	fmt.Println("memref isError:", res.IsError, sc["code"], sc["retryAction"])

	cs.Close()
	stop()
	<-done
	// Output:
	// memsetup isError: false
	// changed: false content: <nil>
	// constraint: Steps - Inspect the diff and suggest a commit message.
	// memref isError: true unknown_constraint retry_with_valid_constraint
}
