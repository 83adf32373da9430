package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	clutchauth "github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
)

// caller is the Clutch side that calls out: a router with a Remote.
type caller struct {
	*routertest.Env
	rm *Remote
}

func newCaller(t testing.TB, url string, opts *RemoteOptions, attempts int) *caller {
	t.Helper()
	env := routertest.New(t, &routertest.Options{Router: router.Options{MaxAttempts: attempts}})
	var o RemoteOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = quiet
	}
	if o.PollInterval == 0 {
		o.PollInterval = 20 * time.Millisecond
	}
	if o.BearerToken == "" {
		o.BearerToken = testKey // the test Servers authenticate callers
	}
	if o.Egress == nil {
		// The test servers listen on 127.0.0.1, which the default policy
		// refuses (docs/protocol.md §6).
		o.Egress = loopback
	}
	rm, err := Register(context.Background(), env.Router, url, &o)
	if err != nil {
		t.Fatalf("Register %s: %v", url, err)
	}
	t.Cleanup(func() { rm.Close() })
	return &caller{Env: env, rm: rm}
}

// ask runs a Content request on the caller's router, in thread (new if "").
func (c *caller) ask(t testing.TB, text, thread string) (*router.Outcome, error) {
	t.Helper()
	req := c.Request(PayloadContent, Content{Text: text})
	req.To = []protocol.Participant{{AgentID: c.rm.Card().AgentID}}
	if thread != "" {
		req.ThreadID = thread
	}
	return c.Run(req)
}

func TestRemoteCard(t *testing.T) {
	b := newTestEnv(t, nil)
	c := newCaller(t, b.hs.URL+"/agents/echo", nil, 1)
	got := c.rm.Card()
	want := &protocol.AgentCard{
		V: protocol.Version, AgentID: "agent:echo",
		Display:      &protocol.Display{Name: "echo", Desc: "test agent agent:echo"},
		Endpoints:    map[string]protocol.Endpoint{"a2a": {URL: b.hs.URL + "/agents/echo/a2a"}},
		Capabilities: []protocol.Capability{{ID: "skill:echo", Tags: []string{"test"}}},
		Limits:       &protocol.Limits{MaxRuntimeSec: DefaultMaxRuntimeSec},
		Security:     &protocol.CardSecurity{Network: "open"},
	}
	if mustJSON(t, got) != mustJSON(t, want) {
		t.Errorf("card:\n got %s\nwant %s", mustJSON(t, got), mustJSON(t, want))
	}
	if _, ok := c.Registry.Get("agent:echo"); !ok {
		t.Error("the remote agent is not in the registry")
	}

	// The mapping on its own.
	a := &a2a.AgentCard{Name: "Web Search Agent", Description: "d",
		SupportedInterfaces: []*a2a.AgentInterface{{URL: "http://x/rest", ProtocolBinding: a2a.TransportProtocolHTTPJSON, ProtocolVersion: "1.0"},
			{URL: "http://x/rpc", ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: "1.0"}},
		Skills: []a2a.AgentSkill{{ID: "slow-echo", Tags: []string{"a"}}, {ID: "Web Search"}, {ID: "tool:search"}, {ID: "slow-echo"}}}
	cc, err := ClutchCard(a, "")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, cp := range cc.Capabilities {
		ids = append(ids, cp.ID)
	}
	if cc.AgentID != "agent:web-search-agent" || cc.Endpoints["a2a"].URL != "http://x/rpc" || !slices.Equal(ids, []string{"skill:slow-echo", "skill:Web-Search", "tool:search"}) {
		t.Errorf("mapped card: %s", mustJSON(t, cc))
	}
	if _, err := ClutchCard(&a2a.AgentCard{Name: "!!!"}, ""); !errors.Is(err, ErrCard) {
		t.Errorf("card without a usable name: %v", err)
	}
	if cc, _ := ClutchCard(&a2a.AgentCard{Name: "!!!"}, "agent:x"); cc == nil || cc.AgentID != "agent:x" {
		t.Errorf("AgentID option: %v", cc)
	}
}

