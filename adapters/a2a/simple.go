package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/internal/httpjson"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

// httpError is the error body of the simple surface (docs/protocol.md §13.2.5):
// {"error": "agent_not_found", "message": "...", "details": {...}}.
type httpError struct {
	Error   string         `json:"error"`
	Message string         `json:"message"`
	Details map[string]any `json:"details,omitempty"`
}

// The error names of docs/protocol.md §13.2.5, and the ones this package adds.
const (
	errNameAgentNotFound = "agent_not_found"     // 404
	errNameGuardrail     = "guardrail_violation" // 400, with details
	errNameInternal      = "internal_error"      // 500, "Unexpected failure"
	errNameInvalid       = "invalid_request"     // 400 (413 for a body over the limit)
)

func errAgentNotFound(name string) *httpError {
	return &httpError{Error: errNameAgentNotFound, Message: "no agent named " + name}
}

// errInternal never says what went wrong: that goes to the log.
var errInternal = &httpError{Error: errNameInternal, Message: "Unexpected failure"}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, e *httpError) { writeJSON(w, status, e) }

// agentInfo is one agent of GET /agents.
type agentInfo struct {
	Name         string              `json:"name"`
	AgentID      string              `json:"agent_id"`
	Description  string              `json:"description"`
	Capabilities []string            `json:"capabilities"`
	Online       bool                `json:"online"`
	URL          string              `json:"url"`
	CardURL      string              `json:"a2a_card_url"`
	Card         *protocol.AgentCard `json:"card,omitempty"`
}

func (s *Server) info(base string, a *registry.Agent, withCard bool) agentInfo {
	name := agentName(a.ID())
	card := a.Card()
	in := agentInfo{Name: name, AgentID: a.ID(), Capabilities: []string{}, Online: s.reg.Online(a), URL: base + AgentsPath + "/" + name}
	in.CardURL = in.URL + CardPath
	if card.Display != nil {
		in.Description = card.Display.Desc
	}
	for _, c := range card.Capabilities {
		in.Capabilities = append(in.Capabilities, c.ID)
	}
	if withCard {
		in.Card = card
	}
	return in
}

// mayListAgents checks that the caller holds auth.ScopeAgents; on failure
// it has answered 403.
func (s *Server) mayListAgents(w http.ResponseWriter, r *http.Request) bool {
	if c, _ := auth.FromContext(r.Context()); !c.Has(auth.ScopeAgents) {
		s.guard.WriteError(w, auth.ErrForbidden)
		return false
	}
	return true
}

// serveAgents serves GET /agents (docs/protocol.md §13.2.2).
func (s *Server) serveAgents(w http.ResponseWriter, r *http.Request) {
	if !allowMethods(w, r, http.MethodGet, http.MethodHead) || !s.mayListAgents(w, r) {
		return
	}
	base := s.baseURL(r)
	agents := s.agents()
	out := make([]agentInfo, len(agents))
	for i, a := range agents {
		out[i] = s.info(base, a, false)
	}
	writeJSON(w, http.StatusOK, map[string]any{"agents": out})
}

// serveAgent serves GET /agents/{name}.
func (s *Server) serveAgent(w http.ResponseWriter, r *http.Request) {
	if !allowMethods(w, r, http.MethodGet, http.MethodHead) || !s.mayListAgents(w, r) {
		return
	}
	name := r.PathValue("name")
	a, ok := s.exposed(name)
	if !ok {
		writeError(w, http.StatusNotFound, errAgentNotFound(name))
		return
	}
	writeJSON(w, http.StatusOK, s.info(s.baseURL(r), a, true))
}

func allowMethods(w http.ResponseWriter, r *http.Request, methods ...string) bool {
	for _, m := range methods {
		if r.Method == m {
			return true
		}
	}
	w.Header().Set("Allow", strings.Join(methods, ", "))
	writeError(w, http.StatusMethodNotAllowed, &httpError{Error: errNameInvalid, Message: "method " + r.Method + " is not allowed; use " + strings.Join(methods, " or ")})
	return false
}

// HeaderIdempotencyKey is the request header of the simple surface that
// makes a run idempotent: identical posts with the same key from the same
// caller are one task, and each gets its outcome.
const HeaderIdempotencyKey = "Idempotency-Key"

// RunRequest is the body of POST /agents/{name}/run and /stream (docs/protocol.md §13
// §2.2-2.3): a non-empty prompt of at most ServerOptions.MaxPromptLength
// characters, and optionally the session it continues (the Clutch
// thread_id).
type RunRequest struct {
	Prompt    string `json:"prompt"`
	SessionID string `json:"sessionId,omitempty"`
}

