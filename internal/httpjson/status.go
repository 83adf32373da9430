package httpjson

import (
	"net/http"

	"github.com/clutchprotocol/clutch/protocol"
)

// Status returns the HTTP status an HTTP surface answers with for an error
// with code (the HTTP column of the code table, docs/protocol.md §5.4), or
// 500 for a code outside the table.
func Status(code protocol.Code) int {
	if s, ok := statuses[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// statuses is the one table from protocol codes to HTTP statuses; every
// code of [protocol.Codes] has an entry.
var statuses = map[protocol.Code]int{
	protocol.CodeInvalidJSON:        http.StatusBadRequest,
	protocol.CodeInvalidUTF8:        http.StatusBadRequest,
	protocol.CodeDuplicateKey:       http.StatusBadRequest,
	protocol.CodeWrongType:          http.StatusBadRequest,
	protocol.CodeMissingField:       http.StatusBadRequest,
	protocol.CodeUnknownField:       http.StatusBadRequest,
	protocol.CodeUnknownType:        http.StatusBadRequest,
	protocol.CodeUnsupportedVersion: http.StatusBadRequest,
	protocol.CodeTooLarge:           http.StatusRequestEntityTooLarge,
	protocol.CodeTooDeep:            http.StatusBadRequest,
	protocol.CodeInvalidField:       http.StatusBadRequest,
	protocol.CodeBadSignature:       http.StatusUnauthorized,
	protocol.CodeUnknownKey:         http.StatusUnauthorized,
	protocol.CodeValidation:         http.StatusUnprocessableEntity,
	protocol.CodeToolUnavailable:    http.StatusServiceUnavailable,
	protocol.CodeToolNotFound:       http.StatusNotFound,
	protocol.CodeToolFailed:         http.StatusBadGateway,
	protocol.CodeTimeout:            http.StatusGatewayTimeout,
	protocol.CodeCancelled:          499, // client closed request (nginx); net/http has no name for it
	protocol.CodePolicyDenied:       http.StatusForbidden,
	protocol.CodeNoMatch:            http.StatusServiceUnavailable,
	protocol.CodeCapacity:           http.StatusServiceUnavailable,
	protocol.CodeRateLimited:        http.StatusTooManyRequests,
	protocol.CodeBudget:             http.StatusPaymentRequired,
	protocol.CodeCycle:              http.StatusConflict,
	protocol.CodeContextUnavailable: http.StatusNotFound,
	protocol.CodeDependency:         http.StatusFailedDependency,
	protocol.CodeUnsupportedTask:    http.StatusNotImplemented,
	protocol.CodeConflict:           http.StatusConflict,
	protocol.CodeUnauthorized:       http.StatusUnauthorized,
	protocol.CodeNotFound:           http.StatusNotFound,
	protocol.CodeInternal:           http.StatusInternalServerError,
	protocol.CodeInterrupted:        http.StatusServiceUnavailable,
	protocol.CodeInputRequired:      http.StatusUnprocessableEntity,
}
