package agui

import (
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// The sentinel errors of the package. Match them with errors.Is; each also
// carries a protocol.Code (protocol.CodeOf).
var (
	// ErrInvalidInput: a RunAgentInput body was refused (HTTP 400). The
	// error also matches the protocol code of the fault (MISSING_FIELD,
	// WRONG_TYPE, DUPLICATE_KEY, INVALID_JSON, ...).
	ErrInvalidInput = coded.New("agui: invalid RunAgentInput", protocol.CodeInvalidField)
	// ErrInvalidOptions: New was given unusable Options.
	ErrInvalidOptions = coded.New("agui: invalid options", protocol.CodeInvalidField)
	// ErrNotFound: no run with that id is visible to the caller (HTTP 404).
	ErrNotFound = coded.New("agui: run not found", protocol.CodeNotFound)
)
