package schema

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// fastSchema is a hand-written schema exercising the fast path, in a
// keyword family (FuzzFastValidate can be pointed at one family with
// CLUTCH_FASTFUZZ_FAMILY).
type fastSchema struct {
	family, doc string
}

// fastSchemas cover every keyword the fast path implements, nesting,
// $ref, the applicators, enums of mixed types, numbers at boundaries,
// formats, patterns and unicode lengths. The built-ins are added by
// fastSeedRegistry.
var fastSchemas = []fastSchema{
	// type
	{"type", `{"type":"integer"}`},
	{"type", `{"type":"number"}`},
	{"type", `{"type":["integer","string","null"]}`},
	{"type", `{"type":["boolean","array"]}`},
	{"type", `{"type":"object"}`},
	{"type", `{"type":[]}`},
	{"type", `{"title":"anything","description":"no assertions","default":1,"examples":[2],"$comment":"c"}`},
	{"type", `true`},
	{"type", `false`},

	// objects
	{"object", `{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"integer"}},"required":["a","c"],"additionalProperties":{"type":"boolean"},"minProperties":1,"maxProperties":3}`},
	{"object", `{"properties":{"a":{"type":"string"},"b":true,"c":false},"additionalProperties":false}`},
	{"object", `{"required":["x","y"],"maxProperties":2}`},
	{"object", `{"minProperties":2,"additionalProperties":true}`},
	{"object", `{"properties":{"p0":{"type":"integer"},"p1":{"type":"integer"},"p2":{"type":"integer"},"p3":{"type":"integer"},"p4":{"type":"integer"},"p5":{"type":"integer"},"p6":{"type":"integer"},"p7":{"type":"integer"},"p8":{"type":"integer"},"p9":{"type":"integer"}},"required":["p0","p9","q"],"additionalProperties":{"type":"string","maxLength":1}}`},
	{"object", `{"type":"object","properties":{"":{"type":"null"},"a/b":{"type":"string"},"é":{"type":"number"}},"additionalProperties":{"type":"object","properties":{"x":{"type":"integer"}},"required":["x"]}}`},

	// arrays
	{"array", `{"type":"array","items":{"type":"integer","minimum":0},"minItems":1,"maxItems":3}`},
	{"array", `{"type":"array","items":false}`},
	{"array", `{"items":true,"maxItems":0}`},
	{"array", `{"uniqueItems":false,"items":{"type":"array","items":{"type":"string"},"minItems":2}}`},
	{"array", `{"items":{"type":"object","properties":{"id":{"type":"integer"}},"required":["id"],"additionalProperties":false}}`},

	// strings
	{"string", `{"type":"string","minLength":2,"maxLength":4}`},
	{"string", `{"minLength":1,"maxLength":1}`},
	{"string", `{"pattern":"^a+$"}`},
	{"string", `{"pattern":"é|\\d{3}"}`},
	{"string", `{"pattern":"^\\p{Greek}*$","maxLength":3}`},
	{"string", `{"format":"email"}`},
	{"string", `{"format":"date-time"}`},
	{"string", `{"format":"uri"}`},
	{"string", `{"format":"ipv4","type":["string","integer"]}`},
	{"string", `{"format":"made-up"}`},
	{"string", `{"format":"uuid","type":["string","number"]}`},
	{"string", `{"format":"regex"}`},

	// numbers
	{"number", `{"minimum":0,"maximum":10}`},
	{"number", `{"exclusiveMinimum":0,"exclusiveMaximum":1}`},
	{"number", `{"minimum":1.5,"exclusiveMinimum":true}`},
	{"number", `{"maximum":-0.5,"exclusiveMaximum":true,"minimum":-1,"exclusiveMinimum":false}`},
	{"number", `{"multipleOf":0.01}`},
	{"number", `{"multipleOf":3,"type":"integer"}`},
	{"number", `{"multipleOf":2.5e-3,"maximum":1e3}`},
	{"number", `{"multipleOf":123456789012345678}`},
	{"number", `{"minimum":1e-5,"maximum":1.00000000000000000001}`},
	{"number", `{"maximum":9007199254740993,"type":"integer"}`},
	{"number", `{"type":"integer","maximum":1e300,"minimum":-1e2}`},
	{"number", `{"exclusiveMaximum":1e-300,"exclusiveMinimum":-1e-300}`},
	{"number", `{"minimum":-0,"maximum":0}`},

	// enum and const
	{"enum", `{"enum":[1,"a",null,true,{"x":1},[1]]}`},
	{"enum", `{"enum":[0,1.5,-2,"1",false]}`},
	{"enum", `{"enum":[-0.0,1e2,9007199254740993]}`},
	{"enum", `{"enum":["é\n","\u2028<&>","\ud83d\ude00",""]}`},
	{"enum", `{"const":"é\n"}`},
	{"enum", `{"const":1e2}`},
	{"enum", `{"const":{"a":1}}`},
	{"enum", `{"const":null,"type":["null","string"]}`},
	{"enum", `{"enum":[]}`},
	{"enum", `{"type":"object","enum":[{"a":1}],"properties":{"a":{"type":"integer"}}}`},
	{"enum", `{"type":"array","enum":["a"]}`},

	// applicators
	{"applicator", `{"anyOf":[{"type":"string"},{"type":"integer","minimum":5}]}`},
	{"applicator", `{"oneOf":[{"type":"integer"},{"type":"number","maximum":3}]}`},
	{"applicator", `{"not":{"type":"object","properties":{"a":{"type":"string"}}}}`},
	{"applicator", `{"not":{"properties":{"a":{"type":"string"}},"required":["a"]}}`},
	{"applicator", `{"allOf":[{"required":["a"]},{"properties":{"a":{"enum":[1,2]}}}]}`},
	{"applicator", `{"not":{"not":{"minLength":2}}}`},
	{"applicator", `{"oneOf":[{"properties":{"kind":{"const":"a"},"n":{"type":"integer"}},"required":["kind","n"]},{"properties":{"kind":{"const":"b"},"s":{"type":"string"}},"required":["kind","s"]}]}`},
	{"applicator", `{"anyOf":[{"format":"ipv4"},{"format":"ipv6"}],"not":{"enum":["::1"]}}`},
	{"applicator", `{"type":"array","items":{"oneOf":[{"multipleOf":2},{"multipleOf":3}]}}`},
	{"applicator", `{"not":{"additionalProperties":{"type":"integer"}}}`},
	{"applicator", `{"not":{"items":{"type":"string"}}}`},
	{"applicator", `{"not":{"minProperties":2}}`},
	{"applicator", `{"anyOf":[],"allOf":[],"oneOf":[true,false]}`},

	// $ref
	{"ref", `{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"],"additionalProperties":false}},"$ref":"#/$defs/node"}`},
	{"ref", `{"definitions":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/s","minLength":3}}}`},
	{"ref", `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"s":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/s","minLength":3}}}`},
	{"ref", `{"$schema":"http://json-schema.org/draft-06/schema#","properties":{"a":{"const":1},"b":{"exclusiveMinimum":0}}}`},
	{"ref", `{"$ref":"#/definitions/a~1b","definitions":{"a/b":{"type":"integer"}}}`},
	{"ref", `{"$ref":"#/definitions/%61","definitions":{"a":{"type":"string"}}}`},
	{"ref", `{"properties":{"next":{"$ref":"#"},"v":{"type":"boolean"}},"type":["object","null"]}`},
	{"ref", `{"$id":"https://example.com/root.json","$defs":{"pos":{"minimum":0},"int":{"type":"integer"}},"allOf":[{"$ref":"#/$defs/pos"},{"$ref":"#/$defs/int"}]}`},
	{"ref", `{"$defs":{"x":{"$ref":"#/$defs/y"},"y":{"enum":["y",2]}},"items":{"$ref":"#/$defs/x"}}`},

	// unicode and escapes
	{"unicode", `{"properties":{"s":{"type":"string","minLength":3,"maxLength":3}},"additionalProperties":{"type":"string","pattern":"^[^\\x00-\\x1f]*$"}}`},
	{"unicode", `{"type":"string","pattern":"^\\S+$","maxLength":2}`},
	{"unicode", `{"enum":["a\"b","a\\b","\u0000","\t","\uFFFD"]}`},
}

