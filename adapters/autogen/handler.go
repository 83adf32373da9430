package autogen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"hash/maphash"
	"io"
	"mime"
	"net/http"
	"strconv"
	"sync"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

// Defaults of the Handler.
const (
	DefaultMaxBodyBytes = 4 << 20
	DefaultMaxLines     = 1000
)

// HeaderRun names the AutoGen run of a request when the path has no {run}
// value; HeaderIdempotencyKey makes a re-post of the same body store
// nothing twice even for messages without an AutoGen id.
const (
	HeaderRun            = "X-AutoGen-Run"
	HeaderIdempotencyKey = "Idempotency-Key"
)

// surface is the surface name of auth.Deriver.RunID.
const surface = "autogen"

// HandlerOptions configures a Handler.
type HandlerOptions struct {
	// Auth authenticates every request (required: anonymous access is
	// auth.Anonymous, never the default). The caller needs auth.ScopeSubmit.
	Auth auth.Authenticator
	// Limits are the rate and in-flight limits of auth.Options; nil: none.
	// Its MaxBodyBytes is replaced by MaxBodyBytes.
	Limits *auth.Options
	// MaxBodyBytes bounds a request body; DefaultMaxBodyBytes when 0.
	MaxBodyBytes int64
	// MaxLines bounds the JSON lines of one request; DefaultMaxLines when 0.
	MaxLines int
	// Adapter translates the messages; nil: New(nil).
	Adapter *Adapter
}

// Handler is the ingestion endpoint an AutoGen app posts its message
// stream to (see "Ingestion endpoint" in the package doc). It is an
// http.Handler, safe for concurrent use.
type Handler struct {
	r     *router.Router
	a     *Adapter
	opts  HandlerOptions
	inner http.Handler
	ids   *auth.Deriver // the caller's runs (docs/protocol.md §6.7)
	seed  maphash.Seed
	locks [64]sync.Mutex // by run: the started check and the append of one run happen one request at a time
}

