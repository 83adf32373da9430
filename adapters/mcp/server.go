package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/internal/httpjson"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/google/jsonschema-go/jsonschema"
	sdkauth "github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TypeHostCall is the extension type of the event that records each tool
// call an MCP host made on a Server (docs/protocol.md §15 "attestation": every
// meaningful action leaves structured evidence), from the host's agent id.
const TypeHostCall protocol.Type = "x.clutch.mcp.call"

// HostCallPayload is the payload of a TypeHostCall event.
type HostCallPayload struct {
	Tool       string          `json:"tool"`                 // the MCP tool the host called
	Arguments  json.RawMessage `json:"arguments"`            // its arguments (or a digest when large)
	IsError    bool            `json:"isError"`              // whether the result was an error
	Code       protocol.Code   `json:"code,omitempty"`       // the error's code
	TaskID     string          `json:"task_id,omitempty"`    // the task the call was about
	RunID      string          `json:"run_id,omitempty"`     // the run the call was about
	DurationMS int64           `json:"duration_ms"`          // how long the call took
	Session    string          `json:"session_id,omitempty"` // the MCP session, when the transport has one
}

// Defaults of a zero ServerOptions.
const (
	DefaultWait        = 60 * time.Second
	DefaultMaxWait     = 10 * time.Minute
	DefaultEventsLimit = 100
	maxEventsLimit     = 1000
	maxEventsBytes     = 1 << 20
	maxRecordedArgs    = 16 << 10
	DefaultMaxTracked  = 10000
)

// ServerOptions configures a Server. Nil means defaults.
type ServerOptions struct {
	// Caller is the host of the sessions served by Run (stdio: the owner
	// of the process is the caller): the tasks it submits come from
	// Caller.AgentID, its calls are recorded under it, and its scopes say
	// what it may do (see package auth). Run refuses to serve without it.
	Caller *auth.Caller
	// Auth identifies the caller of each Streamable HTTP request of
	// Handler, and Limits are the rate and in-flight limits applied with
	// it (nil: none). Without Auth, Handler answers 401 to everything.
	Auth   auth.Authenticator
	Limits *auth.Options
	// Expose lists the agent ids the Server exposes (required, at least
	// one): list_agents shows only these, and submit_task routes among
	// them only (its "to" must name exposed agents).
	Expose []string
	// MaxTracked bounds the tasks submitted here that are followed for
	// cancel_task at once; DefaultMaxTracked when 0. submit_task past it
	// is refused with CAPACITY.
	MaxTracked int
	// Logger receives diagnostics; slog.Default() when nil.
	Logger *slog.Logger
	// DefaultWait is how long submit_task and wait_task wait for a task
	// when the host does not say; DefaultWait when 0. MaxWait caps what a
	// host may ask for; DefaultMaxWait when 0.
	DefaultWait time.Duration
	MaxWait     time.Duration
	// Name and Version are the serverInfo; "clutch" and ClientVersion when
	// "".
	Name, Version string
	// HTTP configures Handler. Nil means stateless Streamable HTTP (which
	// serves both the 2026-07-28 and the 2025-11-25 protocol) with the
	// SDK's localhost (DNS rebinding) protection.
	HTTP *sdk.StreamableHTTPOptions
	// ExtraTools are more tools to serve next to the Server's own, with
	// the same caller, envelope and recording (see ServerTool); a name the
	// Server serves already is refused with ErrInvalidConfig.
	ExtraTools []ServerTool
}

// Server is the MCP surface of a router (docs/protocol.md §15): an MCP host — an IDE
// assistant, another agent runtime — connects over stdio ([Server.Run]) or
// Streamable HTTP ([Server.Handler]) and works with the team through
// tools. Every result uses docs/protocol.md §15's envelope and every call is recorded
// in the store under the host's agent id. See the package doc for the
// tools.
type Server struct {
	r       *router.Router
	st      store.Store        // r's
	reg     *registry.Registry // r's
	schemas *schema.Registry   // behind r's validator (schema.RegistryOf); nil without one
	ids     *protocol.IDs      // r's
	opts    ServerOptions
	srv     *sdk.Server
	guard   *auth.Guard   // nil without Auth
	derive  *auth.Deriver // the runs of idempotency keys (docs/protocol.md §6.7)

	// The host's own run, thread and task: host-call events belong to
	// them, so the runs the host reads stay free of its audit trail.
	runID, threadID, taskID string

	mu      sync.Mutex
	handles map[string]*router.Handle // tasks submitted here, by task id
}

