package schema_test

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/schema"
)

// Invoice is a payload type of the application, registered from Go.
type Invoice struct {
	Number string  `json:"number" jsonschema:"pattern=^INV-[0-9]+$"`
	Total  float64 `json:"total" jsonschema:"minimum=0"`
	Lines  []Line  `json:"lines"`
	Note   string  `json:"note,omitempty"` // omitempty: optional
}

// Line is nested in Invoice; its rules are enforced too.
type Line struct {
	SKU      string `json:"sku"`
	Quantity int    `json:"quantity" jsonschema:"minimum=1"`
}

func ExampleRegisterType() {
	reg, err := schema.New(nil)
	if err != nil {
		panic(err)
	}
	if err := schema.RegisterType[Invoice](reg, "billing.invoice.v1"); err != nil {
		panic(err)
	}
	s, _ := reg.Lookup("billing.invoice.v1")
	fmt.Println(s.Ref())

	good, _ := json.Marshal(Invoice{Number: "INV-7", Total: 12.5, Lines: []Line{{SKU: "A1", Quantity: 2}}})
	fmt.Println(reg.Validate("billing.invoice.v1", good))

	bad := []byte(`{"number":"7","total":-1,"lines":[{"sku":"A1","quantity":0}],"discount":5}`)
	var ve *schema.ValidationError
	if errors.As(reg.Validate("billing.invoice.v1", bad), &ve) {
		for _, v := range ve.Violations {
			fmt.Printf("%s %s\n", v.Path, v.Keyword)
		}
	}
	// Output:
	// schema://clutch/billing/invoice@1
	// <nil>
	// /discount additionalProperties
	// /lines/0/quantity minimum
	// /number pattern
	// /total minimum
}

func ExampleRegistry_Validate() {
	reg, err := schema.New(nil) // the built-in payload types of docs/protocol.md §3.3
	if err != nil {
		panic(err)
	}
	payload := []byte(`{"title":"Market analysis","findings":["fintech grows"],"citations":["https://example.com"]}`)
	fmt.Println(reg.Validate(schema.PayloadResearchSummary, payload))

	err = reg.Validate(schema.PayloadResearchSummary, []byte(`{"findings":"fintech grows"}`))
	fmt.Println(err)
	fmt.Println(errors.Is(err, schema.ErrValidation), protocol.CodeOf(err))

	err = reg.Validate("billing.invoice.v1", payload)
	fmt.Println(errors.Is(err, schema.ErrUnknownPayloadType))
	// Output:
	// <nil>
	// schema: research.summary.v1: 2 violations: /citations: required: citations is required; /findings: type: Invalid type. Expected: array, given: string
	// true VALIDATION
	// true
}

func ExampleRegistry_ValidateMessage() {
	reg, err := schema.New(nil)
	if err != nil {
		panic(err)
	}
	m := protocol.NewMessage(protocol.TypeTaskResult, "agent:ken")
	m.PayloadType = schema.PayloadResearchSummary
	m.SchemaRef = "schema://clutch/research/summary@1" // must agree with payload_type (§3.2)
	if err := m.SetPayload(schema.ResearchSummary{Findings: []string{"f"}, Citations: []string{"c"}}); err != nil {
		panic(err)
	}
	fmt.Println(reg.ValidateMessage(m))

	m.SchemaRef = "schema://clutch/research/summary@2"
	fmt.Println(errors.Is(reg.ValidateMessage(m), schema.ErrSchemaRefMismatch))
	// Output:
	// <nil>
	// true
}

func ExampleRegistry_LoadWorkflow() {
	reg, err := schema.New(nil)
	if err != nil {
		panic(err)
	}
	// The workflow of docs/protocol.md §3.4.
	wf, err := reg.LoadWorkflow([]byte(`
workflow: product-research
steps:
  - id: research
    expects:
      type: task.result
      payload_type: research.summary.v1
      required:
        - findings
        - citations
`))
	if err != nil {
		panic(err)
	}
	step, _ := wf.Step("research")
	fmt.Println(wf.Name, step.ID, step.Expects.Type, step.Expects.PayloadType, step.Expects.Required)

	// Problems come with their line, column and field.
	_, err = reg.LoadWorkflow([]byte(`
workflow: product-research
steps:
  - id: research
    expects:
      type: task.finished
      payload_type: research.summery.v1
`))
	var we *schema.WorkflowError
	if errors.As(err, &we) {
		for _, p := range we.Problems {
			fmt.Println(p)
		}
	}
	// Output:
	// product-research research task.result research.summary.v1 [findings citations]
	// line 6:13: steps[0].expects.type: unknown message type "task.finished": neither a docs/protocol.md §2 type nor x.<vendor>.<name>
	// line 7:21: steps[0].expects.payload_type: unknown payload type "research.summery.v1": no schema is registered for it
}

func ExampleBinder() {
	reg, err := schema.New(nil)
	if err != nil {
		panic(err)
	}
	wf, err := reg.LoadWorkflow([]byte(`
workflow: product-research
steps:
  - id: research
    expects: {type: task.result, payload_type: research.summary.v1, required: [findings, citations, title]}
`))
	if err != nil {
		panic(err)
	}
	binder := schema.NewBinder(reg)
	if err := binder.Bind("run_xyz", wf); err != nil { // when the run starts
		panic(err)
	}
	defer binder.Unbind("run_xyz") // when it ends

	m := protocol.NewMessage(protocol.TypeTaskResult, "agent:ken")
	m.RunID = "run_xyz"
	m.PayloadType = schema.PayloadResearchSummary
	m.Payload = []byte(`{"findings":["f"],"citations":["c"]}`) // valid for the schema, not for the step
	fmt.Println(binder.ValidateMessage(m))

	m.RunID = "run_other" // an unbound run: the registry alone
	fmt.Println(binder.ValidateMessage(m))
	// Output:
	// schema: workflow "product-research": step "research": research.summary.v1: 1 violation: /payload/title: expects.required: step "research" requires title
	// <nil>
}
