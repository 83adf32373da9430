package a2a

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/clutchprotocol/clutch/adapters"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/clutchprotocol/clutch/egress"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
)

// Defaults of a zero RemoteOptions.
const (
	DefaultMaxRuntimeSec    = 600
	DefaultPollInterval     = 500 * time.Millisecond
	DefaultMaxResubscribes  = 3
	DefaultCancelTimeout    = 5 * time.Second
	DefaultMaxResponseBytes = 16 << 20
	maxCardBytes            = 1 << 20
	maxRemoteContexts       = 4096
)

// RemoteOptions configures a Remote. Nil means defaults; zero fields take
// defaults.
type RemoteOptions struct {
	// AgentID is the Clutch agent id of the remote agent; "agent:" and
	// the card's name in lower case (spaces as '-') when "".
	AgentID string
	// BearerToken, when set, is sent as "Authorization: Bearer <token>"
	// on every request to the remote agent, the card's included.
	BearerToken string
	// HTTPClient makes the requests; its Transport is wrapped to add the
	// token and classify HTTP statuses. Its Transport, when set, must be an
	// *http.Transport: the Remote uses a clone that dials through Egress,
	// without a proxy. Do not give it a Timeout shorter than the longest
	// task: streams are bounded by the task's context (max_runtime_sec)
	// instead. Nil: a client of its own, without a timeout.
	HTTPClient *http.Client
	// Egress is the policy every connection to the remote agent is dialled
	// through — the card's URL and the interfaces the card lists, at every
	// dial and redirect (package egress, docs/protocol.md §6), restricted
	// further by the network level of Security. egress.Default() when nil:
	// public addresses only, so an agent on loopback or a private network
	// needs an IP or CIDR rule ("127.0.0.1", "10.0.0.0/8").
	Egress *egress.Policy
	// CardPath is where the card is, relative to the URL given to
	// NewRemote; CardPath (the A2A well-known path) when "". A URL ending
	// in ".json" is taken as the card's own URL.
	CardPath string
	// Limits of the mapped card: max_runtime_sec bounds every forwarded
	// task (the router cancels it, and the remote task with it); nil
	// means {max_runtime_sec: DefaultMaxRuntimeSec}.
	Limits *protocol.Limits
	// Security of the mapped card (sandbox, network). Its network level
	// (docs/protocol.md §6.4) is enforced on the Remote's connections:
	// "egress-restricted" dials only what Egress's allow rules match,
	// "open" what Egress allows; "none" cannot reach the agent, so
	// NewRemote refuses it with POLICY_DENIED. Nil, or no network level,
	// means {network: "open"}: forwarding to a remote agent is network
	// access, and the card says so.
	Security *protocol.CardSecurity
	// Capabilities are added to the ones mapped from the card's skills.
	Capabilities []protocol.Capability
	// Schemas decides which payload_type a remote data part may claim: a
	// type it has registered. Nil trusts any well-formed payload_type (the
	// router's validator still validates the result).
	Schemas *schema.Registry
	// PollInterval is the wait between GetTask calls when a task is
	// followed by polling; DefaultPollInterval when 0.
	PollInterval time.Duration
	// MaxResubscribes is how many times a dropped stream is re-attached
	// with SubscribeToTask before falling back to polling;
	// DefaultMaxResubscribes when 0, none when negative.
	MaxResubscribes int
	// CancelTimeout bounds the CancelTask sent to the remote agent when a
	// Clutch task is cancelled or times out; DefaultCancelTimeout when 0.
	CancelTimeout time.Duration
	// MaxResponseBytes bounds a non-streaming response body;
	// DefaultMaxResponseBytes when 0.
	MaxResponseBytes int64
	// Logger receives diagnostics; slog.Default() when nil.
	Logger *slog.Logger
}

