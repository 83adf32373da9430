package agui

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/internal/httpjson"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
)

// Defaults of a zero Options.
const (
	DefaultMaxBodyBytes = 1 << 20
	DefaultHeartbeat    = 15 * time.Second
)

// Meta keys of a task.request submitted through the handler: the AG-UI ids
// the client chose, sent back in RUN_STARTED and RUN_FINISHED.
const (
	MetaThreadID = "agui_thread_id"
	MetaRunID    = "agui_run_id"
)

// HeaderRunID is the response header of a POST that names the Clutch run
// it streams (for a later GET ?run=).
const HeaderRunID = "X-Clutch-Run-Id"

// surface names this package in auth.Deriver.RunID.
const surface = "agui"

// Options configures a Handler. Nil means defaults.
type Options struct {
	// Request maps a RunAgentInput to the task.request to submit. When nil,
	// DefaultRequest(in, Agent, Requires) is used. An error refuses the
	// POST with the HTTP status of its protocol code.
	Request func(ctx context.Context, c *auth.Caller, in *Input) (*Request, error)
	// Agent is the agent id DefaultRequest addresses; "" routes by
	// Requires.
	Agent string
	// Requires are the capability ids DefaultRequest requires when Agent
	// is "".
	Requires []string
	// Text turns a task.result or chat message into text (see
	// TranslatorOptions); DefaultText when nil.
	Text func(m *protocol.Message) string
	// MaxBodyBytes bounds a POST body; DefaultMaxBodyBytes when 0.
	MaxBodyBytes int64
	// Heartbeat is the interval of the ": ping" SSE comments that keep
	// idle streams open through proxies; DefaultHeartbeat when 0, none
	// when negative.
	Heartbeat time.Duration
	// Logger receives the handler's diagnostics; slog.Default() when nil.
	Logger *slog.Logger
}

// Handler serves Clutch runs as AG-UI event streams (see the package doc).
// It is safe for concurrent use.
type Handler struct {
	r    *router.Router
	st   store.Store
	opts Options
	ids  *auth.Deriver // the caller's runs and threads (docs/protocol.md §6.7)
}

// New returns a Handler over r. opts may be nil. It registers PayloadInput
// in the schema registry behind r's validator (schema.RegistryOf; unless it
// is there, and not at all when r has no *schema.Registry or
// *schema.Binder validator), so that the requests DefaultRequest makes pass
// the router's validation.
func New(r *router.Router, opts *Options) (*Handler, error) {
	if r == nil {
		return nil, coded.Wrap(ErrInvalidOptions, "a router is required", nil)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxBodyBytes < 0 {
		return nil, coded.Wrap(ErrInvalidOptions, "MaxBodyBytes must not be negative", nil)
	}
	if o.Agent != "" && !strings.HasPrefix(o.Agent, protocol.PrefixAgent) {
		return nil, coded.Wrap(ErrInvalidOptions, "Agent must be an agent id (agent:...)", nil)
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Heartbeat == 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if sch := schema.RegistryOf(r.Validator()); sch != nil {
		if err := schema.RegisterType[InputPayload](sch, PayloadInput); err != nil && !errors.Is(err, schema.ErrAlreadyRegistered) {
			return nil, err
		}
	}
	return &Handler{r: r, st: r.Store(), opts: o, ids: auth.NewDeriver(r.Store())}, nil
}

// ServeHTTP serves POST (start a run from a RunAgentInput and stream it)
// and GET ?run=<run_id>[&after=<seq>] (stream an existing run) at the
// handler's root.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "" && r.URL.Path != "/" {
		writeError(w, http.StatusNotFound, protocol.CodeNotFound, "no such AG-UI endpoint")
		return
	}
	c, ok := auth.FromContext(r.Context())
	if !ok {
		w.Header().Set("WWW-Authenticate", `Bearer realm="`+auth.DefaultRealm+`"`)
		writeError(w, http.StatusUnauthorized, protocol.CodeUnauthorized, "authentication required")
		return
	}
	switch r.Method {
	case http.MethodPost:
		h.serveRun(w, r, c)
	case http.MethodGet, http.MethodHead:
		h.serveWatch(w, r, c)
	default:
		w.Header().Set("Allow", "GET, HEAD, POST")
		writeError(w, http.StatusMethodNotAllowed, protocol.CodeInvalidField, "method not allowed")
	}
}

