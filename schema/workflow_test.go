package schema

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clutchprotocol/clutch/protocol"
)

// seedWorkflow is the example of docs/protocol.md §3.4, verbatim.
const seedWorkflow = `workflow: product-research
steps:
  - id: research
    expects:
      type: task.result
      payload_type: research.summary.v1
      required:
        - findings
        - citations
`

// pipeline is a three-step workflow used by the step and binder tests.
const pipeline = `workflow: ship-feature
steps:
  - id: plan
    expects:
      type: task.request
      payload_type: research.query.v1
  - id: research
    expects:
      type: task.result
      payload_type: research.summary.v1
      required: [findings, citations, title]
  - id: code
    expects:
      type: task.result
      payload_type: code.output.v1
      required: [/files/0/path]
  - id: review
    expects:
      type: task.result
      payload_type: review.feedback.v1
`

func TestLoadWorkflowSeed(t *testing.T) {
	reg := newRegistry(t, nil)
	want := &Workflow{Name: "product-research", Steps: []Step{{
		ID: "research",
		Expects: Expects{
			Type:        protocol.TypeTaskResult,
			PayloadType: PayloadResearchSummary,
			Required:    []string{"findings", "citations"},
		},
	}}}
	w, err := reg.LoadWorkflow([]byte(seedWorkflow))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, w); diff != "" {
		t.Fatalf("YAML (-want +got):\n%s", diff)
	}
	// The same workflow as JSON, tab-indented, and as YAML flow style.
	asJSON := "{\n\t\"workflow\": \"product-research\",\n\t\"steps\": [\n\t\t{\"id\": \"research\", \"expects\": {\"type\": \"task.result\", \"payload_type\": \"research.summary.v1\", \"required\": [\"findings\", \"citations\"]}}\n\t]\n}\n"
	flow := `{workflow: product-research, steps: [{id: research, expects: {type: task.result, payload_type: research.summary.v1, required: [findings, citations]}}]}`
	for name, doc := range map[string]string{"json": asJSON, "flow": flow, "bom": "\xef\xbb\xbf" + asJSON} {
		w, err := reg.LoadWorkflow([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if diff := cmp.Diff(want, w); diff != "" {
			t.Fatalf("%s (-want +got):\n%s", name, diff)
		}
	}
	if s, ok := w.Step("research"); !ok || s.Expects.PayloadType != PayloadResearchSummary {
		t.Fatal("Step(research)")
	}
	if _, ok := w.Step("nope"); ok {
		t.Fatal("Step(nope)")
	}
}

func TestLoadWorkflowErrors(t *testing.T) {
	reg := newRegistry(t, nil)
	type prob struct {
		line  int
		field string
		has   string
	}
	cases := []struct {
		name, doc string
		want      []prob
	}{
		{"unknown_payload_type", strings.Replace(seedWorkflow, "research.summary.v1", "research.summery.v1", 1),
			[]prob{{6, "steps[0].expects.payload_type", `unknown payload type "research.summery.v1"`}}},
		{"malformed_payload_type", strings.Replace(seedWorkflow, "research.summary.v1", "summary", 1),
			[]prob{{6, "steps[0].expects.payload_type", "not of the form"}}},
		{"bad_type", strings.Replace(seedWorkflow, "task.result", "task.done", 1),
			[]prob{{5, "steps[0].expects.type", `unknown message type "task.done"`}}},
		{"duplicate_step", pipeline + "  - id: research\n    expects: {type: task.result}\n",
			[]prob{{21, "steps[4].id", `duplicate step id "research"`}}},
		{"unknown_field_step", strings.Replace(seedWorkflow, "    expects:", "    agent: agent:ken\n    expects:", 1),
			[]prob{{4, "steps[0].agent", `unknown field "agent"`}}},
		{"unknown_field_top", "version: 2\n" + seedWorkflow,
			[]prob{{1, "version", `unknown field "version"`}}},
		{"unknown_field_expects", strings.Replace(seedWorkflow, "      type:", "      domain: research\n      type:", 1),
			[]prob{{5, "steps[0].expects.domain", `unknown field "domain"`}}},
		{"missing_name", strings.Replace(seedWorkflow, "workflow: product-research\n", "", 1),
			[]prob{{1, "workflow", "needs a name"}}},
		{"missing_steps", "workflow: w\n", []prob{{1, "steps", "at least one step"}}},
		{"empty_steps", "workflow: w\nsteps: []\n", []prob{{2, "steps", "at least one step"}}},
		{"missing_id", "workflow: w\nsteps:\n  - expects: {type: task.result}\n", []prob{{3, "steps[0].id", "needs an id"}}},
		{"missing_expects", "workflow: w\nsteps:\n  - id: a\n", []prob{{3, "steps[0].expects", `missing field "expects"`}}},
		{"missing_type", "workflow: w\nsteps:\n  - id: a\n    expects: {payload_type: code.output.v1}\n", []prob{{4, "steps[0].expects.type", "expects.type is required"}}},
		{"id_not_string", "workflow: w\nsteps:\n  - id: 7\n    expects: {type: task.result}\n", []prob{{3, "steps[0].id", "must be a string, got int"}}},
		{"steps_not_list", "workflow: w\nsteps: {id: a}\n", []prob{{2, "steps", "must be a list, got a mapping"}}},
		{"step_not_mapping", "workflow: w\nsteps: [a]\n", []prob{{2, "steps[0]", "must be a mapping"}}},
		{"required_not_list", strings.Replace(seedWorkflow, "      required:\n        - findings\n        - citations\n", "      required: findings\n", 1),
			[]prob{{7, "steps[0].expects.required", "must be a list"}}},
		{"required_not_in_schema", strings.Replace(seedWorkflow, "- citations", "- sources", 1),
			[]prob{{9, "steps[0].expects.required[1]", `no member "sources"`}}},
		{"required_duplicate", strings.Replace(seedWorkflow, "- citations", "- findings", 1),
			[]prob{{9, "steps[0].expects.required[1]", "listed twice"}}},
		{"required_bad_pointer", strings.Replace(seedWorkflow, "- citations", "- /citations~2", 1),
			[]prob{{9, "steps[0].expects.required[1]", "not a valid JSON pointer"}}},
		{"required_empty", strings.Replace(seedWorkflow, "- citations", `- ""`, 1),
			[]prob{{9, "steps[0].expects.required[1]", "needs a name"}}},
		{"duplicate_key", "workflow: a\nworkflow: b\nsteps: [{id: s, expects: {type: task.result}}]\n",
			[]prob{{2, "workflow", `duplicate key "workflow"`}}},
		{"not_a_mapping", "- workflow: a\n", []prob{{1, "", "must be a mapping, got a list"}}},
		{"scalar", "hello\n", []prob{{1, "", "must be a mapping"}}},
		{"empty", "", []prob{{0, "", "empty document"}}},
		{"two_documents", seedWorkflow + "---\n" + seedWorkflow, []prob{{10, "", "one YAML document"}}},
		{"yaml_syntax", "workflow: w\nsteps:\n  - id: a\n    expects: \"x\n", []prob{{4, "", "invalid YAML"}}},
		{"yaml_tab", "workflow: w\nsteps:\n\t- id: a\n", []prob{{3, "", "invalid YAML"}}},
		{"json_syntax", "{\n  \"workflow\": \"w\",\n  \"steps\": [\n    {\"id\": \"a\" \"expects\": {}}\n  ]\n}\n", []prob{{4, "", "invalid JSON"}}},
		{"json_truncated", "{\"workflow\": \"w\",\n \"steps\": [", []prob{{2, "", "invalid JSON"}}},
		{"json_number", `{"workflow": 5, "steps": [{"id": "a", "expects": {"type": "task.result"}}]}`, []prob{{1, "workflow", "must be a string"}}},
		{"json_unknown_field", `{"workflow": "w", "steps": [{"id": "a", "expects": {"type": "task.result"}, "retries": 3}]}`, []prob{{1, "steps[0].retries", `unknown field "retries"`}}},
		{"several", "workflow: w\nsteps:\n  - id: a\n    expects: {type: bogus}\n  - id: a\n    expects: {type: task.result, payload_type: x.y.v1}\n",
			[]prob{{4, "steps[0].expects.type", "unknown message type"}, {5, "steps[1].id", "duplicate step id"}, {6, "steps[1].expects.payload_type", "unknown payload type"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, err := reg.LoadWorkflow([]byte(c.doc))
			if w != nil {
				t.Fatalf("got a workflow: %+v", w)
			}
			var we *WorkflowError
			if !errors.As(err, &we) || !errors.Is(err, ErrInvalidWorkflow) || protocol.CodeOf(err) != protocol.CodeInvalidField {
				t.Fatalf("want *WorkflowError, got %T %v", err, err)
			}
			if len(we.Problems) != len(c.want) {
				t.Fatalf("got %d problems, want %d: %v", len(we.Problems), len(c.want), err)
			}
			for i, w := range c.want {
				p := we.Problems[i]
				if p.Line != w.line || p.Field != w.field || !strings.Contains(p.Detail, w.has) {
					t.Errorf("problem %d: got line %d field %q %q; want line %d field %q containing %q", i, p.Line, p.Field, p.Detail, w.line, w.field, w.has)
				}
			}
			if c.want[0].line > 0 && !strings.Contains(err.Error(), "line ") {
				t.Errorf("Error() lacks the line: %v", err)
			}
		})
	}

	big := "workflow: w\n# " + strings.Repeat("x", MaxWorkflowBytes) + "\n"
	if _, err := reg.LoadWorkflow([]byte(big)); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("big: %v", err)
	}
}

func TestLoadWorkflowAliases(t *testing.T) {
	reg := newRegistry(t, nil)
	doc := "workflow: w\nsteps:\n  - id: a\n    expects: &r {type: task.result, payload_type: research.summary.v1}\n  - id: b\n    expects: *r\n"
	w, err := reg.LoadWorkflow([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Steps) != 2 || !cmp.Equal(w.Steps[1].Expects, w.Steps[0].Expects) || w.Steps[1].Expects.PayloadType != PayloadResearchSummary {
		t.Fatalf("%+v", w)
	}
}

func TestCheckWorkflow(t *testing.T) {
	reg := newRegistry(t, nil)
	ok := &Workflow{Name: "w", Steps: []Step{{ID: "a", Expects: Expects{Type: protocol.TypeTaskResult, PayloadType: PayloadCodeOutput, Required: []string{"files"}}}}}
	if err := reg.CheckWorkflow(ok); err != nil {
		t.Fatal(err)
	}
	bad := &Workflow{Steps: []Step{{ID: "a"}, {ID: "a", Expects: Expects{Type: "x.acme.done", PayloadType: "acme.thing.v1"}}}}
	err := reg.CheckWorkflow(bad)
	var we *WorkflowError
	if !errors.As(err, &we) {
		t.Fatalf("got %v", err)
	}
	var fields []string
	for _, p := range we.Problems {
		if p.Line != 0 {
			t.Errorf("a Go workflow has no lines: %+v", p)
		}
		fields = append(fields, p.Field)
	}
	want := []string{"workflow", "steps[0].expects.type", "steps[1].id", "steps[1].expects.payload_type"}
	if diff := cmp.Diff(want, fields); diff != "" {
		t.Fatalf("fields (-want +got):\n%s", diff)
	}
	if err := reg.CheckWorkflow(nil); !errors.Is(err, ErrInvalidWorkflow) {
		t.Fatal(err)
	}
	// Workflows are not permissive, even in a permissive registry.
	lax := newRegistry(t, &Options{Permissive: true})
	if err := lax.CheckWorkflow(bad); !errors.Is(err, ErrInvalidWorkflow) {
		t.Fatal(err)
	}
}

func loadPipeline(t *testing.T, reg *Registry) *Workflow {
	t.Helper()
	w, err := reg.LoadWorkflow([]byte(pipeline))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestValidateStep(t *testing.T) {
	reg := newRegistry(t, nil)
	w := loadPipeline(t, reg)
	const summary = `{"title":"t","findings":["f"],"citations":["c"]}`
	if err := w.ValidateStep("research", message(PayloadResearchSummary, summary), reg); err != nil {
		t.Fatal(err)
	}
	code := `{"files":[{"path":"main.go"}],"language":"go","tests_passed":true}`
	if err := w.ValidateStep("code", message(PayloadCodeOutput, code), reg); err != nil {
		t.Fatal(err)
	}

	type viol struct{ path, keyword string }
	cases := []struct {
		name, step string
		m          *protocol.Message
		want       []viol
	}{
		{"required_by_step", "research", message(PayloadResearchSummary, `{"findings":["f"],"citations":["c"]}`),
			[]viol{{"/payload/title", "expects.required"}}},
		{"required_and_schema", "research", message(PayloadResearchSummary, `{"findings":"f","title":"t"}`),
			[]viol{{"/payload/citations", "expects.required"}, {"/payload/citations", "required"}, {"/payload/findings", "type"}}},
		{"required_pointer", "code", message(PayloadCodeOutput, `{"files":[],"language":"go","tests_passed":false}`),
			[]viol{{"/payload/files/0/path", "expects.required"}}},
		{"wrong_type", "research", func() *protocol.Message {
			m := message(PayloadResearchSummary, summary)
			m.Type = protocol.TypeTaskProgress
			return m
		}(), []viol{{"/type", "expects.type"}}},
		{"wrong_payload_type", "research", message(PayloadCodeOutput, code),
			[]viol{{"/payload_type", "expects.payload_type"}}},
		{"no_payload_type", "review", message("", `{}`),
			[]viol{{"/payload_type", "expects.payload_type"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ve := validationErr(t, w.ValidateStep(c.step, c.m, reg))
			var got []viol
			for _, v := range ve.Violations {
				got = append(got, viol{v.Path, v.Keyword})
			}
			if diff := cmp.Diff(c.want, got, cmp.AllowUnexported(viol{})); diff != "" {
				t.Fatalf("(-want +got):\n%s\n%v", diff, ve)
			}
			if ve.Workflow != "ship-feature" || ve.Step != c.step {
				t.Fatalf("workflow %q step %q", ve.Workflow, ve.Step)
			}
			if !contains(ve.Error(), `workflow "ship-feature"`, `step "`+c.step+`"`) {
				t.Fatal(ve.Error())
			}
		})
	}

	if err := w.ValidateStep("deploy", message(PayloadResearchSummary, summary), reg); !errors.Is(err, ErrUnknownStep) || protocol.CodeOf(err) != protocol.CodeNotFound {
		t.Fatalf("unknown step: %v", err)
	}
	m := message(PayloadResearchSummary, summary)
	m.SchemaRef = "schema://clutch/research/summary@9"
	if err := w.ValidateStep("research", m, reg); !errors.Is(err, ErrSchemaRefMismatch) {
		t.Fatalf("schema_ref: %v", err)
	}
	if err := w.ValidateStep("research", message(PayloadResearchSummary, `{`), reg); !errors.Is(err, ErrInvalidJSON) {
		t.Fatalf("bad JSON: %v", err)
	}
	if err := w.ValidateStep("research", nil, reg); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("nil message: %v", err)
	}
}

func TestStepFor(t *testing.T) {
	reg := newRegistry(t, nil)
	w := loadPipeline(t, reg)
	withMeta := func(m *protocol.Message, step any) *protocol.Message {
		m.Meta = map[string]any{MetaStep: step}
		return m
	}
	cases := []struct {
		name   string
		m      *protocol.Message
		step   string
		ok     bool
		errIs  error
		errHas string
	}{
		{"by_type_and_payload_type", message(PayloadCodeOutput, `{}`), "code", true, nil, ""},
		{"by_type_other", message(PayloadReviewFeedback, `{}`), "review", true, nil, ""},
		{"request", func() *protocol.Message {
			m := message(PayloadResearchQuery, `{}`)
			m.Type = protocol.TypeTaskRequest
			return m
		}(), "plan", true, nil, ""},
		{"uncovered_type", func() *protocol.Message {
			m := message("", `{}`)
			m.Type = protocol.TypeTaskAccept
			return m
		}(), "", false, nil, ""},
		{"by_meta", withMeta(message(PayloadCodeOutput, `{}`), "research"), "research", true, nil, ""},
		{"meta_unknown", withMeta(message(PayloadCodeOutput, `{}`), "deploy"), "", false, ErrUnknownStep, `no step "deploy"`},
		{"meta_not_string", withMeta(message(PayloadCodeOutput, `{}`), 3), "", false, ErrUnknownStep, "must be a string"},
		{"exhaustive", message(PayloadCodeReview, `{}`), "", false, ErrValidation, "research.summary.v1 (step research) or code.output.v1 (step code) or review.feedback.v1 (step review); got code.review.v1"},
		{"exhaustive_none", message("", `{}`), "", false, ErrValidation, "got none"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, ok, err := w.StepFor(c.m)
			if c.errIs != nil {
				if !errors.Is(err, c.errIs) || !strings.Contains(err.Error(), c.errHas) {
					t.Fatalf("got %v", err)
				}
				return
			}
			if err != nil || ok != c.ok || s.ID != c.step {
				t.Fatalf("got %q %v %v", s.ID, ok, err)
			}
		})
	}
	// An expects without payload_type accepts any.
	any := &Workflow{Name: "w", Steps: []Step{{ID: "s", Expects: Expects{Type: protocol.TypeTaskResult}}}}
	if s, ok, err := any.StepFor(message(PayloadCodeReview, `{}`)); err != nil || !ok || s.ID != "s" {
		t.Fatal(s, ok, err)
	}
	if _, _, err := w.StepFor(nil); !errors.Is(err, ErrInvalidOptions) {
		t.Fatal(err)
	}
}
