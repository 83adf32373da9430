package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/adapters/mcp"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

func goServer(p *goPeer) mcp.ServerConfig {
	return mcp.ServerConfig{Name: "go", Transport: p.transport}
}

func TestCallResultEvents(t *testing.T) {
	p := newGoPeer(t)
	c := newClient(t, []mcp.ServerConfig{goServer(p)}, nil)
	tr := newTaskRunner(t, "mcp:go")

	res, err, evs := tr.call(c, "go", "echo", map[string]any{"text": "hi"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Text() != "hi" {
		t.Errorf("text = %q", res.Text())
	}
	tev := toolEvents(evs)
	if got := types(tev); !slices.Equal(got, []protocol.Type{protocol.TypeToolCall, protocol.TypeToolResult}) {
		t.Fatalf("events %v", got)
	}
	call, _ := protocol.DecodePayload[mcp.CallPayload](tev[0])
	if call.CallID != tev[0].ID || call.Tool != "mcp:go" || call.Name != "echo" || string(call.Args) != `{"text":"hi"}` {
		t.Errorf("tool.call payload %+v", call)
	}
	if len(tev[0].To) != 0 || tev[0].From.AgentID != "agent:caller" {
		t.Errorf("tool.call addressing from=%v to=%v", tev[0].From, tev[0].To)
	}
	rp, _ := protocol.DecodePayload[mcp.ResultPayload](tev[1])
	if rp.CallID != tev[0].ID || rp.Tool != "mcp:go" || !strings.Contains(string(rp.Content), `"text":"hi"`) {
		t.Errorf("tool.result payload %+v", rp)
	}
	if res.Event.ID != tev[1].ID || res.CallEvent.ID != tev[0].ID {
		t.Errorf("result events do not match the store")
	}
}

func TestCallStructuredValidated(t *testing.T) {
	p := newGoPeer(t)
	c := newClient(t, []mcp.ServerConfig{goServer(p)}, nil)
	tr := newTaskRunner(t, "mcp:go")

	res, err, _ := tr.call(c, "go", "weather", map[string]any{"city": "Oslo"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if string(res.StructuredContent) != `{"city":"Oslo","tempC":21.5}` {
		t.Errorf("structured %s", res.StructuredContent)
	}

	res, err, evs := tr.call(c, "go", "liar", nil, nil)
	if !errors.Is(err, protocol.CodeValidation) {
		t.Fatalf("liar: err = %v", err)
	}
	if res == nil || string(res.StructuredContent) != `{"n":"one"}` {
		t.Errorf("liar result kept: %+v", res)
	}
	ep := errorPayload(t, toolEvents(evs)[1])
	if ep.Code != protocol.CodeValidation || ep.Details["structuredContent"] == nil {
		t.Errorf("liar tool.error %+v", ep)
	}
}

func TestCallToolFailures(t *testing.T) {
	p := newGoPeer(t)
	c := newClient(t, []mcp.ServerConfig{goServer(p)}, nil)
	tr := newTaskRunner(t, "mcp:go")

	t.Run("isError", func(t *testing.T) {
		res, err, evs := tr.call(c, "go", "fail", nil, nil)
		var te *mcp.ToolError
		if !errors.As(err, &te) || te.Code != protocol.CodeToolFailed || te.Retryable {
			t.Fatalf("err = %#v", err)
		}
		if res == nil || !res.IsError || !strings.Contains(res.Text(), "deliberate failure") {
			t.Errorf("result %+v", res)
		}
		tev := toolEvents(evs)
		if got := types(tev); !slices.Equal(got, []protocol.Type{protocol.TypeToolCall, protocol.TypeToolError}) {
			t.Fatalf("events %v", got)
		}
		ep := errorPayload(t, tev[1])
		if ep.Details["call_id"] != tev[0].ID || ep.Details["content"] == nil || ep.Details["tool"] != "mcp:go" || ep.Details["name"] != "fail" {
			t.Errorf("details %v", ep.Details)
		}
	})
	t.Run("retryable envelope", func(t *testing.T) {
		_, err, _ := tr.call(c, "go", "retryable", nil, nil)
		var te *mcp.ToolError
		if !errors.As(err, &te) || te.Code != protocol.CodeToolFailed || !te.Retryable ||
			te.Details["retryAction"] != "reload_and_retry" || te.Details["server_code"] != "STALE_HASH" || te.Message != "stale hash, reload" {
			t.Fatalf("err = %#v", err)
		}
	})
	t.Run("rate limited", func(t *testing.T) {
		_, err, _ := tr.call(c, "go", "limited", nil, nil)
		var te *mcp.ToolError
		if !errors.As(err, &te) || te.Code != protocol.CodeRateLimited || !te.Retryable || te.RetryAfter() != 2.5 {
			t.Fatalf("err = %#v", err)
		}
	})
	t.Run("not found", func(t *testing.T) {
		// go-sdk servers answer an unknown tool with a JSON-RPC error.
		_, err, evs := tr.call(c, "go", "nosuch", nil, nil)
		var te *mcp.ToolError
		if !errors.As(err, &te) || te.Code != protocol.CodeToolNotFound {
			t.Fatalf("err = %#v", err)
		}
		ep := errorPayload(t, toolEvents(evs)[1])
		avail, _ := ep.Details["available_tools"].([]any)
		if !slices.Contains(avail, any("echo")) {
			t.Errorf("available_tools %v", ep.Details["available_tools"])
		}
	})
	t.Run("bad args", func(t *testing.T) {
		_, err, evs := tr.call(c, "go", "echo", []int{1}, nil)
		if !errors.Is(err, protocol.CodeInvalidField) {
			t.Fatalf("err = %v", err)
		}
		if got := types(toolEvents(evs)); !slices.Equal(got, []protocol.Type{protocol.TypeToolError}) {
			t.Errorf("events %v", got)
		}
	})
	t.Run("unknown server", func(t *testing.T) {
		tr2 := newTaskRunner(t, "mcp:go", "mcp:other")
		_, err, _ := tr2.call(c, "other", "x", nil, nil)
		var te *mcp.ToolError
		if !errors.As(err, &te) || te.Code != protocol.CodeToolNotFound || !errors.Is(err, mcp.ErrUnknownServer) {
			t.Fatalf("err = %#v", err)
		}
	})
}

func TestCallPolicy(t *testing.T) {
	p := newGoPeer(t)
	c := newClient(t, []mcp.ServerConfig{goServer(p)}, nil)

	t.Run("card", func(t *testing.T) {
		tr := newTaskRunner(t, "mcp:elsewhere")
		_, err, evs := tr.call(c, "go", "echo", map[string]any{"text": "x"}, nil)
		if !errors.Is(err, protocol.CodePolicyDenied) {
			t.Fatalf("err = %v", err)
		}
		tev := toolEvents(evs)
		if got := types(tev); !slices.Equal(got, []protocol.Type{protocol.TypeToolError}) {
			t.Fatalf("events %v", got)
		}
		if ep := errorPayload(t, tev[0]); ep.Code != protocol.CodePolicyDenied || ep.Details["tool"] != "mcp:go" {
			t.Errorf("payload %+v", ep)
		}
	})
	t.Run("allowlist", func(t *testing.T) {
		tr := newTaskRunner(t, "mcp:go")
		var err error
		id := tr.run([]string{"mcp:files"}, func(ctx context.Context, task *router.Task) {
			_, err = c.Call(ctx, task, "go", "echo", map[string]any{"text": "x"}, nil)
		})
		if !errors.Is(err, protocol.CodePolicyDenied) {
			t.Fatalf("err = %v", err)
		}
		if got := types(toolEvents(tr.env.Events(store.Query{TaskID: id}))); !slices.Equal(got, []protocol.Type{protocol.TypeToolError}) {
			t.Errorf("events %v", got)
		}
		id = tr.run([]string{"mcp:files", "mcp:go"}, func(ctx context.Context, task *router.Task) {
			_, err = c.Call(ctx, task, "go", "echo", map[string]any{"text": "x"}, nil)
		})
		if err != nil {
			t.Errorf("allowed call: %v", err)
		}
		if got := types(toolEvents(tr.env.Events(store.Query{TaskID: id}))); !slices.Equal(got, []protocol.Type{protocol.TypeToolCall, protocol.TypeToolResult}) {
			t.Errorf("allowed call events %v", got)
		}
	})
	if n := p.connects.Load(); n != 1 {
		t.Errorf("refused calls must do no I/O; connects = %d", n)
	}
}

func TestCallProgressTimeoutCancel(t *testing.T) {
	p := newGoPeer(t)
	c := newClient(t, []mcp.ServerConfig{goServer(p)}, nil)
	tr := newTaskRunner(t, "mcp:go")

	t.Run("progress", func(t *testing.T) {
		_, err, evs := tr.call(c, "go", "slow", map[string]any{"steps": 3, "ms": 20}, nil)
		if err != nil {
			t.Fatal(err)
		}
		tev := toolEvents(evs)
		checkProgress(t, tev, 3)
		pp, _ := protocol.DecodePayload[mcp.ProgressPayload](tev[1])
		if pp.Progress != 1 || pp.Total != 3 || pp.Message != "step 1" || pp.Tool != "mcp:go" || pp.CallID != tev[0].ID {
			t.Errorf("progress %+v", pp)
		}
	})
	t.Run("late progress dropped", func(t *testing.T) {
		// The client logs each notification it drops: the handler waits for
		// that before the task ends, so the late one has been dealt with.
		dropped := make(chan struct{}, 1)
		lc := newClient(t, []mcp.ServerConfig{goServer(p)}, &mcp.ClientOptions{
			Logger: slog.New(&onMessage{msg: "mcp: progress after the call ended, dropped", ch: dropped})})
		var id string
		id = tr.run(nil, func(ctx context.Context, task *router.Task) {
			if _, err := lc.Call(ctx, task, "go", "late", nil, nil); err != nil {
				t.Error(err)
			}
			p.late <- struct{}{}
			select {
			case <-dropped:
			case <-time.After(5 * time.Second):
				t.Error("the late progress notification was not dropped")
			}
		})
		if got := types(toolEvents(tr.env.Events(store.Query{TaskID: id}))); !slices.Equal(got, []protocol.Type{protocol.TypeToolCall, protocol.TypeToolResult}) {
			t.Errorf("events %v", got)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		start := time.Now()
		_, err, evs := tr.call(c, "go", "hang", nil, &mcp.CallOptions{Timeout: 100 * time.Millisecond})
		var te *mcp.ToolError
		if !errors.As(err, &te) || te.Code != protocol.CodeTimeout || !te.Retryable {
			t.Fatalf("err = %#v", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("took %s", d)
		}
		if ep := errorPayload(t, toolEvents(evs)[1]); ep.Details["timeout_ms"] != float64(100) {
			t.Errorf("details %v", ep.Details)
		}
		within(t, p.hangIn, "the hang call to start")
		within(t, p.hangOut, "the server to see the cancellation")
		// The session survives a timeout.
		if _, err, _ := tr.call(c, "go", "echo", map[string]any{"text": "alive"}, nil); err != nil {
			t.Errorf("after timeout: %v", err)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		var err error
		tr.run(nil, func(ctx context.Context, task *router.Task) {
			cctx, cancel := context.WithCancel(ctx)
			go func() {
				defer cancel()
				select {
				case <-p.hangIn: // the server has the call
				case <-time.After(5 * time.Second):
				}
			}()
			_, err = c.Call(cctx, task, "go", "hang", nil, nil)
		})
		if !errors.Is(err, protocol.CodeCancelled) {
			t.Fatalf("err = %v", err)
		}
		within(t, p.hangOut, "notifications/cancelled to reach the server")
	})
}

// waitFor polls cond for up to 5s. It is for state that changes with no
// signal a test can wait on (another process's log, a connection a
// watcher notices is closed); in-process peers signal on channels instead.
func waitFor(t testing.TB, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestCallTooLarge(t *testing.T) {
	p := newGoPeer(t)
	c := newClient(t, []mcp.ServerConfig{goServer(p)}, &mcp.ClientOptions{MaxResultBytes: 64 << 10, InlineResultBytes: 8 << 10})
	tr := newTaskRunner(t, "mcp:go")

	_, err, _ := tr.call(c, "go", "large", map[string]any{"bytes": 100 << 10}, nil)
	var te *mcp.ToolError
	if !errors.As(err, &te) || te.Code != protocol.CodeTooLarge {
		t.Fatalf("err = %#v", err)
	}
	// A mid-size result goes to the artifact store.
	res, err, evs := tr.call(c, "go", "large", map[string]any{"bytes": 20 << 10}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Text()) != 20<<10 {
		t.Errorf("text length %d", len(res.Text()))
	}
	rp, _ := protocol.DecodePayload[mcp.ResultPayload](toolEvents(evs)[1])
	if !strings.HasPrefix(rp.Artifact, "artifact:sha256:") || rp.Content != nil {
		t.Fatalf("payload %+v", rp)
	}
	a, err := tr.env.Store.GetArtifact(context.Background(), rp.Artifact)
	if err != nil || !json.Valid(a.Data) || a.MediaType != "application/json" {
		t.Errorf("artifact %v %s", err, a.MediaType)
	}
}

func TestReconnectAfterCrash(t *testing.T) {
	p := newGoPeer(t)
	c := newClient(t, []mcp.ServerConfig{goServer(p)}, nil)
	tr := newTaskRunner(t, "mcp:go")
	if _, err, _ := tr.call(c, "go", "echo", map[string]any{"text": "1"}, nil); err != nil {
		t.Fatal(err)
	}
	p.kill()
	// The watcher notices the closed connection; the next call reconnects.
	waitFor(t, func() bool {
		_, err, _ := tr.call(c, "go", "echo", map[string]any{"text": "2"}, nil)
		return err == nil
	}, "a call on a fresh connection")
	if n := p.connects.Load(); n != 2 {
		t.Errorf("connects = %d, want 2", n)
	}
}

func TestUnavailableAndBackoff(t *testing.T) {
	fails := 0
	c := newClient(t, []mcp.ServerConfig{{Name: "down", Transport: func(ctx context.Context) (sdkTransport, error) {
		fails++
		return nil, errors.New("connection refused")
	}}}, &mcp.ClientOptions{MaxBackoff: time.Hour})
	tr := newTaskRunner(t, "mcp:down")
	_, err, _ := tr.call(c, "down", "x", nil, nil)
	var te *mcp.ToolError
	if !errors.As(err, &te) || te.Code != protocol.CodeToolUnavailable || !te.Retryable {
		t.Fatalf("err = %#v", err)
	}
	_, err, _ = tr.call(c, "down", "x", nil, nil)
	if !errors.As(err, &te) || te.Code != protocol.CodeToolUnavailable || te.RetryAfter() <= 0 {
		t.Fatalf("second call: %#v", err)
	}
	if fails != 1 {
		t.Errorf("backoff: %d connection attempts, want 1", fails)
	}

	// A real unreachable HTTP server and a command that does not exist.
	c2 := newClient(t, []mcp.ServerConfig{{Name: "http", URL: "http://127.0.0.1:1/mcp"}, {Name: "cmd", Command: "/nonexistent/mcp-server"}}, nil)
	tr2 := newTaskRunner(t, "mcp:http", "mcp:cmd")
	for _, s := range []string{"http", "cmd"} {
		_, err, _ := tr2.call(c2, s, "x", nil, nil)
		if !errors.As(err, &te) || te.Code != protocol.CodeToolUnavailable || !te.Retryable {
			t.Errorf("%s: %#v", s, err)
		}
	}
}

func TestServerTimeout(t *testing.T) {
	p := newGoPeer(t)
	cfg := goServer(p)
	cfg.Timeout = 100 * time.Millisecond
	c := newClient(t, []mcp.ServerConfig{cfg}, nil)
	tr := newTaskRunner(t, "mcp:go")
	_, err, evs := tr.call(c, "go", "hang", nil, nil)
	if !errors.Is(err, protocol.CodeTimeout) {
		t.Fatalf("err = %v", err)
	}
	if ep := errorPayload(t, toolEvents(evs)[1]); ep.Details["timeout_ms"] != float64(100) {
		t.Errorf("details %v", ep.Details)
	}
}

func TestToolsCacheAndNames(t *testing.T) {
	p := newGoPeer(t)
	p2 := newGoPeer(t)
	sdkAddTool(p2, "dotted.name")
	sdkAddTool(p2, "dotted_name")
	sdkAddTool(p2, strings.Repeat("long", 30))
	c := newClient(t, []mcp.ServerConfig{goServer(p), {Name: "go-2", Transport: p2.transport}}, nil)
	ctx := context.Background()
	tools, err := c.LLMTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, tl := range tools {
		if !mcp.LLMNameRE.MatchString(tl.LLMName) || seen[tl.LLMName] {
			t.Errorf("bad or duplicate name %q", tl.LLMName)
		}
		seen[tl.LLMName] = true
		s, name, ok := c.Resolve(tl.LLMName)
		if !ok || s != tl.Server || name != tl.Name {
			t.Errorf("Resolve(%s) = %s %s %v", tl.LLMName, s, name, ok)
		}
	}
	if !seen["mcp_go_echo"] || !seen["mcp_go-2_echo"] {
		t.Errorf("names %v", seen)
	}
	// Cached: listing again does not reconnect or re-list.
	if _, err := c.Tools(ctx, "go"); err != nil {
		t.Fatal(err)
	}
	if n := p.connects.Load(); n != 1 {
		t.Errorf("connects %d", n)
	}
	// tools/list_changed drops the cache; the new tool appears.
	sdkAddTool(p, "added")
	waitFor(t, func() bool {
		ts, _ := c.Tools(ctx, "go")
		return slices.ContainsFunc(ts, func(x mcp.Tool) bool { return x.Name == "added" })
	}, "the new tool after list_changed")
}

func TestToolbox(t *testing.T) {
	p := newGoPeer(t)
	p2 := newGoPeer(t)
	c := newClient(t, []mcp.ServerConfig{goServer(p), {Name: "hidden", Transport: p2.transport}}, nil)
	tr := newTaskRunner(t, "mcp:go")
	var res *mcp.ToolResult
	var tools []mcp.Tool
	var errTools, errCall, errUnknown error
	id := tr.run(nil, func(ctx context.Context, task *router.Task) {
		tb := c.Toolbox(task)
		tools, errTools = tb.Tools(ctx)
		res, errCall = tb.CallLLM(ctx, "mcp_go_echo", map[string]any{"text": "via toolbox"}, nil)
		_, errUnknown = tb.CallLLM(ctx, "mcp_nowhere_x", nil, nil)
	})
	if errTools != nil || errCall != nil || res.Text() != "via toolbox" {
		t.Fatalf("%v %v %v", errTools, errCall, res)
	}
	for _, tl := range tools {
		if tl.Server != "go" {
			t.Errorf("tool of a server the task may not use: %+v", tl)
		}
	}
	if n := p2.connects.Load(); n != 0 {
		t.Errorf("the hidden server was contacted")
	}
	var te *mcp.ToolError
	if !errors.As(errUnknown, &te) || te.Code != protocol.CodeToolNotFound || te.Details["available_tools"] == nil {
		t.Errorf("unknown LLM name: %#v", errUnknown)
	}
	if got := types(toolEvents(tr.env.Events(store.Query{TaskID: id}))); !slices.Equal(got, []protocol.Type{protocol.TypeToolCall, protocol.TypeToolResult, protocol.TypeToolError}) {
		t.Errorf("events %v", got)
	}
}

// checkProgress checks the events of a call that reported up to max
// progress notifications: tool.call, the task.progress events, then
// tool.result and nothing after it. The SDK hands notifications to their
// handler on a queue of their own, so the last ones may come after the
// result; the adapter then drops them (research/mcp.md §2), so fewer than
// max is fine, but at least the first must have made it.
func checkProgress(t *testing.T, tev []*protocol.Message, max int) {
	t.Helper()
	got := types(tev)
	n := len(got) - 2
	if len(got) < 3 || got[0] != protocol.TypeToolCall || got[len(got)-1] != protocol.TypeToolResult || n > max {
		t.Fatalf("events %v", got)
	}
	for _, ty := range got[1 : len(got)-1] {
		if ty != protocol.TypeTaskProgress {
			t.Fatalf("events %v", got)
		}
	}
}

// onMessage is a slog.Handler that signals ch for each record with message msg.
type onMessage struct {
	msg string
	ch  chan struct{}
}

func (h *onMessage) Enabled(context.Context, slog.Level) bool { return true }
func (h *onMessage) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.ch <- struct{}{}:
		default:
		}
	}
	return nil
}
func (h *onMessage) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *onMessage) WithGroup(string) slog.Handler      { return h }
