package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/internal/backends"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/store"
)

func TestServerRequiresAuthAndExposure(t *testing.T) {
	env := routertest.New(t, nil)
	_, err := NewServer(env.Router, &ServerOptions{Expose: []string{"agent:echo"}})
	require.ErrorIs(t, err, ErrInvalidOptions)
	_, err = NewServer(env.Router, &ServerOptions{Auth: testAuth})
	require.ErrorIs(t, err, ErrInvalidOptions)
	_, err = NewServer(env.Router, &ServerOptions{Auth: testAuth, Expose: []string{"echo"}})
	require.ErrorIs(t, err, ErrInvalidOptions)
}

// rpcBody is a JSON-RPC SendMessage body.
func rpcBody(text, messageID, contextID string) string {
	q := func(s string) string {
		if !utf8.ValidString(s) {
			return `"` + s + `"` // raw bytes, as a broken client sends them
		}
		b, _ := json.Marshal(s)
		return string(b)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":%s,"contextId":%s,"role":"ROLE_USER","parts":[{"text":%s}]}}}`, q(messageID), q(contextID), q(text))
}

// TestSurfaceAuthTable: no credentials or wrong ones get 401 and no data on
// every path but the cards; a caller without a scope gets 403.
func TestSurfaceAuthTable(t *testing.T) {
	anon := auth.Chain(testAuth, auth.Anonymous(auth.Caller{AgentID: "agent:anonymous"}))
	e := newTestEnv(t, &ServerOptions{Auth: anon})
	done := send(t, e.client(t, "echo"), textMsg("private words"))
	for _, tc := range []struct {
		name, method, path, body string
		hdr                      []string
		want                     int
	}{
		{"rpc no key", "POST", "/agents/echo/a2a", rpcBody("hi", "m-a", ""), []string{"Authorization", ""}, 200},
		{"rpc wrong key", "POST", "/a2a", rpcBody("hi", "m-b", ""), []string{"X-API-Key", "wrong-0123456789abcdef"}, 401},
		{"rpc basic", "POST", "/a2a", rpcBody("hi", "m-c", ""), []string{"Authorization", "Basic dGVzdGVyOng="}, 401},
		{"get task no key", "POST", "/agents/echo/a2a", `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"` + string(done.ID) + `"}}`, []string{"Authorization", ""}, 200},
		{"run no key", "POST", "/agents/echo/run", `{"prompt":"hi"}`, []string{"Authorization", ""}, 403},
		{"run wrong key", "POST", "/agents/echo/run", `{"prompt":"hi"}`, []string{"Authorization", "Bearer wrong-0123456789abcdef"}, 401},
		{"agents no key", "GET", "/agents", "", []string{"Authorization", ""}, 403},
		{"agent no key", "GET", "/agents/echo", "", []string{"Authorization", ""}, 403},
		{"stream wrong key", "GET", "/agents/echo/stream?prompt=x", "", []string{"X-API-Key", "wrong-0123456789abcdef"}, 401},
		{"card public", "GET", "/agents/echo" + CardPath, "", []string{"Authorization", ""}, 200},
		{"team card public", "GET", CardPath, "", []string{"Authorization", ""}, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, h, body := httpDo(t, tc.method, e.hs.URL+tc.path, tc.body, tc.hdr...)
			assert.Equal(t, tc.want, status, body)
			assert.NotContains(t, body, "private words")
			assert.NotContains(t, body, "echo: hi")
			if status == 401 {
				assert.Equal(t, `Bearer realm="clutch"`, h.Get("WWW-Authenticate"))
			}
			if status == 200 && strings.HasSuffix(tc.path, "/a2a") {
				// The anonymous caller has no scope: refused inside JSON-RPC,
				// and never shown another caller's task.
				assert.Contains(t, body, `"error"`)
			}
		})
	}
	// Without Anonymous in the chain, no key is 401 everywhere but the cards.
	strict := newTestEnv(t, nil)
	for _, p := range []string{"/a2a", "/agents", "/agents/echo", "/agents/echo/run", "/agents/echo/a2a", "/nope"} {
		status, _, body := httpDo(t, "POST", strict.hs.URL+p, `{"prompt":"hi"}`, "Authorization", "")
		assert.Equal(t, 401, status, p)
		assert.NotContains(t, body, "agent:echo", p)
	}
}

