package router

import (
	"fmt"
	"strings"
	"time"

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
	// task.request (or CallTool a call without a task, name or func).
	ErrInvalidRequest error = coded.New("router: invalid task request", protocol.CodeInvalidField)
	// ErrInvalidPayload: Submit or Delegate was given a task.request whose
	// payload Options.Validator refuses (it does not meet its payload
	// type's schema, or its run's workflow step); the error also wraps the
	// validator's error (from package schema, a *schema.ValidationError
	// for a payload that breaks its schema).
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
	// ErrCapacity: the router holds Options.MaxInFlight tasks already, so
	// Submit, Delegate or Retry refused a new one at once (code CAPACITY,
	// retryable). Nothing was stored and nothing ran. The error also wraps
	// a *protocol.ErrorPayload whose details hold "retry_after_sec", a hint
	// for a Retry-After header, and "max_in_flight".
	ErrCapacity error = coded.New("router: at capacity", protocol.CodeCapacity)
	// ErrAbandoned: Shutdown's context ended before every running handler
	// returned (see ShutdownError).
	ErrAbandoned error = coded.New("router: shutdown abandoned running handlers", protocol.CodeInterrupted)
	// ErrUnauthorized: a message from outside asked for something its
	// sender may not do (Admit of a task.cancel for another agent's task).
	ErrUnauthorized error = coded.New("router: not authorised", protocol.CodeUnauthorized)
	// ErrWaiting: Task.Ask stored a question; the handler returns this
	// error and the task waits for the answer (code INPUT_REQUIRED).
	ErrWaiting error = coded.New("router: waiting for an answer", protocol.CodeInputRequired)
	// ErrAnswered: Router.Answer was given an answer to a question that has
	// been answered already (code CONFLICT). Nothing was stored.
	ErrAnswered error = coded.New("router: the question has been answered", protocol.CodeConflict)
	// ErrNotWaiting: Router.Answer named a question its task does not wait
	// for, or a cancel found the task not waiting (code NOT_FOUND).
	ErrNotWaiting error = coded.New("router: the task waits for no such answer", protocol.CodeNotFound)
)

// RetryAfter is the retry-after hint of an ErrCapacity error.
const RetryAfter = time.Second

func capacityError(limit int) error {
	return wrap(ErrCapacity, "", &protocol.ErrorPayload{
		Code:      protocol.CodeCapacity,
		Message:   fmt.Sprintf("the router runs %d tasks, its limit", limit),
		Retryable: true,
		Details:   map[string]any{"retry_after_sec": int(RetryAfter / time.Second), "max_in_flight": limit},
	})
}

// ShutdownError is the error of a Shutdown (or Close) whose context ended
// before every running handler returned. It matches ErrAbandoned and the
// context's error (errors.Is(err, context.DeadlineExceeded)).
type ShutdownError struct {
	// TaskIDs are the tasks whose handlers had not returned, sorted. Each
	// has its terminal event stored (task.error INTERRUPTED, unless it had
	// ended before); its goroutine lives on until its handler returns.
	TaskIDs []string
	// Err is the context's error.
	Err error
}

// Error names how many tasks were abandoned, and the first few.
func (e *ShutdownError) Error() string {
	ids := e.TaskIDs
	more := ""
	if len(ids) > 8 {
		ids, more = ids[:8], fmt.Sprintf(" and %d more", len(e.TaskIDs)-8)
	}
	return fmt.Sprintf("router: shutdown abandoned %d running handlers (%s%s): %v", len(e.TaskIDs), strings.Join(ids, ", "), more, e.Err)
}

// Unwrap returns ErrAbandoned and the context's error.
func (e *ShutdownError) Unwrap() []error { return []error{ErrAbandoned, e.Err} }

func wrap(sentinel error, detail string, cause error) error {
	return coded.Wrap(sentinel, detail, cause)
}

// Fail returns the wire error of docs/protocol.md §5.4 as a Go error, for a handler
// to return: its code, message, retryability and details reach the task's
// task.error event unchanged.
func Fail(code protocol.Code, message string, retryable bool, details map[string]any) error {
	return &protocol.ErrorPayload{Code: code, Message: message, Retryable: retryable, Details: details}
}