func (o *RemoteOptions) setDefaults() error {
	if o.AgentID != "" && (!strings.HasPrefix(o.AgentID, protocol.PrefixAgent) || len(o.AgentID) == len(protocol.PrefixAgent)) {
		return optionsError("AgentID " + o.AgentID + " must start with agent:")
	}
	if o.CardPath == "" {
		o.CardPath = CardPath
	}
	if o.Limits == nil {
		o.Limits = &protocol.Limits{MaxRuntimeSec: DefaultMaxRuntimeSec}
	}
	if o.PollInterval < 0 || o.CancelTimeout < 0 || o.MaxResponseBytes < 0 {
		return optionsError("PollInterval, CancelTimeout and MaxResponseBytes must not be negative")
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.MaxResubscribes == 0 {
		o.MaxResubscribes = DefaultMaxResubscribes
	}
	if o.CancelTimeout == 0 {
		o.CancelTimeout = DefaultCancelTimeout
	}
	if o.MaxResponseBytes == 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Egress == nil {
		o.Egress = egress.Default()
	}
	sec := protocol.CardSecurity{Network: "open"}
	if o.Security != nil {
		sec = *o.Security
		if sec.Network == "" {
			sec.Network = "open"
		}
	}
	o.Security = &sec
	if o.HTTPClient != nil && o.HTTPClient.Transport != nil {
		if _, ok := o.HTTPClient.Transport.(*http.Transport); !ok {
			return optionsError("HTTPClient.Transport must be an *http.Transport, so that it dials through the egress policy")
		}
	}
	return nil
}

// Remote is an external A2A 1.0 agent seen as a Clutch agent: its card
// mapped to a Clutch AgentCard, and Handle, a router.Handler that
// forwards each task to it. Register wires both into a router. A Remote is
// safe for concurrent use.
type Remote struct {
	url     string
	opts    RemoteOptions
	a2aCard *a2a.AgentCard
	card    *protocol.AgentCard
	client  *a2aclient.Client
	hc      *http.Client
	policy  *egress.Policy  // Egress at the card's network level
	owned   *http.Transport // closed by Close
	closed  atomic.Bool

	mu       sync.Mutex
	contexts map[string]string // Clutch thread -> the remote's contextId, when it chose its own
}

// Register resolves the A2A agent at url (its base URL, or its card's URL)
// and registers it with r as an in-process agent whose handler forwards to
// it: routable like any local agent, without heartbeats. It registers
// [PayloadContent] in the schema registry behind r's validator
// (schema.RegistryOf), if it has one and the type is not there yet, so that
// requests carrying a Content pass Submit's validation. Close the Remote
// when done with it.
func Register(ctx context.Context, r *router.Router, url string, opts *RemoteOptions) (*Remote, error) {
	if r == nil {
		return nil, optionsError("nil router")
	}
	if err := registerContent(r); err != nil {
		return nil, err
	}
	rm, err := NewRemote(ctx, url, opts)
	if err != nil {
		return nil, err
	}
	if err := r.Register(ctx, rm.Card(), rm.Handle); err != nil {
		rm.Close()
		return nil, err
	}
	return rm, nil
}

// NewRemote resolves the A2A agent at url and maps its card, without
// registering it anywhere (see Register, or router.Attach for an agent
// registered by other means).
func NewRemote(ctx context.Context, url string, opts *RemoteOptions) (*Remote, error) {
	var o RemoteOptions
	if opts != nil {
		o = *opts
	}
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	if !strings.HasPrefix(url, "http://") && !strings.HasPrefix(url, "https://") {
		return nil, optionsError("url " + url + " is not an absolute http(s) URL")
	}
	// The card's network level restricts the policy (docs/protocol.md §6.4).
	policy, err := o.Egress.Network(o.Security.Network)
	if err != nil {
		return nil, optionsError("Security.Network: " + err.Error())
	}
	if err := policy.PrecheckURL(url); err != nil { // level none refuses every URL
		return nil, &Error{Adapter: "a2a", Code: protocol.CodePolicyDenied, Detail: "the egress policy at network level " + policy.Level() + " refuses " + url, Sentinel: ErrCard, Err: err}
	}
	rm := &Remote{url: strings.TrimRight(url, "/"), opts: o, policy: policy, contexts: map[string]string{}}
	if rm.hc, err = rm.httpClient(); err != nil {
		return nil, optionsError("HTTPClient: " + err.Error())
	}
	card, err := rm.fetchCard(ctx)
	if err != nil {
		rm.Close()
		return nil, err
	}
	rm.a2aCard = card
	if rm.card, err = ClutchCard(card, o.AgentID); err != nil {
		rm.Close()
		return nil, err
	}
	rm.card.Limits = o.Limits
	rm.card.Security = o.Security
	rm.card.Capabilities = append(rm.card.Capabilities, o.Capabilities...)
	if err := rm.card.Validate(); err != nil {
		rm.Close()
		return nil, &Error{Adapter: "a2a", Code: protocol.CodeInvalidField, Detail: "the mapped card is not valid", Sentinel: ErrCard, Err: err}
	}
	rm.client, err = a2aclient.NewFromCard(ctx, card, a2aclient.WithDefaultsDisabled(),
		a2aclient.WithJSONRPCTransport(rm.hc), a2aclient.WithRESTTransport(rm.hc))
	if err != nil {
		rm.Close()
		return nil, &Error{Adapter: "a2a", Code: protocol.CodeUnsupportedVersion, Detail: "the card offers no A2A 1.x JSON-RPC or HTTP+JSON interface", Sentinel: ErrCard, Err: err}
	}
	return rm, nil
}

// Card returns the mapped Clutch AgentCard. Do not modify it.
func (rm *Remote) Card() *protocol.AgentCard { return rm.card }

// A2ACard returns the remote agent's A2A card as resolved. Do not modify it.
func (rm *Remote) A2ACard() *a2a.AgentCard { return rm.a2aCard }

// Close releases the Remote's connections; Handle then fails every task
// with TOOL_UNAVAILABLE, not retryable (a closed Remote does not come
// back). Closing twice is harmless.
func (rm *Remote) Close() error {
	if rm.closed.Swap(true) {
		return nil
	}
	if rm.client != nil {
		_ = rm.client.Destroy()
	}
	if rm.owned != nil {
		rm.owned.CloseIdleConnections()
	}
	return nil
}

func (rm *Remote) httpClient() (*http.Client, error) {
	// Every dial goes through the policy, proxies off (docs/protocol.md §6).
	hc, base, err := rm.policy.Client(rm.opts.HTTPClient)
	if err != nil {
		return nil, err
	}
	rm.owned = base
	hc.Transport = &transport{base: base, token: rm.opts.BearerToken, maxBody: rm.opts.MaxResponseBytes}
	return hc, nil
}

// fetchCard GETs and decodes the agent card, bounded in size.
func (rm *Remote) fetchCard(ctx context.Context) (*a2a.AgentCard, error) {
	u := rm.url
	if !strings.HasSuffix(u, ".json") {
		u += rm.opts.CardPath
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, &Error{Adapter: "a2a", Code: protocol.CodeInvalidField, Detail: "card URL " + u, Sentinel: ErrCard, Err: err}
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set(a2a.SvcParamVersion, string(a2a.Version))
	resp, err := rm.hc.Do(req)
	if err != nil {
		ep := classify(err, rm.url)
		return nil, &Error{Adapter: "a2a", Code: ep.Code, Detail: "fetching the card at " + u, Sentinel: ErrCard, Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxCardBytes+1))
	if err != nil {
		return nil, &Error{Adapter: "a2a", Code: protocol.CodeToolUnavailable, Detail: "reading the card at " + u, Sentinel: ErrCard, Err: err}
	}
	if len(body) > maxCardBytes {
		return nil, &Error{Adapter: "a2a", Code: protocol.CodeTooLarge, Detail: fmt.Sprintf("the card at %s is over %d bytes", u, maxCardBytes), Sentinel: ErrCard}
	}
	var card a2a.AgentCard
	if err := json.Unmarshal(body, &card); err != nil {
		// @a2a-js/sdk 1.3.0 serves securitySchemes in its internal form
		// ({"scheme": {"$case": ...}}), which a2a-go refuses. This package
		// does not read them (the token is RemoteOptions.BearerToken), so
		// such a card is read without its security members.
		stripped, ok := withoutSecurity(body)
		if !ok || json.Unmarshal(stripped, &card) != nil {
			return nil, &Error{Adapter: "a2a", Code: protocol.CodeInvalidJSON, Detail: "the card at " + u + " is not an A2A agent card", Sentinel: ErrCard, Err: err}
		}
		rm.opts.Logger.WarnContext(ctx, "a2a: the card's security members do not parse; read without them", "card", u, "err", err)
	}
	if len(card.SupportedInterfaces) == 0 {
		// An A2A 0.3 card has url and protocolVersion instead.
		return nil, &Error{Adapter: "a2a", Code: protocol.CodeUnsupportedVersion, Detail: "the card at " + u + " lists no supportedInterfaces: an A2A 0.3 agent (this package speaks 1.0)", Sentinel: ErrCard}
	}
	return &card, nil
}

// withoutSecurity returns a card document without its securitySchemes
// and securityRequirements (the card's and its skills').
func withoutSecurity(body []byte) ([]byte, bool) {
	var doc map[string]json.RawMessage
	if json.Unmarshal(body, &doc) != nil {
		return nil, false
	}
	delete(doc, "securitySchemes")
	delete(doc, "securityRequirements")
	if raw, ok := doc["skills"]; ok {
		var skills []map[string]json.RawMessage
		if json.Unmarshal(raw, &skills) != nil {
			return nil, false
		}
		for _, sk := range skills {
			delete(sk, "securityRequirements")
		}
		b, err := json.Marshal(skills)
		if err != nil {
			return nil, false
		}
		doc["skills"] = b
	}
	out, err := json.Marshal(doc)
	return out, err == nil
}

// ClutchCard maps an A2A agent card to a Clutch AgentCard: agent_id is
// agentID ("" derives "agent:<name>" from the card's name), display from
// name and description, endpoints.a2a.url from the first JSON-RPC
// interface (else the first interface), and one capability per skill:
// "skill:<id>", or the skill id itself when it already has the form
// <kind>:<name>, with the skill's tags. Limits and security are left to
// the caller.
func ClutchCard(c *a2a.AgentCard, agentID string) (*protocol.AgentCard, error) {
	if c == nil {
		return nil, &Error{Adapter: "a2a", Code: protocol.CodeMissingField, Detail: "nil card", Sentinel: ErrCard}
	}
	if agentID == "" {
		slug := adapters.Slug(c.Name)
		if slug == "" {
			return nil, &Error{Adapter: "a2a", Code: protocol.CodeMissingField, Path: "/name", Detail: "the card has no usable name; set RemoteOptions.AgentID", Sentinel: ErrCard}
		}
		agentID = protocol.PrefixAgent + slug
	}
	out := &protocol.AgentCard{
		V: protocol.Version, AgentID: agentID,
		Display:      &protocol.Display{Name: c.Name, Desc: c.Description},
		Capabilities: []protocol.Capability{},
	}
	var url string
	for _, iface := range c.SupportedInterfaces {
		if iface == nil {
			continue
		}
		if iface.ProtocolBinding == a2a.TransportProtocolJSONRPC {
			url = iface.URL
			break
		}
		if url == "" {
			url = iface.URL
		}
	}
	if url != "" {
		out.Endpoints = map[string]protocol.Endpoint{"a2a": {URL: url}}
	}
	seen := map[string]bool{}
	for _, sk := range c.Skills {
		id := skillCapability(sk.ID)
		if seen[id] {
			continue
		}
		seen[id] = true
		out.Capabilities = append(out.Capabilities, protocol.Capability{ID: id, Tags: append([]string(nil), sk.Tags...)})
	}
	if err := out.Validate(); err != nil {
		return nil, &Error{Adapter: "a2a", Code: protocol.CodeInvalidField, Detail: "the mapped card is not valid", Sentinel: ErrCard, Err: err}
	}
	return out, nil
}

// transport adds the bearer token, turns HTTP error statuses into a
// statusError (so 4xx and 5xx can be told apart) and bounds non-streaming
// response bodies.
type transport struct {
	base    http.RoundTripper
	token   string
	maxBody int64
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	req, cloned := setTraceparent(req) // trace.go
	if t.token != "" && req.Header.Get("Authorization") == "" {
		if !cloned {
			req = req.Clone(req.Context())
		}
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 400 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		return nil, &statusError{code: resp.StatusCode, status: resp.Status}
	}
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		resp.Body = &limitedBody{ReadCloser: resp.Body, left: t.maxBody}
	}
	return resp, nil
}

// statusError is an HTTP error status from the remote agent.
type statusError struct {
	code   int
	status string
}

func (e *statusError) Error() string { return "HTTP " + e.status }

// limitedBody fails a read past its limit instead of truncating silently.
type limitedBody struct {
	io.ReadCloser
	left int64
}

var errResponseTooLarge = errors.New("a2a: response body over the size limit")

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errResponseTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// classify turns a failed call to the remote agent into a wire error:
// unreachable peers, dropped connections, HTTP 5xx and JSON-RPC internal
// or server errors are retryable TOOL_UNAVAILABLE; HTTP 429 is retryable
// RATE_LIMITED; other HTTP 4xx and A2A errors are not retryable.
func classify(err error, remote string) *protocol.ErrorPayload {
	details := map[string]any{"remote": remote}
	ep := func(code protocol.Code, retryable bool) *protocol.ErrorPayload {
		return &protocol.ErrorPayload{Code: code, Message: "A2A agent " + remote + ": " + err.Error(), Retryable: retryable, Details: details}
	}
	var denied *egress.DeniedError
	if errors.As(err, &denied) {
		// The egress policy refused a dial or a redirect (docs/protocol.md §6).
		details["host"] = denied.Host
		if denied.Address != "" {
			details["address"] = denied.Address
		}
		details["rule"] = denied.Rule
		return ep(protocol.CodePolicyDenied, false)
	}
	var se *statusError
	if errors.As(err, &se) {
		details["http_status"] = se.code
		switch {
		case se.code == http.StatusTooManyRequests:
			return ep(protocol.CodeRateLimited, true)
		case se.code >= 500:
			return ep(protocol.CodeToolUnavailable, true)
		case se.code == http.StatusUnauthorized || se.code == http.StatusForbidden:
			return ep(protocol.CodeUnauthorized, false)
		case se.code == http.StatusNotFound:
			return ep(protocol.CodeNotFound, false)
		}
		return ep(protocol.CodeToolFailed, false)
	}
	for _, c := range []struct {
		target    error
		code      protocol.Code
		retryable bool
	}{
		{a2a.ErrInternalError, protocol.CodeToolUnavailable, true},
		{a2a.ErrServerError, protocol.CodeToolUnavailable, true},
		{a2a.ErrTaskNotFound, protocol.CodeNotFound, false},
		{a2a.ErrUnauthenticated, protocol.CodeUnauthorized, false},
		{a2a.ErrUnauthorized, protocol.CodeUnauthorized, false},
		{a2a.ErrVersionNotSupported, protocol.CodeUnsupportedVersion, false},
		{a2a.ErrUnsupportedOperation, protocol.CodeUnsupportedTask, false},
		{a2a.ErrMethodNotFound, protocol.CodeUnsupportedTask, false},
		{a2a.ErrPushNotificationNotSupported, protocol.CodeUnsupportedTask, false},
		{a2a.ErrExtensionSupportRequired, protocol.CodeUnsupportedTask, false},
		{a2a.ErrUnsupportedContentType, protocol.CodeUnsupportedTask, false},
		{a2a.ErrInvalidParams, protocol.CodeInvalidField, false},
		{a2a.ErrInvalidRequest, protocol.CodeInvalidField, false},
		{a2a.ErrParseError, protocol.CodeInvalidField, false},
		{a2a.ErrInvalidAgentResponse, protocol.CodeToolFailed, false},
		{a2a.ErrTaskNotCancelable, protocol.CodeToolFailed, false},
	} {
		if errors.Is(err, c.target) {
			details["a2a_error"] = a2a.ErrorReason(c.target)
			return ep(c.code, c.retryable)
		}
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) {
		return ep(protocol.CodeToolUnavailable, true)
	}
	return ep(protocol.CodeToolFailed, false)
}
