package genkit

import (
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// The sentinel errors of the package. Errors of a run are the router's
// wire errors (router.Fail), with the codes the package doc lists.
var (
	// ErrOptions: New or Tool was given an invalid argument or Options.
	// Code INVALID_FIELD.
	ErrOptions error = coded.New("genkit: invalid options", protocol.CodeInvalidField)
	// ErrInput: the task.request payload does not decode into the flow's
	// input. Code VALIDATION.
	ErrInput error = coded.New("genkit: the request does not fit the flow's input", protocol.CodeValidation)
)

func optionsError(detail string) error { return coded.Wrap(ErrOptions, detail, nil) }
