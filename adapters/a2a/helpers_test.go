package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/internal/backends"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
)

func TestMain(m *testing.M) { os.Exit(backends.Main(m)) }

var quiet = slog.New(slog.DiscardHandler)

// echo is the Go twin of the JS peer's agent: its behaviour depends on the
// text of the request (see testdata/jspeer/server.mjs).
//
//	fail:<why>     task.error TOOL_FAILED <why>
//	input:<q>      task.error INPUT_REQUIRED <q>, which ends the task (Task.Ask keeps one open)
//	slow:<n>[:ms]  n task.progress {"step": i, "of": n} every ms (default 20), then the echo
//	block:         waits for its context to end
//	panic:         panics
//	deny:<why>     task.error POLICY_DENIED
//	anything else  task.result Content{"echo: <text>", the data parts}
func echo(ctx context.Context, t *router.Task) (*router.Result, error) {
	var text string
	var data []json.RawMessage
	if t.Request().PayloadType == PayloadContent {
		c, err := router.Input[Content](t)
		if err != nil {
			return nil, err
		}
		text, data = c.Text, c.Data
	} else {
		text = string(t.Request().Payload)
	}
	cmd, arg, _ := strings.Cut(text, ":")
	switch cmd {
	case "fail":
		return nil, router.Fail(protocol.CodeToolFailed, arg, false, map[string]any{"why": arg})
	case "input":
		return nil, router.Fail(protocol.CodeInputRequired, arg, false, nil)
	case "deny":
		return nil, router.Fail(protocol.CodePolicyDenied, arg, false, map[string]any{"rule": "no-" + arg})
	case "panic":
		panic("secret internal detail " + arg)
	case "block":
		<-ctx.Done()
		return nil, ctx.Err()
	case "ask":
		// Asks the requester (docs/protocol.md §2.7): a choice when arg
		// lists them ("a|b"), else free text.
		q := protocol.Question{Text: "Which one?"}
		if arg != "" {
			q.Choices = strings.Split(arg, "|")
		}
		v, err := router.AskAs[string](ctx, t, q)
		if err != nil {
			return nil, err
		}
		text = "answered " + v
	case "slow":
		ns, ms, _ := strings.Cut(arg, ":")
		n, _ := strconv.Atoi(ns)
		d := 20 * time.Millisecond
		if v, err := strconv.Atoi(ms); err == nil {
			d = time.Duration(v) * time.Millisecond
		}
		for i := 1; i <= n; i++ {
			select {
			case <-time.After(d):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if err := t.Progress(ctx, map[string]any{"step": i, "of": n, "text": fmt.Sprintf("step %d/%d", i, n)}); err != nil {
				return nil, err
			}
		}
	}
	return &router.Result{Payload: Content{Text: "echo: " + text, Data: data}}, nil
}

// research answers research.query.v1 with research.summary.v1.
func research(ctx context.Context, t *router.Task) (*router.Result, error) {
	q, err := router.Input[schema.ResearchQuery](t)
	if err != nil {
		return nil, router.Fail(protocol.CodeValidation, "want research.query.v1: "+err.Error(), false, nil)
	}
	return &router.Result{PayloadType: schema.PayloadResearchSummary, Payload: schema.ResearchSummary{
		Title: "About " + q.Query, Findings: []string{q.Query + " grows"}, Citations: []string{"https://example.com/" + q.Query},
	}}, nil
}

func card(id string, limits *protocol.Limits, caps ...string) *protocol.AgentCard {
	c := &protocol.AgentCard{V: protocol.Version, AgentID: id, Capabilities: []protocol.Capability{},
		Display: &protocol.Display{Name: strings.TrimPrefix(id, "agent:"), Desc: "test agent " + id}, Limits: limits}
	for _, cp := range caps {
		c.Capabilities = append(c.Capabilities, protocol.Capability{ID: cp, Tags: []string{"test"}})
	}
	return c
}

// testEnv is a router with the echo and research agents served over HTTP
// by a Server on 127.0.0.1.
type testEnv struct {
	*routertest.Env
	srv *Server
	hs  *httptest.Server
}

func newTestEnv(t testing.TB, opts *ServerOptions, mw ...func(http.Handler) http.Handler) *testEnv {
	t.Helper()
	return newTestEnvOn(t, nil, opts, mw...)
}

// newTestEnvOn is newTestEnv over st (a memstore when nil).
func newTestEnvOn(t testing.TB, st store.Store, opts *ServerOptions, mw ...func(http.Handler) http.Handler) *testEnv {
	t.Helper()
	env := routertest.New(t, &routertest.Options{Router: router.Options{MaxAttempts: 1}, Store: st})
	env.Register(card("agent:echo", nil, "skill:echo"), echo)
	env.Register(card("agent:research", nil, "skill:research"), research)
	env.Register(card("agent:quick", &protocol.Limits{MaxRuntimeSec: 1}, "skill:quick"), echo)
	return serve(t, env, opts, mw...)
}

// The callers of the tests: tester (the default of every client),
// other (another tenant) and ops (auth.ScopeAdmin).
const (
	testKey  = "tester-key-0123456789abcdef"
	otherKey = "other-key-0123456789abcdef"
	opsKey   = "ops-key-0123456789abcdef"
	tester   = "agent:tester"
)

var testAuth = func() auth.Authenticator {
	a, err := auth.APIKeys(map[string]auth.Caller{
		testKey:  {AgentID: tester, Scopes: []string{auth.ScopeSubmit, auth.ScopeAgents}},
		otherKey: {AgentID: "agent:other", Scopes: []string{auth.ScopeSubmit, auth.ScopeAgents}},
		opsKey:   {AgentID: "agent:ops", Scopes: []string{auth.ScopeAdmin}},
	})
	if err != nil {
		panic(err)
	}
	return a
}()

// testOptions fills what every test Server needs: testAuth, the three
// agents of newTestEnv exposed, a quiet logger.
func testOptions(opts *ServerOptions) *ServerOptions {
	var o ServerOptions
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = quiet
	}
	if o.Auth == nil {
		o.Auth = testAuth
	}
	if o.Expose == nil {
		o.Expose = []string{"agent:echo", "agent:research", "agent:quick"}
	}
	return &o
}