// fastPayloads seed every schema.
var fastPayloads = []string{
	`{}`, `[]`, `""`, `"ab"`, `"abcde"`, `"é😀"`, `"aaa"`, `"αβγ"`, `"αβγδ"`,
	`0`, `1`, `-1`, `1.0`, `1e2`, `1E+2`, `-0`, `-0.0`, `0.5`, `1.5`, `2.5`, `3`, `6`, `10`, `10.000`, `0.01`, `0.07`, `1e-5`, `9e-6`,
	`1e400`, `1e999`, `1e1000`, `-1e308`, `1e-400`, `9007199254740993`, `9007199254740992`, `123456789012345678901234567890`,
	`null`, `true`, `false`,
	`{"a":"x","b":1}`, `{"a":1,"a":"x"}`, `{"a":"x","a":1}`, `{"a":"x","c":true}`, `{"x":1,"y":2}`, `{"x":1,"x":2}`, `{"q":"s","p0":1,"p9":2}`,
	`{"kind":"a","n":1}`, `{"kind":"b","s":"t"}`, `{"kind":"a","s":"t"}`,
	`{"":null,"a/b":"s","é":1,"z":{"x":1}}`,
	`[1,2,3]`, `[1,2,3,4]`, `[-1]`, `["a","b"]`, `[["a","b"],["c"]]`, `[{"id":1},{"id":2,"x":3}]`, `[6,9,4]`,
	`{"v":1,"kids":[{"v":2,"kids":[]}]}`, `{"v":1,"kids":[{"v":"2"}]}`, `{"next":{"next":null,"v":true}}`,
	`"\u00e9"`, `"\ud83d\ude00"`, `"\ud800"`, `"\ud800\u0041"`, `"\xff"`, `"a\"b"`, `"a\\b"`, `"\u0000"`, `"\t"`, `"\ufffd"`,
	`"\u2028<&>"`, `"é\n"`, `{"s":"a\u00e9b","t":"\u0001"}`, `{"s":"abc","t":"ok"}`, `{"s\u0000":"abc"}`,
	`"::1"`, `"127.0.0.1"`, `"a@b.c"`, `"2024-01-02T03:04:05Z"`, `"https://x.y/z"`, `"0c6d6a5c-3b7e-4b55-9a3e-2f3b8a1e9c10"`, `"[a-"`,
	`{"a":"x"} x`, `{"a":"x"}` + "\n\t ", ` 1 `, `[1,]`, `{"a":1,}`, `01`, `1.`, `.5`, `+1`, `nul`, `[`, `"abc`, "\"a\x01b\"",
	`{"title":"t","findings":["f"],"citations":["c"]}`,
	`{"findings":[],"citations":[],"findings":["x"]}`,
	`{"sources":[{"url":"u"}],"relevance_scores":{"u":0.5,"v":1e308}}`,
	`{"files":[{"path":"p"}],"language":"go","tests_passed":false}`,
	`{"findings":[{"message":"m","line":1.0,"severity":"low"}],"severity":"high"}`,
	`{"decision":"approve","comments":"","blocking_issues":[]}`,
	`{"query":"q","max_sources":1e1}`,
}

