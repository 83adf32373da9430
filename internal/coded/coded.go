// Package coded is the one way the module's packages build errors: sentinel
// errors that carry a protocol.Code ([New]), and wrapping that keeps both
// the sentinel and the cause visible to errors.Is ([Wrap]). Each package
// declares its sentinels with New in its errors.go and wraps them with Wrap
// (or fmt.Errorf and %w); protocol.CodeOf reads the code of either.
//
// The one exception is package protocol, which defines Code and so cannot
// import this package: its errors are all *protocol.Error values, each
// carrying a Code and matched by it (errors.Is(err, protocol.CodeTooLarge)),
// exactly as the sentinels built here are.
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
