package schema

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
)

func schemaErr(t *testing.T, err error, sentinel error) *SchemaError {
	t.Helper()
	var se *SchemaError
	if !errors.As(err, &se) {
		t.Fatalf("want *SchemaError, got %T: %v", err, err)
	}
	if !errors.Is(err, sentinel) {
		t.Fatalf("want %v, got %v", sentinel, err)
	}
	if protocol.CodeOf(err) != protocol.CodeOf(sentinel) {
		t.Fatalf("CodeOf = %s, want %s", protocol.CodeOf(err), protocol.CodeOf(sentinel))
	}
	return se
}

// Every refused keyword is refused wherever gojsonschema could meet it, with
// an error naming the keyword and the JSON pointer of the schema object
// holding it.
func TestRefusedKeywords(t *testing.T) {
	values := map[string]string{
		"$anchor": `"thing"`, "$dynamicRef": `"#meta"`, "$dynamicAnchor": `"meta"`,
		"$recursiveRef": `"#"`, "$recursiveAnchor": `true`, "prefixItems": `[{"type":"string"}]`,
		"dependentRequired": `{"a":["b"]}`, "dependentSchemas": `{"a":{"required":["b"]}}`,
		"unevaluatedProperties": `false`, "unevaluatedItems": `false`, "minContains": `2`, "maxContains": `3`,
	}
	if len(values) != len(RefusedKeywords()) {
		t.Fatalf("test covers %d keywords, RefusedKeywords has %d", len(values), len(RefusedKeywords()))
	}
	// Positions: %s is replaced by `"<keyword>": <value>`.
	positions := []struct{ name, doc, path string }{
		{"root", `{"type":"object", %s}`, ""},
		{"property", `{"properties":{"a":{%s}}}`, "/properties/a"},
		{"items", `{"items":{%s}}`, "/items"},
		{"items_array", `{"items":[{"type":"string"},{%s}]}`, "/items/1"},
		{"defs", `{"$defs":{"T":{%s}}}`, "/$defs/T"},
		{"definitions", `{"definitions":{"T":{%s}}}`, "/definitions/T"},
		{"allOf", `{"allOf":[{},{%s}]}`, "/allOf/1"},
		{"not", `{"not":{%s}}`, "/not"},
		{"additionalProperties", `{"additionalProperties":{%s}}`, "/additionalProperties"},
		{"dependencies", `{"dependencies":{"a":{%s}}}`, "/dependencies/a"},
		{"deep", `{"properties":{"a":{"items":{"anyOf":[{"properties":{"b":{%s}}}]}}}}`, "/properties/a/items/anyOf/0/properties/b"},
		{"unknown_keyword", `{"x-extension":{"nested":{%s}}}`, "/x-extension/nested"},
		{"default", `{"default":{%s}}`, "/default"},
	}
	reg := newRegistry(t, &Options{NoBuiltins: true})
	for kw, val := range values {
		for _, p := range positions {
			t.Run(kw+"/"+p.name, func(t *testing.T) {
				doc := strings.Replace(p.doc, "%s", `"`+kw+`": `+val, 1)
				se := schemaErr(t, reg.Register("test.refused.v1", []byte(doc)), ErrUnsupportedKeyword)
				if se.Keyword != kw || se.Path != p.path || se.PayloadType != "test.refused.v1" {
					t.Fatalf("got keyword %q path %q, want %q %q (%v)", se.Keyword, se.Path, kw, p.path, se)
				}
				if !contains(se.Error(), kw, "test.refused.v1") {
					t.Fatalf("message does not name the keyword: %v", se)
				}
			})
		}
	}
	if reg.Len() != 0 {
		t.Fatalf("a refused schema was registered")
	}
}

// Member names of properties & co. and the data of const/enum are not
// keywords: a property called prefixItems is fine.
func TestRefusedKeywordsExemptPositions(t *testing.T) {
	reg := newRegistry(t, &Options{NoBuiltins: true})
	doc := `{
		"type": "object",
		"properties": {"prefixItems": {"type": "string"}, "$anchor": {"type": "integer"}},
		"patternProperties": {"^unevaluatedItems$": {"type": "boolean"}},
		"required": ["prefixItems"],
		"dependencies": {"prefixItems": ["$anchor"]},
		"definitions": {"dependentRequired": {"type": "string"}},
		"enum": [{"prefixItems": "a", "$anchor": 1}, {"prefixItems": "b", "$anchor": 2}],
		"const": null
	}`
	// const null would refuse everything; drop it, keep the enum.
	doc = strings.Replace(doc, `,
		"const": null`, "", 1)
	if err := reg.Register("test.exempt.v1", []byte(doc)); err != nil {
		t.Fatal(err)
	}
	if err := reg.Validate("test.exempt.v1", []byte(`{"prefixItems":"a","$anchor":1}`)); err != nil {
		t.Fatal(err)
	}
	ve := validationErr(t, reg.Validate("test.exempt.v1", []byte(`{"prefixItems":"a"}`)))
	if !hasViolation(ve, "/$anchor", "dependencies") {
		t.Fatalf("got %v", ve)
	}
}

