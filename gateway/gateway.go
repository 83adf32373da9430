package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/internal/httpjson"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/telemetry"
)

// Defaults of a zero Options, and the page sizes of the API (limit=).
const (
	DefaultMaxBodyBytes = 1 << 20
	DefaultHeartbeat    = 15 * time.Second
	DefaultStreamBuffer = 1024
	// DefaultStreamBufferBytes is the default of Options.StreamBufferBytes.
	DefaultStreamBufferBytes = 8 << 20
	DefaultSlowTimeout       = 10 * time.Second
	DefaultWriteTimeout      = 30 * time.Second
	DefaultPageLimit         = 500
	MaxPageLimit             = 5000
	// MaxPageBytes bounds the bytes of the events of one page of
	// /v1/.../events: a page that would pass it ends early (with at least
	// one event) and next_after goes on from its last event.
	MaxPageBytes     = 4 << 20
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// Options configures a Gateway. Nil is not allowed (Auth is required);
// zero fields take defaults.
type Options struct {
	// Auth identifies the caller of every /v1 request (required: New
	// refuses a nil one; auth.Anonymous is the explicit opt-in to
	// anonymous callers). It is the one authenticator of package auth, the
	// same as the host's other surfaces use.
	Auth auth.Authenticator
	// Limits are the per-caller rate limit, the bound on requests in
	// flight (streams included, for as long as they last) and the body
	// limit applied with Auth; nil means none (see auth.Options).
	Limits *auth.Options
	// CORS lists the origins ("https://app.example.com") whose browsers
	// may call the API from another origin. None (the default) sends no
	// CORS headers, so browsers allow only same-origin calls. "*" is not
	// accepted: name the origins.
	CORS []string
	// UI serves the web UI at "/" and "/ui/..." — ui.Handler(nil) of
	// package gateway/ui, the embedded UI, which reaches the API at "v1"
	// next to it; nil serves none (only the API and /healthz). It is not
	// behind the gateway's authentication: the page holds no data and
	// asks for an API key.
	UI http.Handler
	// AGUI is mounted at /v1/agui and /v1/agui/ behind the gateway's
	// authentication and limits (the caller is in the request's context,
	// auth.FromContext), with the prefix stripped — agui.New(r, opts) of
	// package gateway/agui; nil mounts nothing.
	AGUI http.Handler
	// Rules is mounted at /v1/rules and /v1/rules/ the same way (behind
	// the authentication and limits, the caller in the request's context,
	// the prefix stripped) — rulesapi.New(lib, opts) of package
	// github.com/clutchprotocol/clutch/rules/rulesapi, the review surface
	// of a rules library; nil mounts nothing.
	Rules http.Handler
	// Subscribers, when set, is called when a live stream starts — "sse"
	// (GET /v1/stream), "ws" (GET /v1/ws) or "agui" (a request to the
	// AGUI handler, which streams) — and the func it returns when that
	// stream ends. (*telemetry.Telemetry).Subscribed fits, counting them
	// as the clutch.stream.subscribers metric.
	Subscribers func(stream string) (done func())
	// MaxBodyBytes bounds a request body; DefaultMaxBodyBytes when 0. A
	// bigger one gets 413.
	MaxBodyBytes int64
	// Heartbeat is the interval of keep-alive comments (SSE) and pings
	// (WebSocket) on a live stream; DefaultHeartbeat when 0, none when
	// negative.
	Heartbeat time.Duration
	// StreamBuffer is how many events a stream holds for its client;
	// DefaultStreamBuffer when 0.
	StreamBuffer int
	// StreamBufferBytes bounds the bytes of the events a stream holds for
	// its client; DefaultStreamBufferBytes when 0. A client past it is cut
	// off at once as a slow consumer (ErrSlowConsumer), so a stream costs
	// at most this much memory whatever its events weigh.
	StreamBufferBytes int64
	// SlowTimeout is how long a stream waits for its client to take an
	// event while its buffer is full before it cuts the client off as a
	// slow consumer; DefaultSlowTimeout when 0.
	SlowTimeout time.Duration
	// WriteTimeout bounds each write to a stream's client;
	// DefaultWriteTimeout when 0.
	WriteTimeout time.Duration
	// Logger receives internal errors, which are never sent to clients;
	// slog.Default() when nil.
	Logger *slog.Logger
}

func (o *Options) setDefaults() error {
	if o.Auth == nil {
		return coded.Wrap(ErrInvalidOptions, "Auth is required (auth.Anonymous allows anonymous callers explicitly)", nil)
	}
	if o.MaxBodyBytes < 0 || o.StreamBuffer < 0 || o.StreamBufferBytes < 0 || o.SlowTimeout < 0 || o.WriteTimeout < 0 {
		return coded.Wrap(ErrInvalidOptions, "MaxBodyBytes, StreamBuffer, StreamBufferBytes, SlowTimeout and WriteTimeout must not be negative", nil)
	}
	for _, origin := range o.CORS {
		if origin == "*" || !strings.Contains(origin, "://") || strings.HasSuffix(origin, "/") {
			return coded.Wrap(ErrInvalidOptions, "CORS origin "+origin+" must be scheme://host[:port], without a path", nil)
		}
	}
	o.CORS = slices.Clone(o.CORS)
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Heartbeat == 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.StreamBufferBytes == 0 {
		o.StreamBufferBytes = DefaultStreamBufferBytes
	}
	if o.StreamBuffer == 0 {
		o.StreamBuffer = DefaultStreamBuffer
	}
	if o.SlowTimeout == 0 {
		o.SlowTimeout = DefaultSlowTimeout
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return nil
}

// Gateway is the HTTP API of a router, an http.Handler. Mount it at the
// root of a server or under a prefix with http.StripPrefix.
type Gateway struct {
	r     *router.Router
	st    store.Store
	opts  Options
	guard *auth.Guard
	ids   *auth.Deriver // the runs of Idempotency-Keys (docs/protocol.md §6.7)
	mux   *http.ServeMux
	api   *http.ServeMux
}

var _ http.Handler = (*Gateway)(nil)

// New returns the gateway of r. opts is required for its Auth; the other
// fields take defaults. An unusable option gives an error matching
// ErrInvalidOptions.
func New(r *router.Router, opts *Options) (*Gateway, error) {
	if r == nil {
		return nil, coded.Wrap(ErrInvalidOptions, "a router is required", nil)
	}
	if opts == nil {
		return nil, coded.Wrap(ErrInvalidOptions, "Options with Auth are required", nil)
	}
	o := *opts
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	guard, err := auth.NewGuard(o.Auth, o.Limits)
	if err != nil {
		return nil, coded.Wrap(ErrInvalidOptions, "Limits", err)
	}
	ids := auth.NewDeriver(r.Store())
	g := &Gateway{r: r, st: r.Store(), opts: o, guard: guard, ids: ids, mux: http.NewServeMux(), api: http.NewServeMux()}
	g.routes()
	return g, nil
}

func (g *Gateway) routes() {
	a := g.api
	a.HandleFunc("GET /v1/agents", g.serveAgents)
	a.HandleFunc("GET /v1/store", g.serveStore)
	a.HandleFunc("GET /v1/runs", g.serveList(false))
	a.HandleFunc("GET /v1/threads", g.serveList(true))
	a.HandleFunc("GET /v1/runs/{id}/events", g.serveEvents(auth.KindRun))
	a.HandleFunc("GET /v1/threads/{id}/events", g.serveEvents(auth.KindThread))
	a.HandleFunc("GET /v1/tasks/{id}/events", g.serveEvents(auth.KindTask))
	a.HandleFunc("GET /v1/runs/{id}/tree", g.serveTree(auth.KindRun))
	a.HandleFunc("GET /v1/tasks/{id}/tree", g.serveTree(auth.KindTask))
	a.HandleFunc("GET /v1/runs/{id}/decisions", g.serveDecisions)
	a.HandleFunc("GET /v1/events/{id}", g.serveEvent)
	a.HandleFunc("POST /v1/messages", g.serveSubmit)
	a.HandleFunc("GET /v1/questions", g.serveQuestions)
	a.HandleFunc("POST /v1/questions/{id}/answer", g.serveAnswer)
	a.HandleFunc("POST /v1/tasks/{id}/cancel", g.serveCancel)
	a.HandleFunc("POST /v1/tasks/{id}/retry", g.serveRetry)
	a.HandleFunc("GET /v1/artifacts/{ref}", g.serveArtifact)
	a.HandleFunc("GET /v1/stream", g.serveSSE)
	a.HandleFunc("GET /v1/ws", g.serveWS)
	if g.opts.AGUI != nil {
		g.mount("/v1/agui", g.opts.AGUI, "agui")
	}
	if g.opts.Rules != nil {
		g.mount("/v1/rules", g.opts.Rules, "")
	}
	a.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		g.writeError(w, r, coded.Wrap(ErrNotFound, r.Method+" "+r.URL.Path+" is not an endpoint of this API", nil))
	})

	g.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		_, _ = w.Write([]byte("ok"))
	})
	g.mux.Handle("/v1/", http.HandlerFunc(g.serveAPI))
	if g.opts.UI != nil {
		g.mux.Handle("/", g.opts.UI)
	}
}