// decodeRun decodes and checks a run body strictly: one JSON object,
// members prompt (a string) and sessionId only, no duplicates, valid
// UTF-8. It returns the status and error body for a bad one.
func decodeRun(body []byte, maxPrompt int) (RunRequest, int, *httpError) {
	var raw struct {
		Prompt    *string `json:"prompt"`
		SessionID string  `json:"sessionId,omitzero"`
	}
	if err := jsonv2.Unmarshal(body, &raw, jsonv2.RejectUnknownMembers(true)); err != nil {
		return RunRequest{}, http.StatusBadRequest, &httpError{Error: errNameInvalid, Message: "the body is not a JSON object {\"prompt\": string, \"sessionId\"?: string}: " + jsonErrorText(err)}
	}
	return checkRun(raw.Prompt, raw.SessionID, maxPrompt)
}

func checkRun(prompt *string, session string, maxPrompt int) (RunRequest, int, *httpError) {
	if prompt == nil {
		return RunRequest{}, http.StatusBadRequest, &httpError{Error: errNameInvalid, Message: "prompt is required"}
	}
	if strings.TrimSpace(*prompt) == "" {
		return RunRequest{}, http.StatusBadRequest, &httpError{Error: errNameInvalid, Message: "prompt must not be empty"}
	}
	if !utf8.ValidString(*prompt) || !utf8.ValidString(session) {
		return RunRequest{}, http.StatusBadRequest, &httpError{Error: errNameInvalid, Message: "prompt and sessionId must be valid UTF-8"}
	}
	if n := utf8.RuneCountInString(*prompt); n > maxPrompt {
		return RunRequest{}, http.StatusBadRequest, &httpError{Error: errNameGuardrail, Message: fmt.Sprintf("prompt is %d characters, over the input limit of %d", n, maxPrompt),
			Details: map[string]any{"field": "prompt", "limit": maxPrompt, "length": n}}
	}
	if !adapters.ValidForeignID(session) {
		return RunRequest{}, http.StatusBadRequest, &httpError{Error: errNameInvalid, Message: fmt.Sprintf("sessionId must be at most %d bytes without control characters", protocol.MaxIDLength)}
	}
	return RunRequest{Prompt: *prompt, SessionID: session}, 0, nil
}

// jsonErrorText is the decoder's message without Go type names.
func jsonErrorText(err error) string {
	s := err.Error()
	s = strings.TrimPrefix(s, "json: ")
	s = strings.ReplaceAll(s, "go-json-experiment/", "")
	return s
}

// readRun reads the run request of r: the JSON body of a POST, or the
// prompt and sessionId query parameters of a GET (the stream).
func (s *Server) readRun(w http.ResponseWriter, r *http.Request) (RunRequest, bool) {
	if r.Method == http.MethodGet {
		q := r.URL.Query()
		var prompt *string
		if q.Has("prompt") {
			p := q.Get("prompt")
			prompt = &p
		}
		rr, status, e := checkRun(prompt, q.Get("sessionId"), s.opts.MaxPromptLength)
		if e != nil {
			writeError(w, status, e)
			return rr, false
		}
		return rr, true
	}
	if r.ContentLength > s.opts.MaxBodyBytes {
		writeError(w, http.StatusRequestEntityTooLarge, &httpError{Error: errNameInvalid, Message: fmt.Sprintf("the body is over the limit of %d bytes", s.opts.MaxBodyBytes)})
		return RunRequest{}, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, &httpError{Error: errNameInvalid, Message: fmt.Sprintf("the body is over the limit of %d bytes", s.opts.MaxBodyBytes)})
		} else {
			writeError(w, http.StatusBadRequest, &httpError{Error: errNameInvalid, Message: "the body could not be read"})
		}
		return RunRequest{}, false
	}
	rr, status, e := decodeRun(body, s.opts.MaxPromptLength)
	if e != nil {
		writeError(w, status, e)
		return rr, false
	}
	return rr, true
}