// NewServer returns the MCP surface of r: it submits through r, records
// and reads events in r's store, lists r's agents and payload types, and
// makes ids with r's id source. opts may be nil.
func NewServer(r *router.Router, opts *ServerOptions) (*Server, error) {
	if r == nil {
		return nil, wrap(ErrInvalidConfig, "a router is required")
	}
	var o ServerOptions
	if opts != nil {
		o = *opts
	}
	if o.Caller == nil && o.Auth == nil {
		return nil, wrap(ErrInvalidConfig, "set Caller (stdio: the process owner) or Auth (Streamable HTTP): there is no anonymous default")
	}
	if o.Caller != nil {
		if !strings.HasPrefix(o.Caller.AgentID, protocol.PrefixAgent) || len(o.Caller.AgentID) == len(protocol.PrefixAgent) {
			return nil, wrap(ErrInvalidConfig, "Caller.AgentID "+o.Caller.AgentID+" must start with agent:")
		}
		c := *o.Caller
		c.Scopes = slices.Clone(c.Scopes)
		o.Caller = &c
	}
	if len(o.Expose) == 0 {
		return nil, wrap(ErrInvalidConfig, "Expose must name at least one agent: a Server exposes only the agents it is told to")
	}
	o.Expose = slices.Clone(o.Expose)
	for _, id := range o.Expose {
		if !strings.HasPrefix(id, protocol.PrefixAgent) || len(id) == len(protocol.PrefixAgent) {
			return nil, wrap(ErrInvalidConfig, "exposed agent id "+id+" must start with agent:")
		}
	}
	slices.Sort(o.Expose)
	o.Expose = slices.Compact(o.Expose)
	if o.MaxTracked < 0 {
		return nil, wrap(ErrInvalidConfig, "MaxTracked must not be negative")
	}
	if o.MaxTracked == 0 {
		o.MaxTracked = DefaultMaxTracked
	}
	var guard *auth.Guard
	if o.Auth != nil {
		g, err := auth.NewGuard(o.Auth, o.Limits)
		if err != nil {
			return nil, err
		}
		guard = g
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.DefaultWait <= 0 {
		o.DefaultWait = DefaultWait
	}
	if o.MaxWait <= 0 {
		o.MaxWait = DefaultMaxWait
	}
	if o.Name == "" {
		o.Name = "clutch"
	}
	if o.Version == "" {
		o.Version = ClientVersion
	}
	ids := r.IDs()
	derive := auth.NewDeriver(r.Store())
	// The host-call records live under reserved ids (protocol.Reserved):
	// no caller can squat or read them (docs/protocol.md §6.7).
	reserved := func(prefix, id string) string { return prefix + "clutch_mcp_" + strings.TrimPrefix(id, prefix) }
	s := &Server{r: r, st: r.Store(), reg: r.Registry(), schemas: schema.RegistryOf(r.Validator()), ids: ids, derive: derive, opts: o, guard: guard,
		handles: map[string]*router.Handle{},
		runID:   reserved(protocol.IDPrefixRun, ids.RunID()), threadID: reserved(protocol.IDPrefixThread, ids.ThreadID()), taskID: reserved(protocol.IDPrefixTask, ids.TaskID())}
	s.srv = sdk.NewServer(&sdk.Implementation{Name: o.Name, Version: o.Version}, &sdk.ServerOptions{
		Logger: o.Logger,
		Instructions: "Clutch orchestrator. Discover agents (list_agents) and payload types (list_payload_types), " +
			"submit a task (submit_task) and wait for it (wait_task), read a run's events (get_run_events) and task tree (get_task_tree), cancel a task (cancel_task). " +
			"Every result carries structuredContent; errors carry {error, code, retryable, retryAction}.",
	})
	if err := s.addTools(); err != nil {
		return nil, err
	}
	if err := s.addExtraTools(); err != nil {
		return nil, err
	}
	return s, nil
}

// MCPServer returns the underlying go-sdk server, to add tools of one's
// own. Sessions it serves over other transports have no caller: the
// Clutch tools refuse them with UNAUTHORIZED.
func (s *Server) MCPServer() *sdk.Server { return s.srv }

// Run serves one MCP session over t, as ServerOptions.Caller, until the
// client disconnects or ctx ends; Run(ctx, &sdk.StdioTransport{}) serves a
// host that started this process. Without a Caller it returns
// ErrInvalidConfig at once.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error {
	if s.opts.Caller == nil {
		return wrap(ErrInvalidConfig, "Run serves as ServerOptions.Caller, which is not set")
	}
	// The session's handlers run under the context given to Connect: the
	// caller rides in it.
	ss, err := s.srv.Connect(auth.NewContext(ctx, s.opts.Caller), t, nil)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case <-ctx.Done():
		ss.Close()
		<-done
		return ctx.Err()
	case err := <-done:
		return err
	}
}

