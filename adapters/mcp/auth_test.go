package mcp_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/adapters/mcp"
	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/internal/backends"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

// httpSession connects to the team's Handler as key.
func (tm *team) httpSession(t *testing.T, key string) *sdk.ClientSession {
	t.Helper()
	hs := httptest.NewServer(tm.srv.Handler())
	t.Cleanup(hs.Close)
	c := sdk.NewClient(&sdk.Implementation{Name: "host", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: hs.URL, HTTPClient: bearer(key)}, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close() })
	return cs
}

func submitArgs(extra map[string]any) map[string]any {
	m := map[string]any{"payload_type": "research.query.v1", "payload": map[string]any{"query": "q"}, "requires": []string{"skill:research"}}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func TestServerOptionsRefuseNoIdentity(t *testing.T) {
	tm := newTeam(t)
	_, err := mcp.NewServer(tm.env.Router, &mcp.ServerOptions{Expose: []string{"agent:ken"}})
	require.ErrorIs(t, err, mcp.ErrInvalidConfig)
	_, err = mcp.NewServer(tm.env.Router, &mcp.ServerOptions{Caller: ide})
	require.ErrorIs(t, err, mcp.ErrInvalidConfig)
	httpOnly, err := mcp.NewServer(tm.env.Router, &mcp.ServerOptions{Auth: hostKeys, Expose: []string{"agent:ken"}})
	require.NoError(t, err)
	st, _ := sdk.NewInMemoryTransports()
	require.ErrorIs(t, httpOnly.Run(context.Background(), st), mcp.ErrInvalidConfig)
	stdioOnly, err := mcp.NewServer(tm.env.Router, &mcp.ServerOptions{Caller: ide, Expose: []string{"agent:ken"}})
	require.NoError(t, err)
	hs := httptest.NewServer(stdioOnly.Handler())
	t.Cleanup(hs.Close)
	resp, err := http.Post(hs.URL, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, 401, resp.StatusCode)
}

// TestServerHTTPAuthTable: no credentials or wrong ones get 401 and no
// data; the SDK session never starts.
func TestServerHTTPAuthTable(t *testing.T) {
	tm := newTeam(t)
	hs := httptest.NewServer(tm.srv.Handler())
	t.Cleanup(hs.Close)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list_agents","arguments":{}}}`
	for name, hdr := range map[string][2]string{
		"none":      {"", ""},
		"wrong key": {"Authorization", "Bearer wrong-0123456789abcdef"},
		"x-api-key": {"X-API-Key", "wrong-0123456789abcdef"},
		"basic":     {"Authorization", "Basic aWRlOmlkZQ=="},
	} {
		t.Run(name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", hs.URL, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if hdr[0] != "" {
				req.Header.Set(hdr[0], hdr[1])
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, 401, resp.StatusCode)
			assert.NotContains(t, string(b), "agent:ken")
		})
	}
	assert.Empty(t, tm.env.Events(store.Query{TypePrefix: string(mcp.TypeHostCall)}), "a refused call was served")
	// X-API-Key works as well as a bearer key.
	req, _ := http.NewRequest("POST", hs.URL, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("X-API-Key", ideKey)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, string(b), "agent:ken")
}

