package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clutchprotocol/clutch/egress"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// CallPayload is the payload of a tool.call event (docs/protocol.md §2.3, §10
// step 5: {call_id, tool: "mcp:browser", name, args}).
type CallPayload struct {
	// CallID is the call id of docs/protocol.md §2.3.1, which the call's
	// tool.result or tool.error states too: the tool.call event's own id.
	// Call leaves it empty, and router.Task.Emit sets it as it stores the
	// event (MCP's own JSON-RPC request id belongs to one connection and
	// starts again after a reconnect, so it names no call in a task).
	CallID string          `json:"call_id,omitempty"`
	Tool   string          `json:"tool"` // the server id, "mcp:<server>"
	Name   string          `json:"name"` // the tool's name on the server
	Args   json.RawMessage `json:"args"` // the arguments, a JSON object
}

// ResultPayload is the payload of a tool.result event (docs/protocol.md §2.3).
type ResultPayload struct {
	Tool   string `json:"tool"`    // "mcp:<server>"
	Name   string `json:"name"`    // the tool's name
	CallID string `json:"call_id"` // the call id: the id of the tool.call event (§2.3.1)
	// Content is the MCP content array (text, image, resource, ...).
	Content json.RawMessage `json:"content,omitempty"`
	// StructuredContent is the tool's structured result, validated against
	// its outputSchema when it has one.
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	// Artifact is set instead of Content and StructuredContent when the
	// result is larger than ClientOptions.InlineResultBytes: the ref of an
	// artifact holding {"content": ..., "structuredContent": ...}.
	Artifact string `json:"artifact,omitempty"`
	// Bytes is the size of the artifact.
	Bytes int `json:"bytes,omitempty"`
}

// ToolResult is what a tool call returned.
type ToolResult struct {
	Server string
	Tool   string
	// Content is the MCP content array as JSON.
	Content json.RawMessage
	// StructuredContent is the structured result as JSON, nil when none.
	StructuredContent json.RawMessage
	// IsError reports a result the tool flagged as an error; Call then
	// also returns a *ToolError (TOOL_FAILED, TOOL_NOT_FOUND or
	// RATE_LIMITED).
	IsError bool
	// Raw is the result as the SDK decoded it.
	Raw *sdk.CallToolResult
	// Event is the tool.result (or, for IsError, tool.error) event.
	Event *protocol.Message
	// CallEvent is the tool.call event.
	CallEvent *protocol.Message
}

// Text returns the text blocks of the result, joined by newlines.
func (r *ToolResult) Text() string {
	if r == nil || r.Raw == nil {
		return ""
	}
	var parts []string
	for _, c := range r.Raw.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// callKey carries a call's state to the HTTP transport.
type callKey struct{}

type callState struct {
	mu         sync.Mutex
	retryAfter float64
}

func (s *callState) setRetryAfter(v float64) {
	s.mu.Lock()
	s.retryAfter = v
	s.mu.Unlock()
}

func (s *callState) get() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.retryAfter
}

// errDeadline is the cause of a call's own deadline.
var errDeadline = errors.New("mcp: the call's deadline passed")

