package schema

import (
	"errors"
	"fmt"
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
	if err := b.Validate(inRun(message(PayloadResearchSummary, noTitle))); err != nil {
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
	if err := b.Validate(inRun(message(PayloadResearchSummary, goodSummary))); err != nil {
		t.Fatal(err)
	}
	ve := validationErr(t, b.Validate(inRun(message(PayloadResearchSummary, noTitle))))
	if ve.Step != "research" || !hasViolation(ve, "/payload/title", "expects.required") {
		t.Fatal(ve)
	}
	// A task.result of a contract the workflow does not list.
	ve = validationErr(t, b.Validate(inRun(message(PayloadCodeReview, `{"findings":[],"severity":"low"}`))))
	if !hasViolation(ve, "/payload_type", "expects.payload_type") {
		t.Fatal(ve)
	}
	// A type the workflow does not cover: the registry alone.
	accept := inRun(message("", `{}`))
	accept.Type = protocol.TypeTaskAccept
	if err := b.Validate(accept); err != nil {
		t.Fatal(err)
	}
	progress := inRun(message(PayloadResearchSummary, `{"findings":1}`))
	progress.Type = protocol.TypeTaskProgress
	validationErr(t, b.Validate(progress))
	// meta.step picks the step.
	m := inRun(message(PayloadResearchSummary, goodSummary))
	m.Meta = map[string]any{MetaStep: "code"}
	ve = validationErr(t, b.Validate(m))
	if ve.Step != "code" || !hasViolation(ve, "/payload_type", "expects.payload_type") {
		t.Fatal(ve)
	}
	m.Meta[MetaStep] = "nope"
	if err := b.Validate(m); !errors.Is(err, ErrUnknownStep) {
		t.Fatal(err)
	}
	// Other runs are unaffected.
	other := message(PayloadResearchSummary, noTitle)
	other.RunID = "run_02"
	if err := b.Validate(other); err != nil {
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
	if err := b.Validate(inRun(message(PayloadResearchSummary, noTitle))); err != nil {
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
	if err := b.Validate(nil); !errors.Is(err, ErrInvalidOptions) {
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
				if err := b.Validate(m); !errors.Is(err, ErrValidation) { // title is required by the step
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
