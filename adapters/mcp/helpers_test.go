package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/adapters/mcp"
	"github.com/clutchprotocol/clutch/egress"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/store"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// goPeer is an in-process MCP server on the go-sdk, reached over the SDK's
// in-memory transport: the peer of every test that needs no node.
type goPeer struct {
	srv      *sdk.Server
	mu       sync.Mutex
	sessions []*sdk.ServerSession
	connects atomic.Int32
	hangIn   chan struct{} // a send when a hang call starts
	hangOut  chan struct{} // a send when a hang call saw its cancellation
	late     chan struct{} // a receive lets a late call send its late notification
}

type echoIn struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

type weatherIn struct {
	City string `json:"city"`
}

type weatherOut struct {
	City  string  `json:"city"`
	TempC float64 `json:"tempC"`
}

type slowIn struct {
	Steps int `json:"steps"`
	MS    int `json:"ms"`
}

type largeIn struct {
	Bytes int `json:"bytes"`
}

func newGoPeer(t testing.TB) *goPeer {
	p := &goPeer{srv: sdk.NewServer(&sdk.Implementation{Name: "go-peer", Version: "0.0.1"}, nil),
		hangIn: make(chan struct{}, 64), hangOut: make(chan struct{}, 64), late: make(chan struct{})}
	sdk.AddTool(p.srv, &sdk.Tool{Name: "echo", Description: "echoes text"}, func(ctx context.Context, req *sdk.CallToolRequest, in echoIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil, nil
	})
	sdk.AddTool(p.srv, &sdk.Tool{Name: "weather", Description: "structured weather"}, func(ctx context.Context, req *sdk.CallToolRequest, in weatherIn) (*sdk.CallToolResult, weatherOut, error) {
		return nil, weatherOut{City: in.City, TempC: 21.5}, nil
	})
	// A tool whose structuredContent breaks its own outputSchema.
	p.srv.AddTool(&sdk.Tool{Name: "liar", InputSchema: json.RawMessage(`{"type":"object"}`),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: `{"n":"one"}`}}, StructuredContent: json.RawMessage(`{"n":"one"}`)}, nil
		})
	sdk.AddTool(p.srv, &sdk.Tool{Name: "fail"}, func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
		return nil, nil, errors.New("deliberate failure")
	})
	p.srv.AddTool(&sdk.Tool{Name: "retryable", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			env := `{"error":"stale hash, reload","code":"STALE_HASH","retryable":true,"retryAction":"reload_and_retry"}`
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: env}}, StructuredContent: json.RawMessage(env)}, nil
		})
	p.srv.AddTool(&sdk.Tool{Name: "limited", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			env := `{"error":"slow down","code":"RATE_LIMITED","retryable":true,"retryAfter":2.5}`
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: env}}, StructuredContent: json.RawMessage(env)}, nil
		})
	sdk.AddTool(p.srv, &sdk.Tool{Name: "slow"}, func(ctx context.Context, req *sdk.CallToolRequest, in slowIn) (*sdk.CallToolResult, any, error) {
		tok := req.Params.GetProgressToken()
		for i := 1; i <= in.Steps; i++ {
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-time.After(time.Duration(in.MS) * time.Millisecond):
			}
			if tok != nil {
				_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Total: float64(in.Steps), Message: fmt.Sprintf("step %d", i)})
			}
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "done"}}}, nil, nil
	})
	// late sends a progress notification after its result.
	sdk.AddTool(p.srv, &sdk.Tool{Name: "late"}, func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
		tok := req.Params.GetProgressToken()
		sess := req.Session
		go func() {
			select {
			case <-p.late: // the caller has its result
			case <-time.After(10 * time.Second):
				return
			}
			_ = sess.NotifyProgress(context.Background(), &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: 99, Message: "late"})
		}()
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "early"}}}, nil, nil
	})
	sdk.AddTool(p.srv, &sdk.Tool{Name: "hang"}, func(ctx context.Context, req *sdk.CallToolRequest, in struct{}) (*sdk.CallToolResult, any, error) {
		signal(p.hangIn)
		<-ctx.Done()
		signal(p.hangOut)
		return nil, nil, ctx.Err()
	})
	sdk.AddTool(p.srv, &sdk.Tool{Name: "large"}, func(ctx context.Context, req *sdk.CallToolRequest, in largeIn) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.Repeat("x", in.Bytes)}}}, nil, nil
	})
	t.Cleanup(p.close)
	return p
}

