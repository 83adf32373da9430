package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/adapters/mcp"
	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// team is a router with two agents and the MCP surface over it.
type team struct {
	env *routertest.Env
	srv *mcp.Server
}

// The hosts of the tests: ide (the stdio caller, and the owner of ideKey
// over HTTP), other (another tenant) and ops (auth.ScopeAdmin).
const (
	ideKey   = "ide-key-0123456789abcdef"
	otherKey = "other-key-0123456789abcdef"
	opsKey   = "ops-key-0123456789abcdef"
	auditKey = "audit-key-0123456789abcdef" // read:all
)

var ide = &auth.Caller{AgentID: "agent:ide", Scopes: []string{auth.ScopeSubmit, auth.ScopeAgents}}

var hostKeys = func() auth.Authenticator {
	a, err := auth.APIKeys(map[string]auth.Caller{
		ideKey:   *ide,
		otherKey: {AgentID: "agent:other", Scopes: []string{auth.ScopeSubmit, auth.ScopeAgents}},
		opsKey:   {AgentID: "agent:ops", Scopes: []string{auth.ScopeAdmin}},
		auditKey: {AgentID: "agent:audit", Scopes: []string{auth.ScopeReadAll}},
	})
	if err != nil {
		panic(err)
	}
	return a
}()

// bearer is an HTTP client that sends key.
func bearer(key string) *http.Client {
	return &http.Client{Transport: keyTransport{key, http.DefaultTransport}}
}

type keyTransport struct {
	key  string
	next http.RoundTripper
}

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+k.key)
	return k.next.RoundTrip(r)
}

func newTeam(t testing.TB, change ...func(*mcp.ServerOptions)) *team {
	return newTeamOn(t, nil, change...)
}

// newTeamOn is newTeam over st (a memstore when nil).
func newTeamOn(t testing.TB, st store.Store, change ...func(*mcp.ServerOptions)) *team {
	env := routertest.New(t, &routertest.Options{Router: router.Options{MaxAttempts: 1}, Timeout: 30 * time.Second, Store: st})
	env.Register(&protocol.AgentCard{V: protocol.Version, AgentID: "agent:ken", Display: &protocol.Display{Name: "Ken"},
		Capabilities: []protocol.Capability{{ID: "skill:research", Tags: []string{"fintech"}}}},
		func(ctx context.Context, t *router.Task) (*router.Result, error) {
			q, err := router.Input[schema.ResearchQuery](t)
			if err != nil {
				return nil, err
			}
			_ = t.Progress(ctx, map[string]any{"step": "searching"})
			time.Sleep(50 * time.Millisecond) // see researchHandler
			return &router.Result{PayloadType: schema.PayloadResearchSummary, Payload: schema.ResearchSummary{
				Findings: []string{"answer to " + q.Query}, Citations: []string{"https://example.org"}}}, nil
		})
	env.Register(&protocol.AgentCard{V: protocol.Version, AgentID: "agent:sloth",
		Capabilities: []protocol.Capability{{ID: "skill:wait"}}},
		func(ctx context.Context, t *router.Task) (*router.Result, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	o := &mcp.ServerOptions{Caller: ide, Auth: hostKeys, Expose: []string{"agent:ken", "agent:sloth"},
		Logger: slog.New(slog.DiscardHandler)}
	for _, f := range change {
		f(o)
	}
	srv, err := mcp.NewServer(env.Router, o)
	if err != nil {
		t.Fatal(err)
	}
	return &team{env: env, srv: srv}
}

// connect returns a go-sdk client session to the team's server over the
// in-memory transport, and the progress notifications it receives.
func (tm *team) connect(t testing.TB) (*sdk.ClientSession, *progressLog) {
	st, ct := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = tm.srv.Run(ctx, st)
	}()
	pl := &progressLog{}
	c := sdk.NewClient(&sdk.Implementation{Name: "test-host", Version: "1"}, &sdk.ClientOptions{ProgressNotificationHandler: pl.add})
	cs, err := c.Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		cancel()
		<-done
	})
	return cs, pl
}

type progressLog struct {
	mu   sync.Mutex
	msgs []string
}

func (p *progressLog) add(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
	p.mu.Lock()
	p.msgs = append(p.msgs, r.Params.Message)
	p.mu.Unlock()
}

func (p *progressLog) all() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.msgs)
}

