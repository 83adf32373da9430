package multiagent

import (
	"errors"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/protocol"
)

// The sentinel errors of the package. Errors of the adapter are
// *adapters.Error values (a protocol.Code, the JSON pointer of the field,
// adapters.ErrInbound or adapters.ErrOutbound) whose cause is one of these
// when the failure is specific to multiagent-1.0; errors.Is matches both.
var (
	// ErrProtocol: "protocol" is not "multiagent-1.0". Code
	// UNSUPPORTED_VERSION.
	ErrProtocol = errors.New("multiagent: not a multiagent-1.0 envelope")
	// ErrNotMappable: Outbound was given an envelope type multiagent-1.0
	// has no form for (routing.*, extension types). Code UNSUPPORTED_TASK.
	ErrNotMappable = errors.New("multiagent: no multiagent-1.0 form for this message type")
	// ErrNoRoute: the Policy has no agent for an intent and no fallback.
	ErrNoRoute = errors.New("multiagent: no agent configured for the intent")
	// ErrInvalidPolicy: PolicyOptions are invalid (NewPolicy).
	ErrInvalidPolicy = errors.New("multiagent: invalid policy options")
)

func inErr(code protocol.Code, path, detail string, cause error) *adapters.Error {
	return adapters.InboundError(Name, code, path, detail, cause)
}

func outErr(code protocol.Code, path, detail string, cause error) *adapters.Error {
	return adapters.OutboundError(Name, code, path, detail, cause)
}
