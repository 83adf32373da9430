package langchaingo

import (
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// The sentinel errors of the package. Errors of a run are the router's
// wire errors (router.Fail), with the codes the package doc lists.
var (
	// ErrOptions: New, Tool or HumanTool was given an invalid argument or
	// Options. Code INVALID_FIELD.
	ErrOptions error = coded.New("langchaingo: invalid options", protocol.CodeInvalidField)
	// ErrInput: the task.request payload does not fit the chain's inputs.
	// Code VALIDATION.
	ErrInput error = coded.New("langchaingo: the request does not fit the chain's inputs", protocol.CodeValidation)
)

func optionsError(detail string) error { return coded.Wrap(ErrOptions, detail, nil) }

func inputError(detail string) error { return coded.Wrap(ErrInput, detail, nil) }