// Call calls a tool of a server on behalf of a router task, recording the
// call in the task's events (docs/protocol.md §2.3, §6; docs/protocol.md §13.3.5):
//
//  1. Policy, before any I/O: the server ("mcp:<server>") must be in the
//     request's security.policy.tool_allowlist when that is set, and among
//     the tools or servers of the calling agent's card. Otherwise: a
//     tool.error POLICY_DENIED.
//     For a Streamable HTTP server, the card's security.network too
//     (docs/protocol.md §6.4): "none" or no level refuses the call,
//     "egress-restricted" requires the server's URL host to be allowed by
//     name (or an IP literal allowed by address) in ClientOptions.Egress,
//     "open" leaves it to the policy's defaults. Otherwise: a tool.error
//     POLICY_DENIED. Every connection is dialled through the policy; a
//     refused dial is a tool.error POLICY_DENIED as well.
//  2. A tool.call event {call_id, tool, name, args}; its call_id, the
//     event's own id, is the call id of all the call's events
//     (docs/protocol.md §2.3.1). A call refused in step 1 has no tool.call,
//     and its tool.error a new call id ("call_…") that names no call.
//  3. The call, with a deadline (CallOptions.Timeout, else the server's,
//     else the client's; 30 s by default) and a progress token: progress
//     notifications become task.progress events of t while the call is
//     pending; later ones are dropped. Cancelling ctx cancels the call on
//     the wire (notifications/cancelled).
//  4. A tool.result event {tool, name, call_id, content,
//     structuredContent}, structuredContent checked against the tool's
//     outputSchema; or a tool.error event whose payload is the wire error
//     of docs/protocol.md §5.4 — see the package doc for the codes.
//
// args is anything that encodes as a JSON object (nil means {}).
// A failure is returned as a *ToolError; for a result the tool flagged with
// isError the *ToolResult is returned as well.
func (c *Client) Call(ctx context.Context, t *router.Task, server, tool string, args any, opts *CallOptions) (*ToolResult, error) {
	if t == nil {
		return nil, ErrNoTask
	}
	var o CallOptions
	if opts != nil {
		o = *opts
	}
	sid := ServerID(server)
	base := map[string]any{"tool": sid, "name": tool, "server": server}
	if reason := policyDenied(t, sid); reason != "" {
		return nil, c.fail(ctx, t, "", outcome{code: protocol.CodePolicyDenied, message: reason}, base, nil)
	}
	s, ok := c.servers[server]
	if !ok {
		oc := outcome{code: protocol.CodeToolNotFound, message: "no MCP server " + sid + " is configured"}
		oc.detail("available_servers", c.Servers())
		return nil, c.fail(ctx, t, "", oc, base, ErrUnknownServer)
	}
	if oc, denied := c.networkDenied(t, s); denied {
		return nil, c.fail(ctx, t, "", oc, base, egress.ErrDenied)
	}
	if c.isClosed() {
		return nil, c.fail(ctx, t, "", outcome{code: protocol.CodeToolUnavailable, message: "the MCP client is closed"}, base, ErrClosed)
	}
	argsJSON, err := encodeArgs(args)
	if err != nil {
		return nil, c.fail(ctx, t, "", outcome{code: protocol.CodeInvalidField, message: err.Error()}, base, err)
	}
	callEv, err := t.Emit(ctx, protocol.TypeToolCall, "", &CallPayload{Tool: sid, Name: tool, Args: argsJSON})
	if err != nil {
		return nil, fmt.Errorf("mcp: recording the tool.call: %w", err)
	}
	callID, _ := protocol.ToolCallID(callEv) // the event's id (see CallPayload)
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = s.timeout()
	}
	cctx, cancel := context.WithTimeoutCause(ctx, timeout, errDeadline)
	defer cancel()
	st := &callState{}
	cctx = context.WithValue(cctx, callKey{}, st)
	cctx = withTraceparent(cctx, callEv.Trace) // trace.go
	token := o.ProgressToken
	if token == "" {
		token = callID
	}
	p := c.register(token, t, sid, tool, callID)
	res, err := s.callTool(cctx, tool, argsJSON, token)
	c.unregister(token, p)

	rctx := context.WithoutCancel(ctx) // the outcome is recorded even when ctx ended
	if err != nil {
		var oc outcome
		switch {
		case cctx.Err() != nil && context.Cause(cctx) == errDeadline:
			oc = outcome{code: protocol.CodeTimeout, message: fmt.Sprintf("%s %s did not answer within %s", sid, tool, timeout), retryable: true}
			oc.detail("timeout_ms", timeout.Milliseconds())
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			oc = outcome{code: protocol.CodeTimeout, message: "the caller's deadline passed during the call", retryable: true}
		case ctx.Err() != nil:
			oc = outcome{code: protocol.CodeCancelled, message: "the call was cancelled: " + context.Cause(ctx).Error()}
		default:
			oc = classifyError(err, tool, st.get())
		}
		c.enrich(cctx, s, &oc)
		return nil, c.fail(rctx, t, callID, oc, base, err)
	}
	return c.result(rctx, t, s, callEv, callID, tool, res)
}

