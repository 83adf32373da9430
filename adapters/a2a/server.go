package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
)

// Paths of the Server, relative to its base URL.
const (
	// CardPath is the A2A agent card of the whole team (RFC 8615 well-known
	// path of A2A 1.0); its JSON-RPC endpoint is RPCPath.
	CardPath = "/.well-known/agent-card.json"
	// RPCPath is the team's A2A JSON-RPC endpoint: tasks are routed by
	// capability among the exposed agents.
	RPCPath = "/a2a"
	// AgentsPath prefixes one agent's surface: AgentsPath+"/{name}" is its
	// description, and under it CardPath and RPCPath are its own A2A
	// card and endpoint, "/run" and "/stream" the simple surface (docs/protocol.md §13
	// §2). {name} is the agent id without "agent:".
	AgentsPath = "/agents"
)

// Defaults of a zero ServerOptions.
const (
	DefaultMaxBodyBytes    = 1 << 20
	DefaultMaxPromptLength = 32 << 10
	DefaultKeepAlive       = 15 * time.Second
	DefaultCardVersion     = "1.0.0"
	DefaultMaxRunning      = 10000
)

// ServerOptions configures a Server. Nil means defaults; zero fields take
// defaults.
type ServerOptions struct {
	// BaseURL is the absolute URL the Server is reachable at, without a
	// trailing slash ("https://agents.example.com/clutch"): agent cards
	// advertise endpoints under it. "" derives it from each request (http
	// or https, and the Host header), which is right when the Server is
	// mounted at the root of a host.
	BaseURL string
	// Name, Description and Version describe the team card; "clutch", a
	// list of the exposed agents and DefaultCardVersion when "".
	Name, Description, Version string
	// Auth identifies the caller of every request but the agent cards
	// (required: NewServer refuses a nil one; auth.Anonymous is the
	// explicit opt-in to anonymous callers). The caller's agent id is the
	// from.agent_id of what it submits, and it sees only its own tasks
	// unless it holds auth.ScopeReadAll.
	Auth auth.Authenticator
	// Limits are the per-caller rate limit, the bound on requests in
	// flight and the body limit applied with Auth; nil means none (see
	// auth.Options).
	Limits *auth.Options
	// Expose lists the agent ids the Server exposes (required, at least
	// one): cards, GET /agents and routing see only these, and a message
	// to the team endpoint is routed among them only.
	Expose []string
	// MaxRunning bounds the tasks submitted here that are followed for
	// CancelTask at once; DefaultMaxRunning when 0. A send past it is
	// refused with a CAPACITY error.
	MaxRunning int
	// DisableStreaming takes SendStreamingMessage, SubscribeToTask and the
	// simple surface's stream out: cards declare capabilities.streaming =
	// false and the methods answer UnsupportedOperationError.
	DisableStreaming bool
	// MaxBodyBytes bounds a request body (JSON-RPC and the simple
	// surface); DefaultMaxBodyBytes (1 MiB) when 0. A bigger body gets 413.
	MaxBodyBytes int64
	// MaxPromptLength bounds the simple surface's prompt, in characters;
	// DefaultMaxPromptLength when 0.
	MaxPromptLength int
	// KeepAlive is the interval of SSE keep-alive comments on streams;
	// DefaultKeepAlive when 0, none when negative.
	KeepAlive time.Duration
	// Logger receives the Server's diagnostics (internal errors are logged
	// here, never sent to clients); slog.Default() when nil.
	Logger *slog.Logger
}