// callTool calls a tool and decodes its structuredContent; it checks the
// docs/protocol.md §15 envelope: the text block holds the same JSON.
func callTool(t testing.TB, cs *sdk.ClientSession, name string, args any, progress bool) (map[string]any, bool) {
	t.Helper()
	p := &sdk.CallToolParams{Name: name, Arguments: args}
	if progress {
		p.SetProgressToken("tok-1")
	}
	res, err := cs.CallTool(context.Background(), p)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	raw, _ := json.Marshal(res.StructuredContent)
	var sc map[string]any
	if err := json.Unmarshal(raw, &sc); err != nil {
		t.Fatalf("%s: structuredContent %s: %v", name, raw, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d content blocks", name, len(res.Content))
	}
	var fromText map[string]any
	if err := json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &fromText); err != nil || !jsonEqual(fromText, sc) {
		t.Errorf("%s: the text block is not the structured content", name)
	}
	if res.IsError {
		for _, k := range []string{"error", "code", "retryable", "retryAction"} {
			if _, ok := sc[k]; !ok {
				t.Errorf("%s: error without %q: %v", name, k, sc)
			}
		}
	}
	return sc, res.IsError
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func TestServerSurface(t *testing.T) {
	tm := newTeam(t)
	cs, pl := tm.connect(t)
	testSurface(t, tm, cs, pl)
}

func TestServerHTTP(t *testing.T) {
	tm := newTeam(t)
	hs := httptest.NewServer(tm.srv.Handler()) // 127.0.0.1
	t.Cleanup(hs.Close)
	pl := &progressLog{}
	c := sdk.NewClient(&sdk.Implementation{Name: "test-host", Version: "1"}, &sdk.ClientOptions{ProgressNotificationHandler: pl.add})
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: bearer(ideKey)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Errorf("protocol %s", v)
	}
	testSurface(t, tm, cs, pl)
}