// callTool sends tools/call, connecting first when needed. A call that
// failed because the connection was already closing never reached the
// server: it is sent once more over a fresh connection.
func (s *server) callTool(ctx context.Context, tool string, args json.RawMessage, token string) (*sdk.CallToolResult, error) {
	for attempt := 0; ; attempt++ {
		cs, err := s.session(ctx)
		if err != nil {
			return nil, err
		}
		params := &sdk.CallToolParams{Name: tool, Arguments: args}
		params.SetProgressToken(token)
		if v := traceparentOf(ctx); v != "" {
			params.Meta["traceparent"] = v // trace.go
		}
		res, err := cs.CallTool(ctx, params)
		if err == nil || ctx.Err() != nil {
			return res, err
		}
		if isConnectionError(err) || strings.Contains(err.Error(), "exceeded the configured maximum") {
			s.drop(cs)
			if attempt == 0 && errors.Is(err, sdk.ErrConnectionClosed) {
				continue
			}
		}
		return nil, err
	}
}

// enrich adds hints to a failure: the available tools for TOOL_NOT_FOUND
// (docs/protocol.md §13.3.5), the server's last stderr lines for TOOL_UNAVAILABLE.
func (c *Client) enrich(ctx context.Context, s *server, oc *outcome) {
	switch oc.code {
	case protocol.CodeToolNotFound:
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.timeout())
		defer cancel()
		if ts, err := s.toolSet(lctx, true); err == nil {
			names := ts.names()
			if len(names) > 100 {
				names = names[:100]
			}
			oc.detail("available_tools", names)
		}
	case protocol.CodeToolUnavailable:
		if s.cfg.Command != "" {
			if tail := s.stderr.TailAfterExit(250 * time.Millisecond); len(tail) > 0 {
				oc.detail("stderr_tail", tail)
			}
		}
	}
}

// result maps a CallToolResult to tool.result or tool.error.
func (c *Client) result(ctx context.Context, t *router.Task, s *server, callEv *protocol.Message, callID, tool string, res *sdk.CallToolResult) (*ToolResult, error) {
	sid := ServerID(s.cfg.Name)
	base := map[string]any{"tool": sid, "name": tool, "server": s.cfg.Name}
	tr := &ToolResult{Server: s.cfg.Name, Tool: tool, IsError: res.IsError, Raw: res, CallEvent: callEv}
	content, err := json.Marshal(res.Content)
	if err != nil || string(content) == "null" {
		content = json.RawMessage("[]")
	}
	tr.Content = content
	tr.StructuredContent = rawJSON(res.StructuredContent)
	size := len(tr.Content) + len(tr.StructuredContent)
	if size > s.limit {
		oc := outcome{code: protocol.CodeTooLarge, message: fmt.Sprintf("the result of %d bytes exceeds the limit of %d bytes", size, s.limit)}
		oc.detail("bytes", size)
		oc.detail("limit", s.limit)
		return nil, c.fail(ctx, t, callID, oc, base, nil)
	}
	if res.IsError {
		oc := classifyResult(res)
		if size <= c.opts.InlineResultBytes {
			oc.detail("content", tr.Content)
			if tr.StructuredContent != nil {
				oc.detail("structuredContent", tr.StructuredContent)
			}
		}
		c.enrich(ctx, s, &oc)
		te := c.fail(ctx, t, callID, oc, base, nil)
		tr.Event = te.Event
		return tr, te
	}
	if oc, bad := c.checkOutput(ctx, s, tool, tr.StructuredContent); bad {
		if size <= c.opts.InlineResultBytes {
			oc.detail("content", tr.Content)
			if tr.StructuredContent != nil {
				oc.detail("structuredContent", tr.StructuredContent)
			}
		}
		return tr, c.fail(ctx, t, callID, oc, base, nil)
	}
	p := &ResultPayload{Tool: sid, Name: tool, CallID: callID, Content: tr.Content, StructuredContent: tr.StructuredContent}
	if size > c.opts.InlineResultBytes {
		blob, _ := json.Marshal(map[string]json.RawMessage{"content": tr.Content, "structuredContent": orNull(tr.StructuredContent)})
		ref, err := t.PutArtifact(ctx, "application/json", blob)
		if err != nil {
			return tr, fmt.Errorf("mcp: storing the result artifact: %w", err)
		}
		p = &ResultPayload{Tool: sid, Name: tool, CallID: callID, Artifact: ref, Bytes: len(blob)}
	}
	ev, err := t.Emit(ctx, protocol.TypeToolResult, "", p)
	if err != nil {
		return tr, fmt.Errorf("mcp: recording the tool.result: %w", err)
	}
	tr.Event = ev
	return tr, nil
}