func (o *ServerOptions) setDefaults() error {
	if o.BaseURL != "" {
		if !strings.HasPrefix(o.BaseURL, "http://") && !strings.HasPrefix(o.BaseURL, "https://") {
			return optionsError("BaseURL " + o.BaseURL + " is not an absolute http(s) URL")
		}
		o.BaseURL = strings.TrimRight(o.BaseURL, "/")
	}
	if o.Auth == nil {
		return optionsError("Auth is required (auth.Anonymous allows anonymous callers explicitly)")
	}
	if len(o.Expose) == 0 {
		return optionsError("Expose must name at least one agent: a Server exposes only the agents it is told to")
	}
	o.Expose = slices.Clone(o.Expose)
	for _, id := range o.Expose {
		if !strings.HasPrefix(id, protocol.PrefixAgent) || len(id) == len(protocol.PrefixAgent) {
			return optionsError("agent id " + id + " must start with agent:")
		}
	}
	slices.Sort(o.Expose)
	o.Expose = slices.Compact(o.Expose)
	if o.MaxRunning < 0 {
		return optionsError("MaxRunning must not be negative")
	}
	if o.MaxRunning == 0 {
		o.MaxRunning = DefaultMaxRunning
	}
	if o.Name == "" {
		o.Name = "clutch"
	}
	if o.Version == "" {
		o.Version = DefaultCardVersion
	}
	if o.MaxBodyBytes < 0 || o.MaxPromptLength < 0 {
		return optionsError("MaxBodyBytes and MaxPromptLength must not be negative")
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.MaxPromptLength == 0 {
		o.MaxPromptLength = DefaultMaxPromptLength
	}
	if o.KeepAlive == 0 {
		o.KeepAlive = DefaultKeepAlive
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return nil
}

// Server is an http.Handler that serves registered Clutch agents over A2A
// 1.0 JSON-RPC and over the simple HTTP surface of docs/protocol.md §13.2. See the
// package doc for its paths and mapping. It is safe for concurrent use.
type Server struct {
	r    *router.Router
	st   store.Store
	reg  *registry.Registry
	opts ServerOptions
	mux  *http.ServeMux
	team http.Handler // the team's JSON-RPC handler
	// guard authenticates and limits every request but the cards;
	// guarded is mux behind it.
	guard   *auth.Guard
	guarded http.Handler

	mu sync.Mutex
	// schemes and requirements are the cards' security (security()).
	schemes      a2a.NamedSecuritySchemes
	requirements a2a.SecurityRequirementsOptions

	running map[string]*router.Handle // tasks submitted here that have not ended, by task id
	ids     *auth.Deriver             // the runs of messageIds and Idempotency-Keys (docs/protocol.md §6.7)
}

// NewServer returns a Server over the router r (and the store and
// registry r was built with). It registers [PayloadContent] in the schema
// registry behind r's validator (schema.RegistryOf), if it has one and the
// type is not there yet. opts may be nil.
func NewServer(r *router.Router, opts *ServerOptions) (*Server, error) {
	if r == nil {
		return nil, optionsError("a router is required")
	}
	var o ServerOptions
	if opts != nil {
		o = *opts
	}
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	guard, err := auth.NewGuard(o.Auth, o.Limits)
	if err != nil {
		return nil, err
	}
	if err := registerContent(r); err != nil {
		return nil, err
	}
	ids := auth.NewDeriver(r.Store())
	s := &Server{r: r, st: r.Store(), reg: r.Registry(), opts: o, guard: guard, running: map[string]*router.Handle{}, ids: ids}
	s.schemes, s.requirements = security(o.Auth)
	s.team = s.rpcHandler("")
	mux := http.NewServeMux()
	mux.HandleFunc(CardPath, s.serveCard)
	mux.HandleFunc(RPCPath, s.serveRPC)
	mux.HandleFunc(AgentsPath, s.serveAgents)
	mux.HandleFunc(AgentsPath+"/{name}", s.serveAgent)
	mux.HandleFunc(AgentsPath+"/{name}"+CardPath, s.serveCard)
	mux.HandleFunc(AgentsPath+"/{name}"+RPCPath, s.serveRPC)
	mux.HandleFunc(AgentsPath+"/{name}/run", s.serveRun)
	mux.HandleFunc(AgentsPath+"/{name}/stream", s.serveStream)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, &httpError{Error: "not_found", Message: "no such path: " + r.URL.Path})
	})
	s.mux = mux
	s.guarded = guard.Wrap(mux)
	return s, nil
}

// ServeHTTP implements http.Handler. The agent cards are public (A2A
// discovery: a client reads a card to learn how to call and authenticate);
// every other path goes through Auth and Limits first.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r = withInboundTrace(r) // trace.go
	if isCardPath(r.URL.Path) {
		s.mux.ServeHTTP(w, r)
		return
	}
	s.guarded.ServeHTTP(w, r)
}

// isCardPath reports whether p is CardPath or AgentsPath/{name}/CardPath.
func isCardPath(p string) bool {
	if p == CardPath {
		return true
	}
	name, ok := strings.CutPrefix(p, AgentsPath+"/")
	if !ok {
		return false
	}
	name, ok = strings.CutSuffix(name, CardPath)
	return ok && name != "" && !strings.Contains(name, "/")
}