// serveRun submits the last user message of a RunAgentInput as a
// task.request and streams its run.
func (h *Handler) serveRun(w http.ResponseWriter, r *http.Request, c *auth.Caller) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.opts.MaxBodyBytes))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			writeError(w, http.StatusRequestEntityTooLarge, protocol.CodeTooLarge, "the body is over "+strconv.FormatInt(h.opts.MaxBodyBytes, 10)+" bytes")
			return
		}
		writeError(w, http.StatusBadRequest, protocol.CodeInvalidJSON, "the body could not be read")
		return
	}
	in, err := DecodeInput(body)
	if err != nil {
		writeError(w, http.StatusBadRequest, inputCode(err), err.Error())
		return
	}
	if len(in.Resume) > 0 { // answering is up to the question (who may answer), not the submit scope
		h.resume(w, r, c, in)
		return
	}
	if !c.Has(auth.ScopeSubmit) {
		writeError(w, http.StatusForbidden, protocol.CodePolicyDenied, "the caller may not submit")
		return
	}
	var req *Request
	if h.opts.Request != nil {
		req, err = h.opts.Request(r.Context(), c, in)
		if err == nil && req == nil {
			err = coded.Wrap(ErrInvalidInput, "no request for this input", nil)
		}
	} else {
		req = DefaultRequest(in, h.opts.Agent, h.opts.Requires)
	}
	if err != nil {
		code := protocol.CodeOf(err)
		writeError(w, auth.Status(err), code, err.Error())
		return
	}
	m, err := h.r.NewRequest(c.AgentID, req.PayloadType, req.Payload)
	if err != nil {
		writeError(w, http.StatusBadRequest, protocol.CodeOf(err), err.Error())
		return
	}
	if len(req.To) > 0 {
		m.To = m.To[:0]
		for _, a := range req.To {
			m.To = append(m.To, protocol.Participant{AgentID: a})
		}
	}
	m.Requires, m.Prefers, m.Domain = req.Requires, req.Prefers, req.Domain
	// The client's ids are scoped to the caller: the same runId sent again
	// by the same caller is the same run (and the store's dedup answers it
	// with the task it started); another caller's same ids are other runs.
	m.RunID, err = h.RunID(r.Context(), c, in.RunID)
	if err == nil {
		m.ThreadID, err = h.ThreadID(r.Context(), c, in.ThreadID)
	}
	if err != nil {
		h.opts.Logger.ErrorContext(r.Context(), "agui: deriving the run's ids", "err", err)
		writeError(w, http.StatusInternalServerError, protocol.CodeInternal, "the run could not be started")
		return
	}
	m.IdempotencyKey = in.RunID
	m.Meta = map[string]any{MetaThreadID: in.ThreadID, MetaRunID: in.RunID}
	// Every id here is derived or random: nothing to claim.
	if err := auth.CheckWrite(r.Context(), h.st, c, m, auth.KindRun, auth.KindThread, auth.KindTask); err != nil {
		writeError(w, auth.Status(err), protocol.CodeOf(err), err.Error())
		return
	}
	if _, err := h.r.Submit(r.Context(), m); err != nil {
		status := auth.Status(err)
		if status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", strconv.Itoa(int(router.RetryAfter/time.Second)))
		}
		if status >= 500 {
			h.opts.Logger.ErrorContext(r.Context(), "agui: submitting a run", "err", err)
		}
		writeError(w, status, protocol.CodeOf(err), submitMessage(status, err))
		return
	}
	w.Header().Set(HeaderRunID, m.RunID)
	h.stream(w, r, m.RunID, NewTranslator(in.ThreadID, in.RunID, &TranslatorOptions{Text: h.opts.Text}), 0)
}