func testSurface(t *testing.T, tm *team, cs *sdk.ClientSession, pl *progressLog) {
	ctx := context.Background()
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	for _, n := range []string{mcp.ToolListAgents, mcp.ToolListPayloadTypes, mcp.ToolSubmitTask, mcp.ToolWaitTask, mcp.ToolCancelTask, mcp.ToolGetRunEvents, mcp.ToolGetTaskTree, mcp.ToolAnswerQuestion} {
		if !slices.Contains(names, n) {
			t.Errorf("tool %s missing from %v", n, names)
		}
	}

	sc, isErr := callTool(t, cs, mcp.ToolListAgents, map[string]any{"capability": "skill:research"}, false)
	agents, _ := sc["agents"].([]any)
	if isErr || len(agents) != 1 || agents[0].(map[string]any)["agent_id"] != "agent:ken" || agents[0].(map[string]any)["online"] != true {
		t.Errorf("list_agents %v", sc)
	}
	sc, _ = callTool(t, cs, mcp.ToolListPayloadTypes, map[string]any{"prefix": "research."}, false)
	if types, _ := sc["payload_types"].([]any); len(types) < 2 {
		t.Errorf("list_payload_types %v", sc)
	}

	// submit_task waits and streams progress.
	sc, isErr = callTool(t, cs, mcp.ToolSubmitTask, map[string]any{
		"payload_type": "research.query.v1", "payload": map[string]any{"query": "Nordic payments"}, "requires": []string{"skill:research"},
	}, true)
	if isErr || sc["status"] != "result" || sc["agent"] != "agent:ken" || sc["payload_type"] != "research.summary.v1" {
		t.Fatalf("submit_task %v", sc)
	}
	if f := sc["result"].(map[string]any)["findings"].([]any); f[0] != "answer to Nordic payments" {
		t.Errorf("result %v", sc["result"])
	}
	taskID, runID := sc["task_id"].(string), sc["run_id"].(string)
	waitFor(t, func() bool { return len(pl.all()) >= 4 }, "progress notifications")
	if all := strings.Join(pl.all(), "\n"); !strings.Contains(all, "task.progress") || !strings.Contains(all, "routing.decision") {
		t.Errorf("progress %v", pl.all())
	}

	// The request came from the host's agent id.
	evs := tm.env.Events(store.Query{TaskID: taskID})
	if evs[0].Type != protocol.TypeTaskRequest || evs[0].From.AgentID != "agent:ide" {
		t.Errorf("request from %s", evs[0].From.AgentID)
	}

	// docs/protocol.md §15 retryable errors.
	sc, isErr = callTool(t, cs, mcp.ToolSubmitTask, map[string]any{"payload_type": "research.query.v1", "payload": map[string]any{"query": ""}}, false)
	if !isErr || sc["code"] != "VALIDATION" || sc["retryAction"] != mcp.ActionListTypes {
		t.Errorf("invalid payload: %v", sc)
	}
	sc, isErr = callTool(t, cs, mcp.ToolSubmitTask, map[string]any{"payload_type": "research.query.v1", "payload": map[string]any{"query": "x"}, "requires": []string{"skill:nobody"}}, false)
	if !isErr || sc["code"] != "NO_MATCH" || sc["retryAction"] != mcp.ActionListAgents {
		t.Errorf("no match: %v", sc)
	}
	sc, isErr = callTool(t, cs, mcp.ToolSubmitTask, map[string]any{"payload": 5}, false)
	if !isErr || sc["retryAction"] != mcp.ActionFixArguments {
		t.Errorf("bad arguments: %v", sc)
	}
	sc, isErr = callTool(t, cs, mcp.ToolWaitTask, map[string]any{"task_id": "task_nope"}, false)
	if !isErr || sc["code"] != "NOT_FOUND" || sc["retryAction"] != mcp.ActionCheckID {
		t.Errorf("unknown task: %v", sc)
	}

	// Reading the run.
	sc, _ = callTool(t, cs, mcp.ToolGetRunEvents, map[string]any{"run_id": runID, "limit": 2}, false)
	if evs, _ := sc["events"].([]any); len(evs) != 2 || sc["more"] != true {
		t.Errorf("get_run_events page %v", sc)
	}
	sc, _ = callTool(t, cs, mcp.ToolGetRunEvents, map[string]any{"run_id": runID, "after_seq": sc["next_after_seq"]}, false)
	if evs, _ := sc["events"].([]any); len(evs) < 3 || sc["more"] != false {
		t.Errorf("get_run_events rest %v", sc)
	}
	sc, _ = callTool(t, cs, mcp.ToolGetTaskTree, map[string]any{"run_id": runID}, false)
	if roots, _ := sc["roots"].([]any); len(roots) != 1 || roots[0].(map[string]any)["state"] != "task.result" {
		t.Errorf("get_task_tree %v", sc)
	}

	// A task that waits: submit without waiting, then cancel it.
	sc, isErr = callTool(t, cs, mcp.ToolSubmitTask, map[string]any{"payload_type": "", "payload": map[string]any{}, "requires": []string{"skill:wait"}, "wait_sec": 0}, false)
	if isErr || sc["status"] != "running" || sc["next"] != mcp.ActionWaitTask {
		t.Fatalf("submit without waiting: %v", sc)
	}
	slowID := sc["task_id"].(string)
	sc, _ = callTool(t, cs, mcp.ToolWaitTask, map[string]any{"task_id": slowID, "wait_sec": 0.05}, false)
	if sc["status"] != "running" {
		t.Errorf("wait_task: %v", sc)
	}
	sc, isErr = callTool(t, cs, mcp.ToolCancelTask, map[string]any{"task_id": slowID, "reason": "enough"}, false)
	if isErr || sc["status"] != "cancel" {
		t.Errorf("cancel_task: %v", sc)
	}
	sc, isErr = callTool(t, cs, mcp.ToolWaitTask, map[string]any{"task_id": slowID}, false)
	if !isErr || sc["code"] != "CANCELLED" {
		t.Errorf("wait after cancel: %v", sc)
	}

	// Every call is recorded under the host's agent id.
	rec := tm.env.Events(store.Query{AgentID: "agent:ide", TypePrefix: string(mcp.TypeHostCall)})
	if len(rec) < 14 {
		t.Errorf("%d host-call events", len(rec))
	}
	last, _ := protocol.DecodePayload[mcp.HostCallPayload](rec[len(rec)-1])
	if last.Tool != mcp.ToolWaitTask || !last.IsError || last.Code != protocol.CodeCancelled || last.TaskID != slowID {
		t.Errorf("last host call %+v", last)
	}
	hostRun, hostThread, hostTask := tm.srv.HostRun()
	if rec[0].RunID != hostRun {
		t.Errorf("host calls belong to run %s, want %s", rec[0].RunID, hostRun)
	}
	// The records are reserved: no caller can squat or read them
	// (docs/protocol.md §6.7).
	for _, id := range []string{hostRun, hostThread, hostTask} {
		if !protocol.Reserved(id) {
			t.Errorf("host-call id %s is not reserved", id)
		}
	}
}