// TestTenancy: another caller never sees, streams, lists, cancels or
// continues tester's tasks; ScopeReadAll does.
func TestTenancy(t *testing.T) {
	backends.Each(t, func(t *testing.T, st store.Store) {
		e := newTestEnvOn(t, st, nil)
		mine := e.client(t, "echo")
		other := newSDKClientAs(t, e.hs.URL+AgentsPath+"/echo", otherKey)
		ops := newSDKClientAs(t, e.hs.URL+AgentsPath+"/echo", opsKey)
		ctx := ctxT(t)

		done := send(t, mine, textMsg("mine"))
		req := textMsg("block:")
		req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
		running := send(t, mine, req)
		input := send(t, mine, textMsg("ask:"))
		require.Equal(t, a2a.TaskStateInputRequired, input.Status.State)

		// The stored request is from the caller, whatever the message says.
		reqs := e.Events(store.Query{TaskID: string(done.ID), TypePrefix: "task.request"})
		require.Len(t, reqs, 1)
		assert.Equal(t, tester, reqs[0].From.AgentID)

		for _, id := range []a2a.TaskID{done.ID, running.ID} {
			_, err := other.GetTask(ctx, &a2a.GetTaskRequest{ID: id})
			assert.ErrorIs(t, err, a2a.ErrTaskNotFound)
			_, err = other.CancelTask(ctx, &a2a.CancelTaskRequest{ID: id})
			assert.ErrorIs(t, err, a2a.ErrTaskNotFound)
			for _, err := range other.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: id}) {
				assert.ErrorIs(t, err, a2a.ErrTaskNotFound)
			}
		}
		cont := textMsg("here it is")
		cont.Message.TaskID = input.ID
		_, err := other.SendMessage(ctx, cont)
		assert.ErrorIs(t, err, a2a.ErrTaskNotFound)
		list, err := other.ListTasks(ctx, &a2a.ListTasksRequest{})
		require.NoError(t, err)
		assert.Empty(t, list.Tasks)
		send(t, other, textMsg("theirs"))
		list, err = mine.ListTasks(ctx, &a2a.ListTasksRequest{})
		require.NoError(t, err)
		assert.Len(t, list.Tasks, 3, "tester sees its own three, not the other's")

		// read:all (through admin) sees and cancels everything.
		got, err := ops.GetTask(ctx, &a2a.GetTaskRequest{ID: done.ID})
		require.NoError(t, err)
		assert.Equal(t, done.ID, got.ID)
		list, err = ops.ListTasks(ctx, &a2a.ListTasksRequest{})
		require.NoError(t, err)
		assert.Len(t, list.Tasks, 4)
		c, err := ops.CancelTask(ctx, &a2a.CancelTaskRequest{ID: running.ID})
		require.NoError(t, err)
		assert.Equal(t, a2a.TaskStateCanceled, c.Status.State)
		c, err = mine.CancelTask(ctx, &a2a.CancelTaskRequest{ID: input.ID}) // it waits for input
		require.NoError(t, err)
		assert.Equal(t, a2a.TaskStateCanceled, c.Status.State)
	})
}

// TestExposure: a message without requires reaches only exposed agents;
// cards and /agents list only them.
func TestExposure(t *testing.T) {
	env := routertest.New(t, &routertest.Options{Router: router.Options{MaxAttempts: 1}})
	var hidden atomic.Int32
	env.Register(card("agent:hidden", nil, "skill:echo"), func(ctx context.Context, t *router.Task) (*router.Result, error) {
		hidden.Add(1)
		return &router.Result{Payload: Content{Text: "secret"}}, nil
	})
	env.Register(card("agent:research", nil, "skill:research"), research)
	e := serve(t, env, &ServerOptions{Expose: []string{"agent:research"}})
	team := newSDKClient(t, e.hs.URL)

	// No requires at all: only research is a candidate.
	res, err := team.SendMessage(ctxT(t), textMsg("hello"))
	task := taskOf(t, res, err)
	assert.NotEqual(t, "agent:hidden", task.Metadata[MetaAgentID])
	// requires the hidden agent's skill: no match among the exposed.
	req := textMsg("hello")
	req.Metadata = map[string]any{"clutch.requires": []any{"skill:echo"}}
	res, err = team.SendMessage(ctxT(t), req)
	if err == nil {
		task = taskOf(t, res, err)
		assert.Equal(t, a2a.TaskStateFailed, task.Status.State)
	}
	assert.Zero(t, hidden.Load(), "a hidden agent ran")

	_, _, body := httpDo(t, "GET", e.hs.URL+CardPath, "")
	assert.NotContains(t, body, "agent:hidden")
	_, _, body = httpDo(t, "GET", e.hs.URL+"/agents", "")
	assert.NotContains(t, body, "agent:hidden")
	status, _, _ := httpDo(t, "GET", e.hs.URL+"/agents/hidden"+CardPath, "")
	assert.Equal(t, 404, status)
	status, _, _ = httpDo(t, "POST", e.hs.URL+"/agents/hidden/run", `{"prompt":"x"}`)
	assert.Equal(t, 404, status)
	assert.Zero(t, hidden.Load(), "a hidden agent ran")
}