// startRun submits a simple-surface run to the named agent; on failure it
// has written the error response.
func (s *Server) startRun(w http.ResponseWriter, r *http.Request, methods ...string) (*router.Handle, bool) {
	if !allowMethods(w, r, methods...) {
		return nil, false
	}
	c, _ := auth.FromContext(r.Context())
	if !c.Has(auth.ScopeSubmit) {
		s.guard.WriteError(w, auth.ErrForbidden)
		return nil, false
	}
	key := r.Header.Values(HeaderIdempotencyKey)
	if len(key) > 1 || len(key) == 1 && (key[0] == "" || !adapters.ValidForeignID(key[0])) {
		writeError(w, http.StatusBadRequest, &httpError{Error: errNameInvalid, Message: fmt.Sprintf("%s must be one non-empty value of at most %d bytes without control characters", HeaderIdempotencyKey, protocol.MaxIDLength)})
		return nil, false
	}
	if s.full() {
		s.guard.WriteError(w, auth.ErrCapacity)
		return nil, false
	}
	name := r.PathValue("name")
	a, ok := s.exposed(name)
	if !ok {
		writeError(w, http.StatusNotFound, errAgentNotFound(name))
		return nil, false
	}
	rr, ok := s.readRun(w, r)
	if !ok {
		return nil, false
	}
	payload, _ := json.Marshal(Content{Text: rr.Prompt})
	m, err := s.r.NewRequest(c.AgentID, PayloadContent, json.RawMessage(payload))
	if err != nil {
		s.opts.Logger.ErrorContext(r.Context(), "a2a: building a run request", "err", err)
		writeError(w, http.StatusInternalServerError, errInternal)
		return nil, false
	}
	m.To = []protocol.Participant{{AgentID: a.ID()}}
	m.Meta = map[string]any{metaSource: SourceHTTP}
	if err := s.setContext(r.Context(), c, m, SourceHTTP, rr.SessionID); err != nil {
		s.opts.Logger.ErrorContext(r.Context(), "a2a: deriving a session's thread", "err", err)
		writeError(w, http.StatusInternalServerError, errInternal)
		return nil, false
	}
	m.Trace = inboundTrace(r.Context()) // the caller's traceparent (trace.go)
	if len(key) == 1 {
		// Identical posts with one key, from one caller, are one task.
		m.IdempotencyKey = key[0]
		if m.RunID, err = s.ids.RunID(r.Context(), c, SourceHTTP, key[0]); err != nil {
			s.opts.Logger.ErrorContext(r.Context(), "a2a: deriving a run", "err", err)
			writeError(w, http.StatusInternalServerError, errInternal)
			return nil, false
		}
	}
	// Only into the caller's own session and run (docs/protocol.md §6.7).
	if err := auth.CheckWrite(r.Context(), s.st, c, m, auth.KindRun, auth.KindThread, auth.KindTask); err != nil {
		if errors.Is(err, auth.ErrNotFound) {
			writeError(w, http.StatusBadRequest, &httpError{Error: errNameInvalid, Message: err.Error()})
			return nil, false
		}
		s.guard.WriteError(w, err)
		return nil, false
	}
	h, err := s.r.Submit(r.Context(), m)
	if errors.Is(err, protocol.CodeCapacity) || errors.Is(err, protocol.CodeRateLimited) {
		s.guard.WriteError(w, err)
		return nil, false
	}
	if err != nil {
		s.opts.Logger.ErrorContext(r.Context(), "a2a: submitting a run", "err", err)
		writeError(w, http.StatusInternalServerError, errInternal)
		return nil, false
	}
	return h, true
}

// runResult is the body of a successful run (docs/protocol.md §13.2.4): the result
// payload as the agent returned it, and where it came from.
type runResult struct {
	Result json.RawMessage `json:"result"`
	Meta   runMeta         `json:"meta"`
}

type runMeta struct {
	TaskID      string `json:"task_id"`
	RunID       string `json:"run_id"`
	SessionID   string `json:"sessionId"`
	AgentID     string `json:"agent_id"`
	PayloadType string `json:"payload_type,omitempty"`
	Attempt     int    `json:"attempt"`
	DurationMS  int64  `json:"duration_ms"`
}

// resultBody is the answer of a run whose request was req and result m.
func resultBody(req, m *protocol.Message, start time.Time) runResult {
	return runResult{Result: m.Payload, Meta: runMeta{
		TaskID: m.TaskID, RunID: m.RunID, SessionID: contextOf(req), AgentID: m.From.AgentID,
		PayloadType: m.PayloadType, Attempt: m.Attempt, DurationMS: time.Since(start).Milliseconds(),
	}}
}

// taskHTTPError normalises a task's failure (docs/protocol.md §13.2.5): a policy
// refusal is a guardrail_violation (400, with details); INTERNAL and codes
// outside the table are internal_error (500, "Unexpected failure", nothing
// leaked); any other code answers its HTTP status (httpjson.Status)
// with the code in lower case as the error name and the agent's message.
func taskHTTPError(ep *protocol.ErrorPayload, taskID string) (int, *httpError) {
	switch {
	case ep.Code == protocol.CodePolicyDenied:
		return http.StatusBadRequest, &httpError{Error: errNameGuardrail, Message: ep.Message, Details: ep.Details}
	case ep.Code == protocol.CodeInternal || !ep.Code.Known():
		return http.StatusInternalServerError, errInternal
	}
	return httpjson.Status(ep.Code), &httpError{Error: strings.ToLower(string(ep.Code)), Message: ep.Message,
		Details: map[string]any{"code": ep.Code, "retryable": ep.Retryable, "task_id": taskID}}
}