// mount serves h at prefix and under it, with the prefix stripped (both
// with and without the slash: a POST must not be redirected). A stream
// names h's requests as live streams for Options.Subscribers.
func (g *Gateway) mount(prefix string, h http.Handler, stream string) {
	inner := http.StripPrefix(prefix, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "" {
			r.URL.Path = "/"
		}
		if stream != "" {
			defer g.subscribed(stream)()
		}
		h.ServeHTTP(w, r)
	}))
	g.api.Handle(prefix, inner)
	g.api.Handle(prefix+"/", inner)
}

// subscribed reports a live stream to Options.Subscribers; the func it
// returns reports its end.
func (g *Gateway) subscribed(stream string) (done func()) {
	if g.opts.Subscribers == nil {
		return func() {}
	}
	if done := g.opts.Subscribers(stream); done != nil {
		return done
	}
	return func() {}
}

// ServeHTTP implements http.Handler.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mux.ServeHTTP(w, r)
}

// serveAPI authenticates and admits an API request, then serves it.
func (g *Gateway) serveAPI(w http.ResponseWriter, r *http.Request) {
	if g.cors(w, r) {
		return // a preflight, answered
	}
	// EventSource and browser WebSockets cannot set headers: the streams
	// take the key as ?access_token= (and only they do).
	if tok := r.URL.Query().Get("access_token"); tok != "" && (r.URL.Path == "/v1/stream" || r.URL.Path == "/v1/ws") &&
		r.Header.Get("Authorization") == "" && r.Header.Get("X-API-Key") == "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+tok)
	}
	c, release, err := g.guard.Admit(r)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	defer release()
	if r.Body != nil {
		limit := g.opts.MaxBodyBytes
		if l := g.opts.Limits; l != nil && l.MaxBodyBytes > 0 {
			limit = min(limit, l.MaxBodyBytes)
		}
		r.Body = http.MaxBytesReader(w, r.Body, limit)
	}
	ctx := auth.NewContext(r.Context(), c)
	if r.Header.Get("traceparent") != "" {
		// The caller's W3C trace context: what it submits continues it.
		ctx = telemetry.Extract(ctx, r.Header)
	}
	g.api.ServeHTTP(w, r.WithContext(ctx))
}