func orNull(b json.RawMessage) json.RawMessage {
	if b == nil {
		return json.RawMessage("null")
	}
	return b
}

// checkOutput validates structuredContent against the tool's outputSchema
// (MCP 2025-06-18+: clients SHOULD validate). A schema the adapter cannot
// compile is logged and skipped, not held against the call.
func (c *Client) checkOutput(ctx context.Context, s *server, tool string, structured json.RawMessage) (outcome, bool) {
	ts := s.cachedTools()
	if ts == nil {
		lctx, cancel := context.WithTimeout(ctx, s.timeout())
		var err error
		ts, err = s.toolSet(lctx, false)
		cancel()
		if err != nil {
			c.opts.Logger.Warn("mcp: cannot list tools to check an outputSchema", "mcp_server", s.cfg.Name, "tool", tool, "err", err)
			return outcome{}, false
		}
	}
	e := ts.byName[tool]
	if e == nil {
		return outcome{}, false
	}
	rs, err := e.outputSchema()
	if err != nil {
		c.opts.Logger.Warn("mcp: outputSchema not checked", "mcp_server", s.cfg.Name, "tool", tool, "err", err)
		return outcome{}, false
	}
	if rs == nil {
		return outcome{}, false
	}
	if structured == nil {
		return outcome{code: protocol.CodeValidation, message: "tool " + tool + " has an outputSchema but returned no structuredContent"}, true
	}
	var v any
	if err := json.Unmarshal(structured, &v); err != nil {
		return outcome{code: protocol.CodeValidation, message: "structuredContent is not JSON: " + err.Error()}, true
	}
	if err := rs.Validate(v); err != nil {
		oc := outcome{code: protocol.CodeValidation, message: "structuredContent does not match the outputSchema of " + tool + ": " + err.Error()}
		return oc, true
	}
	return outcome{}, false
}

// fail records a tool.error and returns its *ToolError. callID is ""
// for a call refused before its tool.call: its error gets a call id of
// its own, which names no call (docs/protocol.md §2.3.1).
func (c *Client) fail(ctx context.Context, t *router.Task, callID string, o outcome, base map[string]any, cause error) *ToolError {
	details := mergeDetails(base, o.details)
	if callID == "" {
		callID = protocol.NewID(protocol.IDPrefixCall)
	}
	details["call_id"] = callID
	te := &ToolError{Code: o.code, Message: o.message, Retryable: o.retryable, Details: details, Err: cause}
	ev, err := t.Emit(ctx, protocol.TypeToolError, "", te.Payload())
	if err != nil {
		c.opts.Logger.Debug("mcp: tool.error not recorded", "task", t.ID(), "code", o.code, "err", err)
	} else {
		te.Event = ev
	}
	return te
}

func mergeDetails(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b)+1)
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

// policyDenied returns why the task may not use the server, "" when it
// may (docs/protocol.md §6: per-agent and per-message tool allowlists).
func policyDenied(t *router.Task, sid string) string {
	if sec := t.Request().Security; sec != nil && sec.Policy != nil && len(sec.Policy.ToolAllowlist) > 0 {
		allowed := false
		for _, a := range sec.Policy.ToolAllowlist {
			if a == sid {
				allowed = true
				break
			}
		}
		if !allowed {
			return sid + " is not in the task's security.policy.tool_allowlist"
		}
	}
	card := t.Card()
	if card != nil {
		for _, cp := range card.Capabilities {
			for _, l := range [2][]string{cp.Tools, cp.Servers} {
				for _, x := range l {
					if x == sid {
						return ""
					}
				}
			}
		}
	}
	return "the card of " + t.Agent() + " does not list " + sid + " among its tools"
}

