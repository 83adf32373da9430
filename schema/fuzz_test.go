package schema

import (
	"errors"
	"testing"
)

// FuzzLoadWorkflow: any input gives a workflow that passes CheckWorkflow, or
// a *WorkflowError / ErrTooLarge; never a panic.
func FuzzLoadWorkflow(f *testing.F) {
	f.Add([]byte(seedWorkflow))
	f.Add([]byte(pipeline))
	f.Add([]byte(`{"workflow": "w", "steps": [{"id": "a", "expects": {"type": "task.result", "payload_type": "code.output.v1", "required": ["/files/0"]}}]}`))
	f.Add([]byte("workflow: w\nsteps:\n  - id: a\n    expects: &r {type: task.result}\n  - id: b\n    expects: *r\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Add([]byte("workflow: [\n"))
	f.Add([]byte("--- \n...\n---\n"))
	f.Add([]byte("{\"workflow\":"))
	f.Add([]byte("<<: {workflow: w}\n"))
	f.Add([]byte("!!binary gIGC\n"))
	reg := newRegistry(f, nil)
	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := reg.LoadWorkflow(data)
		if err != nil {
			var we *WorkflowError
			if !errors.As(err, &we) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("unexpected error type %T: %v", err, err)
			}
			if we != nil && len(we.Problems) == 0 {
				t.Fatal("WorkflowError without problems")
			}
			_ = err.Error()
			return
		}
		if err := reg.CheckWorkflow(w); err != nil {
			t.Fatalf("loaded workflow fails CheckWorkflow: %v", err)
		}
	})
}

// FuzzValidatePayload: any payload is valid, a *ValidationError, or
// ErrInvalidJSON / ErrTooLarge; never a panic. The built-ins cover $ref,
// enum, minLength, minimum and additionalProperties.
func FuzzValidatePayload(f *testing.F) {
	for _, c := range builtinCases {
		f.Add(c.payloadType, []byte(c.valid))
		for _, w := range c.wrong {
			f.Add(c.payloadType, []byte(w.raw))
		}
	}
	f.Add(PayloadResearchSummary, []byte(`{"findings":[1e999999],"citations":[-0.0]}`))
	f.Add(PayloadResearchSummary, []byte(`{"findings":["\ud800"],"citations":[]} `))
	f.Add(PayloadCodeReview, []byte(`[[[[[[[[[[]]]]]]]]]]`))
	f.Add("test.tree.v1", []byte(`{"v":1,"kids":[{"v":2,"kids":[]}]}`))
	f.Add("unknown.type.v1", []byte(`{}`))
	for _, p := range []string{`{"findings":[],"citations":[],"findings":1}`, `{"\ud800":1}`, `{} x`, "\xef\xbb\xbf{}", `{"findings":[1e1001]}`, deepArray(600), deepTree(100)} {
		f.Add(PayloadResearchSummary, []byte(p))
		f.Add("test.tree.v1", []byte(p))
	}
	reg := newRegistry(f, &Options{MaxPayloadBytes: 1 << 16})
	tree := `{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer","multipleOf":3},"kids":{"type":"array","items":{"$ref":"#/$defs/node"},"uniqueItems":true}},"required":["v"],"patternProperties":{"^x-":{"type":"string","format":"uri"}}}},"$ref":"#/$defs/node"}`
	if err := reg.Register("test.tree.v1", []byte(tree)); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, payloadType string, payload []byte) {
		err := reg.Validate(payloadType, payload)
		if err == nil {
			return
		}
		var ve *ValidationError
		switch {
		case errors.As(err, &ve):
			if len(ve.Violations) == 0 {
				t.Fatal("no violations")
			}
		case errors.Is(err, ErrInvalidJSON), errors.Is(err, ErrTooLarge),
			errors.Is(err, ErrUnknownPayloadType), errors.Is(err, ErrInvalidPayloadType):
		default:
			t.Fatalf("unexpected error %T: %v", err, err)
		}
		_ = err.Error()
	})
}

// FuzzRegisterSchema: any schema document is registered or refused with an
// error; never a panic or a fatal stack overflow. A registered schema then
// validates a few payloads without crashing.
func FuzzRegisterSchema(f *testing.F) {
	for _, s := range []string{
		`{"type":"object","properties":{"a":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`,
		`{"$ref":"#"}`,
		`{"allOf":[{"$ref":"#/allOf/0"}]}`,
		`{"properties":{"a":{"$ref":"#"}}}`,
		`{"$ref":"#thing","$defs":{"t":{"$anchor":"thing"}}}`,
		`{"$id":"http://x/y.json","$ref":"#/definitions/a","definitions":{"a":{"$ref":"z.json"}}}`,
		`{"dependencies":{"a":{"$ref":"#/dependencies/a"}}}`,
		`{"items":[{"$ref":"#/items/0"}],"additionalItems":{"$ref":"#"}}`,
		`{"if":{"$ref":"#/then"},"then":{"$ref":"#/if"}}`,
		`{"not":{"not":{"$ref":"#/not"}}}`,
		`{"$ref":"#/","":{"type":"string"}}`,
		`{"$ref":"#/%61","a":{"$ref":"#"}}`,
		`{"$ref":"#/a~1b","a/b":{"$ref":"#/a~1b"}}`,
		`true`, `false`, `{"type":["string","null"],"enum":[null,"a"]}`,
		`{"$id":"#/definitions/a","definitions":{"a":{"type":"string"}},"allOf":[{"$ref":"#/definitions/a"}]}`,
		`{"x-foo":{"$id":"#/definitions/a","allOf":[{"$ref":"#/definitions/a"}]},"definitions":{"a":{"type":"string"}},"allOf":[{"$ref":"#/definitions/a"}]}`,
		`{"s":{"type":"string"},"x":{"id":"http://evil/","s":{"$ref":"#/s"}},"properties":{"p":{"$ref":"#/x/s"}}}`,
		`{"$defs":{"$id":"#/x"},"x":{"allOf":[{"$ref":"#/x"}]}}`,
		`{"enum":[{"$id":"#/e","allOf":[{"$ref":"#/enum/0"}]}],"$ref":"#/enum/0"}`,
	} {
		f.Add([]byte(s), []byte(`{"a":"x"}`))
	}
	f.Fuzz(func(t *testing.T, schemaDoc, payload []byte) {
		reg := newRegistry(t, &Options{NoBuiltins: true})
		if err := reg.Register("fuzz.schema.v1", schemaDoc); err != nil {
			var se *SchemaError
			if !errors.As(err, &se) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("unexpected error %T: %v", err, err)
			}
			return
		}
		for _, p := range [][]byte{payload, []byte(`{}`), []byte(`[]`), []byte(`"s"`), []byte(`null`), []byte(`{"a":{"a":[1,{"a":null}]}}`)} {
			err := reg.Validate("fuzz.schema.v1", p)
			var ve *ValidationError
			if err != nil && !errors.As(err, &ve) && !errors.Is(err, ErrInvalidJSON) && !errors.Is(err, ErrInternal) {
				t.Fatalf("unexpected error %T: %v", err, err)
			}
		}
	})
}
