package schema

import (
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
)

func TestBinder(t *testing.T) {
	reg := newRegistry(t, nil)
	wf := loadPipeline(t, reg)
	b := NewBinder(reg)
	const run = "run_01"

	inRun := func(m *protocol.Message) *protocol.Message { m.RunID = run; return m }
	goodSummary := `{"title":"t","findings":["f"],"citations":["c"]}`
	noTitle := `{"findings":["f"],"citations":["c"]}` // fine for the schema, not for the step

	// Unbound: the registry alone decides.
	if err := b.ValidateMessage(inRun(message(PayloadResearchSummary, noTitle))); err != nil {
		t.Fatalf("unbound: %v", err)
	}
	if _, ok := b.Workflow(run); ok {
		t.Fatal("bound before Bind")
	}

	if err := b.Bind(run, wf); err != nil {
		t.Fatal(err)
	}
	// The binding keeps its own copy.
	wf.Steps[1].Expects.Required = nil
	got, ok := b.Workflow(run)
	if !ok || len(got.Steps[1].Expects.Required) != 3 {
		t.Fatalf("Workflow(run) = %+v", got)
	}
	got.Steps[1].ID = "changed"
	if again, _ := b.Workflow(run); again.Steps[1].ID != "research" {
		t.Fatal("Workflow returns shared memory")
	}
	wf = loadPipeline(t, reg)

	// Bound: the step rules apply.
	if err := b.ValidateMessage(inRun(message(PayloadResearchSummary, goodSummary))); err != nil {
		t.Fatal(err)
	}
	ve := validationErr(t, b.ValidateMessage(inRun(message(PayloadResearchSummary, noTitle))))
	if ve.Step != "research" || !hasViolation(ve, "/payload/title", "expects.required") {
		t.Fatal(ve)
	}
	// A task.result of a contract the workflow does not list.
	ve = validationErr(t, b.ValidateMessage(inRun(message(PayloadCodeReview, `{"findings":[],"severity":"low"}`))))
	if !hasViolation(ve, "/payload_type", "expects.payload_type") {
		t.Fatal(ve)
	}
	// A type the workflow does not cover: the registry alone.
	accept := inRun(message("", `{}`))
	accept.Type = protocol.TypeTaskAccept
	if err := b.ValidateMessage(accept); err != nil {
		t.Fatal(err)
	}
	progress := inRun(message(PayloadResearchSummary, `{"findings":1}`))
	progress.Type = protocol.TypeTaskProgress
	validationErr(t, b.ValidateMessage(progress))
	// meta.step picks the step.
	m := inRun(message(PayloadResearchSummary, goodSummary))
	m.Meta = map[string]any{MetaStep: "code"}
	ve = validationErr(t, b.ValidateMessage(m))
	if ve.Step != "code" || !hasViolation(ve, "/payload_type", "expects.payload_type") {
		t.Fatal(ve)
	}
	m.Meta[MetaStep] = "nope"
	if err := b.ValidateMessage(m); !errors.Is(err, ErrUnknownStep) {
		t.Fatal(err)
	}
	// Other runs are unaffected.
	other := message(PayloadResearchSummary, noTitle)
	other.RunID = "run_02"
	if err := b.ValidateMessage(other); err != nil {
		t.Fatal(err)
	}

	// Rebinding to an equal workflow is a no-op; to another, a conflict.
	if err := b.Bind(run, loadPipeline(t, reg)); err != nil {
		t.Fatalf("rebind equal: %v", err)
	}
	seed, err := reg.LoadWorkflow([]byte(seedWorkflow))
	if err != nil {
		t.Fatal(err)
	}
	err = b.Bind(run, seed)
	if !errors.Is(err, ErrAlreadyBound) || protocol.CodeOf(err) != protocol.CodeConflict {
		t.Fatalf("rebind other: %v", err)
	}

	// Unbind: back to the registry alone.
	b.Unbind(run)
	if err := b.ValidateMessage(inRun(message(PayloadResearchSummary, noTitle))); err != nil {
		t.Fatal(err)
	}
	if err := b.Bind(run, seed); err != nil {
		t.Fatal(err)
	}

	// Bad arguments.
	if err := b.Bind("", wf); !errors.Is(err, ErrInvalidOptions) {
		t.Fatal(err)
	}
	if err := b.Bind("run_x", &Workflow{Name: "w"}); !errors.Is(err, ErrInvalidWorkflow) {
		t.Fatal(err)
	}
	if err := b.Bind("run_x", nil); !errors.Is(err, ErrInvalidWorkflow) {
		t.Fatal(err)
	}
	if err := b.ValidateMessage(nil); !errors.Is(err, ErrInvalidOptions) {
		t.Fatal(err)
	}
	defer func() {
		if recover() == nil {
			t.Fatal("NewBinder(nil) did not panic")
		}
	}()
	NewBinder(nil)
}