// tokenCaller is the TokenInfo.Extra key under which Handler hands the
// authenticated caller to the tools.
const tokenCaller = "clutch.caller"

// Handler returns the Streamable HTTP handler of the surface: each request
// is authenticated by ServerOptions.Auth (401 without credentials, never a
// tool call) and limited by ServerOptions.Limits; its caller is who the
// tools act for. Without Auth every request gets 401.
func (s *Server) Handler() http.Handler {
	if s.guard == nil {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="clutch"`)
			http.Error(w, "this MCP server has no authenticator for HTTP (ServerOptions.Auth)", http.StatusUnauthorized)
		})
	}
	o := &sdk.StreamableHTTPOptions{Stateless: true, Logger: s.opts.Logger}
	if s.opts.HTTP != nil {
		o = s.opts.HTTP
	}
	inner := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.srv }, o)
	// The SDK hands tools only a TokenInfo, set by its bearer middleware:
	// the caller travels in it. The credential the caller presented (a
	// key, a token or a certificate) was checked by the guard already.
	bridge := sdkauth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*sdkauth.TokenInfo, error) {
		c, ok := auth.FromContext(r.Context())
		if !ok {
			return nil, sdkauth.ErrInvalidToken
		}
		return &sdkauth.TokenInfo{UserID: c.AgentID, Scopes: c.Scopes, Extra: map[string]any{tokenCaller: c}}, nil
	}, &sdkauth.RequireBearerTokenOptions{AllowMissingExpiration: true})(inner)
	return s.guard.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer authenticated")
		r.Header.Del("X-API-Key")
		bridge.ServeHTTP(w, r)
	}))
}

// caller is who a tool call acts for: ServerOptions.Caller in a session of
// Run, the authenticated caller of an HTTP request of Handler, else none.
func (s *Server) caller(ctx context.Context, req *sdk.CallToolRequest) (*auth.Caller, *toolErr) {
	if req.Extra != nil {
		if req.Extra.TokenInfo != nil {
			if c, ok := req.Extra.TokenInfo.Extra[tokenCaller].(*auth.Caller); ok && c != nil {
				return c, nil
			}
		}
	} else if c, ok := auth.FromContext(ctx); ok {
		return c, nil // a session of Run
	}
	return nil, newToolErr(protocol.CodeUnauthorized, ActionNone, "the call has no authenticated caller")
}

// HostRun returns the run, thread and task ids under which the host's
// calls are recorded.
func (s *Server) HostRun() (runID, threadID, taskID string) { return s.runID, s.threadID, s.taskID }

// toolErr is a structured error of docs/protocol.md §15: {error, code, retryable,
// retryAction} plus details.
type toolErr struct {
	Error       string         `json:"error"`
	Code        protocol.Code  `json:"code"`
	Retryable   bool           `json:"retryable"`
	RetryAction string         `json:"retryAction"`
	Details     map[string]any `json:"details,omitempty"`
}

// Retry actions a host can act on without reading the message.
const (
	ActionFixArguments   = "fix_arguments"
	ActionListTypes      = "call_list_payload_types_and_fix_the_payload"
	ActionListAgents     = "call_list_agents_and_fix_requires"
	ActionRetry          = "retry"
	ActionRetryLater     = "retry_later"
	ActionWaitTask       = "call_wait_task"
	ActionAnswer         = "call_answer_question"
	ActionCheckID        = "check_the_id"
	ActionNone           = "none"
	ActionSubmitHere     = "cancel_only_tasks_submitted_through_this_server"
	ActionReadRunEvents  = "call_get_run_events"
	ActionSubmitNewTask  = "submit_a_new_task"
	ActionFixPayloadType = "fix_payload_type"
)

// newToolErr builds a tool error; its message loses the Go package
// prefixes of the errors formatted into it (coded.WithoutPrefixes): a
// model or a person reads it.
func newToolErr(code protocol.Code, action, format string, args ...any) *toolErr {
	msg := coded.WithoutPrefixes(fmt.Sprintf(format, args...))
	return &toolErr{Error: msg, Code: code, Retryable: code.Retryable(), RetryAction: action}
}

// callInfo is what a tool handler is told (caller) and tells the
// recorder (taskID, runID).
type callInfo struct {
	caller        *auth.Caller
	taskID, runID string
	declined      map[string]bool // questions the host's person declined in this call (server_ask.go)
}

// handlerFunc is a tool body: typed input, a structured result or error.
type handlerFunc[In any] func(ctx context.Context, req *sdk.CallToolRequest, in In, info *callInfo) (any, *toolErr)

// addTool registers a tool whose input schema is inferred from In and
// whose results and errors use the docs/protocol.md §15 envelope.
func addTool[In any](s *Server, name, title, desc string, out any, h handlerFunc[In]) error {
	in, err := jsonschema.For[In](nil)
	if err != nil {
		return fmt.Errorf("mcp: input schema of %s: %w", name, err)
	}
	singleTyped(in)
	resolved, err := in.Resolve(nil)
	if err != nil {
		return fmt.Errorf("mcp: input schema of %s: %w", name, err)
	}
	tool := &sdk.Tool{Name: name, Title: title, Description: desc, InputSchema: in}
	if out != nil {
		tool.OutputSchema = out
	}
	s.srv.AddTool(tool, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		start := time.Now()
		args := req.Params.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		info := &callInfo{}
		var result any
		var terr *toolErr
		var v map[string]any
		if info.caller, terr = s.caller(ctx, req); terr != nil {
			return envelope(nil, terr), nil // nobody to record it under
		}
		err := json.Unmarshal(args, &v)
		dropNulls(v) // null is "not given": the schema has one type per member
		if err != nil {
			terr = newToolErr(protocol.CodeInvalidJSON, ActionFixArguments, "arguments are not a JSON object: %v", err)
		} else if err := resolved.Validate(v); err != nil {
			terr = newToolErr(protocol.CodeInvalidField, ActionFixArguments, "invalid arguments for %s: %v", name, err)
		} else {
			var x In
			if err := json.Unmarshal(args, &x); err != nil {
				terr = newToolErr(protocol.CodeInvalidField, ActionFixArguments, "invalid arguments for %s: %v", name, err)
			} else {
				result, terr = h(ctx, req, x, info)
			}
		}
		if in, ok := result.(*inputNeeded); ok {
			// Ask the host's person first (server_ask.go).
			s.record(ctx, req, name, args, nil, info, time.Since(start))
			return &sdk.CallToolResult{InputRequests: in.requests, RequestState: in.state}, nil
		}
		res := envelope(result, terr)
		s.record(ctx, req, name, args, terr, info, time.Since(start))
		return res, nil
	})
	return nil
}

// envelope builds docs/protocol.md §15's uniform result: the structured value as
// JSON text in content, the same value as structuredContent, isError for
// errors.
func envelope(v any, terr *toolErr) *sdk.CallToolResult {
	if terr != nil {
		v = terr
	}
	// Not HTML-escaped: the text is read by a model or a person, to whom
	// "\u003c" is noise.
	b, err := httpjson.Marshal(v)
	if err != nil {
		terr = newToolErr(protocol.CodeInternal, ActionRetry, "encoding the result: %v", err)
		b, _ = httpjson.Marshal(terr)
	}
	return &sdk.CallToolResult{
		Content:           []sdk.Content{&sdk.TextContent{Text: string(b)}},
		StructuredContent: json.RawMessage(b),
		IsError:           terr != nil,
	}
}

// record appends the host-call event (TypeHostCall) for one call.
func (s *Server) record(ctx context.Context, req *sdk.CallToolRequest, tool string, args json.RawMessage, terr *toolErr, info *callInfo, d time.Duration) {
	p := HostCallPayload{Tool: tool, Arguments: args, IsError: terr != nil, TaskID: info.taskID, RunID: info.runID, DurationMS: d.Milliseconds()}
	if terr != nil {
		p.Code = terr.Code
	}
	if req.Session != nil {
		p.Session = req.Session.ID()
	}
	if len(args) > maxRecordedArgs {
		p.Arguments, _ = json.Marshal(map[string]any{"omitted_bytes": len(args)})
	}
	m := s.ids.NewMessage(TypeHostCall, info.caller.AgentID)
	m.RunID, m.ThreadID, m.TaskID = s.runID, s.threadID, s.taskID
	if err := m.SetPayload(&p); err != nil {
		s.opts.Logger.Error("mcp: encoding a host-call event", "err", err)
		return
	}
	if _, err := s.st.Append(context.WithoutCancel(ctx), m); err != nil {
		s.opts.Logger.Error("mcp: recording a host call", "tool", tool, "err", err)
	}
}
