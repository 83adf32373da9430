package clowl

import "github.com/clutchprotocol/clutch/protocol"

// CodeFor returns the CLowl v0.2 error code (E001–E016) an ERR carries for
// a protocol error code: the CLowl column of the code table of
// docs/protocol.md §5.4, or "E009" (internal error) for a code outside the
// table.
func CodeFor(c protocol.Code) string {
	if e, ok := clowlCodes[c]; ok {
		return e
	}
	return "E009"
}

// ProtocolCode returns the protocol error code an inbound ERR with CLowl
// error code e becomes: the code that represents e best (the inbound
// column of docs/protocol.md §14.6), or INTERNAL for an unknown code.
func ProtocolCode(e string) protocol.Code {
	if c, ok := protocolCodes[e]; ok {
		return c
	}
	return protocol.CodeInternal
}

// clowlCodes is the one table from protocol codes to the CLowl v0.2 error
// catalog (docs/protocol.md §14.6); every code of protocol.Codes has an
// entry.
var clowlCodes = map[protocol.Code]string{
	protocol.CodeInvalidJSON:        "E001",
	protocol.CodeInvalidUTF8:        "E001",
	protocol.CodeDuplicateKey:       "E001",
	protocol.CodeWrongType:          "E001",
	protocol.CodeMissingField:       "E001",
	protocol.CodeUnknownField:       "E001",
	protocol.CodeUnknownType:        "E005",
	protocol.CodeUnsupportedVersion: "E014",
	protocol.CodeTooLarge:           "E008",
	protocol.CodeTooDeep:            "E001",
	protocol.CodeInvalidField:       "E008",
	protocol.CodeBadSignature:       "E002",
	protocol.CodeUnknownKey:         "E002",
	protocol.CodeValidation:         "E008",
	protocol.CodeToolUnavailable:    "E007",
	protocol.CodeToolNotFound:       "E005",
	protocol.CodeToolFailed:         "E009",
	protocol.CodeTimeout:            "E006",
	protocol.CodeCancelled:          "E013",
	protocol.CodePolicyDenied:       "E016",
	protocol.CodeNoMatch:            "E010",
	protocol.CodeCapacity:           "E004",
	protocol.CodeRateLimited:        "E004",
	protocol.CodeBudget:             "E012",
	protocol.CodeCycle:              "E015",
	protocol.CodeContextUnavailable: "E003",
	protocol.CodeDependency:         "E007",
	protocol.CodeUnsupportedTask:    "E005",
	protocol.CodeConflict:           "E011",
	protocol.CodeUnauthorized:       "E002",
	protocol.CodeNotFound:           "E005",
	protocol.CodeInternal:           "E009",
	protocol.CodeInterrupted:        "E009",
	protocol.CodeInputRequired:      "E008",
}

// protocolCodes maps each CLowl code back to one protocol code, whose
// CodeFor is that CLowl code again.
var protocolCodes = map[string]protocol.Code{
	"E001": protocol.CodeInvalidJSON,
	"E002": protocol.CodeUnauthorized,
	"E003": protocol.CodeContextUnavailable,
	"E004": protocol.CodeCapacity,
	"E005": protocol.CodeUnsupportedTask,
	"E006": protocol.CodeTimeout,
	"E007": protocol.CodeDependency,
	"E008": protocol.CodeValidation,
	"E009": protocol.CodeInternal,
	"E010": protocol.CodeNoMatch,
	"E011": protocol.CodeConflict,
	"E012": protocol.CodeBudget,
	"E013": protocol.CodeCancelled,
	"E014": protocol.CodeUnsupportedVersion,
	"E015": protocol.CodeCycle,
	"E016": protocol.CodePolicyDenied,
}