func TestBinderConcurrent(t *testing.T) {
	reg := newRegistry(t, nil)
	wf := loadPipeline(t, reg)
	b := NewBinder(reg)
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				run := fmt.Sprintf("run_%d_%d", g, i%5)
				if err := b.Bind(run, wf); err != nil {
					errs <- err
					return
				}
				m := message(PayloadResearchSummary, `{"findings":["f"],"citations":["c"]}`)
				m.RunID = run
				if err := b.ValidateMessage(m); !errors.Is(err, ErrValidation) { // title is required by the step
					errs <- fmt.Errorf("validate: %v", err)
					return
				}
				if i%5 == 4 {
					b.Unbind(run)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestBinderRequestNamesItsResultStep: a task.request's meta.step names the
// step its result answers; a request naming a step that expects another
// type is validated as if it named none.
func TestBinderRequestNamesItsResultStep(t *testing.T) {
	reg := newRegistry(t, nil)
	b := NewBinder(reg)
	if err := b.Bind("run_pipe", loadPipeline(t, reg)); err != nil {
		t.Fatal(err)
	}
	seed, err := reg.LoadWorkflow([]byte(seedWorkflow))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Bind("run_seed", seed); err != nil {
		t.Fatal(err)
	}
	request := func(run, step, payloadType, payload string) *protocol.Message {
		m := message(payloadType, payload)
		m.Type, m.RunID = protocol.TypeTaskRequest, run
		if step != "" {
			m.Meta = map[string]any{MetaStep: step}
		}
		return m
	}
	const query, badQuery = `{"query":"q"}`, `{"query":42}`

	// Naming a task.result step: the workflow's task.request step ("plan").
	if err := b.ValidateMessage(request("run_pipe", "research", PayloadResearchQuery, query)); err != nil {
		t.Fatal(err)
	}
	ve := validationErr(t, b.ValidateMessage(request("run_pipe", "research", PayloadCodeOutput, `{"files":[],"language":"go","tests_passed":true}`)))
	if ve.Step != "" || ve.Workflow != "ship-feature" || !hasViolation(ve, "/payload_type", "expects.payload_type") {
		t.Fatal(ve)
	}
	ve = validationErr(t, b.ValidateMessage(request("run_pipe", "research", PayloadResearchQuery, badQuery)))
	if ve.Step != "plan" {
		t.Fatal(ve)
	}
	// No task.request step in the workflow: the registry alone.
	if err := b.ValidateMessage(request("run_seed", "research", PayloadResearchQuery, query)); err != nil {
		t.Fatal(err)
	}
	ve = validationErr(t, b.ValidateMessage(request("run_seed", "research", PayloadResearchQuery, badQuery)))
	if ve.Workflow != "" {
		t.Fatal(ve)
	}
	// A request naming a task.request step, or no step of the workflow,
	// is held to it.
	if err := b.ValidateMessage(request("run_pipe", "plan", PayloadResearchQuery, query)); err != nil {
		t.Fatal(err)
	}
	if err := b.ValidateMessage(request("run_pipe", "nope", PayloadResearchQuery, query)); !errors.Is(err, ErrUnknownStep) {
		t.Fatal(err)
	}
	// Other messages naming a step of another type are not excused.
	res := message(PayloadResearchQuery, query)
	res.RunID, res.Meta = "run_pipe", map[string]any{MetaStep: "plan"}
	ve = validationErr(t, b.ValidateMessage(res))
	if ve.Step != "plan" || !hasViolation(ve, "/type", "expects.type") {
		t.Fatal(ve)
	}
}

func TestRegistryOf(t *testing.T) {
	reg := newRegistry(t, nil)
	b := NewBinder(reg)
	if b.Registry() != reg {
		t.Fatal("Binder.Registry is not the binder's registry")
	}
	var nilBinder *Binder
	for v, want := range map[any]*Registry{reg: reg, b: reg, nil: nil, "registry": nil, nilBinder: nil} {
		if got := RegistryOf(v); got != want {
			t.Errorf("RegistryOf(%T %v) = %p, want %p", v, v, got, want)
		}
	}
}

func TestValidationErrorDetails(t *testing.T) {
	ve := &ValidationError{PayloadType: PayloadResearchSummary, Violations: []Violation{
		{Path: "/payload/findings", Keyword: "required", Message: "findings is required"},
		{Path: "/payload/title", Keyword: "type", Message: "Invalid type."},
	}}
	want := map[string]any{"violations": []any{
		map[string]any{"path": "/payload/findings", "keyword": "required", "message": "findings is required"},
		map[string]any{"path": "/payload/title", "keyword": "type", "message": "Invalid type."},
	}}
	if got := ve.ErrorDetails(); !reflect.DeepEqual(got, want) {
		t.Fatalf("ErrorDetails() = %#v", got)
	}
}
