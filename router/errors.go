package router

import (
	"github.com/clutchprotocol/clutch/protocol"
)

// The sentinel errors of the router. Match them with errors.Is; each also
// carries a protocol.Code (see protocol.CodeOf). A task's own failure is not
// one of these: it is a *protocol.ErrorPayload (the wire error of seed 000
// §5.4) returned by Handle.Wait and matched by its Code.
var (
	// ErrClosed: the router was closed.
	ErrClosed error = &sentinel{"router: closed", protocol.CodeInternal}
	// ErrInvalidRequest: Submit was given something that is not a valid
	// task.request.
	ErrInvalidRequest error = &sentinel{"router: invalid task request", protocol.CodeInvalidField}
	// ErrInvalidOptions: Options or a registration hold an impossible value.
	ErrInvalidOptions error = &sentinel{"router: invalid options", protocol.CodeInvalidField}
	// ErrUnknownTask: no task with that id is known to the router or the
	// store.
	ErrUnknownTask error = &sentinel{"router: unknown task", protocol.CodeNotFound}
	// ErrNotRetryable: Retry was asked for a task that has not failed or
	// timed out, or is still running.
	ErrNotRetryable error = &sentinel{"router: task cannot be retried", protocol.CodeConflict}
)

type sentinel struct {
	msg  string
	code protocol.Code
}

func (e *sentinel) Error() string { return e.msg }

// ClutchCode returns the protocol code of the error, for protocol.CodeOf.
func (e *sentinel) ClutchCode() protocol.Code { return e.code }

type wrapped struct {
	sentinel error
	detail   string
	cause    error
}

func (e *wrapped) Error() string {
	s := e.sentinel.Error()
	if e.detail != "" {
		s += ": " + e.detail
	}
	if e.cause != nil {
		s += ": " + e.cause.Error()
	}
	return s
}

func (e *wrapped) Unwrap() []error {
	if e.cause == nil {
		return []error{e.sentinel}
	}
	return []error{e.sentinel, e.cause}
}

func wrap(sentinel error, detail string, cause error) error {
	return &wrapped{sentinel: sentinel, detail: detail, cause: cause}
}

// Fail returns the wire error of seed 000 §5.4 as a Go error, for a handler
// to return: its code, message, retryability and details reach the task's
// task.error event unchanged.
func Fail(code protocol.Code, message string, retryable bool, details map[string]any) error {
	return &protocol.ErrorPayload{Code: code, Message: message, Retryable: retryable, Details: details}
}
