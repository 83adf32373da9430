package langgraph

import (
	"strconv"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// The sentinel errors of the package; errors of the translator are
// *adapters.Error values whose cause is one of these when the failure is
// specific to LangGraph, and the bridge's are *adapters.Error values too.
var (
	// ErrNotLangGraph: the input is JSON or text, but no LangGraph shape
	// (SSE frame, stream part, astream_events record, protocol event, run,
	// thread, webhook or LangChain message). Code INVALID_FIELD.
	ErrNotLangGraph error = coded.New("langgraph: not a LangGraph record", protocol.CodeInvalidField)
	// ErrNotMappable: Outbound was given an envelope LangGraph has no form
	// for. Code UNSUPPORTED_TASK.
	ErrNotMappable error = coded.New("langgraph: no LangGraph form for this message", protocol.CodeUnsupportedTask)
	// ErrOptions: invalid Options or RemoteOptions. Code INVALID_FIELD.
	ErrOptions error = coded.New("langgraph: invalid options", protocol.CodeInvalidField)
)

func inErr(code protocol.Code, path, detail string, cause error) *adapters.Error {
	return adapters.InboundError(Name, code, path, detail, cause)
}

func outErr(code protocol.Code, path, detail string, cause error) *adapters.Error {
	return adapters.OutboundError(Name, code, path, detail, cause)
}

func optionsError(detail string) *adapters.Error {
	return &adapters.Error{Adapter: Name, Code: protocol.CodeInvalidField, Detail: detail, Sentinel: ErrOptions}
}

func itoa(n int) string { return strconv.Itoa(n) }
