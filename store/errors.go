package store

import (
	"strconv"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// The sentinel errors of the store contract. Match them with errors.Is;
// the typed errors below carry the detail and match their sentinel. Each
// also carries a [protocol.Code] (see [protocol.CodeOf]), so a store error
// can travel on the wire (docs/protocol.md §5.4).
var (
	// ErrClosed: the store was closed.
	ErrClosed error = coded.New("store: closed", protocol.CodeInternal)
	// ErrNotFound: no event with that id, or no artifact with that ref.
	ErrNotFound error = coded.New("store: not found", protocol.CodeNotFound)
	// ErrTooLarge: a message or artifact is over the store's size limit
	// (see [TooLargeError]); it also matches protocol.CodeTooLarge.
	ErrTooLarge error = coded.New("store: too large", protocol.CodeTooLarge)
	// ErrInvalidMessage: a message failed validation (see
	// [InvalidMessageError], which also matches the protocol error).
	ErrInvalidMessage error = coded.New("store: invalid message", protocol.CodeInvalidField)
	// ErrInvalidQuery: a Query is malformed (see [QueryError]).
	ErrInvalidQuery error = coded.New("store: invalid query", protocol.CodeInvalidField)
	// ErrInvalidRef: an artifact ref is not "artifact:sha256:" followed by
	// 64 lower-case hex digits.
	ErrInvalidRef error = coded.New("store: invalid artifact ref", protocol.CodeInvalidField)
	// ErrInvalidMediaType: an artifact's media type does not parse
	// (RFC 2045 as read by mime.ParseMediaType).
	ErrInvalidMediaType error = coded.New("store: invalid media type", protocol.CodeInvalidField)
	// ErrRunActive: a run asked to be removed has not ended (see
	// [RunActiveError], [Remover]).
	ErrRunActive error = coded.New("store: run has not ended", protocol.CodeConflict)
	// ErrRemoved: the run read was removed (see [RemovedError]); its code
	// is protocol.CodeNotFound.
	ErrRemoved error = coded.New("store: run removed", protocol.CodeNotFound)
)

// InvalidMessageError reports a message that Append refused. Err is the
// validation error, usually a [*protocol.Error], so both
// errors.Is(err, ErrInvalidMessage) and errors.Is(err, protocol.CodeX) work.
type InvalidMessageError struct {
	Index int   // position of the message in the Append call
	Err   error // the reason
}

// Error names the message's index and the reason.
func (e *InvalidMessageError) Error() string {
	return "store: message " + strconv.Itoa(e.Index) + " is invalid: " + e.Err.Error()
}

// Unwrap returns the validation error.
func (e *InvalidMessageError) Unwrap() error { return e.Err }

// Is matches ErrInvalidMessage.
func (e *InvalidMessageError) Is(target error) bool { return target == ErrInvalidMessage }

// TooLargeError reports a message or artifact over a size limit. It
// matches ErrTooLarge and protocol.CodeTooLarge.
type TooLargeError struct {
	What  string // "message", "artifact" or "beat"
	Index int    // position of the message in the Append call; -1 otherwise
	Size  int    // its size in bytes
	Limit int    // the limit in bytes
}

// Error names what is too large, its size and the limit.
func (e *TooLargeError) Error() string {
	s := "store: " + e.What
	if e.Index >= 0 {
		s += " " + strconv.Itoa(e.Index)
	}
	return s + " is " + strconv.Itoa(e.Size) + " bytes, limit " + strconv.Itoa(e.Limit)
}

// Is matches ErrTooLarge and protocol.CodeTooLarge.
func (e *TooLargeError) Is(target error) bool {
	return target == ErrTooLarge || target == protocol.CodeTooLarge
}

// ClutchCode returns protocol.CodeTooLarge, for protocol.CodeOf.
func (e *TooLargeError) ClutchCode() protocol.Code { return protocol.CodeTooLarge }

// QueryError reports a malformed Query. It matches ErrInvalidQuery.
type QueryError struct {
	Field  string // the Query field at fault
	Detail string // what is wrong with it
}

// Error names the field and the problem.
func (e *QueryError) Error() string { return "store: invalid query: " + e.Field + " " + e.Detail }

// Is matches ErrInvalidQuery.
func (e *QueryError) Is(target error) bool { return target == ErrInvalidQuery }

// ClutchCode returns protocol.CodeInvalidField, for protocol.CodeOf.
func (e *QueryError) ClutchCode() protocol.Code { return protocol.CodeInvalidField }