// TestServerTenancy: over HTTP and over stdio, a caller's tasks are stamped
// with its id; another caller gets NOT_FOUND for them, read:all sees them.
func TestServerTenancy(t *testing.T) {
	backends.Each(t, func(t *testing.T, st store.Store) {
		tm := newTeamOn(t, st)
		stdio, _ := tm.connect(t) // as ide, the process owner
		other := tm.httpSession(t, otherKey)
		ops := tm.httpSession(t, opsKey)
		ideHTTP := tm.httpSession(t, ideKey)

		for name, cs := range map[string]*sdk.ClientSession{"stdio": stdio, "http": ideHTTP} {
			t.Run(name, func(t *testing.T) {
				sc, isErr := callTool(t, cs, mcp.ToolSubmitTask, submitArgs(nil), false)
				require.False(t, isErr, "%v", sc)
				taskID, runID := sc["task_id"].(string), sc["run_id"].(string)
				reqs := tm.env.Events(store.Query{TaskID: taskID, TypePrefix: "task.request"})
				require.Len(t, reqs, 1)
				assert.Equal(t, "agent:ide", reqs[0].From.AgentID)

				for tool, args := range map[string]map[string]any{
					mcp.ToolWaitTask:     {"task_id": taskID, "wait_sec": 0},
					mcp.ToolCancelTask:   {"task_id": taskID},
					mcp.ToolGetRunEvents: {"run_id": runID},
					mcp.ToolGetTaskTree:  {"run_id": runID},
				} {
					sc, isErr := callTool(t, other, tool, args, false)
					assert.True(t, isErr, tool)
					assert.Equal(t, string(protocol.CodeNotFound), sc["code"], tool)
					assert.NotContains(t, mustMarshal(sc), "answer to", tool)
					sc, isErr = callTool(t, ops, tool, args, false)
					if tool != mcp.ToolCancelTask {
						assert.False(t, isErr, "%s as ops: %v", tool, sc)
					}
				}
				// The host-call run holds every caller's calls: it is reserved,
				// for admins only (docs/protocol.md §6.7).
				hostRun, _, _ := tm.srv.HostRun()
				sc, isErr = callTool(t, other, mcp.ToolGetRunEvents, map[string]any{"run_id": hostRun}, false)
				assert.True(t, isErr)
				assert.Equal(t, string(protocol.CodeNotFound), sc["code"])
				sc, isErr = callTool(t, ops, mcp.ToolGetRunEvents, map[string]any{"run_id": hostRun}, false)
				assert.False(t, isErr, "an admin reads it: %v", sc)
			})
		}
		recs := tm.env.Events(store.Query{AgentID: "agent:other", TypePrefix: string(mcp.TypeHostCall)})
		assert.NotEmpty(t, recs, "the other caller's calls are recorded under its id")
	})
}

func mustMarshal(v any) string {
	b, _ := jsonMarshal(v)
	return string(b)
}