// RunID is the Clutch run_id of an AG-UI run of caller c: derived from
// the caller, this surface ("agui") and runID with the store's secret
// (auth.Deriver, docs/protocol.md §6.7), so nobody can compute another
// caller's run and create it first.
func (h *Handler) RunID(ctx context.Context, c *auth.Caller, runID string) (string, error) {
	return h.ids.RunID(ctx, c, surface, runID)
}

// ThreadID is the Clutch thread_id of an AG-UI thread of caller c: "thr_"
// and 26 base32 characters derived like RunID, so that every run of one
// AG-UI thread lands in one Clutch thread and no caller can post into
// another's.
func (h *Handler) ThreadID(ctx context.Context, c *auth.Caller, threadID string) (string, error) {
	return h.ids.ID(ctx, protocol.IDPrefixThread, c, surface+".thread", threadID)
}

func submitMessage(status int, err error) string {
	if status >= 500 && !errors.Is(err, protocol.CodeCapacity) {
		return "the run could not be started"
	}
	return err.Error()
}

// serveWatch streams an existing run: GET ?run=<run_id>[&after=<seq>].
func (h *Handler) serveWatch(w http.ResponseWriter, r *http.Request, c *auth.Caller) {
	q := r.URL.Query()
	run := q.Get("run")
	if run == "" || !adapters.ValidForeignID(run) || len(q["run"]) > 1 {
		writeError(w, http.StatusBadRequest, protocol.CodeInvalidField, "run must be one run id of at most 256 bytes")
		return
	}
	var after uint64
	if s := q.Get("after"); s != "" || r.Header.Get("Last-Event-ID") != "" {
		if s == "" {
			s = r.Header.Get("Last-Event-ID")
		}
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			writeError(w, http.StatusBadRequest, protocol.CodeInvalidField, "after (or Last-Event-ID) must be a seq")
			return
		}
		after = n
	}
	root, err := rootRequest(r.Context(), h.st, run)
	if err != nil {
		h.opts.Logger.ErrorContext(r.Context(), "agui: reading a run", "run", run, "err", err)
		writeError(w, http.StatusInternalServerError, protocol.CodeInternal, "the run could not be read")
		return
	}
	// A run the caller may not see is answered as one that does not exist.
	if root == nil || !c.Owns(root.From.AgentID) {
		writeError(w, http.StatusNotFound, protocol.CodeNotFound, ErrNotFound.Error()+": "+run)
		return
	}
	thread, runID := root.ThreadID, root.RunID
	if s, ok := root.Meta[MetaThreadID].(string); ok && s != "" {
		thread = s
	}
	if s, ok := root.Meta[MetaRunID].(string); ok && s != "" {
		runID = s
	}
	if r.Method == http.MethodHead {
		setStreamHeaders(w)
		w.WriteHeader(http.StatusOK)
		return
	}
	h.stream(w, r, run, NewTranslator(thread, runID, &TranslatorOptions{Text: h.opts.Text}), after)
}

// rootRequest returns the first task.request of run without a parent, or
// nil.
func rootRequest(ctx context.Context, st store.Store, run string) (*protocol.Message, error) {
	for ev, err := range st.Read(ctx, store.Query{RunID: run, TypePrefix: string(protocol.TypeTaskRequest)}) {
		if err != nil {
			return nil, err
		}
		m, err := ev.Message()
		if err != nil {
			return nil, err
		}
		if m.Type == protocol.TypeTaskRequest && m.ParentTaskID == "" {
			return m, nil
		}
	}
	return nil, nil
}

func setStreamHeaders(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
}

type item struct {
	ev  store.Event
	err error
}