// transport is a ServerConfig.Transport: a fresh in-memory connection per
// call, with the server side connected first.
func (p *goPeer) transport(ctx context.Context) (sdk.Transport, error) {
	st, ct := sdk.NewInMemoryTransports()
	ss, err := p.srv.Connect(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	p.connects.Add(1)
	p.mu.Lock()
	p.sessions = append(p.sessions, ss)
	p.mu.Unlock()
	return ct, nil
}

// kill closes the server side of every connection, as a crash would.
func (p *goPeer) kill() {
	p.mu.Lock()
	ss := p.sessions
	p.sessions = nil
	p.mu.Unlock()
	for _, s := range ss {
		_ = s.Close()
	}
}

func (p *goPeer) close() { p.kill() }

// newClient returns a Client closed at the end of the test.
func newClient(t testing.TB, servers []mcp.ServerConfig, opts *mcp.ClientOptions) *mcp.Client {
	t.Helper()
	if opts == nil {
		opts = &mcp.ClientOptions{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Egress == nil {
		// The test servers listen on 127.0.0.1, which the default policy
		// refuses (docs/protocol.md §6).
		opts.Egress = loopbackPolicy(t)
	}
	c, err := mcp.NewClient(servers, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

// loopbackPolicy is an egress policy that allows 127.0.0.1.
func loopbackPolicy(t testing.TB) *egress.Policy {
	t.Helper()
	p, err := egress.New(&egress.Options{Allow: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// taskRunner runs functions inside router tasks of an agent whose card
// lists the given tool servers.
type taskRunner struct {
	env  *routertest.Env
	mu   sync.Mutex
	next func(ctx context.Context, t *router.Task) (*router.Result, error)
}

func newTaskRunner(t testing.TB, tools ...string) *taskRunner {
	return newTaskRunnerNet(t, "open", tools...)
}

// newTaskRunnerNet is newTaskRunner for an agent whose card states the
// given security.network ("" for no security section).
func newTaskRunnerNet(t testing.TB, network string, tools ...string) *taskRunner {
	tr := &taskRunner{env: routertest.New(t, &routertest.Options{Router: router.Options{MaxAttempts: 1}, Timeout: 60 * time.Second})}
	card := &protocol.AgentCard{V: protocol.Version, AgentID: "agent:caller",
		// The servers sit on a capability that routing does not use, so
		// that the router's own allowlist filter (docs/protocol.md §4.2) lets the
		// task through and the adapter's check is what is tested.
		Capabilities: []protocol.Capability{{ID: "skill:call"}, {ID: "tool:mcp", Servers: tools}}}
	if network != "" {
		// HTTP servers need a card that may use the network (docs/protocol.md §6.4).
		card.Security = &protocol.CardSecurity{Network: network}
	}
	tr.env.Register(card, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		tr.mu.Lock()
		f := tr.next
		tr.mu.Unlock()
		return f(ctx, t)
	})
	return tr
}

// run runs f in a new task and returns the task's id. allowlist, when
// not nil, becomes the request's security.policy.tool_allowlist.
func (tr *taskRunner) run(allowlist []string, f func(ctx context.Context, t *router.Task)) string {
	tr.mu.Lock()
	tr.next = func(ctx context.Context, t *router.Task) (*router.Result, error) {
		f(ctx, t)
		return &router.Result{Payload: map[string]any{}}, nil
	}
	tr.mu.Unlock()
	req := tr.env.Request("", map[string]any{}, "skill:call")
	if allowlist != nil {
		req.Security = &protocol.Security{Policy: &protocol.Policy{ToolAllowlist: allowlist}}
	}
	out, err := tr.env.Run(req)
	if err != nil {
		tr.env.T.Fatalf("task failed: %v", err)
	}
	// Every call's events carry its call id (docs/protocol.md §2.3.1);
	// an outcome of no call is a call refused before its tool.call.
	unpaired, err := adaptertest.CheckToolCalls(tr.env.Events(store.Query{TaskID: out.TaskID}))
	if err != nil {
		tr.env.T.Fatal(err)
	}
	for _, m := range unpaired {
		if id, _ := protocol.ToolCallID(m); m.Type != protocol.TypeToolError || !strings.HasPrefix(id, protocol.IDPrefixCall) {
			tr.env.T.Errorf("%s %s answers no call of the task, call id %q", m.Type, m.ID, id)
		}
	}
	return out.TaskID
}

// call runs one Call in a task and returns its result, error and the
// task's events.
func (tr *taskRunner) call(c *mcp.Client, server, tool string, args any, opts *mcp.CallOptions) (*mcp.ToolResult, error, []*protocol.Message) {
	var res *mcp.ToolResult
	var err error
	id := tr.run(nil, func(ctx context.Context, t *router.Task) {
		res, err = c.Call(ctx, t, server, tool, args, opts)
	})
	return res, err, tr.env.Events(store.Query{TaskID: id})
}

// toolEvents returns the tool.* and task.progress events among evs.
func toolEvents(evs []*protocol.Message) []*protocol.Message {
	var out []*protocol.Message
	for _, m := range evs {
		if m.Type.Family() == "tool" || m.Type == protocol.TypeTaskProgress {
			out = append(out, m)
		}
	}
	return out
}

func types(evs []*protocol.Message) []protocol.Type {
	out := make([]protocol.Type, len(evs))
	for i, m := range evs {
		out[i] = m.Type
	}
	return out
}

func errorPayload(t testing.TB, m *protocol.Message) protocol.ErrorPayload {
	t.Helper()
	p, err := protocol.DecodePayload[protocol.ErrorPayload](m)
	if err != nil {
		t.Fatalf("tool.error payload: %v", err)
	}
	return p
}

type sdkTransport = sdk.Transport

// sdkAddTool adds a tool that answers "ok" (and makes the server announce
// tools/list_changed to connected clients).
func sdkAddTool(p *goPeer, name string) {
	p.srv.AddTool(&sdk.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil
		})
}

// signal sends on a buffered channel without ever blocking the sender.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// within waits for a receive on ch, failing the test after 5s.
func within(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}