// counting is echo that counts its runs.
func counting(n *atomic.Int32) router.Handler {
	return func(ctx context.Context, t *router.Task) (*router.Result, error) {
		n.Add(1)
		return echo(ctx, t)
	}
}

// TestMessageIDDedup: the same A2A messageId sent three times runs the
// handler once and answers the same task; another caller's same id is its
// own task.
func TestMessageIDDedup(t *testing.T) {
	backends.Each(t, func(t *testing.T, st store.Store) {
		env := routertest.New(t, &routertest.Options{Router: router.Options{MaxAttempts: 1}, Store: st})
		var runs atomic.Int32
		env.Register(card("agent:echo", nil, "skill:echo"), counting(&runs))
		e := serve(t, env, &ServerOptions{Expose: []string{"agent:echo"}})
		cl := e.client(t, "echo")
		var ids []a2a.TaskID
		for range 3 {
			req := textMsg("once")
			req.Message.ID = "m-dedup-1"
			task := send(t, cl, req)
			assert.Equal(t, a2a.TaskStateCompleted, task.Status.State)
			ids = append(ids, task.ID)
		}
		assert.Equal(t, int32(1), runs.Load(), "the handler ran more than once for one messageId")
		assert.Equal(t, ids[0], ids[1])
		assert.Equal(t, ids[0], ids[2])

		other := newSDKClientAs(t, e.hs.URL+AgentsPath+"/echo", otherKey)
		req := textMsg("once")
		req.Message.ID = "m-dedup-1"
		theirs := send(t, other, req)
		assert.NotEqual(t, ids[0], theirs.ID)
		assert.Equal(t, int32(2), runs.Load())
	})
}

// TestIdempotencyKeyREST: identical posts with one Idempotency-Key are one
// task, scoped to the caller.
func TestIdempotencyKeyREST(t *testing.T) {
	backends.Each(t, func(t *testing.T, st store.Store) {
		env := routertest.New(t, &routertest.Options{Router: router.Options{MaxAttempts: 1}, Store: st})
		var runs atomic.Int32
		env.Register(card("agent:echo", nil, "skill:echo"), counting(&runs))
		e := serve(t, env, &ServerOptions{Expose: []string{"agent:echo"}})
		var bodies []string
		for range 3 {
			status, _, body := httpDo(t, "POST", e.hs.URL+"/agents/echo/run", `{"prompt":"pay"}`, "Idempotency-Key", "k-1")
			require.Equal(t, 200, status, body)
			bodies = append(bodies, body[strings.Index(body, `"task_id"`):strings.Index(body, `"run_id"`)])
		}
		assert.Equal(t, int32(1), runs.Load(), "the handler ran more than once for one Idempotency-Key")
		assert.Equal(t, bodies[0], bodies[1])
		assert.Equal(t, bodies[0], bodies[2])
		status, _, _ := httpDo(t, "POST", e.hs.URL+"/agents/echo/run", `{"prompt":"pay"}`, "Idempotency-Key", "k-1", "X-API-Key", otherKey)
		assert.Equal(t, 200, status)
		assert.Equal(t, int32(2), runs.Load(), "another caller's key is its own")
		status, _, _ = httpDo(t, "POST", e.hs.URL+"/agents/echo/run", `{"prompt":"pay"}`, "Idempotency-Key", strings.Repeat("k", protocol.MaxIDLength+1))
		assert.Equal(t, 400, status)
	})
}