func TestRefs(t *testing.T) {
	cases := []struct {
		name, doc  string
		sentinel   error
		path, frag string // where, and a part of the message
	}{
		{"http", `{"properties":{"a":{"$ref":"http://127.0.0.1:1/x"}}}`, ErrRemoteRef, "/properties/a", "never fetched"},
		{"https", `{"$ref":"https://json-schema.org/draft/2020-12/schema"}`, ErrRemoteRef, "", "not a local reference"},
		{"file", `{"items":{"$ref":"file:///etc/passwd"}}`, ErrRemoteRef, "/items", "file:///etc/passwd"},
		{"relative_file", `{"$ref":"other.json#/definitions/a"}`, ErrRemoteRef, "", "other.json"},
		{"ref_in_unknown_keyword", `{"x-docs":{"see":{"$ref":"http://127.0.0.1:1/x"}}}`, ErrRemoteRef, "/x-docs/see", "never fetched"},
		{"anchor_ref", `{"$ref":"#thing","$defs":{"T":{"type":"string"}}}`, ErrUnsupportedKeyword, "", "anchor"},
		{"unresolved", `{"properties":{"a":{"$ref":"#/$defs/Missing"}}}`, ErrInvalidSchema, "/properties/a", "does not resolve"},
		{"not_a_schema", `{"x-data":{"n":5},"properties":{"a":{"$ref":"#/x-data/n"}}}`, ErrInvalidSchema, "/properties/a", "does not point at a schema"},
		{"not_a_string", `{"properties":{"a":{"$ref":5}}}`, ErrInvalidSchema, "/properties/a", "must be a string"},
		{"nested_id", `{"properties":{"a":{"$id":"http://example.com/a.json","type":"string"}}}`, ErrUnsupportedKeyword, "/properties/a", "base URI"},
		{"nested_draft4_id", `{"definitions":{"a":{"id":"a.json"}}}`, ErrUnsupportedKeyword, "/definitions/a", "base URI"},
	}
	reg := newRegistry(t, &Options{NoBuiltins: true})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			se := schemaErr(t, reg.Register("test.refs.v1", []byte(c.doc)), c.sentinel)
			if time.Since(start) > time.Second {
				t.Errorf("took %v: did it try to dial?", time.Since(start))
			}
			if se.Path != c.path || !strings.Contains(se.Error(), c.frag) {
				t.Fatalf("got path %q: %v; want path %q and %q", se.Path, se, c.path, c.frag)
			}
		})
	}
}

