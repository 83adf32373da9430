package schema

import (
	"errors"
	"fmt"
	"strings"

	"github.com/clutchprotocol/clutch/protocol"
)

// MetaStep is the meta key that names the workflow step a message answers
// ("meta": {"step": "research"}); see [Workflow.StepFor]. It is
// [protocol.MetaStep].
const MetaStep = protocol.MetaStep

// StepFor returns the step of w that a message of a bound run answers. This
// is the binding rule the router relies on (see [Binder]):
//
//  1. If the message names a step in meta ("meta": {"step": "research"},
//     see [MetaStep]), that step; an id w does not have is an error wrapping
//     [ErrUnknownStep].
//  2. Otherwise the steps whose expects.type is the message's type are the
//     candidates. None: the workflow says nothing about this kind of message
//     and ok is false (the router still validates the payload against the
//     registry). Else the first candidate whose expects.payload_type is the
//     message's payload_type, or is empty.
//  3. Candidates exist but none accepts the payload_type: a
//     [*ValidationError] naming the payload types the workflow expects for
//     this message type. (Within a workflow the steps of a message type are
//     exhaustive: a task.result of a run bound to a workflow with task.result
//     steps must be one of them.)
//
// When several steps share a type and payload_type, rule 2 picks the first;
// name the step in meta to pick another.
func (w *Workflow) StepFor(m *protocol.Message) (step Step, ok bool, err error) {
	if m == nil {
		return Step{}, false, errorf(ErrInvalidOptions, "nil message")
	}
	return w.stepFor(m, true)
}

// stepFor is StepFor, with rule 1 left out when byMeta is false.
func (w *Workflow) stepFor(m *protocol.Message, byMeta bool) (step Step, ok bool, err error) {
	if v, has := m.Meta[MetaStep]; has && byMeta {
		id, isStr := v.(string)
		if !isStr {
			return Step{}, false, errorf(ErrUnknownStep, "meta.%s must be a string, got %T", MetaStep, v)
		}
		s, found := w.Step(id)
		if !found {
			return Step{}, false, errorf(ErrUnknownStep, "workflow %q has no step %q", w.Name, id)
		}
		return s, true, nil
	}
	var expected []string
	for _, s := range w.Steps {
		if s.Expects.Type != m.Type {
			continue
		}
		if s.Expects.PayloadType == "" || s.Expects.PayloadType == m.PayloadType {
			return s, true, nil
		}
		expected = append(expected, s.Expects.PayloadType+" (step "+s.ID+")")
	}
	if expected == nil {
		return Step{}, false, nil
	}
	got := m.PayloadType
	if got == "" {
		got = "none"
	}
	return Step{}, false, &ValidationError{
		PayloadType: m.PayloadType,
		Workflow:    w.Name,
		Violations: []Violation{{
			Path:    "/payload_type",
			Keyword: "expects.payload_type",
			Message: fmt.Sprintf("%s messages of this workflow carry %s; got %s", m.Type, strings.Join(expected, " or "), got),
		}},
	}
}

// requiredPointer turns an expects.required entry into a JSON pointer: a
// member name, or a pointer when it starts with "/".
func requiredPointer(name string) string {
	if name == "" || name[0] != '/' {
		return "/" + escapePointer(name)
	}
	return name
}

// ValidateStep validates a message against one step of the workflow (docs/protocol.md
// §3.4): its type must be expects.type, its payload_type
// expects.payload_type (when set), every expects.required member must be
// present, and the payload must satisfy the schema of its payload_type in
// reg. Failures of any of these are collected in one [*ValidationError]
// whose paths are relative to the message ("/type", "/payload/findings").
// Envelope problems that make the payload unreadable or its contract
// unknown (bad JSON, over the size limit, a schema_ref mismatch, an unknown
// payload_type in a non-permissive registry) are returned as they are, as
// by [Registry.ValidateMessage]. An unknown stepID wraps [ErrUnknownStep].
func (w *Workflow) ValidateStep(stepID string, m *protocol.Message, reg *Registry) error {
	s, ok := w.Step(stepID)
	if !ok {
		return errorf(ErrUnknownStep, "workflow %q has no step %q", w.Name, stepID)
	}
	if m == nil || reg == nil {
		return errorf(ErrInvalidOptions, "ValidateStep needs a message and a registry")
	}
	return w.validateStep(s, m, reg)
}

// validateStep is ValidateStep with the step found.
func (w *Workflow) validateStep(s Step, m *protocol.Message, reg *Registry) error {
	e := s.Expects
	var vs []Violation
	if m.Type != e.Type {
		vs = append(vs, Violation{Path: "/type", Keyword: "expects.type",
			Message: fmt.Sprintf("step %q expects a %s message, got %s", s.ID, e.Type, m.Type)})
	}
	ptMatch := e.PayloadType == "" || m.PayloadType == e.PayloadType
	if !ptMatch {
		got := m.PayloadType
		if got == "" {
			got = "none"
		}
		vs = append(vs, Violation{Path: "/payload_type", Keyword: "expects.payload_type",
			Message: fmt.Sprintf("step %q expects payload_type %s, got %s", s.ID, e.PayloadType, got)})
	}
	if !ptMatch {
		// The payload is of another contract: its members say nothing
		// about this step's.
		return &ValidationError{PayloadType: m.PayloadType, Workflow: w.Name, Step: s.ID, Violations: vs}
	}
	sch, err := reg.schemaFor(m)
	if err != nil {
		return err
	}
	// The payload is decoded once, for expects.required and the schema.
	var doc any
	if sch != nil || len(e.Required) > 0 {
		if doc, err = decodePayload(m.Payload, reg.maxBytes); err != nil {
			return err
		}
	}
	for _, name := range e.Required {
		if _, found := resolvePointer(doc, requiredPointer(name)); !found {
			vs = append(vs, Violation{Path: "/payload" + requiredPointer(name), Keyword: "expects.required",
				Message: fmt.Sprintf("step %q requires %s", s.ID, strings.TrimPrefix(name, "/"))})
		}
	}
	if sch != nil {
		err := sch.validateDoc(doc, "/payload")
		var ve *ValidationError
		switch {
		case errors.As(err, &ve):
			vs = append(vs, ve.Violations...)
		case err != nil:
			return err
		}
	}
	if len(vs) == 0 {
		return nil
	}
	sortViolations(vs)
	return &ValidationError{PayloadType: m.PayloadType, Workflow: w.Name, Step: s.ID, Violations: vs}
}