// fastSeedRegistry registers the built-ins and every fastSchema, and
// returns the schemas in a fixed order with their families. A family
// filter (CLUTCH_FASTFUZZ_FAMILY=number,enum) keeps only those families.
func fastSeedRegistry(t testing.TB) (*Registry, []*Schema, []string) {
	t.Helper()
	reg := newRegistry(t, &Options{MaxPayloadBytes: 1 << 16})
	keep := map[string]bool{}
	if f := os.Getenv("CLUTCH_FASTFUZZ_FAMILY"); f != "" {
		for _, name := range strings.Split(f, ",") {
			keep[name] = true
		}
	}
	var out []*Schema
	var fams []string
	if len(keep) == 0 || keep["builtin"] {
		for _, pt := range Builtins() {
			s, _ := reg.Lookup(pt)
			out = append(out, s)
			fams = append(fams, "builtin")
		}
	}
	for i, fs := range fastSchemas {
		pt := fmt.Sprintf("fast.seed%d.v1", i)
		if err := reg.Register(pt, []byte(fs.doc)); err != nil {
			t.Fatalf("%s: %v", fs.doc, err)
		}
		if len(keep) == 0 || keep[fs.family] {
			s, _ := reg.Lookup(pt)
			out = append(out, s)
			fams = append(fams, fs.family)
		}
	}
	if len(out) == 0 {
		t.Fatalf("CLUTCH_FASTFUZZ_FAMILY=%s keeps no schema", os.Getenv("CLUTCH_FASTFUZZ_FAMILY"))
	}
	return reg, out, fams
}

// slowValidate is the slow path alone: what (*Schema).validate did before
// the fast path.
func slowValidate(s *Schema, payload []byte, prefix string) error {
	doc, err := decodePayload(payload, s.maxBytes)
	if err != nil {
		return err
	}
	return s.validateDoc(doc, prefix)
}

// sameError reports how got and want differ: nil or not, type, message,
// sentinels and, for a *ValidationError, the violations (in a canonical
// order: gojsonschema reports some in map order).
func sameError(got, want error) error {
	if (got == nil) != (want == nil) || got == nil {
		if (got == nil) != (want == nil) {
			return fmt.Errorf("got %v, want %v", got, want)
		}
		return nil
	}
	if reflect.TypeOf(got) != reflect.TypeOf(want) {
		return fmt.Errorf("got %T (%v), want %T (%v)", got, got, want, want)
	}
	for _, sentinel := range []error{ErrValidation, ErrInvalidJSON, ErrTooLarge, ErrInternal} {
		if errors.Is(got, sentinel) != errors.Is(want, sentinel) {
			return fmt.Errorf("errors.Is(%v) differs: got %v, want %v", sentinel, got, want)
		}
	}
	var gv, wv *ValidationError
	if errors.As(got, &gv) && errors.As(want, &wv) {
		if gv.PayloadType != wv.PayloadType || gv.Workflow != wv.Workflow || gv.Step != wv.Step {
			return fmt.Errorf("got %+v, want %+v", gv, wv)
		}
		g, w := canonical(gv.Violations), canonical(wv.Violations)
		if !slices.Equal(g, w) {
			return fmt.Errorf("violations:\n got %v\nwant %v", g, w)
		}
		return nil
	}
	if got.Error() != want.Error() {
		return fmt.Errorf("got %q, want %q", got, want)
	}
	return nil
}

func canonical(vs []Violation) []Violation {
	out := slices.Clone(vs)
	slices.SortFunc(out, func(a, b Violation) int {
		return strings.Compare(a.Path+"\x00"+a.Keyword+"\x00"+a.Message, b.Path+"\x00"+b.Keyword+"\x00"+b.Message)
	})
	return out
}
