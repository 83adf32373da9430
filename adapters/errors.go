package adapters

import (
	"github.com/clutchprotocol/clutch/protocol"
)

// The sentinel errors of the package. Errors of adapters match them with
// errors.Is through [*Error].
var (
	// ErrNoAdapter: no adapter of a Registry fits the message or input.
	ErrNoAdapter = &sentinel{"adapters: no adapter fits"}
	// ErrDuplicateAdapter: an adapter of that name is already registered.
	ErrDuplicateAdapter = &sentinel{"adapters: duplicate adapter name"}
	// ErrInvalidAdapter: an adapter without a name.
	ErrInvalidAdapter = &sentinel{"adapters: invalid adapter"}
	// ErrInbound: outside input could not be translated (see Error.Code).
	ErrInbound = &sentinel{"adapters: inbound translation failed"}
	// ErrOutbound: an envelope could not be translated (see Error.Code).
	ErrOutbound = &sentinel{"adapters: outbound translation failed"}
)

type sentinel struct{ msg string }

func (e *sentinel) Error() string { return e.msg }

// Error is the typed error of adapters: which adapter, the protocol Code
// that puts it on the wire (and its CLowl code), the JSON pointer of the
// offending field in the outside input when known, and the cause.
type Error struct {
	Adapter  string        // adapter name
	Code     protocol.Code // stable code from the protocol error table
	Path     string        // JSON pointer into the outside input, "" if none
	Detail   string
	Sentinel error // ErrInbound, ErrOutbound, ErrNoAdapter, ... (matched by errors.Is)
	Err      error // cause
}

func (e *Error) Error() string {
	s := "adapters"
	if e.Adapter != "" {
		s += " " + e.Adapter
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
// protocol.CodeUnsupportedVersion) works.
func (e *Error) Is(target error) bool {
	c, ok := target.(protocol.Code)
	return ok && c == e.Code
}

// ClutchCode returns e.Code, for protocol.CodeOf.
func (e *Error) ClutchCode() protocol.Code { return e.Code }

// InboundError returns an *Error for a failed inbound translation.
func InboundError(adapter string, code protocol.Code, path, detail string, cause error) *Error {
	return &Error{Adapter: adapter, Code: code, Path: path, Detail: detail, Sentinel: ErrInbound, Err: cause}
}

// OutboundError returns an *Error for a failed outbound translation.
func OutboundError(adapter string, code protocol.Code, path, detail string, cause error) *Error {
	return &Error{Adapter: adapter, Code: code, Path: path, Detail: detail, Sentinel: ErrOutbound, Err: cause}
}
