package rulesmcp

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/clutchprotocol/clutch/adapters/mcp"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/rules"
	"github.com/google/jsonschema-go/jsonschema"
)

// The tool names (docs/protocol.md §15.4).
const (
	ToolSetup         = "memsetup"
	ToolDiscover      = "memdisc"
	ToolLoad          = "memload"
	ToolRefer         = "memref"
	ToolReport        = "agentreport"
	ToolRejected      = "agentrejected"
	ToolArtifact      = "artifact"
	defaultMaxBinding = 10000
)

// Options configures Tools. Nil means defaults.
type Options struct {
	// MaxSessions bounds the session bindings kept (one per caller and
	// MCP session); 10000 when 0. Past it an arbitrary binding is
	// forgotten, and its next call works as before memsetup.
	MaxSessions int
}

// Tools returns the seven tools of docs/protocol.md §15.4 over lib, to
// serve with mcp.ServerOptions.ExtraTools. opts may be nil; a negative
// MaxSessions gives an error matching ErrInvalidOptions.
func Tools(lib *rules.Library, opts *Options) ([]mcp.ServerTool, error) {
	ts := &toolset{lib: lib, sessions: map[string]*rules.Session{}, max: defaultMaxBinding}
	if opts != nil && opts.MaxSessions < 0 {
		return nil, coded.Wrap(ErrInvalidOptions, "MaxSessions must not be negative: 0 takes the default", nil)
	}
	if opts != nil && opts.MaxSessions > 0 {
		ts.max = opts.MaxSessions
	}
	return []mcp.ServerTool{
		{Name: ToolSetup, Title: "Start the session",
			Description: "Call once at session start, before any other of these tools: binds the host session id, returns the workspace id and the META_PROMPT (content only when its hash differs from knownHashes[\"META_PROMPT.md\"]).",
			InputSchema: object(map[string]*jsonschema.Schema{
				"session_id":  str("the host agent's session or thread id, as the adapter gives it"),
				"knownHashes": hashes("must include META_PROMPT.md: the remembered hash, or \"\" when unknown"),
			}, "session_id", "knownHashes"), Call: ts.setup},
		{Name: ToolDiscover, Title: "Discover rules, workflows and context",
			Description: "Lists rules, workflows and context documents (id, kind, path, name, group, hash, description, hasDraft) without their content.",
			InputSchema: object(map[string]*jsonschema.Schema{
				"kind":  {Type: "string", Enum: []any{"rule", "workflow", "context"}, Description: "only this kind"},
				"group": str("only this group (the path's first segment)"),
				"query": str("words that must all appear in the id, path, name or description"),
			}), Call: withSession(ts, ts.discover)},
		{Name: ToolLoad, Title: "Load documents",
			Description: "Returns the content and constraints of the given ids. knownHashes must hold every requested id (\"\" when unknown); content is null when the hash is unchanged, constraints are always returned.",
			InputSchema: object(map[string]*jsonschema.Schema{
				"ids":         {Type: "array", Items: str(""), MinItems: ptr(1), Description: "rule, workflow or context ids"},
				"knownHashes": hashes("{id: hash} for every requested id; \"\" when unknown"),
			}, "ids", "knownHashes"), Call: withSession(ts, ts.load)},
		{Name: ToolRefer, Title: "Declare applied constraints",
			Description: "Declares which constraints of loaded rules or workflows shaped the work. Copy constraintId exactly from memload's constraints[].id.",
			InputSchema: object(map[string]*jsonschema.Schema{
				"refs": {Type: "array", MinItems: ptr(1), Items: object(map[string]*jsonschema.Schema{
					"ruleId":       str("the rule or workflow id"),
					"constraintId": str("a constraints[].id memload returned"),
					"ruleHash":     str("the rule's hash, when known"),
					"reason":       str("why the constraint mattered"),
				}, "ruleId", "constraintId")},
			}, "refs"), Call: withSession(ts, ts.refer)},
		{Name: ToolReport, Title: "Report the turn",
			Description: "Closes a successful turn with a short summary of the work.",
			InputSchema: object(map[string]*jsonschema.Schema{"summary": str("short summary of the completed work")}, "summary"),
			Call:        withSession(ts, ts.report)},
		{Name: ToolRejected, Title: "Reject the turn",
			Description: "Closes a turn whose output did not follow the loaded constraints.",
			InputSchema: object(map[string]*jsonschema.Schema{"reason": str("why")}),
			Call:        withSession(ts, ts.rejected)},
		{Name: ToolArtifact, Title: "Stage a change",
			Description: "Stages a local draft of a rule, context document or the META_PROMPT (resource rule, context or mpf): op holds exactly one of create {path, body, description?}, update {id, body, description?}, rename {id, new_path, description?}, delete {id, description?}, discard {id}.",
			InputSchema: artifactSchema(), Call: ts.artifact},
	}, nil
}

type toolset struct {
	lib      *rules.Library
	max      int
	mu       sync.Mutex
	sessions map[string]*rules.Session // by caller agent id and MCP session id
}

func bindingKey(call *mcp.ServerToolCall) string { return call.Caller.AgentID + "\x00" + call.Session }

// session returns the caller's bound session, or an unbound one before
// memsetup.
func (ts *toolset) session(ctx context.Context, call *mcp.ServerToolCall) (*rules.Session, error) {
	ts.mu.Lock()
	s := ts.sessions[bindingKey(call)]
	ts.mu.Unlock()
	if s == nil {
		var err error
		if s, err = ts.lib.Session(ctx, call.Caller.AgentID, ""); err != nil {
			return nil, err
		}
	}
	ref := s.Ref()
	call.TaskID, call.RunID = ref.TaskID, ref.RunID
	return s, nil
}