// A remote reference is never fetched: neither through the checks nor,
// should they miss one, through gojsonschema's loaders.
func TestRemoteRefsAreNeverFetched(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.Write([]byte(`{"type":"string"}`))
	}))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "s.json")
	if err := os.WriteFile(file, []byte(`{"type":"string"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := newRegistry(t, &Options{NoBuiltins: true})
	for _, ref := range []string{srv.URL + "/s.json", "file://" + file} {
		doc := `{"properties":{"a":{"$ref":"` + ref + `"}}}`
		schemaErr(t, reg.Register("test.remote.v1", []byte(doc)), ErrRemoteRef)

		// Bypass the checks: the loader handed to gojsonschema refuses too.
		pr, err := decodeJSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		_, err = compile("test.remote.v1", pr)
		schemaErr(t, err, ErrRemoteRef)
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("the server was hit %d times", n)
	}
}

// $ref loops that never descend into the instance overflow gojsonschema's
// stack (a fatal error, measured); they are refused. Loops through
// properties, items & co. are fine: the instance is finite.
func TestRefCycles(t *testing.T) {
	refused := []struct{ name, doc, path string }{
		{"self_root", `{"$ref":"#"}`, ""},
		{"allOf_root", `{"allOf":[{"$ref":"#"}]}`, ""},
		{"def_self", `{"definitions":{"a":{"$ref":"#/definitions/a"}},"properties":{"x":{"$ref":"#/definitions/a"}}}`, "/definitions/a"},
		{"mutual", `{"$defs":{"a":{"anyOf":[{"$ref":"#/$defs/b"}]},"b":{"not":{"$ref":"#/$defs/a"}}},"$ref":"#/$defs/a"}`, "/$defs/a"},
		{"if_then", `{"$defs":{"a":{"if":{"$ref":"#/$defs/a"}}}}`, "/$defs/a"},
		{"dependencies", `{"dependencies":{"x":{"$ref":"#"}}}`, ""},
		{"via_sibling_rewrite", `{"$defs":{"a":{"$ref":"#/$defs/a","type":"object"}}}`, "/$defs/a"},
	}
	reg := newRegistry(t, &Options{NoBuiltins: true})
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			se := schemaErr(t, reg.Register("test.cycle.v1", []byte(c.doc)), ErrRefCycle)
			if se.Path != c.path || !strings.Contains(se.Error(), "recurse forever") {
				t.Fatalf("got path %q: %v", se.Path, se)
			}
		})
	}

	// A recursive tree type is fine and validates at any depth.
	tree := `{"$defs":{"node":{"type":"object","properties":{"v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},"required":["v"]}},"$ref":"#/$defs/node"}`
	if err := reg.Register("test.tree.v1", []byte(tree)); err != nil {
		t.Fatal(err)
	}
	deep := `{"v":1}`
	for range 200 {
		deep = `{"v":1,"kids":[` + deep + `]}`
	}
	if err := reg.Validate("test.tree.v1", []byte(deep)); err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(deep, `{"v":1}`, `{"v":"x"}`, 1)
	ve := validationErr(t, reg.Validate("test.tree.v1", []byte(bad)))
	if p := ve.Violations[0].Path; !strings.HasPrefix(p, "/kids/0/kids/0/") || !strings.HasSuffix(p, "/v") {
		t.Fatalf("path %q", p)
	}
	// And "#" below the root is a recursion through properties.
	if err := reg.Register("test.rec.v1", []byte(`{"type":"object","properties":{"child":{"$ref":"#"}}}`)); err != nil {
		t.Fatal(err)
	}
}

// Keywords next to $ref are enforced (2019-09+ semantics) unless the
// document declares draft 4, 6 or 7, where they are ignored by definition.
func TestRefSiblings(t *testing.T) {
	reg := newRegistry(t, &Options{NoBuiltins: true})
	doc := `{"$defs":{"obj":{"type":"object"}},"properties":{"a":{"$ref":"#/$defs/obj","required":["id"]}}}`
	if err := reg.Register("test.sibling.v1", []byte(doc)); err != nil {
		t.Fatal(err)
	}
	ve := validationErr(t, reg.Validate("test.sibling.v1", []byte(`{"a":{}}`)))
	if !hasViolation(ve, "/a/id", "required") {
		t.Fatalf("sibling of $ref not enforced: %v", ve)
	}
	if err := reg.Validate("test.sibling.v1", []byte(`{"a":{"id":1}}`)); err != nil {
		t.Fatal(err)
	}
	// Schema.JSON is the document as registered.
	s, _ := reg.Lookup("test.sibling.v1")
	if string(s.JSON()) != doc {
		t.Fatalf("JSON() = %s", s.JSON())
	}

	// Also where a $ref points outside the usual schema positions.
	outside := `{"x-types":{"obj":{"type":"object"},"withID":{"$ref":"#/x-types/obj","required":["id"]}},"properties":{"a":{"$ref":"#/x-types/withID"}}}`
	if err := reg.Register("test.sibling.v3", []byte(outside)); err != nil {
		t.Fatal(err)
	}
	ve = validationErr(t, reg.Validate("test.sibling.v3", []byte(`{"a":{}}`)))
	if !hasViolation(ve, "/a/id", "required") {
		t.Fatalf("sibling of $ref not enforced: %v", ve)
	}

	draft7 := `{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"obj":{"type":"object"}},"properties":{"a":{"$ref":"#/definitions/obj","required":["id"]}}}`
	if err := reg.Register("test.sibling.v2", []byte(draft7)); err != nil {
		t.Fatal(err)
	}
	if err := reg.Validate("test.sibling.v2", []byte(`{"a":{}}`)); err != nil {
		t.Fatalf("draft 7 ignores keywords next to $ref: %v", err)
	}
}

func TestSchemaForms(t *testing.T) {
	reg := newRegistry(t, &Options{NoBuiltins: true})
	// A root $id is allowed, and local refs resolve against it without a fetch.
	withID := `{"$id":"https://example.com/schemas/person.json","definitions":{"name":{"type":"string"}},"properties":{"name":{"$ref":"#/definitions/name"}}}`
	if err := reg.Register("test.id.v1", []byte(withID)); err != nil {
		t.Fatal(err)
	}
	ve := validationErr(t, reg.Validate("test.id.v1", []byte(`{"name":1}`)))
	if !hasViolation(ve, "/name", "type") {
		t.Fatal(ve)
	}
	// Boolean schemas.
	if err := reg.Register("test.true.v1", []byte(`true`)); err != nil {
		t.Fatal(err)
	}
	if err := reg.Validate("test.true.v1", []byte(`[1,"x"]`)); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register("test.false.v1", []byte(`false`)); err != nil {
		t.Fatal(err)
	}
	validationErr(t, reg.Validate("test.false.v1", []byte(`{}`)))
	// Pointer escapes in refs.
	esc := `{"$defs":{"a/b":{"type":"string"},"c~d":{"type":"integer"}},"properties":{"x":{"$ref":"#/$defs/a~1b"},"y":{"$ref":"#/$defs/c~0d"}}}`
	if err := reg.Register("test.escape.v1", []byte(esc)); err != nil {
		t.Fatal(err)
	}
	ve = validationErr(t, reg.Validate("test.escape.v1", []byte(`{"x":1,"y":"s"}`)))
	if !hasViolation(ve, "/x", "type") || !hasViolation(ve, "/y", "type") {
		t.Fatal(ve)
	}

	invalid := []struct{ name, doc string }{
		{"not_json", `{"type":`},
		{"trailing", `{"type":"string"} {}`},
		{"empty", ``},
		{"array", `[{"type":"string"}]`},
		{"string", `"string"`},
		{"bad_type", `{"type":5}`},
		{"unknown_type", `{"type":"strin"}`},
		{"bad_pattern", `{"pattern":"("}`},
		{"negative_minItems", `{"minItems":-1}`},
		{"bad_required", `{"required":"a"}`},
		{"huge_number", `{"maximum":1e999999}`},
		{"too_deep", strings.Repeat(`{"not":`, 300) + `{}` + strings.Repeat(`}`, 300)},
	}
	for _, c := range invalid {
		t.Run(c.name, func(t *testing.T) {
			schemaErr(t, reg.Register("test.invalid.v1", []byte(c.doc)), ErrInvalidSchema)
		})
	}
	if _, ok := reg.Lookup("test.invalid.v1"); ok {
		t.Fatal("an invalid schema was registered")
	}
}

// gojsonschema registers string $id/id members as documents and resolves
// "#/..." against them; each of these made it loop until a fatal stack
// overflow (measured). The registry drops ids at the root and in data, so
// references mean what they say, and refuses them inside schemas.
func TestIdentifiersCannotRedirectRefs(t *testing.T) {
	reg := newRegistry(t, &Options{NoBuiltins: true})
	cases := []struct{ name, doc, payload, path string }{
		{"root_id_fragment", `{"$id":"#/definitions/a","definitions":{"a":{"type":"string"}},"allOf":[{"$ref":"#/definitions/a"}]}`, `1`, ""},
		{"id_in_unknown_keyword", `{"x-foo":{"$id":"#/definitions/a","allOf":[{"$ref":"#/definitions/a"}]},"definitions":{"a":{"type":"string"}},"allOf":[{"$ref":"#/definitions/a"}]}`, `1`, ""},
		{"id_in_default", `{"default":{"id":"#/definitions/a","allOf":[{"$ref":"#/definitions/a"}]},"definitions":{"a":{"type":"string"}},"allOf":[{"$ref":"#/definitions/a"}]}`, `1`, ""},
		{"id_above_ref_target", `{"s":{"type":"string"},"x":{"id":"http://evil/","s":{"$ref":"#/s"}},"properties":{"p":{"$ref":"#/x/s"}}}`, `{"p":1}`, "/p"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pt := "test.ids.v" + string(rune('1'+i))
			if err := reg.Register(pt, []byte(c.doc)); err != nil {
				t.Fatal(err)
			}
			ve := validationErr(t, reg.Validate(pt, []byte(c.payload)))
			if len(ve.Violations) != 1 || !hasViolation(ve, c.path, "type") {
				t.Fatalf("got %v", ve)
			}
			s, _ := reg.Lookup(pt)
			if string(s.JSON()) != c.doc {
				t.Fatal("JSON() is not the document as registered")
			}
		})
	}
	// Identifiers inside enum values are data, even in a region a $ref
	// turns into a schema.
	if err := reg.Register("test.ids.v8", []byte(`{"x-t":{"enum":[{"id":"a"}]},"$ref":"#/x-t"}`)); err != nil {
		t.Fatal(err)
	}
	if err := reg.Validate("test.ids.v8", []byte(`{"id":"a"}`)); err != nil {
		t.Fatal(err)
	}
	validationErr(t, reg.Validate("test.ids.v8", []byte(`{}`)))

	// A name of $defs mapped to a string is not a schema (gojsonschema would
	// take {"$defs": {"$id": "#/x"}} for an identifier).
	se := schemaErr(t, reg.Register("test.ids.v9", []byte(`{"$defs":{"$id":"#/x"},"x":{"type":"string"}}`)), ErrInvalidSchema)
	if se.Path != "/$defs/$id" {
		t.Fatal(se)
	}
}
