package adapters

import (
	"errors"

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
// Its code is the one protocol.CodeOf reads, as for every error of the
// module: a *protocol.Error in the cause is the precise reason and
// counts first (a card with a wrong "v" is UNSUPPORTED_VERSION, not the
// WRONG_TYPE of the member that held it); otherwise Code. Code is that
// code too: [InboundError] and [OutboundError] take the code of a
// *protocol.Error cause in place of their code argument, and an Error
// built by hand must do the same (adaptertest refuses one whose Code is
// not what protocol.CodeOf reads). The sentinel's generic code never
// counts.
//
// errors.Is(err, s) holds for its Sentinel s, for its Code and for what
// its cause matches.
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

// InboundError returns an *Error for a failed inbound translation. Its
// Code is code, or the code of a *protocol.Error in cause (see [Error]).
func InboundError(adapter string, code protocol.Code, path, detail string, cause error) *Error {
	return &Error{Adapter: adapter, Code: causeCode(code, cause), Path: path, Detail: detail, Sentinel: ErrInbound, Err: cause}
}

// OutboundError returns an *Error for a failed outbound translation. Its
// Code is code, or the code of a *protocol.Error in cause (see [Error]).
func OutboundError(adapter string, code protocol.Code, path, detail string, cause error) *Error {
	return &Error{Adapter: adapter, Code: causeCode(code, cause), Path: path, Detail: detail, Sentinel: ErrOutbound, Err: cause}
}

// causeCode is the code of a *protocol.Error in cause, which
// protocol.CodeOf reads first, else code.
func causeCode(code protocol.Code, cause error) protocol.Code {
	var pe *protocol.Error
	if errors.As(cause, &pe) && pe.Code != "" {
		return pe.Code
	}
	return code
}
