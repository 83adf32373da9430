package autogen

import (
	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// The sentinel errors of the package. Translation errors are
// *adapters.Error values (a protocol.Code, the JSON pointer of the member,
// adapters.ErrInbound or adapters.ErrOutbound) whose cause is one of these
// when the failure is specific to AutoGen; errors.Is matches both.
var (
	// ErrNotAutoGen: the input is JSON but none of the shapes of the package
	// doc (a message or event with "type", a TaskResult, a list of them, a
	// worker-runtime message). Code INVALID_FIELD.
	ErrNotAutoGen error = coded.New("autogen: not an AutoGen message, TaskResult or worker message", protocol.CodeInvalidField)
	// ErrNotMappable: Outbound was given an envelope AutoGen has no form
	// for. Code UNSUPPORTED_TASK.
	ErrNotMappable error = coded.New("autogen: no AutoGen form for this message", protocol.CodeUnsupportedTask)
	// ErrInvalidOptions: HandlerOptions are invalid (NewHandler). Code
	// INVALID_FIELD.
	ErrInvalidOptions error = coded.New("autogen: invalid options", protocol.CodeInvalidField)
)

func inErr(code protocol.Code, path, detail string, cause error) *adapters.Error {
	return adapters.InboundError(Name, code, path, detail, cause)
}

func outErr(code protocol.Code, path, detail string, cause error) *adapters.Error {
	return adapters.OutboundError(Name, code, path, detail, cause)
}
