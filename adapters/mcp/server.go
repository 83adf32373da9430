package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/google/jsonschema-go/jsonschema"
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
	DefaultHostAgentID = "agent:mcp-host"
	DefaultWait        = 60 * time.Second
	DefaultMaxWait     = 10 * time.Minute
	DefaultEventsLimit = 100
	maxEventsLimit     = 1000
	maxEventsBytes     = 1 << 20
	maxRecordedArgs    = 16 << 10
)

// ServerOptions configures a Server. Nil means defaults.
type ServerOptions struct {
	// AgentID is the host's agent id: tasks it submits come from it and
	// its calls are recorded under it. DefaultHostAgentID when "".
	AgentID string
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
	schemas *schema.Registry   // r's
	ids     *protocol.IDs      // r's
	opts    ServerOptions
	srv     *sdk.Server

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
	if o.AgentID == "" {
		o.AgentID = DefaultHostAgentID
	}
	if !strings.HasPrefix(o.AgentID, protocol.PrefixAgent) || len(o.AgentID) == len(protocol.PrefixAgent) {
		return nil, wrap(ErrInvalidConfig, "AgentID "+o.AgentID+" must start with agent:")
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
	s := &Server{r: r, st: r.Store(), reg: r.Registry(), schemas: r.Schemas(), ids: ids, opts: o, handles: map[string]*router.Handle{},
		runID: ids.RunID(), threadID: ids.ThreadID(), taskID: ids.TaskID()}
	s.srv = sdk.NewServer(&sdk.Implementation{Name: o.Name, Version: o.Version}, &sdk.ServerOptions{
		Logger: o.Logger,
		Instructions: "Clutch orchestrator. Discover agents (list_agents) and payload types (list_payload_types), " +
			"submit a task (submit_task) and wait for it (wait_task), read a run's events (get_run_events) and task tree (get_task_tree), cancel a task (cancel_task). " +
			"Every result carries structuredContent; errors carry {error, code, retryable, retryAction}.",
	})
	if err := s.addTools(); err != nil {
		return nil, err
	}
	return s, nil
}

// MCPServer returns the underlying go-sdk server, to add tools of one's
// own or connect other transports.
func (s *Server) MCPServer() *sdk.Server { return s.srv }

// Run serves one MCP session over t until the client disconnects or ctx
// ends; Run(ctx, &sdk.StdioTransport{}) serves a host that started this
// process.
func (s *Server) Run(ctx context.Context, t sdk.Transport) error { return s.srv.Run(ctx, t) }

// Handler returns the Streamable HTTP handler of the surface. Mount it on
// a listener bound to 127.0.0.1 unless you authenticate hosts in front of
// it.
func (s *Server) Handler() http.Handler {
	o := &sdk.StreamableHTTPOptions{Stateless: true, Logger: s.opts.Logger}
	if s.opts.HTTP != nil {
		o = s.opts.HTTP
	}
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.srv }, o)
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
	ActionCheckID        = "check_the_id"
	ActionNone           = "none"
	ActionSubmitHere     = "cancel_only_tasks_submitted_through_this_server"
	ActionReadRunEvents  = "call_get_run_events"
	ActionSubmitNewTask  = "submit_a_new_task"
	ActionFixPayloadType = "fix_payload_type"
)

func newToolErr(code protocol.Code, action, format string, args ...any) *toolErr {
	return &toolErr{Error: fmt.Sprintf(format, args...), Code: code, Retryable: code.Retryable(), RetryAction: action}
}

// callInfo is what a tool handler tells the recorder.
type callInfo struct {
	taskID, runID string
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
		if err := json.Unmarshal(args, &v); err != nil {
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
	b, err := json.Marshal(v)
	if err != nil {
		terr = newToolErr(protocol.CodeInternal, ActionRetry, "encoding the result: %v", err)
		b, _ = json.Marshal(terr)
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
	m := s.ids.NewMessage(TypeHostCall, s.opts.AgentID)
	m.RunID, m.ThreadID, m.TaskID = s.runID, s.threadID, s.taskID
	if err := m.SetPayload(&p); err != nil {
		s.opts.Logger.Error("mcp: encoding a host-call event", "err", err)
		return
	}
	if _, err := s.st.Append(context.WithoutCancel(ctx), m); err != nil {
		s.opts.Logger.Error("mcp: recording a host call", "tool", tool, "err", err)
	}
}