func TestRemoteForward(t *testing.T) {
	b := newTestEnv(t, nil)
	c := newCaller(t, b.hs.URL+"/agents/echo", nil, 1)
	out, err := c.ask(t, "slow:3", "")
	if err != nil {
		t.Fatal(err)
	}
	res, err := router.ResultAs[Content](out)
	if err != nil || res.Text != "echo: slow:3" || out.Message.PayloadType != "" {
		t.Fatalf("result %+v %v (%s)", res, err, out.Message.Raw())
	}
	var progress []string
	for _, m := range c.Events(store.Query{TaskID: out.TaskID, TypePrefix: "task.progress"}) {
		progress = append(progress, string(m.Payload))
	}
	want := []string{`{"state":"TASK_STATE_WORKING"}`, `{"of":3,"step":1,"text":"step 1/3"}`, `{"of":3,"step":2,"text":"step 2/3"}`, `{"of":3,"step":3,"text":"step 3/3"}`}
	if !slices.Equal(progress, want) {
		t.Errorf("progress:\n got %v\nwant %v", progress, want)
	}
	// The remote task ran in B in the context of the caller's thread.
	reqs := inContext(b, out.Message.ThreadID)
	if len(reqs) != 1 || reqs[0].Meta[metaMessageID] == "" {
		t.Fatalf("remote requests: %d", len(reqs))
	}
	if id := reqs[0].Meta[metaMessageID]; id != c.Events(store.Query{TaskID: out.TaskID, TypePrefix: "task.request"})[0].ID {
		t.Errorf("the A2A message id is not the request's id: %v", id)
	}
}

func TestRemoteTyped(t *testing.T) {
	b := newTestEnv(t, nil)
	c := newCaller(t, b.hs.URL+"/agents/research", &RemoteOptions{Schemas: mustSchemas(t)}, 1)
	req := c.Request(schema.PayloadResearchQuery, schema.ResearchQuery{Query: "fintech"}, "skill:research")
	out, err := c.Run(req)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := router.ResultAs[schema.ResearchSummary](out)
	if err != nil || out.Message.PayloadType != schema.PayloadResearchSummary || sum.Title != "About fintech" {
		t.Errorf("typed result: %v %s", err, out.Message.Raw())
	}
}

func mustSchemas(t testing.TB) *schema.Registry {
	s, err := schema.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRemoteFailures(t *testing.T) {
	b := newTestEnv(t, nil)
	c := newCaller(t, b.hs.URL+"/agents/echo", nil, 1)
	for _, tc := range []struct {
		text string
		code protocol.Code
		msg  string
	}{
		{"fail:disk full", protocol.CodeToolFailed, "disk full"},
		{"deny:pii", protocol.CodePolicyDenied, "pii"},
		{"panic:x", protocol.CodeInternal, ""},
	} {
		out, err := c.ask(t, tc.text, "")
		var ep *protocol.ErrorPayload
		if !errors.As(err, &ep) || ep.Code != tc.code || (tc.msg != "" && ep.Message != tc.msg) || ep.Details["a2a_state"] != "TASK_STATE_FAILED" || out.Type != protocol.TypeTaskError {
			t.Errorf("%s: %v %+v", tc.text, err, ep)
		}
	}

}

// remoteTask waits for the one task B ran for the caller's task and
// returns its events' types once it has ended.
func waitRemoteEnd(t testing.TB, b *testEnv) []protocol.Type {
	t.Helper()
	req := b.Await(store.Query{TypePrefix: "task.request"}, nil)
	b.Await(store.Query{TaskID: req.TaskID}, func(m *protocol.Message) bool { return m.Type.Terminal() })
	return b.Types(req.TaskID)
}

func TestRemoteCancel(t *testing.T) {
	b := newTestEnv(t, nil)
	c := newCaller(t, b.hs.URL+"/agents/echo", nil, 1)
	req := c.Request(PayloadContent, Content{Text: "slow:500:20"})
	req.To = []protocol.Participant{{AgentID: "agent:echo"}}
	h, err := c.Router.Submit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	c.Await(store.Query{TaskID: h.TaskID(), TypePrefix: "task.progress"}, routertest.Count(2))
	h.Cancel("the user changed their mind")
	out, _ := c.Wait(h)
	if out.Type != protocol.TypeTaskCancel {
		t.Errorf("caller's task ended with %s", out.Type)
	}
	if types := waitRemoteEnd(t, b); types[len(types)-1] != protocol.TypeTaskCancel {
		t.Errorf("remote task: %v", types)
	}
}

func TestRemoteTimeout(t *testing.T) {
	t.Parallel() // waits for a max_runtime_sec of 1 s
	b := newTestEnv(t, nil)
	c := newCaller(t, b.hs.URL+"/agents/echo", &RemoteOptions{Limits: &protocol.Limits{MaxRuntimeSec: 1}}, 1)
	out, err := c.ask(t, "block:", "")
	if !errors.Is(err, protocol.CodeTimeout) || out.Type != protocol.TypeTaskTimeout {
		t.Errorf("timeout: %v %v", out.Type, err)
	}
	if types := waitRemoteEnd(t, b); types[len(types)-1] != protocol.TypeTaskCancel {
		t.Errorf("remote task: %v", types)
	}
}

// rpcMethod reads the JSON-RPC method of a request and restores its body.
func rpcMethod(r *http.Request) string {
	if r.Method != http.MethodPost {
		return ""
	}
	b, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(b))
	var m struct{ Method string }
	_ = json.Unmarshal(b, &m)
	return m.Method
}

