package gateway

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// The API keys of the test callers.
const (
	keyAlice = "alice-key-0123456789abcdef" // submit
	keyBob   = "bob-key-0123456789abcdefgh" // submit
	keyAdmin = "admin-key-0123456789abcdef" // admin (everything)
	keyAudit = "audit-key-0123456789abcdef" // read:all, agents
	keyNone  = "none-key-0123456789abcdefg" // no scope
)

func testAuth(t testing.TB) auth.Authenticator {
	t.Helper()
	a, err := auth.APIKeys(map[string]auth.Caller{
		keyAlice: {AgentID: "agent:alice", Scopes: []string{auth.ScopeSubmit}},
		keyBob:   {AgentID: "agent:bob", Scopes: []string{auth.ScopeSubmit}},
		keyAdmin: {AgentID: "agent:admin", Scopes: []string{auth.ScopeAdmin}},
		keyAudit: {AgentID: "agent:audit", Scopes: []string{auth.ScopeReadAll, auth.ScopeAgents}},
		keyNone:  {AgentID: "agent:none"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// env is a router with an echo agent behind a gateway on a real HTTP
// server.
type env struct {
	t   testing.TB
	st  store.Store
	r   *router.Router
	gw  *Gateway
	srv *httptest.Server
	// release unblocks the handlers of "block" requests.
	release chan struct{}
}

type envOptions struct {
	store    func(testing.TB) store.Store // the store, when set (else memstore, or bolt)
	bolt     bool
	strict   bool // a schema registry that refuses unknown payload types
	gw       *Options
	observer router.Observer // the router's, when set
}

func newEnv(t testing.TB, o *envOptions) *env {
	t.Helper()
	if o == nil {
		o = &envOptions{}
	}
	ctx := context.Background()
	var st store.Store
	var err error
	if o.store != nil {
		st = o.store(t)
	} else if o.bolt {
		st, err = boltstore.Open(filepath.Join(t.TempDir(), "events.db"), &boltstore.Options{NoSync: true})
	} else {
		st, err = memstore.New(nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Open(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := schema.New(&schema.Options{Permissive: !o.strict})
	if err != nil {
		t.Fatal(err)
	}
	r, err := router.New(st, reg, &router.Options{Validator: schemas, Logger: slog.New(slog.DiscardHandler), Observer: o.observer})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, st: st, r: r, release: make(chan struct{})}
	card := &protocol.AgentCard{V: protocol.Version, AgentID: "agent:echo", Capabilities: []protocol.Capability{{ID: "skill:echo"}}}
	err = r.Register(ctx, card, func(ctx context.Context, task *router.Task) (*router.Result, error) {
		var in struct {
			Block    bool   `json:"block"`
			Fail     string `json:"fail"`
			Delegate bool   `json:"delegate"`
		}
		_ = json.Unmarshal(task.Request().Payload, &in)
		if in.Delegate {
			sub, err := task.NewSubtask("", json.RawMessage(`{"sub":true}`))
			if err != nil {
				return nil, err
			}
			sub.Requires = []string{"skill:help"} // an agent the test registers
			if _, err := task.Delegate(ctx, sub); err != nil {
				return nil, err
			}
		}
		if in.Block {
			select {
			case <-e.release:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		if in.Fail != "" {
			return nil, router.Fail(protocol.CodeToolFailed, in.Fail, false, nil)
		}
		return &router.Result{Payload: json.RawMessage(task.Request().Payload)}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last first: the server closes, then the router.
	t.Cleanup(func() {
		select {
		case <-e.release:
		default:
			close(e.release)
		}
		r.Close()
		st.Close()
	})
	e.serve(o.gw)
	return e
}

// serve puts a gateway with opts over e's router on a new server.
func (e *env) serve(opts *Options) {
	t := e.t
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	if opts.Auth == nil {
		opts.Auth = testAuth(t)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	gw, err := New(e.r, opts)
	if err != nil {
		t.Fatal(err)
	}
	e.gw = gw
	e.srv = httptest.NewServer(gw)
	srv := e.srv
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
}

// newEnvOver returns e with another gateway (opts) over the same router.
func newEnvOver(t testing.TB, e *env, opts *Options) *env {
	t.Helper()
	e2 := *e
	e2.serve(opts)
	return &e2
}

// do sends a request with the key (none when "") and returns the status
// and body.
func (e *env) do(method, path, key string, body string) (int, []byte) {
	e.t.Helper()
	resp := e.resp(method, path, key, body, nil)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, b
}

func (e *env) resp(method, path, key string, body string, hdr http.Header) *http.Response {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

// getJSON GETs path as key, wants want and decodes the body into v.
func (e *env) getJSON(path, key string, want int, v any) {
	e.t.Helper()
	status, body := e.do("GET", path, key, "")
	if status != want {
		e.t.Fatalf("GET %s: %d %s; want %d", path, status, body, want)
	}
	if v != nil {
		if err := json.Unmarshal(body, v); err != nil {
			e.t.Fatalf("GET %s: %v in %s", path, err, body)
		}
	}
}

// submit posts a submission as key and returns the answer, wanting 202.
func (e *env) submit(key, body string) Accepted {
	e.t.Helper()
	status, b := e.do("POST", "/v1/messages", key, body)
	if status != http.StatusAccepted {
		e.t.Fatalf("POST /v1/messages %s: %d %s", body, status, b)
	}
	var a Accepted
	if err := json.Unmarshal(b, &a); err != nil {
		e.t.Fatal(err)
	}
	return a
}

// runTask submits an echo task as key and waits for it to end.
func (e *env) runTask(key, payload string) Accepted {
	e.t.Helper()
	a := e.submit(key, `{"type":"task.request","requires":["skill:echo"],"payload":`+payload+`}`)
	e.waitEnded(a.TaskID)
	return a
}

// waitEnded waits for the task's terminal event.
func (e *env) waitEnded(taskID string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10e9)
	defer cancel()
	for ev, err := range e.st.Follow(ctx, store.Query{TaskID: taskID}) {
		if err != nil {
			e.t.Fatal(err)
		}
		m, err := ev.Message()
		if err != nil {
			e.t.Fatal(err)
		}
		if protocol.EndsTask(m) {
			return
		}
	}
	e.t.Fatalf("task %s did not end", taskID)
}

type apiError struct {
	Error struct {
		Code      string         `json:"code"`
		Message   string         `json:"message"`
		Retryable bool           `json:"retryable"`
		Details   map[string]any `json:"details"`
	} `json:"error"`
}

// wantError checks an error answer's status and code.
func wantError(t testing.TB, what string, status int, body []byte, wantStatus int, wantCode string) apiError {
	t.Helper()
	var e apiError
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("%s: %d, body %q is not an error body: %v", what, status, body, err)
	}
	if status != wantStatus || e.Error.Code != wantCode {
		t.Fatalf("%s: %d %s; want %d %s", what, status, body, wantStatus, wantCode)
	}
	return e
}

type eventsPage struct {
	Events []struct {
		Seq     uint64          `json:"seq"`
		Time    string          `json:"time"`
		Message json.RawMessage `json:"message"`
	} `json:"events"`
	NextAfter uint64 `json:"next_after"`
}

func (p eventsPage) types(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, ev := range p.Events {
		m, err := protocol.Decode(ev.Message)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(m.Type))
	}
	return out
}

func itoa(v uint64) string { return strconv.FormatUint(v, 10) }