// stream follows run in the store and writes its AG-UI events as SSE until
// the translator is done, the client goes away or the store fails. Events
// of seq ≤ after are translated (to rebuild the translator's state) but not
// sent, except RUN_STARTED, which every stream starts with.
func (h *Handler) stream(w http.ResponseWriter, r *http.Request, run string, tr *Translator, after uint64) {
	setStreamHeaders(w)
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()

	ctx, cancel := context.WithCancel(r.Context())
	events := make(chan item, 64)
	go func() {
		defer close(events)
		for ev, err := range h.st.Follow(ctx, store.Query{RunID: run}) {
			select {
			case events <- item{ev, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		cancel()
		for range events { // wait for the follower to stop
		}
	}()
	var tick <-chan time.Time
	if h.opts.Heartbeat > 0 {
		t := time.NewTicker(h.opts.Heartbeat)
		defer t.Stop()
		tick = t.C
	}
	var buf []byte
	var out []Event
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			if _, err := io.WriteString(w, ": ping\n\n"); err != nil || rc.Flush() != nil {
				return
			}
		case it, ok := <-events:
			if !ok {
				return
			}
			out = out[:0]
			if it.err == nil {
				m, err := it.ev.Message()
				if err != nil {
					it.err = err
				} else {
					out = tr.Translate(out, it.ev.Seq, m)
				}
			}
			if it.err != nil {
				if ctx.Err() != nil {
					return
				}
				h.opts.Logger.ErrorContext(ctx, "agui: following a run", "run", run, "err", it.err)
				if !tr.Started() {
					out = append(out, Event{Type: RunStarted, ThreadID: tr.threadID, RunID: tr.runID})
				}
				out = append(out, Event{Type: RunError, Code: string(protocol.CodeOf(it.err)), Message: "the run's event stream failed"})
			}
			buf = appendSSE(buf[:0], out, after)
			if len(buf) > 0 {
				if _, err := w.Write(buf); err != nil || rc.Flush() != nil {
					return
				}
			}
			if it.err != nil || tr.Done() {
				return
			}
		}
	}
}

// appendSSE appends the SSE frames of evs: "data: <json>\n\n", with
// "id: <seq>" on the last frame of each Clutch event, skipping events of
// seq ≤ after other than RUN_STARTED. Events of seq 0 (the handler's own)
// are always sent, without an id.
func appendSSE(b []byte, evs []Event, after uint64) []byte {
	for i := range evs {
		e := &evs[i]
		if e.Seq != 0 && e.Seq <= after && e.Type != RunStarted {
			continue
		}
		if e.Seq > after && (i == len(evs)-1 || evs[i+1].Seq != e.Seq) {
			b = append(b, "id: "...)
			b = strconv.AppendUint(b, e.Seq, 10)
			b = append(b, '\n')
		}
		b = append(b, "data: "...)
		b = e.AppendJSON(b)
		b = append(b, '\n', '\n')
	}
	return b
}

// writeError writes the gateway's error body:
// {"error":{"code","message","retryable"}}.
func writeError(w http.ResponseWriter, status int, code protocol.Code, msg string) {
	if code == "" || !code.Known() {
		code = protocol.CodeInternal
	}
	httpjson.Write(w, status, map[string]protocol.ErrorPayload{"error": {Code: code, Message: msg, Retryable: code.Retryable()}})
}

// inputCode is the protocol code of a refused RunAgentInput.
func inputCode(err error) protocol.Code {
	for _, c := range []protocol.Code{protocol.CodeMissingField, protocol.CodeWrongType, protocol.CodeDuplicateKey,
		protocol.CodeInvalidUTF8, protocol.CodeTooDeep, protocol.CodeTooLarge, protocol.CodeInvalidJSON, protocol.CodeUnknownField} {
		if errors.Is(err, c) {
			return c
		}
	}
	return protocol.CodeInvalidField
}
