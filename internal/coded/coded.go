package coded

import "github.com/clutchprotocol/clutch/protocol"

// Sentinel is a sentinel error with a protocol code, so that
// protocol.CodeOf(err) can put it on the wire.
type Sentinel struct {
	msg  string
	code protocol.Code
}

// New returns a sentinel error.
func New(msg string, code protocol.Code) *Sentinel { return &Sentinel{msg: msg, code: code} }

// Error returns the sentinel's message.
func (e *Sentinel) Error() string { return e.msg }

// ClutchCode returns the sentinel's protocol code, for protocol.CodeOf.
func (e *Sentinel) ClutchCode() protocol.Code { return e.code }

// Is matches the sentinel's protocol.Code too, so errors.Is(err,
// protocol.CodeTooLarge) holds for an error wrapping a TOO_LARGE sentinel.
func (e *Sentinel) Is(target error) bool {
	c, ok := target.(protocol.Code)
	return ok && c == e.code
}

// Wrapped is a sentinel with detail and an optional cause; errors.Is
// matches both.
type Wrapped struct {
	Sentinel error
	Detail   string
	Cause    error
}

// Wrap returns sentinel with detail and cause.
func Wrap(sentinel error, detail string, cause error) error {
	return &Wrapped{Sentinel: sentinel, Detail: detail, Cause: cause}
}

// Error returns the sentinel's message, then the detail and the cause.
func (e *Wrapped) Error() string {
	s := e.Sentinel.Error()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Unwrap returns the sentinel and the cause.
func (e *Wrapped) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Sentinel}
	}
	return []error{e.Sentinel, e.Cause}
}