// cors sets the CORS headers for an allowed origin and answers a
// preflight; it reports whether the request was a preflight.
func (g *Gateway) cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" || len(g.opts.CORS) == 0 {
		return false
	}
	h := w.Header()
	h.Add("Vary", "Origin")
	if !slices.Contains(g.opts.CORS, origin) {
		return r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" && deny(w)
	}
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Expose-Headers", "Retry-After, WWW-Authenticate")
	if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
		h.Set("Access-Control-Allow-Methods", "GET, POST")
		h.Set("Access-Control-Allow-Headers", "Authorization, X-API-Key, Content-Type, Last-Event-ID")
		h.Set("Access-Control-Max-Age", "600")
		w.WriteHeader(http.StatusNoContent)
		return true
	}
	return false
}

// deny answers a preflight from an origin that is not allowed: no CORS
// headers, so the browser refuses the call.
func deny(w http.ResponseWriter) bool {
	w.WriteHeader(http.StatusNoContent)
	return true
}

// The messages of a 401: a request without a key, and one whose key (or
// token, or certificate) was not accepted (auth.ErrNotAccepted). The
// first tells the clutch CLI's user where a key goes.
const (
	msgNoKey          = "no API key given (set --key or CLUTCH_API_KEY, or send Authorization: Bearer KEY)"
	msgKeyNotAccepted = "API key not accepted"
)

