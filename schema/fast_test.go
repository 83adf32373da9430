package schema

import (
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/xeipuuv/gojsonschema"
)

const (
	V = fastValid
	I = fastInvalid
	B = fastBail
)

// fastTable holds, for each keyword, a schema and payloads with the fast
// path's expected verdict. V and I cases must be decided by the fast path
// (a silent bail fails the test); the public result must be the slow
// path's in every case, and valid exactly for V.
var fastTable = []struct {
	name, schema string
	cases        []fastCase
}{
	{"type_integer", `{"type":"integer"}`, []fastCase{
		{`1`, V}, {`-0`, V}, {`1.0`, V}, {`1e2`, V}, {`1.5e1`, V}, {`10.000`, V}, {`0.0`, V},
		{`1.5`, I}, {`1e-1`, I}, {`"1"`, I}, {`null`, I}, {`true`, I}, {`[]`, I}, {`{}`, I},
	}},
	{"type_list", `{"type":["string","null","boolean"]}`, []fastCase{
		{`"x"`, V}, {`null`, V}, {`false`, V}, {`0`, I}, {`[]`, I}, {`{}`, I},
	}},
	{"type_number", `{"type":"number"}`, []fastCase{{`1`, V}, {`-1.5e-3`, V}, {`"1"`, I}}},
	{"type_object_array", `{"type":["object","array"]}`, []fastCase{{`{}`, V}, {`[1,{"a":[]}]`, V}, {`""`, I}}},
	{"true", `true`, []fastCase{{`{"a":[1,"x",null]}`, V}, {`1`, V}}},
	{"false", `false`, []fastCase{{`{}`, I}, {`1`, I}}},
	{"annotations_only", `{"title":"t","description":"d","default":{"x":1},"examples":[1],"$comment":"c","deprecated":true}`, []fastCase{{`[1]`, V}}},

	{"properties", `{"properties":{"a":{"type":"string"},"b":{"type":"integer"}}}`, []fastCase{
		{`{}`, V}, {`{"a":"x","b":1,"c":[]}`, V}, {`[1]`, V}, {`"s"`, V},
		{`{"a":1}`, I}, {`{"b":"x","a":"y"}`, I}, {`{"a":"x","a":"y"}`, B}, {`{"a":1,"a":"y"}`, B}, {`{"a":1,"c":2,"a":"y"}`, B},
		{`{"\u0061":"x"}`, V}, {`{"\u0061":1}`, I}, {`{"a":"x","\u0061":"y"}`, B}, {`{"\ud800":1}`, B}, {`{"c\n":1,"c\u000a":2}`, B}, {`{"c\n":1,"c\u000b":2}`, V},
	}},
	{"required", `{"required":["a","z"],"properties":{"a":true}}`, []fastCase{
		{`{"a":1,"z":2}`, V}, {`{"z":null,"a":{}}`, V}, {`{"a":1}`, I}, {`{}`, I}, {`[]`, V},
	}},
	{"additionalProperties_false", `{"properties":{"a":{"type":"string"}},"additionalProperties":false}`, []fastCase{
		{`{"a":"x"}`, V}, {`{}`, V}, {`{"b":1}`, I}, {`{"a":"x","b":1}`, I},
	}},
	{"additionalProperties_schema", `{"properties":{"a":true},"additionalProperties":{"type":"integer","minimum":0}}`, []fastCase{
		{`{"a":"x","b":1,"c":2}`, V}, {`{"b":-1}`, I}, {`{"b":"1"}`, I}, {`{"b":1,"b":2}`, B},
		{`{"b\u0026":1,"b&":2}`, B}, {`{"b\u0026":1,"b\u0026c":2,"\u00e9":3,"é\"":4}`, V},
	}},
	{"additionalProperties_many", `{"additionalProperties":{"type":"integer"}}`, []fastCase{
		{manyMembers(40, ""), V}, {manyMembers(40, `,"k7":1`), B}, {manyMembers(40, `,"k\u0037":1`), B}, {manyMembers(40, `,"x":"s"`), I},
	}},
	{"min_max_properties", `{"minProperties":1,"maxProperties":2}`, []fastCase{
		{`{"a":1}`, V}, {`{"a":1,"b":2}`, V}, {`{}`, I}, {`{"a":1,"b":2,"c":3}`, I}, {`{"a":1,"a":2}`, B},
	}},
	{"many_properties", `{"properties":{"p0":{"type":"integer"},"p1":{"type":"integer"},"p2":{"type":"integer"},"p3":{"type":"integer"},"p4":{"type":"integer"},"p5":{"type":"integer"},"p6":{"type":"integer"},"p7":{"type":"integer"},"p8":{"type":"integer"},"p9":{"type":"integer"}},"required":["p0","p9","q"]}`, []fastCase{
		{`{"p0":1,"p9":2,"q":"x"}`, V}, {`{"p0":1,"p9":2}`, I}, {`{"p0":1,"p9":2,"q":"x","p5":"y"}`, I},
	}},

	{"items", `{"items":{"type":"string"}}`, []fastCase{
		{`[]`, V}, {`["a","b"]`, V}, {`{}`, V}, {`["a",1]`, I}, {`[null]`, I},
	}},
	{"items_false", `{"items":false}`, []fastCase{{`[]`, V}, {`[1]`, I}}},
	{"min_max_items", `{"minItems":1,"maxItems":2}`, []fastCase{{`[1]`, V}, {`[1,[2,3]]`, V}, {`[]`, I}, {`[1,2,3]`, I}, {`"abc"`, V}}},
	{"uniqueItems_false", `{"uniqueItems":false}`, []fastCase{{`[1,1]`, V}}},

	{"min_max_length", `{"minLength":2,"maxLength":3}`, []fastCase{
		{`"ab"`, V}, {`"abc"`, V}, {`"éé"`, V}, {`"😀😀😀"`, V}, {`"\u00e9\u00e9"`, V}, {`"\ud83d\ude00\ud83d\ude00"`, V}, {`"a\nb"`, V}, {`1`, V},
		{`"a"`, I}, {`"abcd"`, I}, {`"é"`, I}, {`"\u00e9"`, I}, {`"😀😀😀😀"`, I}, {`""`, I},
		{`"\ud800x"`, B}, {"\"\xff\xfe\"", B},
	}},
	{"pattern", `{"pattern":"^a+\\d?$"}`, []fastCase{{`"aa"`, V}, {`"a1"`, V}, {`"\u0061"`, V}, {`"ab"`, I}, {`""`, I}, {`3`, V}}},
	{"pattern_unicode", `{"pattern":"^\\p{Greek}{2}$"}`, []fastCase{{`"αβ"`, V}, {`"\u03b1\u03b2"`, V}, {`"ab"`, I}}},
	{"format_email", `{"format":"email"}`, []fastCase{{`"a@b.c"`, V}, {`"nope"`, I}, {`true`, V}, {`{}`, V}, {`1`, I}}},
	{"format_date_time", `{"format":"date-time"}`, []fastCase{{`"2026-01-02T03:04:05Z"`, V}, {`"2026-13-02"`, I}}},
	{"format_unknown", `{"format":"made-up"}`, []fastCase{{`"anything"`, V}, {`1`, V}}},
	{"format_ipv4", `{"format":"ipv4"}`, []fastCase{{`"127.0.0.1"`, V}, {`"::1"`, I}}},

	{"minimum_maximum", `{"minimum":0,"maximum":10}`, []fastCase{
		{`0`, V}, {`-0`, V}, {`10`, V}, {`1e1`, V}, {`10.0000`, V}, {`5.5`, V}, {`"x"`, V},
		{`-1e-9`, I}, {`10.000000000000000000001`, I}, {`1e2`, I},
	}},
	{"exclusive_numbers", `{"exclusiveMinimum":0,"exclusiveMaximum":1}`, []fastCase{{`0.5`, V}, {`1e-300`, V}, {`0`, I}, {`1`, I}, {`-0.0`, I}}},
	{"exclusive_bool", `{"minimum":1.5,"exclusiveMinimum":true,"maximum":2,"exclusiveMaximum":false}`, []fastCase{{`1.6`, V}, {`2`, V}, {`1.5`, I}, {`2.0000001`, I}}},
	{"big_bounds", `{"maximum":9007199254740993}`, []fastCase{{`9007199254740993`, V}, {`9007199254740994`, I}, {`9007199254740993.0000001`, I}}},
	{"multipleOf", `{"multipleOf":0.01}`, []fastCase{{`0.07`, V}, {`100`, V}, {`-3.14`, V}, {`0`, V}, {`1e-2`, V}, {`0.001`, I}, {`3.14159`, I}}},
	{"multipleOf_int", `{"multipleOf":3}`, []fastCase{{`9`, V}, {`-27`, V}, {`3e5`, V}, {`10`, I}, {`1.5`, I}}},
	{"multipleOf_huge", `{"multipleOf":123456789012345678}`, []fastCase{{`0`, V}, {`1`, B}}},
	{"numbers_out_of_range", `{"type":"number"}`, []fastCase{
		{`1e307`, V}, {`1e-400`, V}, {`-1.7976931348623157e308`, V}, {`1.7976931348623158e308`, B}, {`2e308`, B}, {`1e400`, B}, {`1e1000`, B}, {`1e1001`, B}, {strings.Repeat("1", 257), B},
	}},

	{"enum_scalars", `{"enum":[1,"a",null,true,-0.0]}`, []fastCase{
		{`1`, V}, {`1.0`, V}, {`1e0`, V}, {`"a"`, V}, {`"\u0061"`, V}, {`null`, V}, {`true`, V}, {`-0`, V},
		{`0`, I}, {`false`, I}, {`"b"`, I}, {`"1"`, I}, {`2`, I}, {`{}`, I}, {`[1]`, I},
	}},
	{"enum_composite", `{"enum":[{"a":1},[1],"x"]}`, []fastCase{{`"x"`, V}, {`"y"`, I}, {`1`, I}, {`{"a":1}`, B}, {`[1]`, B}}},
	{"enum_float_precision", `{"enum":[9007199254740993]}`, []fastCase{{`9007199254740992`, V}, {`9007199254740993`, V}, {`9007199254740994`, I}}},
	{"enum_escapes", `{"enum":["a\"b","<&>","\u2028","\t"]}`, []fastCase{{`"a\"b"`, V}, {`"\u003c&>"`, V}, {`"\u2028"`, V}, {"\"\u2028\"", V}, {`"\t"`, V}, {`"<&"`, I}}},
	{"const", `{"const":"é"}`, []fastCase{{`"é"`, V}, {`"\u00e9"`, V}, {`"e"`, I}, {`null`, I}}},
	{"const_number", `{"const":100}`, []fastCase{{`1e2`, V}, {`100.0`, V}, {`101`, I}}},
	{"const_object", `{"const":{"a":1}}`, []fastCase{{`1`, I}, {`{"a":1}`, B}}},
	{"enum_empty", `{"enum":[]}`, []fastCase{{`{"x":1}`, V}}},

	{"allOf", `{"allOf":[{"type":"integer"},{"minimum":2}]}`, []fastCase{{`2`, V}, {`1`, I}, {`2.5`, I}}},
	{"anyOf", `{"anyOf":[{"type":"string","maxLength":1},{"type":"integer"}]}`, []fastCase{{`"a"`, V}, {`7`, V}, {`"ab"`, I}, {`1.5`, I}}},
	{"oneOf", `{"oneOf":[{"type":"integer"},{"type":"number","maximum":3}]}`, []fastCase{{`5`, V}, {`2.5`, V}, {`2`, I}, {`"x"`, I}}},
	{"not", `{"not":{"type":"object","properties":{"a":{"type":"string"}}}}`, []fastCase{
		{`{"a":1}`, V}, {`1`, V}, {`{"a":"x"}`, I}, {`{}`, I}, {`{"a":1,"a":"x"}`, B},
	}},
	{"not_required", `{"not":{"required":["a"]}}`, []fastCase{{`{"b":1}`, V}, {`{"a":1}`, I}, {`{"a":1,"a":2}`, B}}},
	{"union", `{"oneOf":[{"properties":{"kind":{"const":"a"},"n":{"type":"integer"}},"required":["kind","n"]},{"properties":{"kind":{"const":"b"},"s":{"type":"string"}},"required":["kind","s"]}]}`, []fastCase{
		{`{"kind":"a","n":1}`, V}, {`{"kind":"b","s":"x"}`, V}, {`{"kind":"a","s":"x"}`, I}, {`{"kind":"c"}`, I},
	}},

	{"ref_defs", `{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"],"additionalProperties":false}},"$ref":"#/$defs/node"}`, []fastCase{
		{`{"v":1,"kids":[{"v":2,"kids":[{"v":3}]}]}`, V}, {`{"v":1,"kids":[{"v":"2"}]}`, I}, {`{"v":1,"kids":[{}]}`, I}, {deepTree(600), B},
	}},
	{"ref_siblings", `{"definitions":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/s","minLength":3}}}`, []fastCase{{`{"a":"abc"}`, V}, {`{"a":"ab"}`, I}, {`{"a":1}`, I}}},
	{"ref_siblings_draft7", `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/s","minLength":3}}}`, []fastCase{{`{"a":"ab"}`, V}, {`{"a":1}`, I}}},
	{"ref_root", `{"properties":{"next":{"$ref":"#"},"v":{"type":"boolean"}},"type":["object","null"]}`, []fastCase{{`{"next":{"next":null,"v":true}}`, V}, {`{"next":{"v":1}}`, I}}},
	{"ref_escaped", `{"$ref":"#/definitions/a~1b","definitions":{"a/b":{"type":"integer"}}}`, []fastCase{{`1`, V}, {`"1"`, I}}},

	{"syntax", `{"type":"object"}`, []fastCase{
		{` {} `, V}, {"\t{\n}\r\n", V},
		{``, B}, {`   `, B}, {`{} x`, B}, {`{}{}`, B}, {`{`, B}, {`{"a"}`, B}, {`{"a":}`, B}, {`{"a":1,}`, B}, {`{,}`, B},
		{`{"a":01}`, B}, {`{"a":1.}`, B}, {`{"a":.5}`, B}, {`{"a":+1}`, B}, {`{"a":-}`, B}, {`{"a":1e}`, B}, {`{"a":tru}`, B},
		{`{"a":"\x"}`, B}, {`{"a":"\u12"}`, B}, {"{\"a\":\"\x01\"}", B}, {`{"a":[1,]}`, B}, {`{"a":'x'}`, B}, {"\xef\xbb\xbf{}", B},
		{deepArray(600), B},
	}},
}