// TestServerTSClient drives the server surface with the TypeScript SDK's
// client, over Streamable HTTP and over stdio (the test binary serving).
func TestServerTSClient(t *testing.T) {
	node, dir := needPeer(t, "peer", "@modelcontextprotocol/sdk")
	script := filepath.Join(dir, "client.mjs")
	check := func(t *testing.T, out []byte) {
		var rep struct {
			Tools    []string
			Agents   []string
			Progress []string
			Submit   struct {
				IsError    bool
				Structured map[string]any
				Text       string
			}
			Invalid struct {
				IsError    bool
				Structured map[string]any
			}
		}
		if err := json.Unmarshal(out, &rep); err != nil {
			t.Fatalf("report %s: %v", out, err)
		}
		if !slices.Contains(rep.Tools, mcp.ToolSubmitTask) || !slices.Contains(rep.Agents, "agent:ken") {
			t.Errorf("tools %v agents %v", rep.Tools, rep.Agents)
		}
		if rep.Submit.IsError || rep.Submit.Structured["status"] != "result" || !strings.Contains(rep.Submit.Text, "answer to from TypeScript") {
			t.Errorf("submit %+v", rep.Submit)
		}
		if len(rep.Progress) == 0 {
			t.Errorf("no progress notifications")
		}
		if !rep.Invalid.IsError || rep.Invalid.Structured["code"] != "VALIDATION" || rep.Invalid.Structured["retryable"] != false {
			t.Errorf("invalid %+v", rep.Invalid)
		}
	}
	t.Run("http", func(t *testing.T) {
		tm := newTeam(t)
		hs := httptest.NewServer(tm.srv.Handler())
		t.Cleanup(hs.Close)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, script, "--url", hs.URL)
		cmd.Env = append(os.Environ(), "MCP_API_KEY="+ideKey)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("client: %v %s", err, stderrOf(err))
		}
		check(t, out)
		if n := len(tm.env.Events(store.Query{AgentID: "agent:ide", TypePrefix: string(mcp.TypeHostCall)})); n != 3 {
			t.Errorf("%d host calls recorded, want 3", n)
		}
	})
	t.Run("stdio", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, script, "--stdio", os.Args[0])
		cmd.Env = append(os.Environ(), serveStdioEnv+"=1")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("client: %v %s", err, stderrOf(err))
		}
		check(t, out)
	})
}

func stderrOf(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(ee.Stderr)
	}
	return ""
}

// TestClientToServerHTTP points the Client at the Server surface over
// Streamable HTTP (protocol 2026-07-28 end to end): a task calls
// submit_task of another team, the structured results and errors map as
// for any MCP server, and the server's progress notifications become
// task.progress events of the calling task.
func TestClientToServerHTTP(t *testing.T) {
	tm := newTeam(t)
	h := tm.srv.Handler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+ideKey { // ServerConfig.Headers reach the server
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	c := newClient(t, []mcp.ServerConfig{{Name: "team", URL: hs.URL, Headers: map[string]string{"Authorization": "Bearer " + ideKey}}}, nil)
	tr := newTaskRunner(t, "mcp:team")

	res, err, evs := tr.call(c, "team", mcp.ToolSubmitTask, map[string]any{
		"payload_type": "research.query.v1", "payload": map[string]any{"query": "q"}, "requires": []string{"skill:research"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res.StructuredContent), `"status":"result"`) {
		t.Errorf("structured %s", res.StructuredContent)
	}
	if n := strings.Count(strings.Join(typeStrings(evs), " "), "task.progress"); n == 0 {
		t.Errorf("no task.progress from the server's notifications: %v", types(evs))
	}
	_, err, _ = tr.call(c, "team", mcp.ToolWaitTask, map[string]any{"task_id": "task_nope"}, nil)
	var te *mcp.ToolError
	if !errors.As(err, &te) || te.Code != protocol.CodeToolFailed || te.Details["server_code"] != "NOT_FOUND" || te.Details["retryAction"] != mcp.ActionCheckID {
		t.Errorf("wait_task unknown: %#v", err)
	}
}

func typeStrings(evs []*protocol.Message) []string {
	out := make([]string, len(evs))
	for i, m := range evs {
		out[i] = string(m.Type)
	}
	return out
}