// keyTransport sends an API key on every request that has no
// credentials of its own.
type keyTransport struct {
	key  string
	next http.RoundTripper
}

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if k.key != "" && r.Header.Get("Authorization") == "" && r.Header.Get("X-API-Key") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+k.key)
	}
	return k.next.RoundTrip(r)
}

func serve(t testing.TB, env *routertest.Env, opts *ServerOptions, mw ...func(http.Handler) http.Handler) *testEnv {
	t.Helper()
	o := *testOptions(opts)
	srv, err := NewServer(env.Router, &o)
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = srv
	for _, m := range mw {
		h = m(h)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return &testEnv{Env: env, srv: srv, hs: hs}
}

// client returns an a2a-go client for the card at base+path's well-known
// card ("" for the team).
func (e *testEnv) client(t testing.TB, agent string) *a2aclient.Client {
	t.Helper()
	base := e.hs.URL
	if agent != "" {
		base += AgentsPath + "/" + agent
	}
	return newSDKClient(t, base)
}

func newSDKClient(t testing.TB, base string) *a2aclient.Client {
	t.Helper()
	return newSDKClientAs(t, base, testKey)
}

// newSDKClientAs is newSDKClient sending key ("" for none).
func newSDKClientAs(t testing.TB, base, key string) *a2aclient.Client {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	hc := &http.Client{Transport: keyTransport{key, tr}}
	t.Cleanup(tr.CloseIdleConnections)
	resp, err := hc.Get(base + CardPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var c a2a.AgentCard
	if err := json.NewDecoder(resp.Body).Decode(&c); err != nil {
		t.Fatal(err)
	}
	cl, err := a2aclient.NewFromCard(context.Background(), &c, a2aclient.WithDefaultsDisabled(), a2aclient.WithJSONRPCTransport(hc))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

func textMsg(text string) *a2a.SendMessageRequest {
	return &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text))}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// taskOf asserts a send result is a Task.
func taskOf(t testing.TB, res a2a.SendMessageResult, err error) *a2a.Task {
	t.Helper()
	if err != nil {
		t.Fatalf("send: %v", err)
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		t.Fatalf("send returned %T, want *a2a.Task", res)
	}
	return task
}

// statusData returns the data part of kind kind of a status message.
func statusData(t testing.TB, st a2a.TaskStatus, kind string) map[string]any {
	t.Helper()
	if st.Message == nil {
		t.Fatalf("status %s has no message", st.State)
	}
	for _, p := range st.Message.Parts {
		if k, _ := p.Metadata[MetaKind].(string); k == kind {
			m, _ := p.Data().(map[string]any)
			return m
		}
	}
	t.Fatalf("status %s has no %s data part: %+v", st.State, kind, st.Message.Parts)
	return nil
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// httpDo sends a request as tester unless header names Authorization or
// X-API-Key (an empty value sends none).
func httpDo(t testing.TB, method, url, body string, header ...string) (int, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	key := testKey
	for i := 0; i+1 < len(header); i += 2 {
		if h := http.CanonicalHeaderKey(header[i]); h == "Authorization" || h == "X-Api-Key" {
			key = ""
		}
		if header[i+1] != "" {
			req.Header.Set(header[i], header[i+1])
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: keyTransport{key, tr}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func contextWithCancel(t testing.TB) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctxT(t))
	t.Cleanup(cancel)
	return ctx, cancel
}

// send sends req with SendMessage and returns the Task it answers.
func send(t testing.TB, cl *a2aclient.Client, req *a2a.SendMessageRequest) *a2a.Task {
	t.Helper()
	res, err := cl.SendMessage(ctxT(t), req)
	return taskOf(t, res, err)
}
