package mcp_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/clutchprotocol/clutch/adapters/mcp"
	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

type greetIn struct {
	Name string `json:"name"`
}

type greetOut struct {
	Greeting string `json:"greeting"`
}

// greeter is a small MCP server on the go-sdk, reached over the SDK's
// in-memory transport so that the examples need no process and no node.
func greeter() mcp.ServerConfig {
	srv := sdk.NewServer(&sdk.Implementation{Name: "greeter", Version: "1.0.0"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "greet", Description: "Greets someone."},
		func(ctx context.Context, req *sdk.CallToolRequest, in greetIn) (*sdk.CallToolResult, greetOut, error) {
			return nil, greetOut{Greeting: "Hello, " + in.Name}, nil
		})
	return mcp.ServerConfig{Name: "greeter", Transport: func(ctx context.Context) (sdk.Transport, error) {
		st, ct := sdk.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}}
	// A stdio server instead: mcp.ServerConfig{Name: "everything", Command: "npx",
	//	Args: []string{"@modelcontextprotocol/server-everything"}}; an HTTP one:
	//	mcp.ServerConfig{Name: "search", URL: "http://127.0.0.1:3001/mcp"} with
	//	ClientOptions.Egress allowing "127.0.0.1" (the default refuses loopback).
}

// newRouter returns a router over an in-memory store.
func newRouter() *router.Router {
	ctx := context.Background()
	st, _ := memstore.New(nil)
	reg, _ := registry.Open(ctx, st, nil)
	sch, _ := schema.New(nil)
	r, _ := router.New(st, reg, &router.Options{Validator: sch, Logger: slog.New(slog.DiscardHandler)})
	return r
}

// An agent calls an MCP tool through its task: the call is checked
// against the policy and recorded as tool.call and tool.result events.
func ExampleClient_Call() {
	ctx := context.Background()
	c, _ := mcp.NewClient([]mcp.ServerConfig{greeter()}, &mcp.ClientOptions{Logger: slog.New(slog.DiscardHandler)})
	defer c.Close()
	r := newRouter()
	st := r.Store()
	defer r.Close()

	// The agent's card lists the server it may use.
	card := &protocol.AgentCard{V: protocol.Version, AgentID: "agent:host",
		Capabilities: []protocol.Capability{{ID: "skill:greet", Tools: []string{"mcp:greeter"}}}}
	_ = r.Register(ctx, card, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		res, err := c.Call(ctx, t, "greeter", "greet", map[string]any{"name": "Ada"}, nil)
		if err != nil {
			return nil, err
		}
		return &router.Result{Payload: res.StructuredContent}, nil
	})
	req, _ := r.NewRequest("agent:ui", "", map[string]any{})
	req.Requires = []string{"skill:greet"}
	h, _ := r.Submit(ctx, req)
	out, _ := h.Wait(ctx)

	// The call and its result carry one call id, the tool.call's id.
	var callID string
	for ev := range st.Read(ctx, store.Query{TaskID: out.TaskID, TypePrefix: "tool."}) {
		m, _ := ev.Message()
		if m.Type == protocol.TypeToolResult {
			p, _ := protocol.DecodePayload[mcp.ResultPayload](m)
			fmt.Println(m.Type, p.Tool, p.Name, "structuredContent:", string(p.StructuredContent), "same call:", p.CallID == callID)
			continue
		}
		p, _ := protocol.DecodePayload[mcp.CallPayload](m)
		callID = p.CallID
		fmt.Println(m.Type, p.Tool, p.Name, string(p.Args), "call id is its id:", p.CallID == m.ID)
	}
	fmt.Println(out.Type, string(out.Message.Payload))
	// Output:
	// tool.call mcp:greeter greet {"name":"Ada"} call id is its id: true
	// tool.result mcp:greeter greet structuredContent: {"greeting":"Hello, Ada"} same call: true
	// task.result {"greeting":"Hello, Ada"}
}

// Tools reach an LLM under flattened names, mcp_<server>_<tool>, which
// Resolve maps back.
func ExampleClient_LLMTools() {
	ctx := context.Background()
	c, _ := mcp.NewClient([]mcp.ServerConfig{greeter()}, &mcp.ClientOptions{Logger: slog.New(slog.DiscardHandler)})
	defer c.Close()
	tools, _ := c.LLMTools(ctx)
	for _, t := range tools {
		server, tool, _ := c.Resolve(t.LLMName)
		fmt.Println(t.LLMName, "→", server, tool, "—", t.Description)
	}
	// Output:
	// mcp_greeter_greet → greeter greet — Greets someone.
}

// A host connects to the team's MCP surface and lists the agents; every
// result carries structuredContent (docs/protocol.md §15).
func ExampleServer() {
	ctx := context.Background()
	r := newRouter()
	defer r.Close()
	_ = r.Register(ctx, &protocol.AgentCard{V: protocol.Version, AgentID: "agent:ken",
		Capabilities: []protocol.Capability{{ID: "skill:research"}}},
		func(ctx context.Context, t *router.Task) (*router.Result, error) { return &router.Result{}, nil })
	// Over stdio the host is the owner of the process: it is the Caller,
	// and it sees the exposed agents only.
	srv, _ := mcp.NewServer(r, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler), Expose: []string{"agent:ken"},
		Caller: &auth.Caller{AgentID: "agent:ide", Scopes: []string{auth.ScopeSubmit, auth.ScopeAgents}}})

	serverT, clientT := sdk.NewInMemoryTransports()
	sctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Run(sctx, serverT) }()
	cs, _ := sdk.NewClient(&sdk.Implementation{Name: "ide", Version: "1"}, nil).Connect(ctx, clientT, nil)
	res, _ := cs.CallTool(ctx, &sdk.CallToolParams{Name: mcp.ToolListAgents, Arguments: map[string]any{}})
	fmt.Println(res.Content[0].(*sdk.TextContent).Text[:60])
	cs.Close()
	stop()
	<-done
	// Output:
	// {"agents":[{"agent_id":"agent:ken","capabilities":[{"id":"sk
}
