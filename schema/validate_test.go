package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/xeipuuv/gojsonschema"
)

// outcome is what validating a payload gives.
type outcome uint8

const (
	V outcome = iota // valid
	I                // a *ValidationError
	J                // invalid JSON (ErrInvalidJSON)
	L                // over a limit (ErrTooLarge)
)

func (o outcome) String() string {
	return [...]string{"valid", "invalid", "invalid JSON", "too large"}[o]
}

// outcomeOf classifies the result of a validation.
func outcomeOf(t testing.TB, err error) outcome {
	t.Helper()
	var ve *ValidationError
	switch {
	case err == nil:
		return V
	case errors.As(err, &ve):
		validationErr(t, err)
		return I
	case errors.Is(err, ErrInvalidJSON):
		return J
	case errors.Is(err, ErrTooLarge):
		return L
	}
	t.Fatalf("unexpected error %T: %v", err, err)
	return 0
}

// keywordTable holds, for each keyword, a schema and payloads with the
// outcome the registry gives: gojsonschema v1.2.0's semantics (lengths in
// runes, 1.0 and 1e2 are integers, enum numbers compared as float64,
// numeric bounds compared exactly), the number limits, and strict JSON
// syntax. A duplicate member keeps its last value.
var keywordTable = []struct {
	name, schema string
	cases        []outcomeCase
}{
	{"type_integer", `{"type":"integer"}`, []outcomeCase{
		{`1`, V}, {`-0`, V}, {`1.0`, V}, {`1e2`, V}, {`1.5e1`, V}, {`10.000`, V}, {`0.0`, V},
		{`1.5`, I}, {`1e-1`, I}, {`"1"`, I}, {`null`, I}, {`true`, I}, {`[]`, I}, {`{}`, I},
	}},
	{"type_list", `{"type":["string","null","boolean"]}`, []outcomeCase{
		{`"x"`, V}, {`null`, V}, {`false`, V}, {`0`, I}, {`[]`, I}, {`{}`, I},
	}},
	{"type_number", `{"type":"number"}`, []outcomeCase{{`1`, V}, {`-1.5e-3`, V}, {`"1"`, I}}},
	{"type_object_array", `{"type":["object","array"]}`, []outcomeCase{{`{}`, V}, {`[1,{"a":[]}]`, V}, {`""`, I}}},
	{"true", `true`, []outcomeCase{{`{"a":[1,"x",null]}`, V}, {`1`, V}}},
	{"false", `false`, []outcomeCase{{`{}`, I}, {`1`, I}}},
	{"annotations_only", `{"title":"t","description":"d","default":{"x":1},"examples":[1],"$comment":"c","deprecated":true}`, []outcomeCase{{`[1]`, V}}},

	{"properties", `{"properties":{"a":{"type":"string"},"b":{"type":"integer"}}}`, []outcomeCase{
		{`{}`, V}, {`{"a":"x","b":1,"c":[]}`, V}, {`[1]`, V}, {`"s"`, V},
		{`{"a":1}`, I}, {`{"b":"x","a":"y"}`, I}, {`{"a":"x","a":"y"}`, J}, {`{"a":1,"a":"y"}`, J}, {`{"a":1,"c":2,"a":"y"}`, J},
		{`{"\u0061":"x"}`, V}, {`{"\u0061":1}`, I}, {`{"a":"x","\u0061":"y"}`, J}, {`{"\ud800":1}`, J}, {`{"c\n":1,"c\u000a":2}`, J}, {`{"c\n":1,"c\u000b":2}`, V},
	}},
	{"required", `{"required":["a","z"],"properties":{"a":true}}`, []outcomeCase{
		{`{"a":1,"z":2}`, V}, {`{"z":null,"a":{}}`, V}, {`{"a":1}`, I}, {`{}`, I}, {`[]`, V},
	}},
	{"additionalProperties_false", `{"properties":{"a":{"type":"string"}},"additionalProperties":false}`, []outcomeCase{
		{`{"a":"x"}`, V}, {`{}`, V}, {`{"b":1}`, I}, {`{"a":"x","b":1}`, I},
	}},
	{"additionalProperties_schema", `{"properties":{"a":true},"additionalProperties":{"type":"integer","minimum":0}}`, []outcomeCase{
		{`{"a":"x","b":1,"c":2}`, V}, {`{"b":-1}`, I}, {`{"b":"1"}`, I}, {`{"b":1,"b":2}`, J},
		{`{"b\u0026":1,"b&":2}`, J}, {`{"b\u0026":1,"b\u0026c":2,"\u00e9":3,"é\"":4}`, V},
	}},
	{"additionalProperties_many", `{"additionalProperties":{"type":"integer"}}`, []outcomeCase{
		{manyMembers(40, ""), V}, {manyMembers(40, `,"k7":1`), J}, {manyMembers(40, `,"k\u0037":1`), J}, {manyMembers(40, `,"x":"s"`), I},
	}},
	{"min_max_properties", `{"minProperties":1,"maxProperties":2}`, []outcomeCase{
		{`{"a":1}`, V}, {`{"a":1,"b":2}`, V}, {`{}`, I}, {`{"a":1,"b":2,"c":3}`, I}, {`{"a":1,"a":2}`, J},
	}},
	{"many_properties", `{"properties":{"p0":{"type":"integer"},"p1":{"type":"integer"},"p2":{"type":"integer"},"p3":{"type":"integer"},"p4":{"type":"integer"},"p5":{"type":"integer"},"p6":{"type":"integer"},"p7":{"type":"integer"},"p8":{"type":"integer"},"p9":{"type":"integer"}},"required":["p0","p9","q"]}`, []outcomeCase{
		{`{"p0":1,"p9":2,"q":"x"}`, V}, {`{"p0":1,"p9":2}`, I}, {`{"p0":1,"p9":2,"q":"x","p5":"y"}`, I},
	}},

	{"items", `{"items":{"type":"string"}}`, []outcomeCase{
		{`[]`, V}, {`["a","b"]`, V}, {`{}`, V}, {`["a",1]`, I}, {`[null]`, I},
	}},
	{"items_false", `{"items":false}`, []outcomeCase{{`[]`, V}, {`[1]`, I}}},
	{"min_max_items", `{"minItems":1,"maxItems":2}`, []outcomeCase{{`[1]`, V}, {`[1,[2,3]]`, V}, {`[]`, I}, {`[1,2,3]`, I}, {`"abc"`, V}}},
	{"uniqueItems_false", `{"uniqueItems":false}`, []outcomeCase{{`[1,1]`, V}}},

	{"min_max_length", `{"minLength":2,"maxLength":3}`, []outcomeCase{
		{`"ab"`, V}, {`"abc"`, V}, {`"éé"`, V}, {`"😀😀😀"`, V}, {`"\u00e9\u00e9"`, V}, {`"\ud83d\ude00\ud83d\ude00"`, V}, {`"a\nb"`, V}, {`1`, V},
		{`"a"`, I}, {`"abcd"`, I}, {`"é"`, I}, {`"\u00e9"`, I}, {`"😀😀😀😀"`, I}, {`""`, I},
		{`"\ud800x"`, J}, {"\"\xff\xfe\"", J},
	}},
	{"pattern", `{"pattern":"^a+\\d?$"}`, []outcomeCase{{`"aa"`, V}, {`"a1"`, V}, {`"\u0061"`, V}, {`"ab"`, I}, {`""`, I}, {`3`, V}}},
	{"pattern_unicode", `{"pattern":"^\\p{Greek}{2}$"}`, []outcomeCase{{`"αβ"`, V}, {`"\u03b1\u03b2"`, V}, {`"ab"`, I}}},
	{"format_email", `{"format":"email"}`, []outcomeCase{{`"a@b.c"`, V}, {`"nope"`, I}, {`true`, V}, {`{}`, V}, {`1`, I}}},
	{"format_date_time", `{"format":"date-time"}`, []outcomeCase{{`"2026-01-02T03:04:05Z"`, V}, {`"2026-13-02"`, I}}},
	{"format_unknown", `{"format":"made-up"}`, []outcomeCase{{`"anything"`, V}, {`1`, V}}},
	{"format_ipv4", `{"format":"ipv4"}`, []outcomeCase{{`"127.0.0.1"`, V}, {`"::1"`, I}}},

	{"minimum_maximum", `{"minimum":0,"maximum":10}`, []outcomeCase{
		{`0`, V}, {`-0`, V}, {`10`, V}, {`1e1`, V}, {`10.0000`, V}, {`5.5`, V}, {`"x"`, V},
		{`-1e-9`, I}, {`10.000000000000000000001`, I}, {`1e2`, I},
	}},
	{"exclusive_numbers", `{"exclusiveMinimum":0,"exclusiveMaximum":1}`, []outcomeCase{{`0.5`, V}, {`1e-300`, V}, {`0`, I}, {`1`, I}, {`-0.0`, I}}},
	{"exclusive_bool", `{"minimum":1.5,"exclusiveMinimum":true,"maximum":2,"exclusiveMaximum":false}`, []outcomeCase{{`1.6`, V}, {`2`, V}, {`1.5`, I}, {`2.0000001`, I}}},
	{"big_bounds", `{"maximum":9007199254740993}`, []outcomeCase{{`9007199254740993`, V}, {`9007199254740994`, I}, {`9007199254740993.0000001`, I}}},
	{"multipleOf", `{"multipleOf":0.01}`, []outcomeCase{{`0.07`, V}, {`100`, V}, {`-3.14`, V}, {`0`, V}, {`1e-2`, V}, {`0.001`, I}, {`3.14159`, I}}},
	{"multipleOf_int", `{"multipleOf":3}`, []outcomeCase{{`9`, V}, {`-27`, V}, {`3e5`, V}, {`10`, I}, {`1.5`, I}}},
	{"multipleOf_huge", `{"multipleOf":123456789012345678}`, []outcomeCase{{`0`, V}, {`1`, I}}},
	{"numbers_out_of_range", `{"type":"number"}`, []outcomeCase{
		{`1e307`, V}, {`1e-400`, V}, {`-1.7976931348623157e308`, V}, {`1.7976931348623158e308`, V}, {`2e308`, V}, {`1e400`, V}, {`1e1000`, V}, {`1e1001`, L}, {strings.Repeat("1", 257), L},
	}},

	{"enum_scalars", `{"enum":[1,"a",null,true,-0.0]}`, []outcomeCase{
		{`1`, V}, {`1.0`, V}, {`1e0`, V}, {`"a"`, V}, {`"\u0061"`, V}, {`null`, V}, {`true`, V}, {`-0`, V},
		{`0`, I}, {`false`, I}, {`"b"`, I}, {`"1"`, I}, {`2`, I}, {`{}`, I}, {`[1]`, I},
	}},
	{"enum_composite", `{"enum":[{"a":1},[1],"x"]}`, []outcomeCase{{`"x"`, V}, {`"y"`, I}, {`1`, I}, {`{"a":1}`, V}, {`[1]`, V}}},
	{"enum_float_precision", `{"enum":[9007199254740993]}`, []outcomeCase{{`9007199254740992`, V}, {`9007199254740993`, V}, {`9007199254740994`, I}}},
	{"enum_escapes", `{"enum":["a\"b","<&>","\u2028","\t"]}`, []outcomeCase{{`"a\"b"`, V}, {`"\u003c&>"`, V}, {`"\u2028"`, V}, {"\"\u2028\"", V}, {`"\t"`, V}, {`"<&"`, I}}},
	{"const", `{"const":"é"}`, []outcomeCase{{`"é"`, V}, {`"\u00e9"`, V}, {`"e"`, I}, {`null`, I}}},
	{"const_number", `{"const":100}`, []outcomeCase{{`1e2`, V}, {`100.0`, V}, {`101`, I}}},
	{"const_object", `{"const":{"a":1}}`, []outcomeCase{{`1`, I}, {`{"a":1}`, V}}},
	{"enum_empty", `{"enum":[]}`, []outcomeCase{{`{"x":1}`, V}}},

	{"allOf", `{"allOf":[{"type":"integer"},{"minimum":2}]}`, []outcomeCase{{`2`, V}, {`1`, I}, {`2.5`, I}}},
	{"anyOf", `{"anyOf":[{"type":"string","maxLength":1},{"type":"integer"}]}`, []outcomeCase{{`"a"`, V}, {`7`, V}, {`"ab"`, I}, {`1.5`, I}}},
	{"oneOf", `{"oneOf":[{"type":"integer"},{"type":"number","maximum":3}]}`, []outcomeCase{{`5`, V}, {`2.5`, V}, {`2`, I}, {`"x"`, I}}},
	{"not", `{"not":{"type":"object","properties":{"a":{"type":"string"}}}}`, []outcomeCase{
		{`{"a":1}`, V}, {`1`, V}, {`{"a":"x"}`, I}, {`{}`, I}, {`{"a":1,"a":"x"}`, J},
	}},
	{"not_required", `{"not":{"required":["a"]}}`, []outcomeCase{{`{"b":1}`, V}, {`{"a":1}`, I}, {`{"a":1,"a":2}`, J}}},
	{"union", `{"oneOf":[{"properties":{"kind":{"const":"a"},"n":{"type":"integer"}},"required":["kind","n"]},{"properties":{"kind":{"const":"b"},"s":{"type":"string"}},"required":["kind","s"]}]}`, []outcomeCase{
		{`{"kind":"a","n":1}`, V}, {`{"kind":"b","s":"x"}`, V}, {`{"kind":"a","s":"x"}`, I}, {`{"kind":"c"}`, I},
	}},

	{"ref_defs", `{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"],"additionalProperties":false}},"$ref":"#/$defs/node"}`, []outcomeCase{
		{`{"v":1,"kids":[{"v":2,"kids":[{"v":3}]}]}`, V}, {`{"v":1,"kids":[{"v":"2"}]}`, I}, {`{"v":1,"kids":[{}]}`, I}, {deepTree(600), V},
	}},
	{"ref_siblings", `{"definitions":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/s","minLength":3}}}`, []outcomeCase{{`{"a":"abc"}`, V}, {`{"a":"ab"}`, I}, {`{"a":1}`, I}}},
	{"ref_siblings_draft7", `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/s","minLength":3}}}`, []outcomeCase{{`{"a":"ab"}`, V}, {`{"a":1}`, I}}},
	{"ref_root", `{"properties":{"next":{"$ref":"#"},"v":{"type":"boolean"}},"type":["object","null"]}`, []outcomeCase{{`{"next":{"next":null,"v":true}}`, V}, {`{"next":{"v":1}}`, I}}},
	{"ref_escaped", `{"$ref":"#/definitions/a~1b","definitions":{"a/b":{"type":"integer"}}}`, []outcomeCase{{`1`, V}, {`"1"`, I}}},

	{"syntax", `{"type":"object"}`, []outcomeCase{
		{` {} `, V}, {"\t{\n}\r\n", V},
		{``, J}, {`   `, J}, {`{} x`, J}, {`{}{}`, J}, {`{`, J}, {`{"a"}`, J}, {`{"a":}`, J}, {`{"a":1,}`, J}, {`{,}`, J},
		{`{"a":01}`, J}, {`{"a":1.}`, J}, {`{"a":.5}`, J}, {`{"a":+1}`, J}, {`{"a":-}`, J}, {`{"a":1e}`, J}, {`{"a":tru}`, J},
		{`{"a":"\x"}`, J}, {`{"a":"\u12"}`, J}, {"{\"a\":\"\x01\"}", J}, {`{"a":[1,]}`, J}, {`{"a":'x'}`, J}, {"\xef\xbb\xbf{}", J},
		{deepArray(600), V},
	}},
}

