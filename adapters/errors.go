package adapters

import (
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// The sentinel errors of the package. Errors of adapters match them with
// errors.Is through [*Error], whose own Code is the precise one.
var (
	// ErrNoAdapter: no adapter of a Registry fits the message or input.
	// Code UNSUPPORTED_TASK.
	ErrNoAdapter error = coded.New("adapters: no adapter fits", protocol.CodeUnsupportedTask)
	// ErrDuplicateAdapter: an adapter of that name is already registered.
	// Code CONFLICT.
	ErrDuplicateAdapter error = coded.New("adapters: duplicate adapter name", protocol.CodeConflict)
	// ErrInvalidAdapter: an adapter without a name. Code INVALID_FIELD.
	ErrInvalidAdapter error = coded.New("adapters: invalid adapter", protocol.CodeInvalidField)
	// ErrInbound: outside input could not be translated. Code
	// INVALID_FIELD; an [*Error] matching it carries the precise code.
	ErrInbound error = coded.New("adapters: inbound translation failed", protocol.CodeInvalidField)
	// ErrOutbound: an envelope could not be translated. Code
	// INVALID_FIELD; an [*Error] matching it carries the precise code.
	ErrOutbound error = coded.New("adapters: outbound translation failed", protocol.CodeInvalidField)
)

// Error is the typed error of adapters: which adapter, the protocol Code
// that puts it on the wire (and its CLowl code), the JSON pointer of the
// offending field in the outside input when known, and the cause.
//
// errors.Is(err, s) holds for its Sentinel s, for its Code and for what
// its cause matches; only Code counts as the error's code (the
// sentinel's generic code does not match).
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

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Is matches the error's Sentinel and its protocol.Code, so that
// errors.Is(err, ErrInbound) and errors.Is(err,
// protocol.CodeUnsupportedVersion) work.
func (e *Error) Is(target error) bool {
	if c, ok := target.(protocol.Code); ok {
		return c == e.Code
	}
	return e.Sentinel != nil && target == e.Sentinel
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
