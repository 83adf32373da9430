package mcp_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/adapters/mcp"
	"github.com/clutchprotocol/clutch/router"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The figures of the issue: a tool call through the adapter (policy
// check, tool.call and tool.result appended to the store, result mapped)
// against a bare go-sdk CallTool, both over the SDK's in-memory transport
// to the same Go server, in the same run (target ≤ 1.3×).
//
//	go test -run '^$' -bench 'Call' -benchmem ./adapters/mcp/

var echoArgs = map[string]any{"text": "hello"}

func bareSession(b *testing.B, p *goPeer) *sdk.ClientSession {
	tr, err := p.transport(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, &sdk.ClientOptions{Capabilities: &sdk.ClientCapabilities{}}).
		Connect(context.Background(), tr, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

func BenchmarkCallBare(b *testing.B) {
	p := newGoPeer(b)
	cs := bareSession(b, p)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: echoArgs}); err != nil {
			b.Fatal(err)
		}
	}
}

// inTask runs f inside a router task of an agent allowed to use the
// server. f runs on the task's goroutine: it reports failures with
// b.Error and returns.
func inTask(b *testing.B, server string, f func(ctx context.Context, t *router.Task)) {
	tr := newTaskRunner(b, mcp.ServerID(server))
	tr.run(nil, f)
}

func BenchmarkCallAdapter(b *testing.B) {
	p := newGoPeer(b)
	c := newClient(b, []mcp.ServerConfig{goServer(p)}, nil)
	inTask(b, "go", func(ctx context.Context, t *router.Task) {
		if _, err := c.Call(ctx, t, "go", "echo", echoArgs, nil); err != nil { // connect, list tools
			b.Error(err)
			return
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.Call(ctx, t, "go", "echo", echoArgs, nil); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkCallRatio alternates a bare call and an adapter call in each
// iteration and reports both times and their ratio, so that load on the
// machine weighs on both alike.
func BenchmarkCallRatio(b *testing.B) {
	p := newGoPeer(b)
	cs := bareSession(b, p)
	c := newClient(b, []mcp.ServerConfig{goServer(p)}, nil)
	inTask(b, "go", func(ctx context.Context, t *router.Task) {
		if _, err := c.Call(ctx, t, "go", "echo", echoArgs, nil); err != nil {
			b.Error(err)
			return
		}
		var bare, adapter time.Duration
		for b.Loop() {
			t0 := time.Now()
			if _, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: echoArgs}); err != nil {
				b.Error(err)
				return
			}
			t1 := time.Now()
			if _, err := c.Call(ctx, t, "go", "echo", echoArgs, nil); err != nil {
				b.Error(err)
				return
			}
			bare += t1.Sub(t0)
			adapter += time.Since(t1)
		}
		n := float64(b.N)
		b.ReportMetric(float64(bare.Nanoseconds())/n, "bare-ns/call")
		b.ReportMetric(float64(adapter.Nanoseconds())/n, "adapter-ns/call")
		b.ReportMetric(float64(adapter)/float64(bare), "ratio")
	})
}

// BenchmarkPeerStdio measures round trips to the TypeScript peer over
// stdio (node), reporting the median: through the adapter, and a bare
// go-sdk session over the same kind of process for comparison.
func BenchmarkPeerStdio(b *testing.B) {
	node, dir := needPeer(b, "peer", "@modelcontextprotocol/sdk")
	cfg := mcp.ServerConfig{Name: "peer", Command: node, Args: []string{filepath.Join(dir, "server.mjs"), "--transport", "stdio"}}
	c := newClient(b, []mcp.ServerConfig{cfg}, &mcp.ClientOptions{TerminateDuration: 500 * time.Millisecond})
	args := map[string]any{"text": "hello"}
	inTask(b, "peer", func(ctx context.Context, t *router.Task) {
		if _, err := c.Call(ctx, t, "peer", "echo", args, nil); err != nil {
			b.Error(err)
			return
		}
		lat := make([]time.Duration, 0, 1024)
		b.ReportAllocs()
		for b.Loop() {
			t0 := time.Now()
			if _, err := c.Call(ctx, t, "peer", "echo", args, nil); err != nil {
				b.Error(err)
				return
			}
			lat = append(lat, time.Since(t0))
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	})
}
