package multiagent

import (
	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// The sentinel errors of the package. Errors of the adapter are
// *adapters.Error values (a protocol.Code, the JSON pointer of the field,
// adapters.ErrInbound or adapters.ErrOutbound) whose cause is one of these
// when the failure is specific to multiagent-1.0; errors.Is matches both.
var (
	// ErrProtocol: "protocol" is not "multiagent-1.0". Code
	// UNSUPPORTED_VERSION.
	ErrProtocol error = coded.New("multiagent: not a multiagent-1.0 envelope", protocol.CodeUnsupportedVersion)
	// ErrNotMappable: Outbound was given an envelope type multiagent-1.0
	// has no form for (routing.*, extension types). Code UNSUPPORTED_TASK.
	ErrNotMappable error = coded.New("multiagent: no multiagent-1.0 form for this message type", protocol.CodeUnsupportedTask)
	// ErrNoRoute: the Policy has no agent for an intent and no fallback.
	// Code NO_MATCH.
	ErrNoRoute error = coded.New("multiagent: no agent configured for the intent", protocol.CodeNoMatch)
	// ErrInvalidPolicy: PolicyOptions are invalid (NewPolicy). Code
	// INVALID_FIELD.
	ErrInvalidPolicy error = coded.New("multiagent: invalid policy options", protocol.CodeInvalidField)
)

func inErr(code protocol.Code, path, detail string, cause error) *adapters.Error {
	return adapters.InboundError(Name, code, path, detail, cause)
}

func outErr(code protocol.Code, path, detail string, cause error) *adapters.Error {
	return adapters.OutboundError(Name, code, path, detail, cause)
}
