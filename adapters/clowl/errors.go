package clowl

import (
	"errors"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/protocol"
)

// The sentinel errors of the package. Errors of the adapter are
// *adapters.Error values (a protocol.Code, the JSON pointer of the field,
// the sentinel ErrInbound or ErrOutbound of package adapters) whose cause
// is one of these when the failure is specific to CLowl; errors.Is matches
// both.
var (
	// ErrHashMismatch: the content of ctx.ref (or ctx.inline when there is
	// no ref) does not have the SHA-256 of ctx.hash. Code
	// CONTEXT_UNAVAILABLE, CLowl E003 (docs/protocol.md §14.5; examples-v0.2.md §8:
	// "If it doesn't match, Muse returns ERR E003").
	ErrHashMismatch = errors.New("clowl: ctx.hash does not match the content")
	// ErrContextUnreachable: ctx.ref could not be resolved and ctx.inline
	// is null. Code CONTEXT_UNAVAILABLE, CLowl E003 (docs/protocol.md §14.5).
	ErrContextUnreachable = errors.New("clowl: ctx.ref is unreachable and ctx.inline is null")
	// ErrSkip is what a Resolver returns to leave a ref unresolved: the
	// ref is kept as an attachment, unchecked, as with no Resolver.
	ErrSkip = errors.New("clowl: ref not resolved")
	// ErrVersion: the message is not CLowl 0.2 (docs/protocol.md §14.8: mismatch →
	// E014). Code UNSUPPORTED_VERSION.
	ErrVersion = errors.New("clowl: unsupported CLowl version")
	// ErrSchema: the message breaks the CLowl v0.2 JSON Schema. The
	// *adapters.Error names the first violation; the cause chain holds the
	// *schema.ValidationError with all of them.
	ErrSchema = errors.New("clowl: message breaks the CLowl v0.2 schema")
	// ErrNotMappable: Outbound was given an envelope type CLowl has no
	// performative for (tool.*, routing.*, agent.heartbeat, extensions).
	// Code UNSUPPORTED_TASK, CLowl E005.
	ErrNotMappable = errors.New("clowl: no CLowl performative for this message type")
)

func inErr(code protocol.Code, path, detail string, cause error) *adapters.Error {
	return adapters.InboundError(Name, code, path, detail, cause)
}

func outErr(code protocol.Code, path, detail string, cause error) *adapters.Error {
	return adapters.OutboundError(Name, code, path, detail, cause)
}
