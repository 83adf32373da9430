package a2a

import (
	"github.com/clutchprotocol/clutch/adapters"
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

// Error is the typed error of the package, the adapters' one: the
// sentinel it matches, the protocol Code that puts it on the wire (and
// gives its HTTP status and retryability), the JSON pointer of the
// offending field of the outside input when there is one, and the cause.
type Error = adapters.Error

func optionsError(detail string) error {
	return &Error{Adapter: "a2a", Code: protocol.CodeInvalidField, Detail: detail, Sentinel: ErrInvalidOptions}
}

func inputError(code protocol.Code, path, detail string) *Error {
	return &Error{Adapter: "a2a", Code: code, Path: path, Detail: detail, Sentinel: ErrInput}
}