// TestStrictJSONRPC: duplicate keys, invalid UTF-8 and lone surrogates
// are refused before the SDK decodes; ids with control characters too.
func TestStrictJSONRPC(t *testing.T) {
	env := routertest.New(t, &routertest.Options{Router: router.Options{MaxAttempts: 1}})
	var runs atomic.Int32
	env.Register(card("agent:echo", nil, "skill:echo"), counting(&runs))
	e := serve(t, env, &ServerOptions{Expose: []string{"agent:echo"}})
	for name, body := range map[string]string{
		"duplicate method": `{"jsonrpc":"2.0","id":1,"method":"GetTask","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"x"}]}}}`,
		"duplicate text":   `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a","text":"b"}]}}}`,
		"invalid utf-8":    rpcBody("bad \xff byte", "m-u", ""),
		"lone surrogate":   strings.Replace(rpcBody("XX", "m-s", ""), "XX", `\ud800`, 1),
	} {
		status, _, resp := httpDo(t, "POST", e.hs.URL+"/agents/echo/a2a", body)
		assert.Equal(t, 200, status, name)
		assert.Contains(t, resp, `"code":-32700`, name)
	}
	for name, body := range map[string]string{
		"context id": rpcBody("x", "m-c", "ctx\x01"),
		"message id": rpcBody("x", "m\n", ""),
	} {
		_, _, resp := httpDo(t, "POST", e.hs.URL+"/agents/echo/a2a", body)
		assert.Contains(t, resp, `"code":-32602`, name)
	}
	status, _, _ := httpDo(t, "POST", e.hs.URL+"/agents/echo/run", `{"prompt":"x","sessionId":"s\u0007"}`)
	assert.Equal(t, 400, status)
	assert.Zero(t, runs.Load())
}

// TestBlockingCallerGoneCancels: a client that goes away from a blocking
// SendMessage or run leaves no task behind.
func TestBlockingCallerGoneCancels(t *testing.T) {
	e := newTestEnv(t, nil)
	cl := e.client(t, "echo")
	ctx, cancel := context.WithCancel(ctxT(t))
	errc := make(chan error, 1)
	go func() {
		req := textMsg("block:")
		req.Message.ID = "m-gone"
		_, err := cl.SendMessage(ctx, req)
		errc <- err
	}()
	acc := e.Await(store.Query{TypePrefix: "task.accept"}, routertest.Count(1))
	cancel()
	<-errc
	e.Await(store.Query{TaskID: acc.TaskID, TypePrefix: "task.cancel"}, routertest.Count(1))

	rctx, rcancel := context.WithCancel(ctxT(t))
	go func() {
		req, _ := http.NewRequestWithContext(rctx, "POST", e.hs.URL+"/agents/echo/run", strings.NewReader(`{"prompt":"block:"}`))
		req.Header.Set("X-API-Key", testKey)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	acc2 := e.Await(store.Query{TypePrefix: "task.accept"}, routertest.Count(2))
	rcancel()
	<-errc
	e.Await(store.Query{TaskID: acc2.TaskID, TypePrefix: "task.cancel"}, routertest.Count(1))
}

// TestMaxRunning: the map of running tasks has a cap; past it a send is
// refused, not tracked without bound.
func TestMaxRunning(t *testing.T) {
	e := newTestEnv(t, &ServerOptions{MaxRunning: 1})
	cl := e.client(t, "echo")
	req := textMsg("block:")
	req.Config = &a2a.SendMessageConfig{ReturnImmediately: true}
	first := send(t, cl, req)
	_, err := cl.SendMessage(ctxT(t), req)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "at capacity")
	_, err = cl.CancelTask(ctxT(t), &a2a.CancelTaskRequest{ID: first.ID})
	require.NoError(t, err)
	status, _, _ := httpDo(t, "POST", e.hs.URL+"/agents/echo/run", `{"prompt":"x"}`)
	assert.Equal(t, 200, status, "the slot is free again")
}