// serveRun serves POST /agents/{name}/run: it runs the agent on the
// prompt and answers {result, meta} once the task ends.
func (s *Server) serveRun(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	h, ok := s.startRun(w, r, http.MethodPost)
	if !ok {
		return
	}
	out, err := h.Wait(r.Context())
	if out == nil {
		if err != nil && r.Context().Err() == nil {
			s.opts.Logger.ErrorContext(r.Context(), "a2a: waiting for a run", "err", err)
			writeError(w, http.StatusInternalServerError, errInternal)
			return
		}
		// The client went away: nobody waits for the outcome, so the
		// task is cancelled rather than left queued or running.
		h.Cancel("the HTTP client went away from a blocking run")
		return
	}
	if out.Err != nil {
		status, e := taskHTTPError(out.Err, out.TaskID)
		writeError(w, status, e)
		return
	}
	writeJSON(w, http.StatusOK, resultBody(h.Request(), out.Message, start))
}

// stateEvent is the data of an "event: state" of the simple stream.
type stateEvent struct {
	State   string          `json:"state"` // submitted, working
	Type    protocol.Type   `json:"type"`  // the Clutch event
	TaskID  string          `json:"task_id"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

// serveStream serves GET or POST /agents/{name}/stream (docs/protocol.md §13.2.6):
// Server-Sent Events "state" for every step of the task, then one
// "result" with the body /run would answer, or one "error" with the
// normalised error.
func (s *Server) serveStream(w http.ResponseWriter, r *http.Request) {
	if s.opts.DisableStreaming {
		writeError(w, http.StatusNotFound, &httpError{Error: "not_found", Message: "streaming is not enabled"})
		return
	}
	start := time.Now()
	h, ok := s.startRun(w, r, http.MethodGet, http.MethodPost)
	if !ok {
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(event string, v any) bool {
		var buf bytes.Buffer
		buf.WriteString("event: " + event + "\ndata: ")
		b, _ := json.Marshal(v)
		buf.Write(b)
		buf.WriteString("\n\n")
		if _, err := w.Write(buf.Bytes()); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if s.opts.KeepAlive > 0 {
		// Comments keep proxies from closing a quiet stream; writes are
		// serialised with the events through mu.
		var mu sync.Mutex
		stop := s.keepAlive(ctx, &mu, w, rc)
		defer stop()
		unlocked := send
		send = func(event string, v any) bool {
			mu.Lock()
			defer mu.Unlock()
			return unlocked(event, v)
		}
	}
	for ev, err := range s.st.Follow(ctx, store.Query{TaskID: h.TaskID()}) {
		if err != nil {
			if ctx.Err() == nil {
				s.opts.Logger.ErrorContext(ctx, "a2a: following a run", "err", err)
				send("error", errInternal)
			}
			return
		}
		m, err := ev.Message()
		if err != nil {
			s.opts.Logger.ErrorContext(ctx, "a2a: decoding an event", "err", err)
			send("error", errInternal)
			return
		}
		var ok bool
		switch m.Type {
		case protocol.TypeTaskRequest:
			ok = send("state", stateEvent{State: "submitted", Type: m.Type, TaskID: m.TaskID})
		case protocol.TypeTaskAccept:
			ok = send("state", stateEvent{State: "working", Type: m.Type, TaskID: m.TaskID})
		case protocol.TypeTaskProgress:
			ok = send("state", stateEvent{State: "working", Type: m.Type, TaskID: m.TaskID, Payload: m.Payload})
		case protocol.TypeTaskResult:
			send("result", resultBody(h.Request(), m, start))
			return
		case protocol.TypeTaskError, protocol.TypeTaskCancel, protocol.TypeTaskTimeout:
			ep := errorOf(m)
			if ep.Details["will_retry"] == true {
				ok = send("state", stateEvent{State: "working", Type: m.Type, TaskID: m.TaskID})
				break
			}
			_, e := taskHTTPError(&ep, m.TaskID)
			send("error", e)
			return
		default:
			ok = true
		}
		if !ok {
			return
		}
	}
}

// keepAlive writes an SSE comment every KeepAlive until stopped.
func (s *Server) keepAlive(ctx context.Context, mu *sync.Mutex, w io.Writer, rc *http.ResponseController) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(s.opts.KeepAlive)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				mu.Lock()
				_, err := io.WriteString(w, ": keep-alive\n\n")
				if err == nil {
					err = rc.Flush()
				}
				mu.Unlock()
				if err != nil {
					return
				}
			case <-done:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() { close(done); <-finished }
}
