package schema

import (
	"encoding/json"
	"sync"

	"github.com/clutchprotocol/clutch/protocol"
)

// Binder binds runs to workflows, so that the messages of a run are
// validated against the workflow's steps: "validation is workflow-scoped,
// not global" (docs/protocol.md §3.1). Like a [Registry], it is a validator
// a router takes (router.Options.Validator):
//
//	binder := schema.NewBinder(reg)
//	binder.Bind(runID, wf)               // when the run starts
//	err := binder.ValidateMessage(msg)   // for every message of any run
//	binder.Unbind(runID)                 // when the run ends
//
// For a message of a bound run, [Binder.ValidateMessage] finds the step
// with [Workflow.StepFor] (meta.step, else type + payload_type) and
// validates with [Workflow.ValidateStep]; a message no step covers, and
// every message of an unbound run, is validated with
// [Registry.ValidateMessage]. One exception: a task.request's meta.step
// names the step its result answers (a router copies it to the result), so
// a task.request whose meta.step names a step expecting another type is
// validated as if it named none (the workflow's task.request steps, else
// the registry). A Binder is safe for use by many goroutines; lookups do
// not lock.
type Binder struct {
	reg  *Registry
	runs sync.Map // run_id → *Workflow (a private copy)
}

// NewBinder returns a Binder validating against reg. It panics if reg is
// nil.
func NewBinder(reg *Registry) *Binder {
	if reg == nil {
		panic("schema: NewBinder with a nil registry")
	}
	return &Binder{reg: reg}
}

// Bind binds a run to a workflow. The workflow is checked against the
// registry (see [Registry.CheckWorkflow]) and copied, so later changes to w
// do not affect the run. Binding a run again to an equal workflow is a
// no-op; to a different one, an error wrapping [ErrAlreadyBound].
func (b *Binder) Bind(runID string, w *Workflow) error {
	if runID == "" {
		return errorf(ErrInvalidOptions, "Bind needs a run id")
	}
	if err := b.reg.CheckWorkflow(w); err != nil {
		return err
	}
	c := w.clone()
	if prev, loaded := b.runs.LoadOrStore(runID, c); loaded && !prev.(*Workflow).equal(c) {
		return errorf(ErrAlreadyBound, "run %s is bound to workflow %q", runID, prev.(*Workflow).Name)
	}
	return nil
}

// Unbind forgets a run's workflow. Call it when the run ends; a Binder
// keeps a binding until then.
func (b *Binder) Unbind(runID string) { b.runs.Delete(runID) }

// Registry returns the registry the binder validates against.
func (b *Binder) Registry() *Registry { return b.reg }

// RegistryOf returns the registry behind a validator: v itself when it is a
// *Registry, the binder's registry when it is a *Binder, and nil for
// anything else, nil included. Packages that register their payload types
// with a router's validator (router.Router.Validator) find the registry
// with it.
func RegistryOf(v any) *Registry {
	switch x := v.(type) {
	case *Registry:
		return x
	case *Binder:
		if x != nil {
			return x.reg
		}
	}
	return nil
}

// Workflow returns a copy of the workflow a run is bound to.
func (b *Binder) Workflow(runID string) (*Workflow, bool) {
	v, ok := b.runs.Load(runID)
	if !ok {
		return nil, false
	}
	return v.(*Workflow).clone(), true
}

// ValidateMessage validates a message in the scope of its run: against the
// step of the run's workflow it answers, or against the registry alone when
// the run is not bound or no step covers the message (see the type doc).
// Errors are as of [Workflow.ValidateStep] and [Registry.ValidateMessage].
func (b *Binder) ValidateMessage(m *protocol.Message) error {
	if m == nil {
		return errorf(ErrInvalidOptions, "nil message")
	}
	v, ok := b.runs.Load(m.RunID)
	if !ok {
		return b.reg.ValidateMessage(m)
	}
	w := v.(*Workflow)
	step, ok, err := w.stepFor(m, !answeredStep(w, m))
	if err != nil {
		return err
	}
	if !ok {
		return b.reg.ValidateMessage(m)
	}
	return w.validateStep(step, m, b.reg)
}

// answeredStep reports whether m is a task.request whose meta.step names a
// step of w that expects another type of message: the step the request's
// result answers, which says nothing about the request itself.
func answeredStep(w *Workflow, m *protocol.Message) bool {
	if m.Type != protocol.TypeTaskRequest {
		return false
	}
	id, ok := m.Meta[MetaStep].(string)
	if !ok {
		return false
	}
	s, found := w.Step(id)
	return found && s.Expects.Type != m.Type
}

// ValidateValue is the registry's [Registry.ValidateValue].
func (b *Binder) ValidateValue(schemaJSON, value json.RawMessage) error {
	return b.reg.ValidateValue(schemaJSON, value)
}
