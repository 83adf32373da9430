package router

import (
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// The sentinel errors of the router. Match them with errors.Is; each also
// carries a protocol.Code (see protocol.CodeOf). A task's own failure is not
// one of these: it is a *protocol.ErrorPayload (the wire error of docs/protocol.md
// §5.4) returned by Handle.Wait and matched by its Code.
var (
	// ErrClosed: the router was closed.
	ErrClosed error = coded.New("router: closed", protocol.CodeInternal)
	// ErrInvalidRequest: Submit was given something that is not a valid
	// task.request.
	ErrInvalidRequest error = coded.New("router: invalid task request", protocol.CodeInvalidField)
	// ErrInvalidPayload: Submit or Delegate was given a task.request whose
	// payload does not meet its payload type's schema (or its run's
	// workflow step); the error also wraps the schema package's error
	// (a *schema.ValidationError for a payload that breaks its schema).
	// Nothing was stored and nothing ran.
	ErrInvalidPayload error = coded.New("router: request payload rejected", protocol.CodeValidation)
	// ErrInvalidOptions: Options or a registration hold an impossible value.
	ErrInvalidOptions error = coded.New("router: invalid options", protocol.CodeInvalidField)
	// ErrUnknownTask: no task with that id is known to the router or the
	// store.
	ErrUnknownTask error = coded.New("router: unknown task", protocol.CodeNotFound)
	// ErrNotRetryable: Retry was asked for a task that has not failed or
	// timed out, or is still running.
	ErrNotRetryable error = coded.New("router: task cannot be retried", protocol.CodeConflict)
	// ErrTaskEnded: the task already ended (cancelled, timed out), so an
	// event a handler tried to store was not stored.
	ErrTaskEnded error = coded.New("router: the task has already ended", protocol.CodeCancelled)
	// ErrUnauthorized: a message from outside asked for something its
	// sender may not do (Admit of a task.cancel for another agent's task).
	ErrUnauthorized error = coded.New("router: not authorised", protocol.CodeUnauthorized)
)

func wrap(sentinel error, detail string, cause error) error {
	return coded.Wrap(sentinel, detail, cause)
}

// Fail returns the wire error of docs/protocol.md §5.4 as a Go error, for a handler
// to return: its code, message, retryability and details reach the task's
// task.error event unchanged.
func Fail(code protocol.Code, message string, retryable bool, details map[string]any) error {
	return &protocol.ErrorPayload{Code: code, Message: message, Retryable: retryable, Details: details}
}
