package a2a

import (
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// The sentinel errors of the package. Match them with errors.Is; the
// [*Error] that carries one also matches its protocol.Code.
var (
	// ErrInvalidOptions: NewServer or NewRemote was given an impossible
	// value (a nil router, store or registry, a bad agent id, ...).
	ErrInvalidOptions error = coded.New("a2a: invalid options", protocol.CodeInvalidField)
	// ErrCard: the remote agent card could not be fetched or does not
	// describe a JSON-RPC interface of A2A 1.0 (see Error.Code: a network
	// failure is TOOL_UNAVAILABLE and retryable, a bad card is not).
	ErrCard error = coded.New("a2a: agent card", protocol.CodeToolUnavailable)
	// ErrInput: outside input (an A2A message, a simple-surface body) could
	// not be mapped to a task.request (see Error.Code and Error.Path).
	ErrInput error = coded.New("a2a: invalid input", protocol.CodeInvalidField)
)

// Error is the typed error of the package: the sentinel it matches, the
// protocol Code that puts it on the wire (and gives its HTTP status and
// retryability), the JSON pointer of the offending field of the outside
// input when there is one, and the cause.
type Error struct {
	Code     protocol.Code // stable code from the protocol error table
	Path     string        // JSON pointer into the outside input, "" if none
	Detail   string        // human-readable explanation
	Sentinel error         // ErrInvalidOptions, ErrCard or ErrInput
	Err      error         // cause, if any
}

func (e *Error) Error() string {
	s := "a2a"
	if e.Sentinel != nil {
		s = e.Sentinel.Error()
	}
	s += ": " + string(e.Code)
	if e.Path != "" {
		s += " at " + e.Path
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the sentinel and the cause.
func (e *Error) Unwrap() []error {
	out := make([]error, 0, 2)
	if e.Sentinel != nil {
		out = append(out, e.Sentinel)
	}
	if e.Err != nil {
		out = append(out, e.Err)
	}
	return out
}

// Is matches the error's protocol.Code, so errors.Is(err,
// protocol.CodeToolUnavailable) works.
func (e *Error) Is(target error) bool {
	c, ok := target.(protocol.Code)
	return ok && c == e.Code
}

// ClutchCode returns e.Code, for protocol.CodeOf.
func (e *Error) ClutchCode() protocol.Code { return e.Code }

func optionsError(detail string) error {
	return &Error{Code: protocol.CodeInvalidField, Detail: detail, Sentinel: ErrInvalidOptions}
}

func inputError(code protocol.Code, path, detail string) *Error {
	return &Error{Code: code, Path: path, Detail: detail, Sentinel: ErrInput}
}
