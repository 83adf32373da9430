package router

import (
	"errors"
	"maps"

	"github.com/clutchprotocol/clutch/protocol"
)

// Validator checks a message's payload against its structured contract
// (docs/protocol.md §3): the schema of its payload_type, or the workflow
// step it answers. The router calls it once per request it is given
// (Submit, Delegate, Admit) and once per result a handler returns, after
// the envelope has been validated (protocol.Message.Validate) and encoded,
// so it need not check the envelope again. A *schema.Registry validates
// against payload schemas; a *schema.Binder validates in the scope of each
// message's run (its workflow) and falls back to its registry.
//
// An error it returns that has a method ErrorDetails() map[string]any (as
// *schema.ValidationError has, listing its violations) adds those members
// to the details of the task.error that refuses an invalid result. It must
// be safe for concurrent use.
type Validator interface {
	ValidateMessage(m *protocol.Message) error
}

// validate validates m's payload with Options.Validator; without one,
// payloads are not checked.
func (r *Router) validate(m *protocol.Message) error {
	if r.opts.Validator == nil {
		return nil
	}
	return r.opts.Validator.ValidateMessage(m)
}

// addErrorDetails adds to details the members a validation error carries
// (see Validator).
func addErrorDetails(details map[string]any, err error) {
	var d interface{ ErrorDetails() map[string]any }
	if errors.As(err, &d) {
		maps.Copy(details, d.ErrorDetails())
	}
}
