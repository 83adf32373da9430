package registry

import (
	"github.com/clutchprotocol/clutch/internal/coded"
	"strconv"

	"github.com/clutchprotocol/clutch/protocol"
)

// The sentinel errors of the registry. Match them with errors.Is; each also
// carries a protocol.Code (see protocol.CodeOf).
var (
	// ErrNotFound: no agent with that id is registered.
	ErrNotFound error = coded.New("registry: agent not found", protocol.CodeNotFound)
	// ErrInvalidCard: the AgentCard breaks a protocol rule; the error wraps
	// the *protocol.Error too.
	ErrInvalidCard error = coded.New("registry: invalid agent card", protocol.CodeInvalidField)
	// ErrInvalidOptions: Options hold an impossible value.
	ErrInvalidOptions error = coded.New("registry: invalid options", protocol.CodeInvalidField)
	// ErrCorruptLog: a registry event in the store cannot be read back
	// (see CorruptEventError).
	ErrCorruptLog error = coded.New("registry: unreadable registry event", protocol.CodeInternal)
	// ErrDuplicateEvent: the store already holds an event with the id the
	// registry made, so the call changed nothing. Ids are fresh ULIDs, so
	// this means two id sources were seeded alike (a test's deterministic
	// protocol.IDs given to two registries, say).
	ErrDuplicateEvent error = coded.New("registry: event id already in the store", protocol.CodeConflict)
	// ErrSignature: the signature policy refused a message from outside
	// (Verify, Admit); nothing was stored. The error wraps the
	// *protocol.Error with the precise code, BAD_SIGNATURE or UNKNOWN_KEY,
	// which protocol.CodeOf returns.
	ErrSignature error = coded.New("registry: signature refused", protocol.CodeBadSignature)
	// ErrInvalidMessage: Admit or Verify was given a message it does not
	// take (another type, another run, a Local claim, an invalid envelope).
	ErrInvalidMessage error = coded.New("registry: invalid registry message", protocol.CodeInvalidField)
)

func wrap(sentinel error, detail string, cause error) error {
	return coded.Wrap(sentinel, detail, cause)
}

// CorruptEventError is the error of Open for a registry event it cannot
// apply: the store holds it at Seq. It matches ErrCorruptLog and unwraps
// to the reason (often a *protocol.Error).
type CorruptEventError struct {
	Seq uint64
	Err error
}

func (e *CorruptEventError) Error() string {
	return ErrCorruptLog.Error() + ": seq " + strconv.FormatUint(e.Seq, 10) + ": " + e.Err.Error()
}

// Unwrap returns the reason.
func (e *CorruptEventError) Unwrap() error { return e.Err }

// Is matches ErrCorruptLog.
func (e *CorruptEventError) Is(target error) bool { return target == ErrCorruptLog }

// ClutchCode returns protocol.CodeInternal, for protocol.CodeOf when the
// reason carries no code of its own.
func (e *CorruptEventError) ClutchCode() protocol.Code { return protocol.CodeInternal }