func decode[T any](call *mcp.ServerToolCall) (T, error) {
	var v T
	err := json.Unmarshal(call.Arguments, &v)
	return v, err
}

func (ts *toolset) setup(ctx context.Context, call *mcp.ServerToolCall) (any, error) {
	in, err := decode[struct {
		SessionID   string            `json:"session_id"`
		KnownHashes map[string]string `json:"knownHashes"`
	}](call)
	if err != nil {
		return nil, err
	}
	if in.SessionID == "" {
		return nil, coded.Wrap(rules.ErrInvalidParams, "session_id must name the host session", nil)
	}
	s, err := ts.lib.Session(ctx, call.Caller.AgentID, in.SessionID)
	if err != nil {
		return nil, err
	}
	ref := s.Ref()
	call.TaskID, call.RunID = ref.TaskID, ref.RunID
	res, err := s.Setup(ctx, in.KnownHashes)
	if err != nil {
		return nil, err
	}
	ts.mu.Lock()
	if len(ts.sessions) >= ts.max {
		for k := range ts.sessions {
			delete(ts.sessions, k)
			break
		}
	}
	ts.sessions[bindingKey(call)] = s
	ts.mu.Unlock()
	return res, nil
}

// withSession returns a tool's Call: it decodes the arguments into T, finds the
// caller's session and runs do.
func withSession[T any](ts *toolset, do func(context.Context, *rules.Session, T) (any, error)) func(context.Context, *mcp.ServerToolCall) (any, error) {
	return func(ctx context.Context, c *mcp.ServerToolCall) (any, error) {
		in, err := decode[T](c)
		if err != nil {
			return nil, err
		}
		s, err := ts.session(ctx, c)
		if err != nil {
			return nil, err
		}
		return do(ctx, s, in)
	}
}

func (ts *toolset) discover(ctx context.Context, s *rules.Session, in rules.Filter) (any, error) {
	items, err := s.Discover(ctx, in)
	if err != nil {
		return nil, err
	}
	return map[string]any{"items": items}, nil
}

func (ts *toolset) load(ctx context.Context, s *rules.Session, in struct {
	IDs         []string          `json:"ids"`
	KnownHashes map[string]string `json:"knownHashes"`
}) (any, error) {
	items, err := s.Load(ctx, in.IDs, in.KnownHashes)
	if err != nil {
		return nil, err
	}
	return map[string]any{"workspaceId": ts.lib.WorkspaceID(), "items": items}, nil
}

func (ts *toolset) refer(ctx context.Context, s *rules.Session, in struct {
	Refs []rules.Ref `json:"refs"`
}) (any, error) {
	n, err := s.Refer(ctx, in.Refs)
	var re *rules.ReferError
	if errors.As(err, &re) {
		te := &mcp.ServerToolError{Message: re.Message, Code: re.Code, Retryable: true, RetryAction: re.RetryAction}
		if re.Code == rules.CodeUnknownConstraint {
			valid := re.ValidConstraints
			if valid == nil {
				valid = []rules.ValidConstraint{}
			}
			te.Extra = map[string]any{"validConstraints": valid}
		}
		return nil, te
	}
	if err != nil {
		return nil, err
	}
	return map[string]any{"ok": true, "count": n}, nil
}

func (ts *toolset) report(ctx context.Context, s *rules.Session, in struct {
	Summary string `json:"summary"`
}) (any, error) {
	return done(s.Report(ctx, in.Summary))
}

func (ts *toolset) rejected(ctx context.Context, s *rules.Session, in struct {
	Reason string `json:"reason"`
}) (any, error) {
	return done(s.Reject(ctx, in.Reason))
}

// done is the result of a tool that closes the turn: {"ok": true} or err.
func done(err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return map[string]any{"ok": true}, nil
}

func (ts *toolset) artifact(ctx context.Context, call *mcp.ServerToolCall) (any, error) {
	c, err := rules.DecodeCommand(call.Arguments)
	if err != nil {
		return nil, err
	}
	s, err := ts.session(ctx, call)
	if err != nil {
		return nil, err
	}
	return s.Artifact(ctx, c)
}

// Schema helpers.

func ptr[T any](v T) *T { return &v }

func str(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Description: desc}
}

func hashes(desc string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", AdditionalProperties: str(""), Description: desc}
}

func object(props map[string]*jsonschema.Schema, required ...string) *jsonschema.Schema {
	return &jsonschema.Schema{Type: "object", Properties: props, Required: required, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}}
}

func artifactSchema() *jsonschema.Schema {
	desc := func() *jsonschema.Schema { return str("optional human-facing summary") }
	op := object(map[string]*jsonschema.Schema{
		"create":  object(map[string]*jsonschema.Schema{"path": str("target path of the new draft"), "body": str("draft content"), "description": desc()}, "path", "body"),
		"update":  object(map[string]*jsonschema.Schema{"id": str("context id, rule id, or META_PROMPT.md"), "body": str("replacement draft body"), "description": desc()}, "id", "body"),
		"rename":  object(map[string]*jsonschema.Schema{"id": str("context id or rule id"), "new_path": str("proposed new path"), "description": desc()}, "id", "new_path"),
		"delete":  object(map[string]*jsonschema.Schema{"id": str("resource id, create-draft tmp- id, or META_PROMPT.md"), "description": desc()}, "id"),
		"discard": object(map[string]*jsonschema.Schema{"id": str("any draft or resource id")}, "id"),
	})
	op.MinProperties, op.MaxProperties = ptr(1), ptr(1)
	op.Description = "exactly one of create, update, rename, delete, discard"
	return object(map[string]*jsonschema.Schema{
		"resource": {Type: "string", Enum: []any{"context", "rule", "mpf"}},
		"op":       op,
	}, "resource", "op")
}
