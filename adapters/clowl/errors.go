package clowl

import (
	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/internal/coded"
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
	ErrHashMismatch error = coded.New("clowl: ctx.hash does not match the content", protocol.CodeContextUnavailable)
	// ErrContextUnreachable: ctx.ref could not be resolved and ctx.inline
	// is null. Code CONTEXT_UNAVAILABLE, CLowl E003 (docs/protocol.md §14.5).
	ErrContextUnreachable error = coded.New("clowl: ctx.ref is unreachable and ctx.inline is null", protocol.CodeContextUnavailable)
	// ErrSkip is what a Resolver returns to leave a ref unresolved: the
	// ref is kept as an attachment, unchecked, as with no Resolver. It
	// never reaches the caller of Inbound. Code CONTEXT_UNAVAILABLE.
	ErrSkip error = coded.New("clowl: ref not resolved", protocol.CodeContextUnavailable)
	// ErrVersion: the message is not CLowl 0.2 (docs/protocol.md §14.8: mismatch →
	// E014). Code UNSUPPORTED_VERSION.
	ErrVersion error = coded.New("clowl: unsupported CLowl version", protocol.CodeUnsupportedVersion)
	// ErrSchema: the message breaks the CLowl v0.2 JSON Schema. Code
	// VALIDATION; the *adapters.Error names the first violation with its
	// own code (MISSING_FIELD, UNKNOWN_FIELD, WRONG_TYPE, INVALID_FIELD),
	// and the cause chain holds the *schema.ValidationError with all of
	// them.
	ErrSchema error = coded.New("clowl: message breaks the CLowl v0.2 schema", protocol.CodeValidation)
	// ErrNotMappable: Outbound was given an envelope type CLowl has no
	// performative for (tool.*, routing.*, agent.heartbeat, extensions).
	// Code UNSUPPORTED_TASK, CLowl E005.
	ErrNotMappable error = coded.New("clowl: no CLowl performative for this message type", protocol.CodeUnsupportedTask)
)

func inErr(code protocol.Code, path, detail string, cause error) *adapters.Error {
	return adapters.InboundError(Name, code, path, detail, cause)
}

func outErr(code protocol.Code, path, detail string, cause error) *adapters.Error {
	return adapters.OutboundError(Name, code, path, detail, cause)
}