type fastCase struct {
	payload string
	want    verdict
}

func manyMembers(n int, extra string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"k%d":%d`, i, i)
	}
	b.WriteString(extra)
	b.WriteByte('}')
	return b.String()
}

func deepTree(n int) string {
	return strings.Repeat(`{"v":1,"kids":[`, n) + `{"v":0}` + strings.Repeat(`]}`, n)
}

func deepArray(n int) string {
	return `{"a":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`
}

func TestFastPathKeywords(t *testing.T) {
	reg := newRegistry(t, &Options{NoBuiltins: true})
	for i, c := range fastTable {
		pt := fmt.Sprintf("fast.table%d.v1", i)
		if err := reg.Register(pt, []byte(c.schema)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		s, _ := reg.Lookup(pt)
		t.Run(c.name, func(t *testing.T) {
			if s.fast == nil {
				t.Fatalf("no fast path for %s", c.schema)
			}
			for _, fc := range c.cases {
				got := checkFast(t, reg, s, []byte(fc.payload))
				if got != fc.want {
					t.Errorf("%.60q: fast path says %v, want %v", fc.payload, got, fc.want)
				}
				err := reg.Validate(pt, []byte(fc.payload))
				switch fc.want {
				case V:
					if err != nil {
						t.Errorf("%.60q: %v", fc.payload, err)
					}
				case I:
					validationErr(t, err)
				}
			}
		})
	}
}

// Every built-in payload type has a fast path, which decides its valid
// payloads and the wrong ones of builtinCases without the slow path.
func TestFastPathBuiltins(t *testing.T) {
	reg := newRegistry(t, nil)
	for _, pt := range Builtins() {
		if s, _ := reg.Lookup(pt); s.fast == nil {
			t.Errorf("%s has no fast path", pt)
		}
	}
	for _, c := range builtinCases {
		s, _ := reg.Lookup(c.payloadType)
		if s.fast == nil {
			continue
		}
		if v := checkFast(t, reg, s, []byte(c.valid)); v != fastValid {
			t.Errorf("%s: valid payload: fast path says %v", c.payloadType, v)
		}
		for _, f := range c.required {
			p := without(t, c.valid, f)
			if v := checkFast(t, reg, s, []byte(p)); v != fastInvalid {
				t.Errorf("%s: %s: fast path says %v", c.payloadType, p, v)
			}
		}
		for _, w := range c.wrong {
			p := with(t, c.valid, w.member, w.raw)
			if v := checkFast(t, reg, s, []byte(p)); v != fastInvalid {
				t.Errorf("%s: %s: fast path says %v", c.payloadType, p, v)
			}
		}
	}
	s, _ := reg.Lookup(PayloadResearchSummary)
	if v := checkFast(t, reg, s, benchSummary); v != fastValid {
		t.Errorf("benchSummary: fast path says %v", v)
	}
	// What the built-in types encode goes through the fast path.
	for _, v := range []struct {
		pt string
		v  any
	}{
		{PayloadResearchSummary, ResearchSummary{Title: "t \"q\" <b>", Findings: []string{"a\\b", "\x01é"}}},
		{PayloadResearchSources, ResearchSources{Sources: []Source{{URL: "u", Excerpt: "e"}}, RelevanceScores: map[string]float64{"u": 0.25, "v": 1e-7}}},
		{PayloadCodeOutput, CodeOutput{Files: []File{{Path: "main.go", Content: "package main\n\nfunc main() {}\n"}}, Language: "go"}},
		{PayloadCodeReview, CodeReview{Findings: []ReviewFinding{{Message: "m", Line: 3, Severity: SeverityHigh}}, Severity: SeverityHigh}},
		{PayloadReviewFeedback, ReviewFeedback{Decision: DecisionReject, Comments: "no"}},
		{PayloadResearchQuery, ResearchQuery{Query: "q", MaxSources: 3}},
	} {
		s, _ := reg.Lookup(v.pt)
		p := mustJSON(t, v.v)
		if got := checkFast(t, reg, s, p); got != fastValid {
			t.Errorf("%s: %s: fast path says %v", v.pt, p, got)
		}
	}
}

// An invalid payload gets the slow path's error, violation for violation.
func TestFastPathErrorsAreTheSlowPaths(t *testing.T) {
	reg := newRegistry(t, nil)
	s, _ := reg.Lookup(PayloadCodeReview)
	for _, p := range []string{
		`{"findings":[{"message":"","line":0,"severity":"fatal","x":1}],"severity":3}`,
		`{"findings":"none"}`,
		`[]`,
		`{"findings":[],"severity":"low"} trailing`,
		`{"findings":[],"severity":"low","findings":[1]}`,
		`{"findings":[{"message":"m","line":-1e400}],"severity":"low"}`,
	} {
		got := reg.Validate(PayloadCodeReview, []byte(p))
		if got == nil {
			t.Fatalf("%s: valid?", p)
		}
		if err := sameError(got, slowValidate(s, []byte(p), "")); err != nil {
			t.Errorf("%s: %v", p, err)
		}
		m := message(PayloadCodeReview, p)
		got = reg.ValidateMessage(m)
		var ve *ValidationError
		if errors.As(got, &ve) {
			for _, v := range ve.Violations {
				if !strings.HasPrefix(v.Path, "/payload") {
					t.Errorf("%s: path %q", p, v.Path)
				}
			}
		}
		if err := sameError(got, slowValidate(s, []byte(p), "/payload")); err != nil {
			t.Errorf("message %s: %v", p, err)
		}
	}
	// The first one in full: the fast path changed nothing.
	ve := validationErr(t, reg.Validate(PayloadCodeReview, []byte(`{"findings":[{"message":"","line":0,"severity":"fatal","x":1}],"severity":3}`)))
	want := []string{
		"/findings/0/line minimum",
		"/findings/0/message minLength",
		"/findings/0/severity enum",
		"/findings/0/x additionalProperties",
		"/severity type",
	}
	var got []string
	for _, v := range ve.Violations {
		got = append(got, v.Path+" "+v.Keyword)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("violations:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Schemas using anything the fast path does not implement exactly have no
// fast path, and validate as before.
func TestFastPathAbsent(t *testing.T) {
	reg := newRegistry(t, &Options{NoBuiltins: true})
	for i, doc := range []string{
		`{"$schema":"http://json-schema.org/draft-04/schema#","type":"integer"}`,
		`{"patternProperties":{"^x-":{"type":"string"}}}`,
		`{"items":[{"type":"string"}],"additionalItems":false}`,
		`{"items":{"type":"string"},"additionalItems":false}`,
		`{"uniqueItems":true}`,
		`{"contains":{"type":"string"}}`,
		`{"propertyNames":{"maxLength":3}}`,
		`{"dependencies":{"a":["b"]}}`,
		`{"if":{"type":"string"},"then":{"minLength":1}}`,
		`{"x-vendor":{"anything":1},"type":"string"}`,
		`{"properties":{"a":{"type":"string","x-extra":true}}}`,
		`{"anyOf":[{"type":"string"},{"patternProperties":{"a":true}}]}`,
		`{"required":[` + manyNames(130) + `]}`,
	} {
		pt := fmt.Sprintf("fast.none%d.v1", i)
		if err := reg.Register(pt, []byte(doc)); err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		s, _ := reg.Lookup(pt)
		if s.fast != nil {
			t.Errorf("%s has a fast path", doc)
		}
		for _, p := range []string{`{}`, `"s"`, `[1]`, `{"x-a":1}`} {
			if err := sameError(s.Validate([]byte(p)), slowValidate(s, []byte(p), "")); err != nil {
				t.Errorf("%s %s: %v", doc, p, err)
			}
		}
	}
}

func manyNames(n int) string {
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf(`"n%d"`, i)
	}
	return strings.Join(names, ",")
}

// A format checker added to gojsonschema after registration is used by the
// fast path too, for strings and for numbers.
func TestFastPathCustomFormat(t *testing.T) {
	gojsonschema.FormatCheckers.Add("clutch-test-even", evenFormat{})
	defer gojsonschema.FormatCheckers.Remove("clutch-test-even")
	reg := newRegistry(t, &Options{NoBuiltins: true})
	if err := reg.Register("fast.format.v1", []byte(`{"format":"clutch-test-even"}`)); err != nil {
		t.Fatal(err)
	}
	s, _ := reg.Lookup("fast.format.v1")
	for _, c := range []fastCase{{`"ab"`, V}, {`"abc"`, I}, {`4`, V}, {`3`, I}, {`3.0`, I}, {`1e1`, V}, {`"\u00e9"`, V}, {`"\u00e9a"`, I}} {
		if got := checkFast(t, reg, s, []byte(c.payload)); got != c.want {
			t.Errorf("%s: fast path says %v, want %v", c.payload, got, c.want)
		}
	}
}

// evenFormat accepts strings of even length in bytes and even integers.
type evenFormat struct{}

func (evenFormat) IsFormat(input any) bool {
	switch x := input.(type) {
	case string:
		return len(x)%2 == 0
	case *big.Rat:
		return x.IsInt() && x.Num().Bit(0) == 0
	}
	return false
}

// slowRegistry returns a registry like newRegistry(t, opts) whose schemas
// have no fast path: the reference for the Binder's results.
func slowRegistry(t testing.TB, opts *Options) *Registry {
	t.Helper()
	reg := newRegistry(t, opts)
	for _, s := range reg.List() {
		s.fast = nil
	}
	return reg
}

// ValidateStep (the Binder's check of a bound run) takes the fast path too,
// expects.required included, with the slow path's results.
func TestFastPathValidateStep(t *testing.T) {
	wfDoc := `workflow: w
steps:
  - id: plain
    expects: {type: task.result, payload_type: research.summary.v1}
  - id: req
    expects:
      type: task.result
      payload_type: research.summary.v1
      required: [findings, title, "/findings/0", "/findings/01", "/findings/+1", "/citations/1", "/findings/-0"]
  - id: open
    expects:
      type: task.result
      payload_type: test.open.v1
      required: ["a/b", "/a~1b", "/x/y/0", "/x/y/1"]
`
	open := `{"type":"object","properties":{"x":{"type":"object"},"findings":{"type":"array"}}}`
	fast, slow := newRegistry(t, nil), slowRegistry(t, nil)
	for _, reg := range []*Registry{fast, slow} {
		if err := reg.Register("test.open.v1", []byte(open)); err != nil {
			t.Fatal(err)
		}
	}
	if s, _ := slow.Lookup("test.open.v1"); s != nil {
		s.fast = nil
	}
	wfFast, err := fast.LoadWorkflow([]byte(wfDoc))
	if err != nil {
		t.Fatal(err)
	}
	wfSlow, err := slow.LoadWorkflow([]byte(wfDoc))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{
		`{"findings":["a","b"],"citations":["c"]}`,
		`{"title":"t","findings":[],"citations":["c","d"]}`,
		`{"title":"t","findings":["x"],"citations":["c","d"]}`,
		`{"findings":["a"],"citations":[],"t\u0069tle":"t"}`,
		`{"findings":1,"citations":[]}`,
		`{"findings":[],"citations":[],"findings":["x"]}`,
		` {"findings" : [ "a" , "b" ] , "citations" : [ ] } `,
		`{"findings":["a"]}`,
		`{"a/b":1,"x":{"y":[0]}}`,
		`{"a\/b":1,"x":{"y":[0,1],"y":[]}}`,
		`{"x":{"y":{"0":1,"1":2}}}`,
		`{"x":{"y":[[],{}]},"a/b":{}}`,
		`nope`,
	} {
		for _, step := range []string{"plain", "req", "open"} {
			m := message(PayloadResearchSummary, p)
			if step == "open" {
				m.PayloadType = "test.open.v1"
			}
			got := wfFast.ValidateStep(step, m, fast)
			want := wfSlow.ValidateStep(step, m, slow)
			if err := sameError(got, want); err != nil {
				t.Errorf("%s %s: %v", step, p, err)
			}
		}
	}
}

// pointerPresent agrees with resolvePointer on the decoded payload.
func FuzzFastPointer(f *testing.F) {
	for _, p := range fastPayloads {
		for _, ptr := range []string{"", "/", "/a", "/a/0", "/0", "/01", "/kids/0/v", "/a~1b", "/s\u0000", "/é", "/-0", "/+1", "x"} {
			f.Add([]byte(p), ptr)
		}
	}
	fv := compileFast(true)
	f.Fuzz(func(t *testing.T, payload []byte, ptr string) {
		if fv.check(payload, 1<<20) != fastValid {
			return
		}
		doc, err := decodePayload(payload, 1<<20)
		if err != nil {
			t.Fatalf("fast path accepted %q: %v", payload, err)
		}
		got, ok := pointerPresent(payload, ptr)
		if !ok {
			return
		}
		if _, want := resolvePointer(doc, ptr); got != want {
			t.Fatalf("pointerPresent(%q, %q) = %v, resolvePointer %v", payload, ptr, got, want)
		}
	})
}

// skipSafe and skipJSONSafe find the first byte their table does not mark,
// eight bytes at a time, wherever it is and whatever follows it.
func TestSkipSafe(t *testing.T) {
	for c := range 256 {
		for n := 1; n <= 20; n++ {
			for p := range n {
				for _, fill := range []byte{'a', '~', ' ', 0x7f} {
					buf := make([]byte, n)
					for k := range buf {
						buf[k] = fill
					}
					buf[p] = byte(c)
					if p+1 < n {
						buf[p+1] = byte(255 - c) // whatever follows
					}
					want := 0
					for want < n && strSafe[buf[want]] {
						want++
					}
					if got := skipSafe(buf, 0); got != want {
						t.Fatalf("skipSafe(%q) = %d, want %d", buf, got, want)
					}
					want = 0
					for want < n && jsonSafe[buf[want]] {
						want++
					}
					if got := skipJSONSafe(string(buf), 0); got != want {
						t.Fatalf("skipJSONSafe(%q) = %d, want %d", buf, got, want)
					}
				}
			}
		}
	}
	// Several special bytes in one word, from any start.
	rnd := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("ab\"\\<>&\x00\x1f\x20\x7f\x80\xff\xc3\xa9")
	for range 200000 {
		buf := make([]byte, rnd.IntN(24))
		for k := range buf {
			buf[k] = alphabet[rnd.IntN(len(alphabet))]
		}
		from := 0
		if len(buf) > 0 {
			from = rnd.IntN(len(buf))
		}
		want := from
		for want < len(buf) && strSafe[buf[want]] {
			want++
		}
		if got := skipSafe(buf, from); got != want {
			t.Fatalf("skipSafe(%q, %d) = %d, want %d", buf, from, got, want)
		}
		want = from
		for want < len(buf) && jsonSafe[buf[want]] {
			want++
		}
		if got := skipJSONSafe(string(buf), from); got != want {
			t.Fatalf("skipJSONSafe(%q, %d) = %d, want %d", buf, from, got, want)
		}
	}
}