type outcomeCase struct {
	payload string
	want    outcome
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

func TestValidateKeywords(t *testing.T) {
	reg := newRegistry(t, &Options{NoBuiltins: true})
	for i, c := range keywordTable {
		pt := fmt.Sprintf("test.keyword%d.v1", i)
		require.NoError(t, reg.Register(pt, []byte(c.schema)), c.name)
		t.Run(c.name, func(t *testing.T) {
			for _, oc := range c.cases {
				got := outcomeOf(t, reg.Validate(pt, []byte(oc.payload)))
				assert.Equal(t, oc.want, got, "%.60q", oc.payload)
				m := message(pt, "")
				m.Payload = []byte(oc.payload)
				assert.Equal(t, oc.want, outcomeOf(t, reg.ValidateMessage(m)), "message %.60q", oc.payload)
			}
		})
	}
}

// Every violation of a payload is reported, with its path and keyword;
// in a message, under /payload.
func TestValidateViolations(t *testing.T) {
	reg := newRegistry(t, nil)
	const p = `{"findings":[{"message":"","line":0,"severity":"fatal","x":1}],"severity":3}`
	want := []string{
		"/findings/0/line minimum",
		"/findings/0/message minLength",
		"/findings/0/severity enum",
		"/findings/0/x additionalProperties",
		"/severity type",
	}
	pathsKeywords := func(ve *ValidationError) []string {
		var out []string
		for _, v := range ve.Violations {
			out = append(out, v.Path+" "+v.Keyword)
		}
		return out
	}
	ve := validationErr(t, reg.Validate(PayloadCodeReview, []byte(p)))
	assert.Equal(t, want, pathsKeywords(ve))
	ve = validationErr(t, reg.ValidateMessage(message(PayloadCodeReview, p)))
	for i := range want {
		want[i] = "/payload" + want[i]
	}
	assert.Equal(t, want, pathsKeywords(ve))
	for _, bad := range []string{
		`{"findings":"none"}`,
		`[]`,
		`{"findings":[{"message":"m","line":1,"severity":"x"}]}`,
	} {
		ve := validationErr(t, reg.ValidateMessage(message(PayloadCodeReview, bad)))
		for _, v := range ve.Violations {
			assert.True(t, strings.HasPrefix(v.Path, "/payload"), "%s: path %q", bad, v.Path)
		}
	}
	assert.ErrorIs(t, reg.Validate(PayloadCodeReview, []byte(`{"findings":[],"severity":"low"} trailing`)), ErrInvalidJSON)
	// Duplicate names have no one meaning: refused, as the envelope refuses them.
	assert.ErrorIs(t, reg.Validate(PayloadCodeReview, []byte(`{"findings":[],"severity":"low","findings":[1]}`)), ErrInvalidJSON)
	assert.ErrorIs(t, reg.Validate(PayloadCodeReview, []byte(`{"findings":[{"message":"m","line":-1e1001}],"severity":"low"}`)), ErrTooLarge)
}

// A format checker added to gojsonschema after registration is used, for
// strings and for numbers.
func TestValidateCustomFormat(t *testing.T) {
	gojsonschema.FormatCheckers.Add("clutch-test-even", evenFormat{})
	defer gojsonschema.FormatCheckers.Remove("clutch-test-even")
	reg := newRegistry(t, &Options{NoBuiltins: true})
	require.NoError(t, reg.Register("test.format.v1", []byte(`{"format":"clutch-test-even"}`)))
	for _, c := range []outcomeCase{{`"ab"`, V}, {`"abc"`, I}, {`4`, V}, {`3`, I}, {`3.0`, I}, {`1e1`, V}, {`"\u00e9"`, V}, {`"\u00e9a"`, I}} {
		assert.Equal(t, c.want, outcomeOf(t, reg.Validate("test.format.v1", []byte(c.payload))), c.payload)
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

// What the built-in Go types encode validates.
func TestBuiltinValuesValidate(t *testing.T) {
	reg := newRegistry(t, nil)
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
		p := mustJSON(t, v.v)
		assert.NoError(t, reg.Validate(v.pt, p), "%s: %s", v.pt, p)
	}
}

// expects.required reads members and JSON pointers from the payload, next
// to the schema's violations; the payload is read as JSON once, so a bad
// one is ErrInvalidJSON whatever the step.
func TestValidateStepRequired(t *testing.T) {
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
	reg := newRegistry(t, nil)
	require.NoError(t, reg.Register("test.open.v1", []byte(`{"type":"object","properties":{"x":{"type":"object"},"findings":{"type":"array"}}}`)))
	wf, err := reg.LoadWorkflow([]byte(wfDoc))
	require.NoError(t, err)
	for _, c := range []struct{ step, payload, want string }{
		{"plain", `{"findings":["a","b"],"citations":["c"]}`, "ok"},
		{"req", `{"findings":["a","b"],"citations":["c"]}`, "/payload/citations/1 expects.required; /payload/findings/01 expects.required; /payload/title expects.required"},
		{"open", `{"findings":["a","b"],"citations":["c"]}`, "/payload/a~1b expects.required; /payload/a~1b expects.required; /payload/x/y/0 expects.required; /payload/x/y/1 expects.required"},
		{"plain", `{"title":"t","findings":[],"citations":["c","d"]}`, "ok"},
		{"req", `{"title":"t","findings":[],"citations":["c","d"]}`, "/payload/findings/+1 expects.required; /payload/findings/-0 expects.required; /payload/findings/0 expects.required; /payload/findings/01 expects.required"},
		{"open", `{"title":"t","findings":[],"citations":["c","d"]}`, "/payload/a~1b expects.required; /payload/a~1b expects.required; /payload/x/y/0 expects.required; /payload/x/y/1 expects.required"},
		{"plain", `{"title":"t","findings":["x"],"citations":["c","d"]}`, "ok"},
		{"req", `{"title":"t","findings":["x"],"citations":["c","d"]}`, "/payload/findings/+1 expects.required; /payload/findings/01 expects.required"},
		{"open", `{"title":"t","findings":["x"],"citations":["c","d"]}`, "/payload/a~1b expects.required; /payload/a~1b expects.required; /payload/x/y/0 expects.required; /payload/x/y/1 expects.required"},
		{"plain", `{"findings":["a"],"citations":[],"t\u0069tle":"t"}`, "ok"},
		{"req", `{"findings":["a"],"citations":[],"t\u0069tle":"t"}`, "/payload/citations/1 expects.required; /payload/findings/+1 expects.required; /payload/findings/01 expects.required"},
		{"open", `{"findings":["a"],"citations":[],"t\u0069tle":"t"}`, "/payload/a~1b expects.required; /payload/a~1b expects.required; /payload/x/y/0 expects.required; /payload/x/y/1 expects.required"},
		{"plain", `{"findings":1,"citations":[]}`, "/payload/findings type"},
		{"req", `{"findings":1,"citations":[]}`, "/payload/citations/1 expects.required; /payload/findings type; /payload/findings/+1 expects.required; /payload/findings/-0 expects.required; /payload/findings/0 expects.required; /payload/findings/01 expects.required; /payload/title expects.required"},
		{"open", `{"findings":1,"citations":[]}`, "/payload/a~1b expects.required; /payload/a~1b expects.required; /payload/findings type; /payload/x/y/0 expects.required; /payload/x/y/1 expects.required"},
		{"plain", `{"findings":[],"citations":[],"findings":["x"]}`, "badJSON"},
		{"req", `{"findings":[],"citations":[],"findings":["x"]}`, "badJSON"},
		{"open", `{"findings":[],"citations":[],"findings":["x"]}`, "badJSON"},
		{"plain", ` {"findings" : [ "a" , "b" ] , "citations" : [ ] } `, "ok"},
		{"req", ` {"findings" : [ "a" , "b" ] , "citations" : [ ] } `, "/payload/citations/1 expects.required; /payload/findings/01 expects.required; /payload/title expects.required"},
		{"open", ` {"findings" : [ "a" , "b" ] , "citations" : [ ] } `, "/payload/a~1b expects.required; /payload/a~1b expects.required; /payload/x/y/0 expects.required; /payload/x/y/1 expects.required"},
		{"plain", `{"findings":["a"]}`, "/payload/citations required"},
		{"req", `{"findings":["a"]}`, "/payload/citations required; /payload/citations/1 expects.required; /payload/findings/+1 expects.required; /payload/findings/01 expects.required; /payload/title expects.required"},
		{"open", `{"findings":["a"]}`, "/payload/a~1b expects.required; /payload/a~1b expects.required; /payload/x/y/0 expects.required; /payload/x/y/1 expects.required"},
		{"plain", `{"a/b":1,"x":{"y":[0]}}`, "/payload/a~1b additionalProperties; /payload/citations required; /payload/findings required; /payload/x additionalProperties"},
		{"req", `{"a/b":1,"x":{"y":[0]}}`, "/payload/a~1b additionalProperties; /payload/citations required; /payload/citations/1 expects.required; /payload/findings expects.required; /payload/findings required; /payload/findings/+1 expects.required; /payload/findings/-0 expects.required; /payload/findings/0 expects.required; /payload/findings/01 expects.required; /payload/title expects.required; /payload/x additionalProperties"},
		{"open", `{"a/b":1,"x":{"y":[0]}}`, "/payload/x/y/1 expects.required"},
		{"plain", `{"a\/b":1,"x":{"y":[0,1],"y":[]}}`, "badJSON"},
		{"req", `{"a\/b":1,"x":{"y":[0,1],"y":[]}}`, "badJSON"},
		{"open", `{"a\/b":1,"x":{"y":[0,1],"y":[]}}`, "badJSON"},
		{"plain", `{"x":{"y":{"0":1,"1":2}}}`, "/payload/citations required; /payload/findings required; /payload/x additionalProperties"},
		{"req", `{"x":{"y":{"0":1,"1":2}}}`, "/payload/citations required; /payload/citations/1 expects.required; /payload/findings expects.required; /payload/findings required; /payload/findings/+1 expects.required; /payload/findings/-0 expects.required; /payload/findings/0 expects.required; /payload/findings/01 expects.required; /payload/title expects.required; /payload/x additionalProperties"},
		{"open", `{"x":{"y":{"0":1,"1":2}}}`, "/payload/a~1b expects.required; /payload/a~1b expects.required"},
		{"plain", `{"x":{"y":[[],{}]},"a/b":{}}`, "/payload/a~1b additionalProperties; /payload/citations required; /payload/findings required; /payload/x additionalProperties"},
		{"req", `{"x":{"y":[[],{}]},"a/b":{}}`, "/payload/a~1b additionalProperties; /payload/citations required; /payload/citations/1 expects.required; /payload/findings expects.required; /payload/findings required; /payload/findings/+1 expects.required; /payload/findings/-0 expects.required; /payload/findings/0 expects.required; /payload/findings/01 expects.required; /payload/title expects.required; /payload/x additionalProperties"},
		{"open", `{"x":{"y":[[],{}]},"a/b":{}}`, "ok"},
		{"plain", `nope`, "badJSON"},
		{"req", `nope`, "badJSON"},
		{"open", `nope`, "badJSON"},
	} {
		m := message(PayloadResearchSummary, c.payload)
		if c.step == "open" {
			m.PayloadType = "test.open.v1"
		}
		err := wf.ValidateStep(c.step, m, reg)
		var got string
		var ve *ValidationError
		switch {
		case err == nil:
			got = "ok"
		case errors.Is(err, ErrInvalidJSON):
			got = "badJSON"
		case errors.As(err, &ve):
			var vs []string
			for _, v := range canonical(ve.Violations) {
				vs = append(vs, v.Path+" "+v.Keyword)
			}
			got = strings.Join(vs, "; ")
		default:
			t.Fatalf("%s %s: %v", c.step, c.payload, err)
		}
		assert.Equal(t, c.want, got, "%s %s", c.step, c.payload)
	}
}

// canonical sorts violations by path, keyword and message: gojsonschema
// reports some in map order.
func canonical(vs []Violation) []Violation {
	out := slices.Clone(vs)
	slices.SortFunc(out, func(a, b Violation) int {
		return strings.Compare(a.Path+"\x00"+a.Keyword+"\x00"+a.Message, b.Path+"\x00"+b.Keyword+"\x00"+b.Message)
	})
	return out
}

// TestValidateValue: an answer's value is checked against its question's
// schema; a schema that reaches out is refused.
func TestValidateValue(t *testing.T) {
	reg, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	budget := json.RawMessage(`{"type":"object","properties":{"amount":{"type":"number","minimum":0}},"required":["amount"],"additionalProperties":false}`)
	if err := reg.ValidateValue(budget, json.RawMessage(`{"amount":12.5}`)); err != nil {
		t.Errorf("valid value: %v", err)
	}
	var ve *ValidationError
	if err := reg.ValidateValue(budget, json.RawMessage(`{"amount":-1}`)); !errors.As(err, &ve) || len(ve.Violations) == 0 {
		t.Errorf("negative amount: %v", err)
	}
	if err := reg.ValidateValue(budget, json.RawMessage(`{"amount":`)); !errors.Is(err, ErrInvalidJSON) {
		t.Errorf("broken JSON: %v", err)
	}
	if err := reg.ValidateValue(json.RawMessage(`{"$ref":"https://example.com/s.json"}`), json.RawMessage(`1`)); !errors.Is(err, ErrRemoteRef) {
		t.Errorf("remote ref: %v", err)
	}
}