// errorBody is the body of every error answer.
type errorBody struct {
	Error wireError `json:"error"`
}

type wireError struct {
	Code      protocol.Code  `json:"code"`
	Message   string         `json:"message"`
	Retryable bool           `json:"retryable"`
	Details   map[string]any `json:"details,omitempty"`
}

// writeError answers err with the status of its protocol code
// (auth.Status), the headers that go with it and the error body. An
// error without a code of its own (INTERNAL) is logged and answered
// without its text.
func (g *Gateway) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		err = coded.Wrap(ErrTooLarge, "the body is over the limit of "+strconv.FormatInt(tooBig.Limit, 10)+" bytes", nil)
	}
	g.guard.SetHeaders(w, err)
	status := auth.Status(err)
	code := protocol.CodeOf(err)
	we := wireError{Code: code, Message: publicMessage(err), Retryable: code.Retryable() && !errors.Is(err, errConflict)}
	var ep *protocol.ErrorPayload
	var detailed interface{ ErrorDetails() map[string]any }
	switch {
	case errors.As(err, &ep):
		we = wireError{Code: ep.Code, Message: ep.Message, Retryable: ep.Retryable, Details: ep.Details}
	case errors.As(err, &detailed):
		// A schema violation's list: {"violations": [{"path", "keyword", "message"}]}.
		we.Details = detailed.ErrorDetails()
	}
	switch {
	case status == http.StatusUnauthorized && errors.Is(err, auth.ErrNoCredentials):
		we = wireError{Code: protocol.CodeUnauthorized, Message: msgNoKey}
	case status == http.StatusUnauthorized:
		// Whatever the reason (unknown, malformed, refused by a verifier):
		// the answer says nothing about the keys there are.
		we = wireError{Code: protocol.CodeUnauthorized, Message: msgKeyNotAccepted}
	case status == http.StatusForbidden && errors.Is(err, auth.ErrForbidden):
		we.Message = "the caller's scopes do not allow this"
	case code == protocol.CodeInternal || status >= 500 && status != http.StatusServiceUnavailable:
		g.opts.Logger.ErrorContext(r.Context(), "gateway: internal error", "method", r.Method, "path", r.URL.Path, "err", err)
		we = wireError{Code: protocol.CodeInternal, Message: "internal error", Retryable: true}
		status = http.StatusInternalServerError
	}
	httpjson.Write(w, status, errorBody{Error: we})
}

// publicMessage is the message of an error for the client: the details
// of its chain without package prefixes ("gateway: not found: no run x"
// → "no run x"), each said once (coded.Public).
func publicMessage(err error) string { return coded.Public(err) }

// caller returns the authenticated caller of a request that came through
// serveAPI.
func caller(ctx context.Context) *auth.Caller {
	c, _ := auth.FromContext(ctx)
	return c
}
