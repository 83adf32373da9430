package webhook

import (
	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// The sentinel errors of the package. Match them with errors.Is; the
// [*Error] that carries one also matches its own protocol.Code.
var (
	// ErrInvalidOptions: a constructor, a Mapping, a secret or a
	// Subscription holds an impossible value. Code INVALID_FIELD.
	ErrInvalidOptions error = coded.New("webhook: invalid options", protocol.CodeInvalidField)
	// ErrSignature: a delivery's webhook-* headers are missing or malformed,
	// its timestamp is outside the tolerance, or no signature matches a
	// configured secret (see Error.Code: BAD_SIGNATURE, MISSING_FIELD or
	// INVALID_FIELD). Nothing of such a delivery is read further.
	ErrSignature error = coded.New("webhook: signature verification failed", protocol.CodeBadSignature)
	// ErrInput: a verified delivery's body does not fit the Mapping (see
	// Error.Code and Error.Path, the JSON pointer into the body).
	ErrInput error = coded.New("webhook: invalid input", protocol.CodeInvalidField)
	// ErrDelivery: an outbound delivery failed (see Error.Code:
	// TOOL_UNAVAILABLE for a receiver that is down or answered with an
	// error status, POLICY_DENIED for a URL the egress policy refuses).
	ErrDelivery error = coded.New("webhook: delivery failed", protocol.CodeToolUnavailable)
	// ErrClosed: the Deliverer was closed.
	ErrClosed error = coded.New("webhook: closed", protocol.CodeInternal)
)

// Error is the typed error of the package, the adapters' one: the sentinel
// it matches, the protocol Code that puts it on the wire (and gives its HTTP
// status), the JSON pointer of the offending value of the body when there is
// one, and the cause.
type Error = adapters.Error

const name = "webhook"

func optionsError(detail string) error {
	return &Error{Adapter: name, Code: protocol.CodeInvalidField, Detail: detail, Sentinel: ErrInvalidOptions}
}

func signatureError(code protocol.Code, detail string) *Error {
	return &Error{Adapter: name, Code: code, Detail: detail, Sentinel: ErrSignature}
}

func inputError(code protocol.Code, path, detail string, cause error) *Error {
	return &Error{Adapter: name, Code: code, Path: path, Detail: detail, Sentinel: ErrInput, Err: cause}
}