func (s *Server) rpcHandler(agentID string) http.Handler {
	opts := []a2asrv.TransportOption{a2asrv.WithTransportPanicHandler(func(p any) error {
		s.opts.Logger.Error("a2a: panic serving JSON-RPC", "panic", p)
		return a2a.NewError(a2a.ErrInternalError, "internal error")
	})}
	if s.opts.KeepAlive > 0 {
		opts = append(opts, a2asrv.WithTransportKeepAlive(s.opts.KeepAlive))
	}
	return a2asrv.NewJSONRPCHandler(&rpc{s: s, agent: agentID}, opts...)
}

// serveRPC serves the team's or one agent's JSON-RPC endpoint.
func (s *Server) serveRPC(w http.ResponseWriter, r *http.Request) {
	h := s.team
	if name := r.PathValue("name"); name != "" {
		a, ok := s.exposed(name)
		if !ok {
			writeRPCError(w, http.StatusNotFound, a2a.ErrMethodNotFound, "no agent "+name)
			return
		}
		h = s.rpcHandler(a.ID())
	}
	if v := r.Header.Get(a2a.SvcParamVersion); v != "" && v != "1" && !strings.HasPrefix(v, "1.") {
		// A2A 1.0 §3.6.2: a version the server does not speak. A request
		// without the header is served as 1.0 (the spec reads it as 0.3;
		// the official SDKs route it by method name, and so does this).
		writeRPCError(w, http.StatusOK, a2a.ErrVersionNotSupported, "A2A version "+v+" is not supported; this server speaks 1.0")
		return
	}
	if r.ContentLength > s.opts.MaxBodyBytes {
		writeRPCError(w, http.StatusRequestEntityTooLarge, a2a.ErrInvalidRequest, "request body over the limit of "+itoa(s.opts.MaxBodyBytes)+" bytes")
		return
	}
	if r.Method == http.MethodPost {
		// The SDK decodes with encoding/json, where a duplicate key's last
		// value wins and invalid UTF-8 becomes U+FFFD: the body is checked
		// strictly (RFC 7493: unique names, valid UTF-8 and escapes) first.
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes))
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			writeRPCError(w, http.StatusRequestEntityTooLarge, a2a.ErrInvalidRequest, "request body over the limit of "+itoa(s.opts.MaxBodyBytes)+" bytes")
			return
		case err != nil:
			writeRPCError(w, http.StatusBadRequest, a2a.ErrInvalidRequest, "the request body could not be read")
			return
		case !jsontext.Value(body).IsValid():
			writeRPCError(w, http.StatusOK, a2a.ErrParseError, "the body is not valid JSON (RFC 7493: duplicate object keys, invalid UTF-8 and lone surrogates are refused)")
			return
		}
		if id, problem := checkParams(body); problem != "" {
			writeRPCErrorID(w, id, -32602, problem)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	h.ServeHTTP(w, r)
}

// writeRPCError answers a JSON-RPC request that never reached a handler.
func writeRPCError(w http.ResponseWriter, status int, code error, msg string) {
	codes := map[error]int{a2a.ErrParseError: -32700, a2a.ErrInvalidRequest: -32600, a2a.ErrMethodNotFound: -32601, a2a.ErrVersionNotSupported: -32009}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"jsonrpc": "2.0", "id": nil,
		"error": map[string]any{"code": codes[code], "message": msg},
	})
}

// writeRPCErrorID answers a JSON-RPC request with an error before the
// SDK's handler reads it, with the request's id (null when it has none).
func writeRPCErrorID(w http.ResponseWriter, id jsontext.Value, code int, msg string) {
	if id == nil {
		id = jsontext.Value("null")
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"jsonrpc": "2.0", "id": json.RawMessage(id),
		"error": map[string]any{"code": code, "message": msg},
	})
}

// exposed returns the exposed agent named name ("ken" or "agent:ken").
func (s *Server) exposed(name string) (*registry.Agent, bool) {
	id := name
	if !strings.HasPrefix(id, protocol.PrefixAgent) {
		id = protocol.PrefixAgent + name
	}
	if _, ok := slices.BinarySearch(s.opts.Expose, id); !ok {
		return nil, false
	}
	return s.reg.Get(id)
}

// agents returns the exposed agents, sorted by id.
func (s *Server) agents() []*registry.Agent {
	out := make([]*registry.Agent, 0, len(s.opts.Expose))
	for _, id := range s.opts.Expose {
		if a, ok := s.reg.Get(id); ok {
			out = append(out, a)
		}
	}
	slices.SortFunc(out, func(a, b *registry.Agent) int { return strings.Compare(a.ID(), b.ID()) })
	return out
}

