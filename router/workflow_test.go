package router

import (
	"context"
	"errors"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/schema"
)

func TestWorkflowScopedValidation(t *testing.T) {
	sch, err := schema.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	binder := schema.NewBinder(sch)
	e := newEnv(t, &Options{Validator: binder, MaxAttempts: 1})
	// The §3.4 workflow, plus a step whose result must carry a title.
	wf, err := e.sch.LoadWorkflow([]byte(`
workflow: product-research
steps:
  - id: research
    expects:
      type: task.result
      payload_type: research.summary.v1
      required: [findings, citations]
  - id: headline
    expects:
      type: task.result
      payload_type: research.summary.v1
      required: [title]
`))
	if err != nil {
		t.Fatal(err)
	}
	untitled := &Result{PayloadType: "research.summary.v1", Payload: schema.ResearchSummary{Findings: []string{"f"}, Citations: []string{"c"}}}
	e.register(card("agent:a", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) { return untitled, nil })

	// Unbound run: the registry alone decides, and the result is valid.
	if _, err := e.wait(e.submit(e.request("skill:r"))); err != nil {
		t.Fatal(err)
	}
	// Bound run, step found by type and payload_type ("research"): valid.
	req := e.request("skill:r")
	if err := binder.Bind(req.RunID, wf); err != nil {
		t.Fatal(err)
	}
	if _, err := e.wait(e.submit(req)); err != nil {
		t.Fatal(err)
	}
	// Bound run, the request names the "headline" step: no title → VALIDATION.
	req = e.request("skill:r")
	req.Meta = map[string]any{protocol.MetaStep: "headline"}
	if err := binder.Bind(req.RunID, wf); err != nil {
		t.Fatal(err)
	}
	out, err := e.wait(e.submit(req))
	if !errors.Is(err, protocol.CodeValidation) {
		t.Fatalf("%+v %v", out, err)
	}
	if out.Err.Details["violations"] == nil {
		t.Fatalf("no violations in %+v", out.Err.Details)
	}
}
