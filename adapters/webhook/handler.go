package webhook

import (
	"context"
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

// DefaultMaxBodyBytes bounds a delivery's body when HandlerOptions.MaxBodyBytes
// is 0: the envelope decoder's limit.
const DefaultMaxBodyBytes = protocol.DefaultMaxBytes

// Meta keys the Handler sets on every envelope it makes.
const (
	// MetaID holds the delivery's webhook-id.
	MetaID = "webhook_id"
	// MetaEndpoint holds HandlerOptions.Endpoint.
	MetaEndpoint = "webhook_endpoint"
	// MetaEvent holds the event name Mapping.TypeFrom found.
	MetaEvent = "webhook_event"
	// MetaIndex holds the position of the envelope's item in the
	// Mapping.Each array.
	MetaIndex = "webhook_index"
	// MetaInPayload lists the Mapping.Meta keys not copied because their
	// value is over MaxMetaCopy bytes and inside the payload already.
	MetaInPayload = "webhook_in_payload"
	// Source is the meta.src of inbound envelopes.
	Source = "webhook"
)

// HandlerOptions configures a Handler. Nil means defaults.
type HandlerOptions struct {
	// Endpoint names the endpoint in the run ids and idempotency keys the
	// Handler derives, so that two endpoints (two mappings) never share a
	// dedup key; "default" when "". At most 64 bytes.
	Endpoint string
	// Tolerance is how far a webhook-timestamp may be from the router's
	// clock, in either direction; DefaultTolerance when 0.
	Tolerance time.Duration
	// MaxBodyBytes bounds a body; DefaultMaxBodyBytes when 0.
	MaxBodyBytes int64
	// Auth, when set, authenticates every request before its signature is
	// checked (e.g. a client certificate or an API key of a proxy), and
	// the caller it finds must be the agent whose secret signed the
	// delivery. Limits applies with it (rate, in-flight, body).
	Auth   auth.Authenticator
	Limits *auth.Options
}

// Handler is the inbound side: an http.Handler that verifies Standard
// Webhooks deliveries, maps each body to an envelope and hands it to the
// router or the store (see the package doc). It is safe for concurrent use.
type Handler struct {
	r        *router.Router
	m        *compiled
	keys     []key
	callers  []auth.Caller
	endpoint string
	tol      time.Duration
	maxBody  int64
	guard    *auth.Guard
	ids      *auth.Deriver // the runs of deliveries (docs/protocol.md §6.7)
}

// NewHandler returns the Handler of one endpoint: r receives the envelopes,
// m maps bodies to them, and secrets maps each signing secret
// ("whsec_<base64>") to the sender it authenticates, whose agent id becomes
// the envelope's from and who needs auth.ScopeSubmit. Several secrets may map
// to the same sender (key rotation: each is accepted).
func NewHandler(r *router.Router, m *Mapping, secrets map[string]auth.Caller, opts *HandlerOptions) (*Handler, error) {
	if r == nil {
		return nil, optionsError("a router is required")
	}
	c, err := m.compile()
	if err != nil {
		return nil, err
	}
	if len(secrets) == 0 {
		return nil, optionsError("at least one secret is required")
	}
	var o HandlerOptions
	if opts != nil {
		o = *opts
	}
	h := &Handler{r: r, m: c, endpoint: o.Endpoint, tol: o.Tolerance, maxBody: o.MaxBodyBytes}
	if h.endpoint == "" {
		h.endpoint = "default"
	}
	if len(h.endpoint) > 64 || strings.ContainsAny(h.endpoint, "\x00") {
		return nil, optionsError("HandlerOptions.Endpoint is over 64 bytes")
	}
	if h.tol == 0 {
		h.tol = DefaultTolerance
	}
	if h.tol < 0 {
		return nil, optionsError("HandlerOptions.Tolerance is negative")
	}
	if h.maxBody == 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	if h.maxBody < 0 {
		return nil, optionsError("HandlerOptions.MaxBodyBytes is negative")
	}
	h.ids = auth.NewDeriver(r.Store())
	if o.Auth != nil {
		if h.guard, err = auth.NewGuard(o.Auth, o.Limits); err != nil {
			return nil, err
		}
	} else if o.Limits != nil {
		return nil, optionsError("HandlerOptions.Limits needs HandlerOptions.Auth")
	}
	index := map[string]int{}
	for s, caller := range secrets {
		k, err := parseSecret(s)
		if err != nil {
			return nil, err
		}
		if !strings.HasPrefix(caller.AgentID, protocol.PrefixAgent) || len(caller.AgentID) == len(protocol.PrefixAgent) {
			return nil, optionsError("the caller of a secret needs an agent id")
		}
		i, ok := index[caller.AgentID]
		if !ok {
			i = len(h.callers)
			index[caller.AgentID] = i
			h.callers = append(h.callers, caller)
		}
		h.keys = append(h.keys, key{key: k, caller: i})
	}
	return h, nil
}

// Receipt is the 200 answer body of a delivery: what became of each
// envelope it gave, in order.
type Receipt struct {
	Envelopes []Accepted `json:"envelopes"`
}

// Accepted is what became of one envelope of a delivery.
type Accepted struct {
	ID        string `json:"id"` // the envelope's id (of the stored one when Duplicate)
	Type      string `json:"type"`
	RunID     string `json:"run_id"`
	TaskID    string `json:"task_id"`
	Seq       uint64 `json:"seq,omitempty"`       // the event's seq, for envelopes appended to the store
	Duplicate bool   `json:"duplicate,omitempty"` // the delivery was seen before; nothing new was stored
}

// ServeHTTP verifies, maps and hands on one delivery.
func (h *Handler) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, protocol.CodeInvalidField, "use POST", "")
		return
	}
	var gate *auth.Caller
	if h.guard != nil {
		c, release, err := h.guard.Admit(req)
		if err != nil {
			h.guard.WriteError(w, err)
			return
		}
		defer release()
		gate = c
	}
	if req.ContentLength > h.maxBody {
		writeError(w, http.StatusRequestEntityTooLarge, protocol.CodeTooLarge, "the body is over the limit of "+strconv.FormatInt(h.maxBody, 10)+" bytes", "")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, h.maxBody))
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			writeError(w, http.StatusRequestEntityTooLarge, protocol.CodeTooLarge, "the body is over the limit of "+strconv.FormatInt(h.maxBody, 10)+" bytes", "")
			return
		}
		writeError(w, http.StatusBadRequest, protocol.CodeInvalidJSON, "the body could not be read", "")
		return
	}
	rc, err := h.accept(req, gate, body)
	if err != nil {
		writeCoded(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(rc)
}

// accept verifies a delivery and hands its envelope on.
func (h *Handler) accept(req *http.Request, gate *auth.Caller, body []byte) (*Receipt, error) {
	hdr, err := parseHeaders(req.Header.Get(HeaderID), req.Header.Get(HeaderTimestamp), req.Header.Get(HeaderSignature))
	if err != nil {
		return nil, err
	}
	ci, err := verify(h.keys, hdr, body, h.r.IDs().Now(), h.tol)
	if err != nil {
		return nil, err
	}
	caller := &h.callers[ci]
	if gate != nil && gate.AgentID != caller.AgentID {
		return nil, &Error{Adapter: name, Code: protocol.CodePolicyDenied, Detail: "the authenticated caller did not sign the delivery", Sentinel: ErrSignature}
	}
	if !caller.Has(auth.ScopeSubmit) {
		return nil, &Error{Adapter: name, Code: protocol.CodePolicyDenied, Detail: "the sender may not submit (no submit scope)", Sentinel: ErrSignature}
	}
	items, err := h.m.translate(body)
	if err != nil {
		return nil, err
	}
	msgs := make([]*protocol.Message, len(items))
	for i, mp := range items {
		m, err := h.envelope(req.Context(), caller, hdr.id, mp)
		if err != nil {
			return nil, err
		}
		if i > 0 && mp.fields[fThreadID] == "" && items[0].fields[fThreadID] == "" && m.RunID == msgs[0].RunID {
			m.ThreadID = msgs[0].ThreadID // one delivery, one run, one thread
		}
		if err := finish(m); err != nil {
			return nil, inputError(protocol.CodeOf(err), itemPath(h.m, mp), "the mapped envelope does not fit the store", err)
		}
		if err := m.Validate(); err != nil {
			path := ""
			if mp.index >= 0 {
				path = h.m.each.text + "/" + strconv.Itoa(mp.index)
			}
			return nil, inputError(protocol.CodeOf(err), path, "the mapped envelope is invalid", err)
		}
		// A mapping that takes ids from the body writes only into the
		// sender's own runs, threads and tasks (docs/protocol.md §6.7).
		// The ids it does not take from the body are made here (random, or
		// derived from the delivery): only the named ones are claimed.
		made := make([]auth.Kind, 0, 3)
		for _, f := range [...]struct {
			k auth.Kind
			i int
		}{{auth.KindRun, fRunID}, {auth.KindThread, fThreadID}, {auth.KindTask, fTaskID}} {
			if mp.fields[f.i] == "" {
				made = append(made, f.k)
			}
		}
		if err := auth.CheckWrite(req.Context(), h.r.Store(), caller, m, made...); err != nil {
			return nil, err
		}
		msgs[i] = m
	}
	// Envelopes are handed on in order. Should one be refused, those before
	// it stay: the sender's retry of the delivery finds them by their
	// idempotency keys and hands on the rest.
	rc := &Receipt{Envelopes: make([]Accepted, 0, len(msgs))}
	for _, m := range msgs {
		acc, err := h.handOn(req.Context(), m)
		if err != nil {
			return nil, err
		}
		rc.Envelopes = append(rc.Envelopes, *acc)
	}
	return rc, nil
}

// handOn gives m to the router (task.request, task.cancel) or the store.
func (h *Handler) handOn(ctx context.Context, m *protocol.Message) (*Accepted, error) {
	switch m.Type {
	case protocol.TypeTaskRequest, protocol.TypeTaskCancel:
		hd, err := h.r.Admit(ctx, m)
		if err != nil {
			return nil, err
		}
		acc := &Accepted{ID: m.ID, Type: string(m.Type), RunID: m.RunID, TaskID: hd.TaskID()}
		if rq := hd.Request(); m.Type == protocol.TypeTaskRequest && rq != nil && rq.ID != m.ID {
			acc.ID, acc.RunID, acc.Duplicate = rq.ID, rq.RunID, true
		}
		return acc, nil
	}
	if err := h.r.Verify(m); err != nil {
		return nil, err
	}
	if v := h.r.Validator(); v != nil && m.PayloadType != "" {
		if err := v.ValidateMessage(m); err != nil {
			return nil, err
		}
	}
	res, err := h.r.Store().Append(ctx, m)
	if err != nil {
		return nil, err
	}
	acc := &Accepted{ID: m.ID, Type: string(m.Type), RunID: m.RunID, TaskID: m.TaskID, Seq: res[0].Seq, Duplicate: res[0].Duplicate}
	if res[0].Duplicate {
		// Answer with the stored envelope's ids, not the refused copy's.
		for ev, err := range h.r.Store().Read(ctx, store.Query{AfterSeq: res[0].Seq - 1, Limit: 1}) {
			if err != nil {
				return nil, err
			}
			if sm, err := ev.Message(); err == nil {
				if sm.From.AgentID != m.From.AgentID {
					// A duplicate is answered only to the sender of the
					// original (docs/protocol.md §6.7).
					return nil, coded.Wrap(auth.ErrNotFound, "the envelope duplicates one the sender did not send", nil)
				}
				acc.ID, acc.RunID, acc.TaskID = sm.ID, sm.RunID, sm.TaskID
			}
		}
	}
	return acc, nil
}

// envelope builds the message of a mapped delivery from caller.
func (h *Handler) envelope(ctx context.Context, caller *auth.Caller, webhookID string, mp *mapped) (*protocol.Message, error) {
	m := h.m.envelope(h.r.IDs(), caller.AgentID, mp)
	dedup := webhookID
	if mp.index >= 0 {
		dedup += "#" + strconv.Itoa(mp.index)
	}
	if k := mp.fields[fIdempotencyKey]; k != "" {
		dedup = k
	}
	m.IdempotencyKey = scopedKey(h.endpoint, caller.AgentID, dedup)
	if mp.fields[fRunID] == "" {
		// The delivery's run: of its webhook-id, every item of a batch in
		// it; a single event with its own id (Mapping.IdempotencyKey) in
		// the run of that id, so that the event redelivered under another
		// webhook-id finds its first copy.
		runKey := webhookID
		if k := mp.fields[fIdempotencyKey]; k != "" && mp.index < 0 {
			runKey = k
		}
		var err error
		if m.RunID, err = h.ids.RunID(ctx, caller, "webhook:"+h.endpoint, runKey); err != nil {
			return nil, err
		}
	}
	m.Meta[MetaID] = webhookID
	m.Meta[MetaEndpoint] = h.endpoint
	return m, nil
}

// scopedKey is the idempotency_key of a delivery: the endpoint, the sender
// and the delivery's own id, hashed, so that the same id from another sender
// or endpoint is another key (the store dedups by run_id and key, §5.2).
func scopedKey(endpoint, agentID, id string) string {
	sum := sha256.Sum256([]byte(endpoint + "\x00" + agentID + "\x00" + id))
	return "webhook:" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:16]))
}

// errorBody is the body of every refusal: the code of the protocol error
// table (docs/protocol.md §5.4), a message, and the JSON pointer into the
// delivery's body when the mapping failed there.
type errorBody struct {
	Error     string `json:"error"`
	Code      string `json:"code"`
	Message   string `json:"message"`
	Path      string `json:"path,omitempty"`
	Retryable bool   `json:"retryable"`
}

func writeError(w http.ResponseWriter, status int, code protocol.Code, msg, path string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody{Error: strings.ToLower(string(code)), Code: string(code), Message: msg, Path: path, Retryable: code.Retryable()})
}

func writeCoded(w http.ResponseWriter, err error) {
	code := protocol.CodeOf(err)
	var path string
	msg := err.Error()
	var ae *adapters.Error
	if errors.As(err, &ae) {
		path = ae.Path
	}
	writeError(w, auth.Status(err), code, msg, path)
}