// agentName is an agent id without its "agent:" prefix: its path segment.
func agentName(id string) string { return strings.TrimPrefix(id, protocol.PrefixAgent) }

// baseURL is the Server's absolute base URL for r.
func (s *Server) baseURL(r *http.Request) string {
	if s.opts.BaseURL != "" {
		return s.opts.BaseURL
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// serveCard serves the team's card or one agent's (A2A 1.0 agent card).
func (s *Server) serveCard(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	if r.Method == http.MethodOptions {
		w.Header().Set("Access-Control-Allow-Methods", "GET, OPTIONS")
		w.Header().Set("Access-Control-Allow-Headers", "Content-Type")
		w.WriteHeader(http.StatusOK)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, http.StatusMethodNotAllowed, &httpError{Error: "method_not_allowed", Message: "use GET"})
		return
	}
	base := s.baseURL(r)
	var card *a2a.AgentCard
	if name := r.PathValue("name"); name != "" {
		a, ok := s.exposed(name)
		if !ok {
			writeError(w, http.StatusNotFound, errAgentNotFound(name))
			return
		}
		card = s.agentCard(base, a)
	} else {
		card = s.teamCard(base)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-cache")
	_ = json.NewEncoder(w).Encode(card)
}

// teamCard is the A2A card of every exposed agent together.
func (s *Server) teamCard(base string) *a2a.AgentCard {
	agents := s.agents()
	desc := s.opts.Description
	if desc == "" {
		ids := make([]string, len(agents))
		for i, a := range agents {
			ids[i] = a.ID()
		}
		desc = "Clutch agents routed by capability: " + strings.Join(ids, ", ")
	}
	return s.card(s.opts.Name, desc, base+RPCPath, agents)
}

// agentCard is the A2A card of one agent.
func (s *Server) agentCard(base string, a *registry.Agent) *a2a.AgentCard {
	name, desc := agentName(a.ID()), "Clutch agent "+a.ID()
	if d := a.Card().Display; d != nil {
		if d.Name != "" {
			name = d.Name
		}
		if d.Desc != "" {
			desc = d.Desc
		}
	}
	return s.card(name, desc, base+AgentsPath+"/"+agentName(a.ID())+RPCPath, []*registry.Agent{a})
}

// card maps Clutch cards to one A2A card: each capability is a skill (same
// id; the same capability of several agents is one skill), served at url.
func (s *Server) card(name, desc, url string, agents []*registry.Agent) *a2a.AgentCard {
	skills := []a2a.AgentSkill{}
	offered := map[string][]string{} // skill id -> agents
	for _, a := range agents {
		for _, c := range a.Card().Capabilities {
			i := slices.IndexFunc(skills, func(sk a2a.AgentSkill) bool { return sk.ID == c.ID })
			if i < 0 {
				skills = append(skills, a2a.AgentSkill{ID: c.ID, Name: c.ID, Tags: []string{}})
				i = len(skills) - 1
			}
			for _, t := range c.Tags {
				if !slices.Contains(skills[i].Tags, t) {
					skills[i].Tags = append(skills[i].Tags, t)
				}
			}
			offered[c.ID] = append(offered[c.ID], a.ID())
		}
	}
	for i := range skills {
		skills[i].Description = skills[i].ID + ", offered by " + strings.Join(offered[skills[i].ID], ", ")
	}
	modes := []string{"text/plain", "application/json"}
	return &a2a.AgentCard{
		Name: name, Description: desc, Version: s.opts.Version,
		SupportedInterfaces: []*a2a.AgentInterface{{URL: url, ProtocolBinding: a2a.TransportProtocolJSONRPC, ProtocolVersion: a2a.Version}},
		Capabilities:        a2a.AgentCapabilities{Streaming: !s.opts.DisableStreaming},
		DefaultInputModes:   modes, DefaultOutputModes: modes,
		Skills:          skills,
		SecuritySchemes: s.schemes, SecurityRequirements: s.requirements,
	}
}

// security is what the cards declare about ServerOptions.Auth, from the
// credentials it takes (auth.Credentials): each is a scheme, any one of
// them will do, and none is required when anonymous callers are
// admitted. An authenticator that says nothing is declared as bearer,
// the credential package auth reads.
func security(a auth.Authenticator) (a2a.NamedSecuritySchemes, a2a.SecurityRequirementsOptions) {
	creds := auth.Credentials(a)
	if len(creds) == 0 {
		creds = []auth.Credential{auth.CredentialBearer}
	}
	schemes := a2a.NamedSecuritySchemes{}
	var reqs a2a.SecurityRequirementsOptions
	anonymous := false
	for _, c := range creds {
		var name a2a.SecuritySchemeName
		switch c {
		case auth.CredentialBearer:
			name = "bearer"
			schemes[name] = a2a.HTTPAuthSecurityScheme{Scheme: "Bearer", Description: "an API key or a token"}
		case auth.CredentialAPIKey:
			name = "apiKey"
			schemes[name] = a2a.APIKeySecurityScheme{Location: a2a.APIKeySecuritySchemeLocationHeader, Name: "X-API-Key", Description: "an API key"}
		case auth.CredentialClientCert:
			name = "mtls"
			schemes[name] = a2a.MutualTLSSecurityScheme{Description: "a TLS client certificate"}
		case auth.CredentialNone:
			anonymous = true
			continue
		default:
			continue
		}
		reqs = append(reqs, a2a.SecurityRequirements{name: {}})
	}
	if len(schemes) == 0 {
		schemes = nil
	}
	if anonymous {
		reqs = nil // credentials are optional: declared, not required
	}
	return schemes, reqs
}

// full reports whether MaxRunning tasks are followed already.
func (s *Server) full() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.running) >= s.opts.MaxRunning
}