// NewHandler returns the endpoint over r: translated messages are checked
// with r.Verify and appended to r.Store().
func NewHandler(r *router.Router, opts *HandlerOptions) (*Handler, error) {
	if r == nil || opts == nil || opts.Auth == nil {
		return nil, coded.Wrap(ErrInvalidOptions, "a router and HandlerOptions.Auth are required", nil)
	}
	if opts.MaxBodyBytes < 0 || opts.MaxLines < 0 {
		return nil, coded.Wrap(ErrInvalidOptions, "negative limit", nil)
	}
	h := &Handler{r: r, opts: *opts, a: opts.Adapter, seed: maphash.MakeSeed()}
	if h.a == nil {
		h.a = New(nil)
	}
	if h.opts.MaxBodyBytes == 0 {
		h.opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if h.opts.MaxLines == 0 {
		h.opts.MaxLines = DefaultMaxLines
	}
	var limits auth.Options
	if opts.Limits != nil {
		limits = *opts.Limits
	}
	limits.MaxBodyBytes = h.opts.MaxBodyBytes
	g, err := auth.NewGuard(opts.Auth, &limits)
	if err != nil {
		return nil, err
	}
	h.ids = auth.NewDeriver(r.Store())
	h.inner = g.Wrap(http.HandlerFunc(h.serve))
	return h, nil
}

// ServeHTTP authenticates the request and stores the messages it carries.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.inner.ServeHTTP(w, r) }

// Event is one stored (or duplicate) event in a Handler's answer.
type Event struct {
	ID        string        `json:"id"`
	Type      protocol.Type `json:"type"`
	Seq       uint64        `json:"seq"`
	Duplicate bool          `json:"duplicate,omitempty"`
}

// Answer is the body of a Handler's 200 answer.
type Answer struct {
	RunID      string  `json:"run_id"`
	ThreadID   string  `json:"thread_id"`
	TaskID     string  `json:"task_id"`
	Stored     int     `json:"stored"`
	Duplicates int     `json:"duplicates"`
	Events     []Event `json:"events"`
}

// httpError is the error body: {"error", "code", "message"} as auth
// writes it, plus the line (1-based, for JSON lines) and JSON pointer of
// the offending value.
type httpError struct {
	Error   string        `json:"error"`
	Code    protocol.Code `json:"code"`
	Message string        `json:"message"`
	Line    int           `json:"line,omitempty"`
	Path    string        `json:"path,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, err error, line int) {
	code := protocol.CodeOf(err)
	if !code.Known() {
		code = protocol.CodeInternal
	}
	status := auth.Status(err)
	e := httpError{Error: "invalid_request", Code: code, Message: err.Error(), Line: line}
	var ae *adapters.Error
	if errors.As(err, &ae) {
		e.Path = ae.Path
	}
	switch {
	case status == http.StatusRequestEntityTooLarge:
		e.Error = "too_large"
	case status >= 500:
		e.Error, e.Message = "internal_error", "Unexpected failure"
	case status == http.StatusUnauthorized || code == protocol.CodeBadSignature || code == protocol.CodeUnknownKey:
		e.Error = "unauthorized"
	case status == http.StatusForbidden:
		e.Error = "forbidden"
	}
	writeJSON(w, status, e)
}

func badRequest(code protocol.Code, msg string) error {
	return coded.Wrap(coded.New("autogen: "+msg, code), "", nil)
}

// jsonLines reports whether the content type is one of the JSON lines
// types.
func jsonLines(ct string) bool {
	mt, _, _ := mime.ParseMediaType(ct)
	switch mt {
	case "application/x-ndjson", "application/jsonl", "application/json-lines", "application/x-jsonlines", "application/jsonlines":
		return true
	}
	return false
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, httpError{Error: "method_not_allowed", Code: protocol.CodeUnsupportedTask, Message: "only POST"})
		return
	}
	caller, ok := auth.FromContext(r.Context())
	if !ok || !caller.Has(auth.ScopeSubmit) {
		writeErr(w, auth.ErrForbidden, 0)
		return
	}
	name := r.PathValue("run")
	if name == "" {
		name = r.Header.Get(HeaderRun)
	}
	key := r.Header.Get(HeaderIdempotencyKey)
	switch {
	case name == "":
		writeErr(w, badRequest(protocol.CodeMissingField, "the run is named by the path's {run} or the "+HeaderRun+" header"), 0)
		return
	case len(name) > protocol.MaxIDLength/2 || len(key) > protocol.MaxIDLength/2:
		writeErr(w, badRequest(protocol.CodeInvalidField, "run name or Idempotency-Key over 128 bytes"), 0)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeErr(w, badRequest(protocol.CodeTooLarge, "body over "+strconv.FormatInt(h.opts.MaxBodyBytes, 10)+" bytes"), 0)
			return
		}
		writeErr(w, badRequest(protocol.CodeInvalidJSON, "reading the body failed"), 0)
		return
	}
	values := [][]byte{body}
	if jsonLines(r.Header.Get("Content-Type")) {
		values = values[:0]
		for l := range bytes.Lines(body) {
			if l = bytes.TrimSpace(l); len(l) > 0 {
				values = append(values, l)
			}
		}
		if len(values) > h.opts.MaxLines {
			writeErr(w, badRequest(protocol.CodeTooLarge, "more than "+strconv.Itoa(h.opts.MaxLines)+" lines"), 0)
			return
		}
		if len(values) == 0 {
			writeErr(w, badRequest(protocol.CodeMissingField, "no messages"), 0)
			return
		}
	}
	runID, err := h.ids.RunID(r.Context(), caller, surface, name)
	if err != nil {
		writeErr(w, err, 0)
		return
	}
	suffix := runID[len(protocol.IDPrefixRun):]
	run := Run{
		ID: runID, ThreadID: protocol.IDPrefixThread + suffix, TaskID: protocol.IDPrefixTask + suffix,
		Agents: caller.AgentID + "/", Owner: caller.AgentID, Salt: key,
	}
	if key == "" {
		// No key: messages without an AutoGen id are new on every post.
		run.Salt = protocol.NewID("")
	}
	if !validAgents(run.Agents) {
		writeErr(w, badRequest(protocol.CodeInvalidField, "the caller's agent id is too long to name agents under it"), 0)
		return
	}
	lock := &h.locks[maphash.String(h.seed, runID)%uint64(len(h.locks))]
	lock.Lock()
	defer lock.Unlock()
	ans, line, err := h.store(r.Context(), run, values)
	if err != nil {
		writeErr(w, err, line)
		return
	}
	writeJSON(w, http.StatusOK, ans)
}

// store translates every value, verifies every message and appends them
// all in one batch: a bad value stores nothing.
func (h *Handler) store(ctx context.Context, run Run, values [][]byte) (*Answer, int, error) {
	st := h.r.Store()
	for _, err := range st.Read(ctx, store.Query{RunID: run.ID, TypePrefix: string(protocol.TypeTaskRequest), Limit: 1}) {
		if err != nil {
			return nil, 0, err
		}
		run.Started = true
	}
	t, err := h.a.newTranslation(run)
	if err != nil {
		return nil, 0, err
	}
	for i, v := range values {
		if err := t.value(ctx, v, ""); err != nil {
			if len(values) == 1 {
				return nil, 0, err
			}
			return nil, i + 1, err
		}
	}
	msgs, err := t.finish(ctx)
	if err != nil {
		return nil, 0, err
	}
	if len(msgs) > 0 && run.Owner != "" && msgs[0].From.AgentID != run.Owner {
		// The first event of a new run is the caller's own, so the caller
		// owns the run (docs/protocol.md §6.7); the AutoGen source stays in
		// meta.autogen_source.
		empty := true
		for _, err := range st.Read(ctx, store.Query{RunID: run.ID, Limit: 1}) {
			if err != nil {
				return nil, 0, err
			}
			empty = false
		}
		if empty {
			msgs[0].From.AgentID = run.Owner
			msgs[0].Reset()
		}
	}
	for _, m := range msgs {
		if err := h.r.Verify(m); err != nil {
			return nil, 0, err
		}
	}
	res, err := st.Append(ctx, msgs...)
	if err != nil {
		return nil, 0, err
	}
	ans := &Answer{RunID: run.ID, ThreadID: run.ThreadID, TaskID: run.TaskID, Events: make([]Event, len(msgs))}
	for i, m := range msgs {
		ans.Events[i] = Event{ID: m.ID, Type: m.Type, Seq: res[i].Seq, Duplicate: res[i].Duplicate}
		if res[i].Duplicate {
			ans.Duplicates++
		} else {
			ans.Stored++
		}
	}
	return ans, 0, nil
}
