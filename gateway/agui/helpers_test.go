package agui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/gateway/agui"
	"github.com/clutchprotocol/clutch/internal/backends"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/store"
)

func TestMain(m *testing.M) { os.Exit(backends.Main(m)) }

var quiet = slog.New(slog.DiscardHandler)

// The callers of the tests: tester submits, other is another tenant, ops
// holds auth.ScopeReadAll, watcher may read its own runs only.
const (
	testKey    = "tester-key-0123456789abcdef"
	otherKey   = "other-key-0123456789abcdef"
	opsKey     = "ops-key-0123456789abcdef"
	watcherKey = "watcher-key-0123456789abcdef"
	tester     = "agent:tester"
)

var testAuth = func() auth.Authenticator {
	a, err := auth.APIKeys(map[string]auth.Caller{
		testKey:    {AgentID: tester, Scopes: []string{auth.ScopeSubmit}},
		otherKey:   {AgentID: "agent:other", Scopes: []string{auth.ScopeSubmit}},
		opsKey:     {AgentID: "agent:ops", Scopes: []string{auth.ScopeReadAll}},
		watcherKey: {AgentID: "agent:watcher"},
	})
	if err != nil {
		panic(err)
	}
	return a
}()

// worker is the in-process agent of the tests. Its behaviour depends on the
// request's text:
//
//	fail:<why>   task.error TOOL_FAILED <why>
//	delegate:<x> delegates <x> to agent:helper, then answers with its text
//	ask:<x>      asks which market (fintech or health), then answers
//	             {"text": "<x> in <market>"}
//	anything     a progress, a tool.call and its tool.result, then the
//	             result {"text": "done: <text>"}
func worker(ctx context.Context, t *router.Task) (*router.Result, error) {
	in, err := router.Input[agui.InputPayload](t)
	if err != nil {
		return nil, err
	}
	cmd, arg, _ := strings.Cut(in.Text, ":")
	switch cmd {
	case "fail":
		return nil, router.Fail(protocol.CodeToolFailed, arg, false, nil)
	case "ask":
		market, err := router.AskAs[string](ctx, t, protocol.Question{Text: "Which market?", Choices: []string{"fintech", "health"}})
		if err != nil {
			return nil, err
		}
		return &router.Result{Payload: map[string]any{"text": arg + " in " + market}}, nil
	case "delegate":
		sub, err := t.NewSubtask(agui.PayloadInput, agui.InputPayload{Text: arg})
		if err != nil {
			return nil, err
		}
		sub.To = []protocol.Participant{{AgentID: "agent:helper"}}
		out, err := t.Delegate(ctx, sub)
		if err != nil {
			return nil, err
		}
		return &router.Result{Payload: json.RawMessage(out.Message.Payload)}, nil
	}
	if err := t.Progress(ctx, map[string]any{"step": "searching", "pct": 50}); err != nil {
		return nil, err
	}
	call, err := t.Emit(ctx, protocol.TypeToolCall, "", map[string]any{"tool": "mcp:search", "name": "search", "args": map[string]any{"q": in.Text}})
	if err != nil {
		return nil, err
	}
	if _, err := t.Emit(ctx, protocol.TypeToolResult, "", map[string]any{"tool": "mcp:search", "name": "search", "call_id": call.ID,
		"content": []any{map[string]any{"type": "text", "text": "3 hits"}}, "structuredContent": map[string]any{"hits": 3}}); err != nil {
		return nil, err
	}
	return &router.Result{Payload: map[string]any{"text": "done: " + in.Text}}, nil
}

// helper answers a delegated request.
func helper(ctx context.Context, t *router.Task) (*router.Result, error) {
	in, err := router.Input[agui.InputPayload](t)
	if err != nil {
		return nil, err
	}
	return &router.Result{Payload: map[string]any{"text": "helped: " + in.Text}}, nil
}

func card(id string, caps ...string) *protocol.AgentCard {
	c := &protocol.AgentCard{V: protocol.Version, AgentID: id, Capabilities: []protocol.Capability{}}
	for _, cp := range caps {
		c.Capabilities = append(c.Capabilities, protocol.Capability{ID: cp})
	}
	return c
}