// faulty answers status for the JSON-RPC methods in methods.
func faulty(status int, methods ...string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if slices.Contains(methods, rpcMethod(r)) {
				http.Error(w, "injected", status)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

func TestRemoteHTTPErrors(t *testing.T) {
	for _, tc := range []struct {
		status    int
		code      protocol.Code
		retryable bool
		attempts  int
	}{
		{503, protocol.CodeToolUnavailable, true, 2},
		{500, protocol.CodeToolUnavailable, true, 2},
		{429, protocol.CodeRateLimited, true, 2},
		{401, protocol.CodeUnauthorized, false, 1},
		{404, protocol.CodeNotFound, false, 1},
		{400, protocol.CodeToolFailed, false, 1},
	} {
		t.Run(fmt.Sprint(tc.status), func(t *testing.T) {
			b := newTestEnv(t, nil, faulty(tc.status, "SendStreamingMessage"))
			c := newCaller(t, b.hs.URL+"/agents/echo", nil, 2)
			out, err := c.ask(t, "hi", "")
			var ep *protocol.ErrorPayload
			if !errors.As(err, &ep) || ep.Code != tc.code || ep.Retryable != tc.retryable || ep.Details["http_status"] != float64(tc.status) && ep.Details["http_status"] != tc.status {
				t.Fatalf("got %v %+v", err, ep)
			}
			if out.Message.Attempt != tc.attempts {
				t.Errorf("attempts %d, want %d", out.Message.Attempt, tc.attempts)
			}
		})
	}
}

func TestRemoteUnreachable(t *testing.T) {
	b := newTestEnv(t, nil)
	c := newCaller(t, b.hs.URL+"/agents/echo", nil, 2)
	b.hs.Close()
	out, err := c.ask(t, "hi", "")
	var ep *protocol.ErrorPayload
	if !errors.As(err, &ep) || ep.Code != protocol.CodeToolUnavailable || !ep.Retryable || out.Message.Attempt != 2 {
		t.Errorf("unreachable peer: %v attempt %d", err, out.Message.Attempt)
	}
	// NewRemote on a dead address: a retryable ErrCard.
	_, err = NewRemote(context.Background(), b.hs.URL, &RemoteOptions{Logger: quiet, Egress: loopback})
	if !errors.Is(err, ErrCard) || !errors.Is(err, protocol.CodeToolUnavailable) {
		t.Errorf("NewRemote on a dead address: %v", err)
	}
	// A closed Remote fails tasks at once.
	c.rm.Close()
	if _, err := c.ask(t, "hi", ""); !errors.Is(err, protocol.CodeToolUnavailable) {
		t.Errorf("closed remote: %v", err)
	}
}

func TestRemoteBearerToken(t *testing.T) {
	auth := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPost && r.Header.Get("Authorization") != "Bearer s3cret" {
				http.Error(w, "no", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
	s3cret := clutchauth.Bearer(func(_ context.Context, tok string) (*clutchauth.Caller, error) {
		if tok != "s3cret" {
			return nil, clutchauth.ErrUnauthenticated
		}
		return &clutchauth.Caller{AgentID: tester, Scopes: []string{clutchauth.ScopeSubmit}}, nil
	})
	b := newTestEnv(t, &ServerOptions{Auth: s3cret}, auth)
	c := newCaller(t, b.hs.URL+"/agents/echo", &RemoteOptions{BearerToken: "s3cret"}, 1)
	if _, err := c.ask(t, "hi", ""); err != nil {
		t.Errorf("with the token: %v", err)
	}
	c2 := newCaller(t, b.hs.URL+"/agents/echo", &RemoteOptions{AgentID: "agent:echo2"}, 3)
	out, err := c2.ask(t, "hi", "")
	if !errors.Is(err, protocol.CodeUnauthorized) || out.Message.Attempt != 1 {
		t.Errorf("without the token: %v", err)
	}
}

// dropper cuts the first n SendStreamingMessage responses after their
// first `after` events, the way a proxy drops a connection; subscribe
// answers SubscribeToTask with that status when it is not 0.
type dropper struct {
	after      int
	n          atomic.Int32
	subscribes atomic.Int32
	gets       atomic.Int32
	subscribe  int
}

func (d *dropper) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch rpcMethod(r) {
		case "SendStreamingMessage":
			if d.n.Add(-1) >= 0 {
				next.ServeHTTP(&cutWriter{ResponseWriter: w, left: d.after}, r)
				return
			}
		case "SubscribeToTask":
			d.subscribes.Add(1)
			if d.subscribe != 0 {
				http.Error(w, "injected", d.subscribe)
				return
			}
		case "GetTask":
			d.gets.Add(1)
		}
		next.ServeHTTP(w, r)
	})
}

type cutWriter struct {
	http.ResponseWriter
	mu   sync.Mutex
	left int
}

func (w *cutWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytes.HasPrefix(p, []byte("data:")) {
		if w.left == 0 {
			panic(http.ErrAbortHandler) // the connection drops
		}
		w.left--
	}
	return w.ResponseWriter.Write(p)
}

func (w *cutWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func TestRemoteResubscribe(t *testing.T) {
	d := &dropper{after: 2}
	d.n.Store(1)
	b := newTestEnv(t, nil, d.middleware)
	c := newCaller(t, b.hs.URL+"/agents/echo", nil, 1)
	out, err := c.ask(t, "slow:4:30", "")
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := router.ResultAs[Content](out); res.Text != "echo: slow:4:30" {
		t.Errorf("result %+v", res)
	}
	if d.subscribes.Load() == 0 {
		t.Error("the dropped stream was not re-subscribed")
	}
	if len(b.Events(store.Query{TypePrefix: "task.request"})) != 1 {
		t.Error("the task was sent twice")
	}
}

func TestRemotePollAfterDrop(t *testing.T) {
	d := &dropper{after: 1, subscribe: http.StatusServiceUnavailable}
	d.n.Store(1)
	b := newTestEnv(t, nil, d.middleware)
	c := newCaller(t, b.hs.URL+"/agents/echo", &RemoteOptions{MaxResubscribes: 1}, 1)
	out, err := c.ask(t, "slow:3:30", "")
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := router.ResultAs[Content](out); res.Text != "echo: slow:3:30" {
		t.Errorf("result %+v", res)
	}
	if d.subscribes.Load() != 1 || d.gets.Load() == 0 {
		t.Errorf("subscribes %d, gets %d: want one failed re-subscription, then polling", d.subscribes.Load(), d.gets.Load())
	}
}

func TestRemoteWithoutStreaming(t *testing.T) {
	b := newTestEnv(t, &ServerOptions{DisableStreaming: true})
	c := newCaller(t, b.hs.URL+"/agents/echo", nil, 1)
	out, err := c.ask(t, "slow:2", "")
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := router.ResultAs[Content](out); res.Text != "echo: slow:2" {
		t.Errorf("result %+v", res)
	}
	if n := len(c.Events(store.Query{TaskID: out.TaskID, TypePrefix: "task.progress"})); n != 0 {
		t.Errorf("%d progress events without a stream", n)
	}
}

func TestRemoteRefusesA2A03(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"name":"old","description":"d","url":"http://127.0.0.1:1/","protocolVersion":"0.3.0","version":"1","capabilities":{},"defaultInputModes":[],"defaultOutputModes":[],"skills":[]}`)
	}))
	defer hs.Close()
	_, err := NewRemote(context.Background(), hs.URL, &RemoteOptions{Logger: quiet, Egress: loopback})
	if !errors.Is(err, ErrCard) || !errors.Is(err, protocol.CodeUnsupportedVersion) {
		t.Errorf("0.3 card: %v", err)
	}
	for _, bad := range []struct {
		url  string
		opts *RemoteOptions
	}{{"ftp://x", nil}, {hs.URL, &RemoteOptions{AgentID: "ken"}}, {hs.URL, &RemoteOptions{PollInterval: -1}},
		{hs.URL, &RemoteOptions{Security: &protocol.CardSecurity{Network: "everywhere"}}},
		{hs.URL, &RemoteOptions{HTTPClient: &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) { return nil, nil })}}}} {
		if _, err := NewRemote(context.Background(), bad.url, bad.opts); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s %+v: %v", bad.url, bad.opts, err)
		}
	}
}

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err       error
		code      protocol.Code
		retryable bool
	}{
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, protocol.CodeToolUnavailable, true},
		{fmt.Errorf("read: %w", io.ErrUnexpectedEOF), protocol.CodeToolUnavailable, true},
		{&statusError{code: 502, status: "502 Bad Gateway"}, protocol.CodeToolUnavailable, true},
		{&statusError{code: 403, status: "403 Forbidden"}, protocol.CodeUnauthorized, false},
		{a2a.NewError(a2a.ErrInternalError, "x"), protocol.CodeToolUnavailable, true},
		{a2a.NewError(a2a.ErrServerError, "x"), protocol.CodeToolUnavailable, true},
		{a2a.NewError(a2a.ErrTaskNotFound, "x"), protocol.CodeNotFound, false},
		{a2a.NewError(a2a.ErrInvalidParams, "x"), protocol.CodeInvalidField, false},
		{a2a.NewError(a2a.ErrVersionNotSupported, "x"), protocol.CodeUnsupportedVersion, false},
		{a2a.NewError(a2a.ErrMethodNotFound, "x"), protocol.CodeUnsupportedTask, false},
		{errors.New("failed to decode response"), protocol.CodeToolFailed, false},
	} {
		ep := classify(tc.err, "http://peer")
		if ep.Code != tc.code || ep.Retryable != tc.retryable || ep.Details["remote"] != "http://peer" {
			t.Errorf("%v: %+v", tc.err, ep)
		}
	}
}

// TestRemoteContexts: one contextId per Clutch thread — the thread id,
// or the id the agent gave the thread — and every request starts a new
// remote task (a waiting one is answered through the task's question).
func TestRemoteContexts(t *testing.T) {
	rm := &Remote{contexts: map[string]string{}}
	req := &protocol.Message{ID: "msg_1", ThreadID: "thr_1", PayloadType: PayloadContent, Payload: json.RawMessage(`{"text":"hi"}`)}
	if msg := rm.outbound(req); msg.ContextID != "thr_1" || msg.TaskID != "" || msg.ID != "msg_1" || textOf(msg.Parts) != "hi" {
		t.Fatalf("first message: %s", mustJSON(t, msg))
	}
	run := &remoteRun{rm: rm, thread: "thr_1", taskID: "remote-task"}
	run.learnContext("thr_1") // the agent kept ours: nothing to remember
	if len(rm.contexts) != 0 {
		t.Errorf("contexts %v", rm.contexts)
	}
	run.learnContext("ctx-from-agent")
	if msg := rm.outbound(req); msg.ContextID != "ctx-from-agent" || msg.TaskID != "" {
		t.Errorf("next message: %s", mustJSON(t, msg))
	}
	// The map is bounded.
	for i := range maxRemoteContexts + 10 {
		(&remoteRun{rm: rm, thread: fmt.Sprint("thr_", i)}).learnContext(fmt.Sprint("c", i))
	}
	if len(rm.contexts) > maxRemoteContexts {
		t.Errorf("%d contexts remembered", len(rm.contexts))
	}
}

// inContext returns the task.requests of e that came in with the A2A
// contextId (or simple-surface sessionId) ctxID, of whichever caller.
func inContext(e *testEnv, ctxID string) []*protocol.Message {
	var out []*protocol.Message
	for _, m := range e.Events(store.Query{TypePrefix: "task.request"}) {
		if m.Meta[metaContextID] == ctxID {
			out = append(out, m)
		}
	}
	return out
}