// TestConcurrentBlockingCalls: 400 blocking calls at once against a
// Server with a small in-flight limit and rate limit: every caller gets an
// answer (200, 429 or 503) within its deadline, and goroutines stay
// bounded and return to where they were.
func TestConcurrentBlockingCalls(t *testing.T) {
	env := routertest.New(t, &routertest.Options{Router: router.Options{MaxAttempts: 1}})
	release := make(chan struct{})
	env.Register(card("agent:echo", &protocol.Limits{MaxConcurrency: 8}, "skill:echo"), func(ctx context.Context, t *router.Task) (*router.Result, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &router.Result{Payload: Content{Text: "ok"}}, nil
	})
	e := serve(t, env, &ServerOptions{Expose: []string{"agent:echo"}, Limits: &auth.Options{MaxInFlight: 16, Rate: 50, Burst: 300}})
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 400
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: keyTransport{testKey, tr}}

	before := runtime.NumGoroutine()
	var peak atomic.Int64
	stopPeak := make(chan struct{})
	peakDone := make(chan struct{})
	go func() {
		defer close(peakDone)
		for {
			if n := int64(runtime.NumGoroutine()); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-stopPeak:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	const n = 400
	deadline := 15 * time.Second
	codes := make([]int, n)
	var wg sync.WaitGroup
	var admitted sync.WaitGroup
	admitted.Add(1)
	var started atomic.Int32
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "POST", e.hs.URL+"/agents/echo/a2a", strings.NewReader(rpcBody("x", fmt.Sprintf("m-%d", i), "")))
			req.Header.Set("Content-Type", "application/json")
			resp, err := hc.Do(req)
			if started.Add(1) == n-16 {
				admitted.Done() // most have been answered: let the admitted ones finish
			}
			if err != nil {
				codes[i] = -1
				return
			}
			resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	go func() { admitted.Wait(); close(release) }()
	wg.Wait()
	close(stopPeak)
	<-peakDone
	count := map[int]int{}
	for _, c := range codes {
		count[c]++
	}
	t.Logf("answers %v, goroutines before %d peak %d", count, before, peak.Load())
	assert.Zero(t, count[-1], "a caller got no answer within its deadline")
	assert.Equal(t, n, count[200]+count[429]+count[503], "answers other than 200, 429, 503: %v", count)
	assert.Positive(t, count[503], "the in-flight limit never refused")
	assert.LessOrEqual(t, count[200], 400)
	// Each connection costs the server and the client a few goroutines;
	// the bound is that nothing else grows with the callers (no queue of
	// parked handlers, no per-task watcher left behind).
	assert.Less(t, peak.Load(), int64(before+6*n), "goroutines grew without bound")
	tr.CloseIdleConnections()
	e.hs.CloseClientConnections()
	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= before+10 }, 10*time.Second, 10*time.Millisecond,
		"goroutines did not come back: %d, before %d", runtime.NumGoroutine(), before)
}

// TestRemoteCredentialsStayWithTheHost: a remote A2A agent registered on a
// host is reachable through the host's Server only when exposed, and then
// only with the host's own credentials: a caller's key never travels on,
// and the remote sees the host as its caller.
func TestRemoteCredentialsStayWithTheHost(t *testing.T) {
	const hostKey = "host-key-0123456789abcdef"
	backendAuth, err := auth.APIKeys(map[string]auth.Caller{hostKey: {AgentID: "agent:host", Scopes: []string{auth.ScopeSubmit}}})
	require.NoError(t, err)
	var mu sync.Mutex
	var seen []string
	record := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost {
				mu.Lock()
				seen = append(seen, r.Header.Get("Authorization"))
				mu.Unlock()
			}
			next.ServeHTTP(w, r)
		})
	}
	backend := newTestEnv(t, &ServerOptions{Auth: backendAuth}, record)

	host := routertest.New(t, &routertest.Options{Router: router.Options{MaxAttempts: 1}})
	host.Register(card("agent:local", nil, "skill:echo"), echo)
	rm, err := Register(ctxT(t), host.Router, backend.hs.URL+"/agents/echo", &RemoteOptions{AgentID: "agent:remote", BearerToken: hostKey, Logger: quiet, Egress: loopback})
	require.NoError(t, err)
	t.Cleanup(func() { rm.Close() })

	// Not exposed: a message the remote could serve never reaches it.
	only := serve(t, host, &ServerOptions{Expose: []string{"agent:local"}})
	req := textMsg("hi")
	req.Metadata = map[string]any{"clutch.requires": []any{"skill:echo"}}
	task := send(t, newSDKClient(t, only.hs.URL), req)
	assert.Equal(t, "agent:local", task.Metadata[MetaAgentID])
	mu.Lock()
	assert.Empty(t, seen, "the unexposed remote was called")
	mu.Unlock()

	// Exposed: the call goes on with the host's key, never the caller's.
	both := serve(t, host, &ServerOptions{Expose: []string{"agent:remote"}})
	task = send(t, newSDKClientAs(t, both.hs.URL+"/agents/remote", testKey), textMsg("hi"))
	require.Equal(t, a2a.TaskStateCompleted, task.Status.State)
	mu.Lock()
	require.NotEmpty(t, seen)
	for _, h := range seen {
		assert.Equal(t, "Bearer "+hostKey, h)
	}
	mu.Unlock()
	reqs := backend.Events(store.Query{TypePrefix: "task.request"})
	require.NotEmpty(t, reqs)
	assert.Equal(t, "agent:host", reqs[0].From.AgentID)
}