type testEnv struct {
	*routertest.Env
	h  *agui.Handler
	hs *httptest.Server
}

// newEnv returns a router with agent:worker and agent:helper, and the
// handler behind auth.Middleware on an httptest server.
func newEnv(t testing.TB, opts *agui.Options) *testEnv {
	t.Helper()
	return newEnvWith(t, router.Options{MaxAttempts: 1}, opts)
}

func newEnvWith(t testing.TB, ropts router.Options, opts *agui.Options) *testEnv {
	t.Helper()
	return newEnvOn(t, nil, ropts, opts)
}

// newEnvOn is newEnvWith over st (a memstore when nil).
func newEnvOn(t testing.TB, st store.Store, ropts router.Options, opts *agui.Options) *testEnv {
	t.Helper()
	env := routertest.New(t, &routertest.Options{Router: ropts, Store: st})
	env.Register(card("agent:worker", "skill:work"), worker)
	env.Register(card("agent:helper", "skill:help"), helper)
	var o agui.Options
	if opts != nil {
		o = *opts
	}
	if o.Agent == "" && o.Request == nil {
		o.Agent = "agent:worker"
	}
	o.Logger = quiet
	h, err := agui.New(env.Router, &o)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(auth.Middleware(testAuth, nil)(h))
	t.Cleanup(hs.Close)
	return &testEnv{Env: env, h: h, hs: hs}
}

// input is a RunAgentInput with one user message.
func input(thread, run, text string) string {
	b, _ := json.Marshal(map[string]any{
		"threadId": thread, "runId": run, "state": map[string]any{}, "tools": []any{}, "context": []any{}, "forwardedProps": map[string]any{},
		"messages": []any{map[string]any{"id": "m1", "role": "user", "content": text}},
	})
	return string(b)
}

// do sends a request with key (none when "") and returns the response.
func (e *testEnv) do(t testing.TB, method, path, key, body string) *http.Response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.hs.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	req.Header.Set("Accept", "text/event-stream")
	resp, err := e.hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// frame is one SSE frame: its id ("" when none) and its AG-UI event.
type frame struct {
	ID    string
	Event map[string]any
}

// readSSE reads the frames of an SSE body to its end.
func readSSE(t testing.TB, r io.Reader) []frame {
	t.Helper()
	var out []frame
	var cur frame
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Event != nil {
				out = append(out, cur)
			}
			cur = frame{}
		case strings.HasPrefix(line, "id: "):
			cur.ID = strings.TrimPrefix(line, "id: ")
		case strings.HasPrefix(line, "data: "):
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &cur.Event); err != nil {
				t.Fatalf("data line %q: %v", line, err)
			}
		case strings.HasPrefix(line, ":"):
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// summary writes an AG-UI event as "TYPE key=value ..." with the fields a
// test pins, in a fixed order.
func summary(e map[string]any) string {
	s := e["type"].(string)
	for _, k := range []string{"threadId", "runId", "stepName", "messageId", "role", "name", "delta", "toolCallId", "toolCallName", "content", "code", "message", "result", "snapshot", "value"} {
		v, ok := e[k]
		if !ok {
			continue
		}
		if str, isStr := v.(string); isStr {
			s += " " + k + "=" + str
		} else {
			b, _ := json.Marshal(v)
			s += " " + k + "=" + string(b)
		}
	}
	return s
}

// runID is the Clutch run of the AG-UI run id of caller c.
func (e *testEnv) runID(c *auth.Caller, id string) string {
	run, err := e.h.RunID(context.Background(), c, id)
	if err != nil {
		panic(err)
	}
	return run
}

// threadID is the Clutch thread of the AG-UI thread id of caller c.
func (e *testEnv) threadID(c *auth.Caller, id string) string {
	thr, err := e.h.ThreadID(context.Background(), c, id)
	if err != nil {
		panic(err)
	}
	return thr
}
