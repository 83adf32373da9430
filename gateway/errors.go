package gateway

import (
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// The sentinel errors of the gateway. Each carries a protocol code, which
// gives the HTTP status of the answer (auth.Status) and the "code" of its
// error body.
var (
	// ErrInvalidOptions: New was given options it cannot use.
	ErrInvalidOptions error = coded.New("gateway: invalid options", protocol.CodeInvalidField)
	// ErrBadRequest: a query parameter or a body is malformed (400).
	ErrBadRequest error = coded.New("gateway: bad request", protocol.CodeInvalidField)
	// ErrUnknownField: a body has a member the endpoint does not define
	// (400 UNKNOWN_FIELD); the message names it. Nothing is ignored: a
	// misspelt or misplaced member is refused, never dropped.
	ErrUnknownField error = coded.New("gateway: unknown member", protocol.CodeUnknownField)
	// ErrNotFound: no such run, thread, task or artifact — or one the
	// caller may not see, which is answered the same way (404).
	ErrNotFound error = coded.New("gateway: not found", protocol.CodeNotFound)
	// ErrTooLarge: a body over the limit (413).
	ErrTooLarge error = coded.New("gateway: body too large", protocol.CodeTooLarge)
	// ErrSlowConsumer: a stream's client did not keep up and was cut off.
	ErrSlowConsumer error = coded.New("gateway: slow consumer", protocol.CodeCapacity)
)

// errConflict: the request conflicts with what has happened, and sending
// it again will not change that (409, retryable false): a task that has
// ended, a question answered already, a message id another caller used.
var (
	errConflict error = coded.New("gateway: conflict", protocol.CodeConflict)
)
