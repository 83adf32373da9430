package crewai

import (
	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// The sentinel errors of the package. Translator errors are
// *adapters.Error values (a protocol.Code, the JSON pointer of the field,
// adapters.ErrInbound or adapters.ErrOutbound) whose cause is one of these
// when the failure is specific to crewAI; errors.Is matches both.
var (
	// ErrShape: the input is JSON but none of the crewAI shapes the
	// package reads (see the package doc). Code INVALID_FIELD.
	ErrShape error = coded.New("crewai: not a crewAI event, batch or AMP body", protocol.CodeInvalidField)
	// ErrNotMappable: Outbound was given an envelope that has no crewAI
	// request form (only task.request maps to kickoff or resume). Code
	// UNSUPPORTED_TASK.
	ErrNotMappable error = coded.New("crewai: no crewAI form for this message", protocol.CodeUnsupportedTask)
	// ErrOptions: CrewOptions are invalid. Code INVALID_FIELD.
	ErrOptions error = coded.New("crewai: invalid options", protocol.CodeInvalidField)
	// ErrPolicy: the egress policy refuses the crew's URL (NewCrew).
	// Code POLICY_DENIED.
	ErrPolicy error = coded.New("crewai: the egress policy refuses the crew", protocol.CodePolicyDenied)
)

func inErr(code protocol.Code, path, detail string, cause error) *adapters.Error {
	return adapters.InboundError(Name, code, path, detail, cause)
}

func outErr(code protocol.Code, path, detail string, cause error) *adapters.Error {
	return adapters.OutboundError(Name, code, path, detail, cause)
}