// track remembers a running task's handle until it ends, for CancelTask.
func (s *Server) track(h *router.Handle) {
	id := h.TaskID()
	select {
	case <-h.Done():
		return
	default:
	}
	s.mu.Lock()
	if _, ok := s.running[id]; ok {
		s.mu.Unlock()
		return // a duplicate of a task followed already
	}
	s.running[id] = h
	s.mu.Unlock()
	go func() {
		<-h.Done()
		s.forget(h)
	}()
}

// forget stops following h once it has ended. CancelTask calls it as soon
// as the task ends, so the slot is free when its answer is sent; track's
// goroutine calls it too, for tasks that end on their own.
func (s *Server) forget(h *router.Handle) {
	s.mu.Lock()
	if id := h.TaskID(); s.running[id] == h {
		delete(s.running, id)
	}
	s.mu.Unlock()
}

func (s *Server) handle(taskID string) *router.Handle {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running[taskID]
}

// view reads a task's events from the store and folds them. ok is false
// when the task does not exist or is not visible to the caller c through
// agent's endpoint ("" for the team): it did not enter through A2A, was
// submitted by another caller (and c lacks auth.ScopeReadAll), or, for an
// agent's endpoint, was not addressed to that agent.
func (s *Server) view(ctx context.Context, c *auth.Caller, taskID, agent string) (v *taskView, last uint64, ok bool, err error) {
	if taskID == "" || len(taskID) > protocol.MaxIDLength {
		return nil, 0, false, nil
	}
	v = &taskView{}
	for ev, err := range s.st.Read(ctx, store.Query{TaskID: taskID}) {
		if err != nil {
			return nil, 0, false, err
		}
		m, err := ev.Message()
		if err != nil {
			return nil, 0, false, err
		}
		v.apply(m)
		last = ev.Seq
	}
	if v.task == nil || !s.visible(v.req, c, agent) {
		return nil, 0, false, nil
	}
	return v, last, true, nil
}

// visible reports whether a task.request may be seen by c through an
// endpoint.
func (s *Server) visible(req *protocol.Message, c *auth.Caller, agent string) bool {
	if src, _ := req.Meta[metaSource].(string); src != SourceA2A || !c.Owns(req.From.AgentID) {
		return false
	}
	if agent == "" {
		return true
	}
	return slices.ContainsFunc(req.To, func(p protocol.Participant) bool { return p.AgentID == agent })
}

func itoa(n int64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// registerContent registers [PayloadContent] in sch unless it is there:
// the task.requests made from A2A messages carry a Content, and the
// router validates a request against its payload type before it runs.
// registerContent registers PayloadContent in the schema registry of r's
// validator (schema.RegistryOf), when it has one.
func registerContent(r *router.Router) error {
	sch := schema.RegistryOf(r.Validator())
	if sch == nil {
		return nil
	}
	if err := schema.RegisterType[Content](sch, PayloadContent); err != nil && !errors.Is(err, schema.ErrAlreadyRegistered) {
		return err
	}
	return nil
}