// TestServerScopes: a caller without submit or agents scope is refused;
// a session of the SDK server run outside Run has no caller at all.
func TestServerScopes(t *testing.T) {
	tm := newTeam(t, func(o *mcp.ServerOptions) { o.Caller = &auth.Caller{AgentID: "agent:viewer"} })
	cs, _ := tm.connect(t)
	sc, isErr := callTool(t, cs, mcp.ToolSubmitTask, submitArgs(nil), false)
	assert.True(t, isErr)
	assert.Equal(t, string(protocol.CodePolicyDenied), sc["code"])
	sc, isErr = callTool(t, cs, mcp.ToolListAgents, map[string]any{}, false)
	assert.True(t, isErr)
	assert.Equal(t, string(protocol.CodePolicyDenied), sc["code"])

	st, ct := sdk.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = tm.srv.MCPServer().Run(ctx, st) }()
	raw, err := sdk.NewClient(&sdk.Implementation{Name: "x", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	require.NoError(t, err)
	sc, isErr = callTool(t, raw, mcp.ToolListAgents, map[string]any{}, false)
	assert.True(t, isErr)
	assert.Equal(t, string(protocol.CodeUnauthorized), sc["code"])
	raw.Close()
	cancel()
	<-done
}

// TestServerExposure: list_agents and routing see only exposed agents.
func TestServerExposure(t *testing.T) {
	tm := newTeam(t, func(o *mcp.ServerOptions) { o.Expose = []string{"agent:sloth"} })
	var ran atomic.Int32
	tm.env.Register(&protocol.AgentCard{V: protocol.Version, AgentID: "agent:hidden", Capabilities: []protocol.Capability{{ID: "skill:research"}}},
		func(ctx context.Context, t *router.Task) (*router.Result, error) {
			ran.Add(1)
			return &router.Result{}, nil
		})
	cs, _ := tm.connect(t)
	sc, _ := callTool(t, cs, mcp.ToolListAgents, map[string]any{}, false)
	assert.NotContains(t, mustMarshal(sc), "agent:ken")
	assert.NotContains(t, mustMarshal(sc), "agent:hidden")
	assert.Contains(t, mustMarshal(sc), "agent:sloth")
	sc, isErr := callTool(t, cs, mcp.ToolSubmitTask, submitArgs(map[string]any{"to": []string{"agent:hidden"}}), false)
	assert.True(t, isErr)
	assert.Equal(t, string(protocol.CodeNotFound), sc["code"])
	sc, isErr = callTool(t, cs, mcp.ToolSubmitTask, submitArgs(nil), false) // requires skill:research: only hidden and ken have it
	assert.True(t, isErr, "%v", sc)
	assert.Equal(t, string(protocol.CodeNoMatch), sc["code"])
	assert.Zero(t, ran.Load(), "a hidden agent ran")
}

// TestServerIdempotencyKey: submit_task with one idempotency_key runs
// once per caller, and answers the same task.
func TestServerIdempotencyKey(t *testing.T) {
	backends.Each(t, func(t *testing.T, st store.Store) {
		var runs atomic.Int32
		tm := newTeamOn(t, st, func(o *mcp.ServerOptions) { o.Expose = append(o.Expose, "agent:counted") })
		tm.env.Register(&protocol.AgentCard{V: protocol.Version, AgentID: "agent:counted", Capabilities: []protocol.Capability{{ID: "skill:count"}}},
			func(ctx context.Context, t *router.Task) (*router.Result, error) {
				runs.Add(1)
				return &router.Result{}, nil
			})
		cs, _ := tm.connect(t)
		args := map[string]any{"payload_type": "research.query.v1", "payload": map[string]any{"query": "q"}, "requires": []string{"skill:count"}, "idempotency_key": "k-1"}
		var tasks []any
		for range 3 {
			sc, isErr := callTool(t, cs, mcp.ToolSubmitTask, args, false)
			require.False(t, isErr, "%v", sc)
			tasks = append(tasks, sc["task_id"])
		}
		assert.Equal(t, int32(1), runs.Load(), "the handler ran more than once for one idempotency_key")
		assert.Equal(t, tasks[0], tasks[1])
		assert.Equal(t, tasks[0], tasks[2])
		other := tm.httpSession(t, otherKey)
		sc, isErr := callTool(t, other, mcp.ToolSubmitTask, args, false)
		require.False(t, isErr, "%v", sc)
		assert.NotEqual(t, tasks[0], sc["task_id"])
		assert.Equal(t, int32(2), runs.Load())
	})
}

// TestServerMaxTracked: the map of followed tasks has a cap.
func TestServerMaxTracked(t *testing.T) {
	tm := newTeam(t, func(o *mcp.ServerOptions) { o.MaxTracked = 1; o.Logger = slog.New(slog.DiscardHandler) })
	cs, _ := tm.connect(t)
	wait := map[string]any{"payload_type": "research.query.v1", "payload": map[string]any{"query": "q"}, "requires": []string{"skill:wait"}, "wait_sec": 0}
	sc, isErr := callTool(t, cs, mcp.ToolSubmitTask, wait, false)
	require.False(t, isErr, "%v", sc)
	sc, isErr = callTool(t, cs, mcp.ToolSubmitTask, wait, false)
	assert.True(t, isErr)
	assert.Equal(t, string(protocol.CodeCapacity), sc["code"])
}

var jsonMarshal = func(v any) ([]byte, error) { return json.Marshal(v) }

// TestServerReservedForReadAll: a read:all caller reads everybody's runs
// but not the reserved host-call run (docs/protocol.md §6.7).
func TestServerReservedForReadAll(t *testing.T) {
	backends.Each(t, func(t *testing.T, st store.Store) {
		tm := newTeamOn(t, st)
		audit := tm.httpSession(t, auditKey)
		hostRun, _, _ := tm.srv.HostRun()
		sc, isErr := callTool(t, audit, mcp.ToolGetRunEvents, map[string]any{"run_id": hostRun}, false)
		assert.True(t, isErr)
		assert.Equal(t, string(protocol.CodeNotFound), sc["code"])
	})
}
