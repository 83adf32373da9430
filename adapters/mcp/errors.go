package mcp

import (
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// The sentinel errors of the package. Match them with errors.Is; each also
// carries a protocol.Code (see protocol.CodeOf). A failed tool call is not
// one of these: it is a [*ToolError], matched by its code.
var (
	// ErrClosed: the Client or Server was closed.
	ErrClosed error = coded.New("mcp: closed", protocol.CodeToolUnavailable)
	// ErrInvalidConfig: a ServerConfig or an Options struct holds an
	// impossible value.
	ErrInvalidConfig error = coded.New("mcp: invalid configuration", protocol.CodeInvalidField)
	// ErrUnknownServer: no server of that name is configured.
	ErrUnknownServer error = coded.New("mcp: unknown server", protocol.CodeToolNotFound)
	// ErrNoTask: Call was given a nil task. Every call belongs to a task:
	// it is checked against the task's policy and recorded in its events.
	ErrNoTask error = coded.New("mcp: a tool call needs a task", protocol.CodeInvalidField)
)

func wrap(sentinel error, detail string) error { return coded.Wrap(sentinel, detail, nil) }

// ToolError is a failed tool call (docs/protocol.md §5.4, docs/protocol.md §13.3.5): the code
// of the protocol error table (TOOL_UNAVAILABLE, TOOL_NOT_FOUND,
// TOOL_FAILED, TIMEOUT, CANCELLED, POLICY_DENIED, TOO_LARGE, RATE_LIMITED,
// VALIDATION, INVALID_FIELD), whether a retry may help, and the details
// recorded in the tool.error event's payload (server, tool, name,
// available_tools, retryAfter, content, ...). errors.Is(err,
// protocol.CodeToolNotFound) matches by code.
type ToolError struct {
	Code      protocol.Code
	Message   string
	Retryable bool
	// Details is the details object of the tool.error payload.
	Details map[string]any
	// Event is the tool.error event stored for the failure, nil when it
	// could not be stored (the task had already ended).
	Event *protocol.Message
	// Err is the underlying cause, when there is one (a transport error,
	// the context's error).
	Err error
}

// Error returns "mcp: <CODE>: <message>".
func (e *ToolError) Error() string { return "mcp: " + string(e.Code) + ": " + e.Message }

// Unwrap returns the cause.
func (e *ToolError) Unwrap() error { return e.Err }

// Is matches a protocol.Code target.
func (e *ToolError) Is(target error) bool {
	c, ok := target.(protocol.Code)
	return ok && c == e.Code
}

// ClutchCode returns e.Code, for protocol.CodeOf.
func (e *ToolError) ClutchCode() protocol.Code { return e.Code }

// Payload returns the wire error of the tool.error event (docs/protocol.md §5.4).
func (e *ToolError) Payload() *protocol.ErrorPayload {
	return &protocol.ErrorPayload{Code: e.Code, Message: e.Message, Retryable: e.Retryable, Details: e.Details}
}

// RetryAfter returns the server's retryAfter hint in seconds (docs/protocol.md §13
// §3.5), 0 when there is none.
func (e *ToolError) RetryAfter() float64 {
	f, _ := e.Details["retryAfter"].(float64)
	return f
}
