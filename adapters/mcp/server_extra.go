package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServerTool is a tool a Server serves next to its own (ServerOptions.ExtraTools),
// over stdio and Streamable HTTP alike: its arguments are validated
// against InputSchema first (a violation is an error result whose message
// starts "invalid params"), Call runs for the authenticated caller, the
// result uses the docs/protocol.md §15.3 envelope, and the call is
// recorded like the Server's own (TypeHostCall). Package
// github.com/clutchprotocol/clutch/rules/rulesmcp provides the tools of
// docs/protocol.md §15.4 this way.
type ServerTool struct {
	// Name is the tool's name in tools/list and tools/call; Title and
	// Description are what clients show of it.
	Name, Title, Description string
	// InputSchema is the JSON Schema of the arguments, an object schema;
	// nil accepts any object.
	InputSchema *jsonschema.Schema
	// Call runs the tool. Its result becomes structuredContent (and the
	// JSON text of content); it must encode as a JSON object. A
	// *ServerToolError is sent as it is; any other error as {error, code,
	// retryable, retryAction} with the code protocol.CodeOf gives it.
	Call func(ctx context.Context, call *ServerToolCall) (any, error)
}

// ServerToolCall is one call of a ServerTool.
type ServerToolCall struct {
	// Caller is who the call acts for (see ServerOptions.Caller and Auth).
	Caller *auth.Caller
	// Session is the MCP session id, "" when the transport has none
	// (stdio, stateless HTTP).
	Session string
	// Arguments are the call's arguments, a JSON object valid against
	// the tool's InputSchema.
	Arguments json.RawMessage
	// TaskID and RunID, when Call sets them, are recorded in the host-call
	// event as what the call was about.
	TaskID, RunID string
}

// ServerToolError is a structured tool error (docs/protocol.md §15.3): the
// structuredContent of an error result is {error, code, retryable,
// retryAction}, details when set, and the members of Extra at the top
// level next to them.
type ServerToolError struct {
	Message     string         // sent as error
	Code        string         // a §5.4 code, or a tool's own code
	Retryable   bool           // whether the same call may succeed later
	RetryAction string         // what the caller should do next (an Action* value or its own)
	Details     map[string]any // sent as details when not empty
	Extra       map[string]any // members added at the top level
}

// Error returns the message.
func (e *ServerToolError) Error() string { return e.Message }

// structured returns the error's structuredContent.
func (e *ServerToolError) structured() map[string]any {
	m := make(map[string]any, len(e.Extra)+5)
	for k, v := range e.Extra {
		m[k] = v
	}
	m["error"], m["code"], m["retryable"], m["retryAction"] = e.Message, e.Code, e.Retryable, e.RetryAction
	if len(e.Details) > 0 {
		m["details"] = e.Details
	}
	return m
}

var builtinTools = []string{ToolListAgents, ToolListPayloadTypes, ToolSubmitTask, ToolWaitTask, ToolCancelTask, ToolGetRunEvents, ToolGetTaskTree, ToolAnswerQuestion}

// addExtraTools registers ServerOptions.ExtraTools.
func (s *Server) addExtraTools() error {
	seen := map[string]bool{}
	for _, n := range builtinTools {
		seen[n] = true
	}
	for _, t := range s.opts.ExtraTools {
		if t.Name == "" || t.Call == nil {
			return wrap(ErrInvalidConfig, "a ServerTool needs a Name and a Call")
		}
		if seen[t.Name] {
			return wrap(ErrInvalidConfig, "tool "+t.Name+" is served already")
		}
		seen[t.Name] = true
		in := t.InputSchema
		if in == nil {
			in = &jsonschema.Schema{Type: "object"}
		}
		resolved, err := in.Resolve(nil)
		if err != nil {
			return wrap(ErrInvalidConfig, "input schema of "+t.Name+": "+err.Error())
		}
		s.srv.AddTool(&sdk.Tool{Name: t.Name, Title: t.Title, Description: t.Description, InputSchema: in}, s.extraHandler(t, resolved))
	}
	return nil
}

func (s *Server) extraHandler(t ServerTool, resolved *jsonschema.Resolved) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		start := time.Now()
		args := req.Params.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		c, terr := s.caller(ctx, req)
		if terr != nil {
			return envelope(nil, terr), nil
		}
		call := &ServerToolCall{Caller: c, Arguments: args}
		if req.Session != nil {
			call.Session = req.Session.ID()
		}
		var v map[string]any
		var res *sdk.CallToolResult
		if err := json.Unmarshal(args, &v); err != nil {
			terr = newToolErr(protocol.CodeInvalidJSON, ActionFixArguments, "invalid params: arguments are not a JSON object: %v", err)
		} else if err := resolved.Validate(v); err != nil {
			terr = newToolErr(protocol.CodeInvalidField, ActionFixArguments, "invalid params: arguments of %s: %v", t.Name, err)
		} else {
			out, err := t.Call(ctx, call)
			var te *ServerToolError
			switch {
			case errors.As(err, &te):
				res = envelope(te.structured(), nil)
				res.IsError = true
				terr = &toolErr{Error: te.Message, Code: protocol.Code(te.Code), Retryable: te.Retryable, RetryAction: te.RetryAction}
			case err != nil:
				code := protocol.CodeOf(err)
				action := ActionNone
				switch {
				case code.Retryable():
					action = ActionRetry
				case code == protocol.CodeNotFound:
					action = ActionCheckID
				case code == protocol.CodeInvalidField || code == protocol.CodeMissingField || code == protocol.CodeValidation || code == protocol.CodeInvalidJSON:
					action = ActionFixArguments
				}
				terr = newToolErr(code, action, "%s", err.Error())
			default:
				res = envelope(out, nil)
			}
		}
		if res == nil {
			res = envelope(nil, terr)
		}
		s.record(ctx, req, t.Name, args, terr, &callInfo{caller: c, taskID: call.TaskID, runID: call.RunID}, time.Since(start))
		return res, nil
	}
}