// encodeArgs encodes the arguments as a JSON object.
func encodeArgs(args any) (json.RawMessage, error) {
	var b []byte
	switch x := args.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		b = x
	case []byte:
		b = x
	default:
		var err error
		if b, err = json.Marshal(args); err != nil {
			return nil, fmt.Errorf("arguments cannot be encoded as JSON: %w", err)
		}
	}
	if !json.Valid(b) {
		return nil, errors.New("arguments are not valid JSON")
	}
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	if i < len(b) && string(b[i:]) == "null" {
		return json.RawMessage("{}"), nil
	}
	if i == len(b) || b[i] != '{' {
		return nil, errors.New("arguments must be a JSON object")
	}
	return append(json.RawMessage(nil), b...), nil
}

// pendingCall is a call waiting for its result; progress notifications
// for its token become task.progress events until it is done.
type pendingCall struct {
	t                *router.Task
	tool, name, call string
	mu               sync.Mutex
	done             bool
}

func (c *Client) register(token string, t *router.Task, tool, name, callID string) *pendingCall {
	p := &pendingCall{t: t, tool: tool, name: name, call: callID}
	c.pmu.Lock()
	c.pending[token] = p
	c.pmu.Unlock()
	return p
}

// unregister ends the call's progress: once it returns, no task.progress
// of the call is stored any more, so none lands after the result.
func (c *Client) unregister(token string, p *pendingCall) {
	c.pmu.Lock()
	if c.pending[token] == p {
		delete(c.pending, token)
	}
	c.pmu.Unlock()
	p.mu.Lock()
	p.done = true
	p.mu.Unlock()
}

// ProgressPayload is the payload of the task.progress event a progress
// notification becomes.
type ProgressPayload struct {
	Tool     string  `json:"tool"`
	Name     string  `json:"name"`
	CallID   string  `json:"call_id"`
	Progress float64 `json:"progress"`
	Total    float64 `json:"total,omitempty"`
	Message  string  `json:"message,omitempty"`
}

func (c *Client) onProgress(ctx context.Context, req *sdk.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	var tok string
	switch x := req.Params.ProgressToken.(type) {
	case string:
		tok = x
	default:
		tok = fmt.Sprint(x)
	}
	c.pmu.Lock()
	p := c.pending[tok]
	c.pmu.Unlock()
	if p == nil {
		c.opts.Logger.Debug("mcp: progress after the call ended, dropped", "token", tok)
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = p.t.Progress(pctx, &ProgressPayload{Tool: p.tool, Name: p.name, CallID: p.call,
		Progress: req.Params.Progress, Total: req.Params.Total, Message: req.Params.Message})
}

// networkDenied holds a call to a Streamable HTTP server to the calling
// agent's security.network (docs/protocol.md §6.4), before any I/O: the
// connection may already be open (dialled for another agent), so the
// decision cannot wait for a dial. stdio servers and custom transports are
// not connections the client dials and are not checked.
func (c *Client) networkDenied(t *router.Task, s *server) (outcome, bool) {
	if s.cfg.URL == "" {
		return outcome{}, false
	}
	level := ""
	if card := t.Card(); card != nil && card.Security != nil {
		level = card.Security.Network
	}
	deny := func(msg string, err error) (outcome, bool) {
		oc := outcome{code: protocol.CodePolicyDenied, message: msg}
		oc.detail("network", level)
		var d *egress.DeniedError
		if errors.As(err, &d) {
			oc.detail("host", d.Host)
			oc.detail("rule", d.Rule)
		}
		return oc, true
	}
	p, err := c.opts.Egress.Network(level)
	if err != nil {
		return deny("the card of "+t.Agent()+" states an unknown security.network "+strconv.Quote(level), err)
	}
	if p.AllowsNothing() {
		stated := "says security.network " + strconv.Quote(level)
		if level == "" {
			stated = "states no security.network (none)"
		}
		return deny("the card of "+t.Agent()+" "+stated+": it may not reach mcp:"+s.cfg.Name+" over HTTP", nil)
	}
	if err := p.PrecheckURL(s.cfg.URL); err != nil {
		return deny("mcp:"+s.cfg.Name+" is not reachable at network level "+p.Level()+": "+err.Error(), err)
	}
	return outcome{}, false
}
