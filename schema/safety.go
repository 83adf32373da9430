package schema

import (
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// refusedKeywords are refused anywhere in a schema document, with the reason
// given in the error. gojsonschema v1.2.0 implements drafts 4, 6 and 7; it
// ignores the 2019-09/2020-12 assertions below (so an invalid payload would
// pass), and a $ref to an $anchor recurses until the process dies with a
// fatal stack overflow (measured: research/perf-baselines.md §5).
var refusedKeywords = map[string]string{
	"$anchor":               "anchors are not supported by gojsonschema; a $ref to one overflows the stack",
	"$dynamicRef":           "draft 2020-12 dynamic references are not supported by gojsonschema",
	"$dynamicAnchor":        "draft 2020-12 dynamic anchors are not supported by gojsonschema",
	"$recursiveRef":         "draft 2019-09 recursive references are not supported by gojsonschema",
	"$recursiveAnchor":      "draft 2019-09 recursive anchors are not supported by gojsonschema",
	"prefixItems":           "gojsonschema ignores it (draft 2020-12); use an items array (draft 7)",
	"dependentRequired":     "gojsonschema ignores it (draft 2019-09); use dependencies (draft 7)",
	"dependentSchemas":      "gojsonschema ignores it (draft 2019-09); use dependencies (draft 7)",
	"unevaluatedProperties": "gojsonschema ignores it (draft 2019-09); use additionalProperties",
	"unevaluatedItems":      "gojsonschema ignores it (draft 2019-09); use additionalItems",
	"minContains":           "gojsonschema ignores it (draft 2019-09)",
	"maxContains":           "gojsonschema ignores it (draft 2019-09)",
}

// RefusedKeywords returns the keywords a schema may not use anywhere (see
// the package doc, "Caveats"), sorted.
func RefusedKeywords() []string {
	out := make([]string, 0, len(refusedKeywords))
	for k := range refusedKeywords {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Keywords whose value is one schema applied to the same instance (in place)
// or to parts of it (descending). Only in-place edges can form an endless
// loop during validation: a descending keyword consumes one level of the
// instance, which is finite.
var (
	inPlaceSchemaKeywords    = []string{"not", "if", "then", "else"}
	inPlaceArrayKeywords     = []string{"allOf", "anyOf", "oneOf"}
	descendingSchemaKeywords = map[string]bool{
		"additionalItems": true, "additionalProperties": true, "contains": true, "propertyNames": true,
	}
	// schema maps whose keys are names, not keywords.
	namedSchemaMaps = map[string]bool{
		"properties": true, "patternProperties": true, "definitions": true, "$defs": true,
	}
	// Keywords that may sit next to $ref without changing what it means.
	refAnnotations = map[string]bool{
		"$ref": true, "$schema": true, "$id": true, "id": true, "$comment": true, "title": true,
		"description": true, "default": true, "examples": true, "deprecated": true,
		"readOnly": true, "writeOnly": true, "definitions": true, "$defs": true,
	}
)

// prepared is a schema that passed the safety checks, ready to compile.
type prepared struct {
	doc        any             // the normalized document, decoded with UseNumber
	rootProps  map[string]bool // top-level property names, nil when not known
	rootClosed bool            // additionalProperties is false at the root
}

// prepareSchema decodes a schema document and refuses what gojsonschema
// cannot enforce or would crash on. It returns the normalized document.
func prepareSchema(payloadType string, data []byte) (*prepared, error) {
	doc, err := decodeJSON(data)
	if err != nil {
		return nil, &SchemaError{PayloadType: payloadType, Detail: "schema is not valid JSON: " + err.Error(), Err: ErrInvalidSchema}
	}
	switch doc.(type) {
	case map[string]any, bool:
	default:
		return nil, &SchemaError{PayloadType: payloadType, Detail: "a schema must be a JSON object or a boolean", Err: ErrInvalidSchema}
	}
	if tooDeep(doc, maxSchemaDepth) {
		return nil, &SchemaError{PayloadType: payloadType, Detail: fmt.Sprintf("schema is nested deeper than %d levels", maxSchemaDepth), Err: ErrInvalidSchema}
	}
	if n, ok := hugeNumber(doc); ok {
		return nil, &SchemaError{PayloadType: payloadType, Detail: fmt.Sprintf("number %s is beyond what gojsonschema handles in reasonable time (at most %d characters, exponent at most %d)", abbreviate(string(n)), maxNumberLen, maxExponent), Err: ErrInvalidSchema}
	}
	c := &checker{pt: payloadType, root: doc, walked: map[string]bool{}, state: map[string]uint8{}}
	c.legacy = declaresOldDraft(doc)
	if !c.legacy {
		c.normalize(doc, true)
	}
	if err := c.walk(doc, "", modeSchema); err != nil {
		return nil, err
	}
	// Walk what $ref points at (it may live outside the usual schema
	// positions), then look for in-place cycles from every schema node.
	for len(c.pending) > 0 {
		p := c.pending[0]
		c.pending = c.pending[1:]
		if c.walked[p] {
			continue
		}
		v, _ := resolvePointer(doc, p)
		if !c.legacy {
			c.normalize(v, true) // a target outside the usual schema positions
		}
		if err := c.walk(v, p, modeSchema); err != nil {
			return nil, err
		}
	}
	ptrs := make([]string, 0, len(c.walked))
	for p := range c.walked {
		ptrs = append(ptrs, p)
	}
	sort.Strings(ptrs)
	for _, p := range ptrs {
		v, _ := resolvePointer(doc, p)
		if err := c.cycle(v, p, nil); err != nil {
			return nil, err
		}
	}
	pr := &prepared{doc: doc}
	pr.rootProps, pr.rootClosed = rootProperties(doc)
	return pr, nil
}

// maxSchemaDepth bounds the nesting of a schema document (objects and
// arrays). Real schemas stay far below it; the checks' cost grows with the
// square of the depth.
const maxSchemaDepth = 256

func tooDeep(v any, limit int) bool {
	if limit < 0 {
		return true
	}
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			if tooDeep(e, limit-1) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if tooDeep(e, limit-1) {
				return true
			}
		}
	}
	return false
}

// declaresOldDraft reports whether the document declares draft 4, 6 or 7,
// under which keywords next to $ref are ignored by definition.
func declaresOldDraft(doc any) bool {
	m, ok := doc.(map[string]any)
	if !ok {
		return false
	}
	s, _ := m["$schema"].(string)
	s = strings.TrimSuffix(strings.TrimPrefix(strings.TrimPrefix(s, "http://"), "https://"), "#")
	switch s {
	case "json-schema.org/draft-04/schema", "json-schema.org/draft-06/schema", "json-schema.org/draft-07/schema":
		return true
	}
	return false
}

type walkMode uint8

const (
	modeSchema walkMode = iota // a schema: keys are keywords
	modeAny                    // a value of an unknown keyword, default, examples, ...
)

type checker struct {
	pt      string
	root    any
	legacy  bool             // draft 4/6/7 declared
	walked  map[string]bool  // schema nodes checked, by pointer
	pending []string         // $ref targets still to check
	state   map[string]uint8 // cycle search: 1 on the stack, 2 done
}

func (c *checker) fail(ptr, kw, detail string, err error) error {
	return &SchemaError{PayloadType: c.pt, Path: ptr, Keyword: kw, Detail: detail, Err: err}
}

// normalize rewrites {"$ref": R, <assertions>...} into
// {<assertions>..., "allOf": [..., {"$ref": R}]}. Drafts 4–7 ignore keywords
// next to $ref and gojsonschema does so too; 2019-09 and later (what
// invopop/jsonschema emits, and what most hand-written schemas assume) apply
// them. The rewrite makes gojsonschema enforce them. Only entries are
// appended, so pointers into the original document stay valid.
func (c *checker) normalize(v any, schemaPos bool) {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			c.normalize(e, schemaPos)
		}
	case map[string]any:
		if !schemaPos {
			return
		}
		if ref, ok := x["$ref"]; ok {
			extra := false
			for k := range x {
				if !refAnnotations[k] {
					extra = true
					break
				}
			}
			if extra {
				delete(x, "$ref")
				all, _ := x["allOf"].([]any)
				x["allOf"] = append(all, map[string]any{"$ref": ref})
			}
		}
		for k, e := range x {
			switch {
			case k == "const" || k == "enum":
			case namedSchemaMaps[k] || k == "dependencies":
				if m, ok := e.(map[string]any); ok {
					for _, s := range m {
						c.normalize(s, true)
					}
				}
			case k == "items" || descendingSchemaKeywords[k] || isInPlace(k):
				c.normalize(e, true)
			}
		}
	}
}

func isInPlace(k string) bool {
	switch k {
	case "not", "if", "then", "else", "allOf", "anyOf", "oneOf":
		return true
	}
	return false
}

// walk checks one node of the document and everything below it.
func (c *checker) walk(v any, ptr string, mode walkMode) error {
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			if err := c.walk(e, ptr+"/"+strconv.Itoa(i), mode); err != nil {
				return err
			}
		}
		return nil
	case map[string]any:
		if mode == modeSchema {
			if c.walked[ptr] {
				return nil
			}
			c.walked[ptr] = true
		}
		for _, k := range sortedKeys(x) {
			e := x[k]
			kp := ptr + "/" + escapePointer(k)
			if k == "const" || k == "enum" {
				// Plain data, at any depth: gojsonschema neither reads it as
				// a schema nor looks for identifiers in it.
				continue
			}
			if why, bad := refusedKeywords[k]; bad {
				return c.fail(ptr, k, why, ErrUnsupportedKeyword)
			}
			if k == "$ref" {
				if err := c.checkRef(e, kp, mode); err != nil {
					return err
				}
				continue
			}
			if _, isStr := e.(string); isStr && (k == "$id" || k == "id") {
				// gojsonschema registers every string $id/id it meets
				// (outside const and enum) as a document of its own, and
				// rewrites the $refs below it against it: an id with a
				// fragment hijacks "#/..." references, and one above a
				// $ref target changes what that target's references mean.
				// Both can make it loop until the stack overflows. Below
				// the root in a schema, refuse it; at the root and in
				// annotations and data, where it means nothing for
				// validation, drop it from the compiled copy, so every
				// "#/..." resolves against the root exactly as checked here.
				if mode == modeSchema && ptr != "" {
					return c.fail(ptr, k, "an identifier below the root changes the base URI of $ref; only the root may have one", ErrUnsupportedKeyword)
				}
				delete(x, k)
				continue
			}
			if mode == modeAny {
				if err := c.walk(e, kp, modeAny); err != nil {
					return err
				}
				continue
			}
			switch {
			case namedSchemaMaps[k]:
				if m, ok := e.(map[string]any); ok {
					for _, name := range sortedKeys(m) {
						switch m[name].(type) {
						case map[string]any, bool:
						default:
							return c.fail(kp+"/"+escapePointer(name), "", k+" must map names to schemas (objects or booleans)", ErrInvalidSchema)
						}
						if err := c.walk(m[name], kp+"/"+escapePointer(name), modeSchema); err != nil {
							return err
						}
					}
					continue
				}
				if err := c.walk(e, kp, modeAny); err != nil {
					return err
				}
			case k == "dependencies":
				if m, ok := e.(map[string]any); ok {
					for _, name := range sortedKeys(m) {
						d := m[name]
						dm := modeSchema
						if _, isArr := d.([]any); isArr {
							dm = modeAny // a list of property names
						}
						if err := c.walk(d, kp+"/"+escapePointer(name), dm); err != nil {
							return err
						}
					}
					continue
				}
				if err := c.walk(e, kp, modeAny); err != nil {
					return err
				}
			case k == "items" || descendingSchemaKeywords[k] || isInPlace(k):
				if err := c.walk(e, kp, modeSchema); err != nil {
					return err
				}
			default:
				// Unknown keywords, default, examples, title, ...: gojsonschema
				// may still walk them for $id and $ref, so they are checked too.
				if err := c.walk(e, kp, modeAny); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkRef accepts only "#" and "#/json/pointer" references that resolve
// inside the document. Anything else would make gojsonschema load a URL or
// a file, or look up a plain-name fragment (an anchor).
func (c *checker) checkRef(v any, ptr string, mode walkMode) error {
	s, ok := v.(string)
	if !ok {
		if mode == modeAny {
			return c.walk(v, ptr, modeAny)
		}
		return c.fail(parentPointer(ptr), "$ref", "$ref must be a string", ErrInvalidSchema)
	}
	at := parentPointer(ptr)
	if !strings.HasPrefix(s, "#") {
		return c.fail(at, "$ref", fmt.Sprintf("$ref %q is not a local reference (\"#/...\"); remote references are never fetched", s), ErrRemoteRef)
	}
	u, err := url.Parse(s)
	if err != nil {
		return c.fail(at, "$ref", fmt.Sprintf("$ref %q is not a valid URI reference: %v", s, err), ErrInvalidSchema)
	}
	frag := u.Fragment
	if frag != "" && frag[0] != '/' {
		return c.fail(at, "$ref", fmt.Sprintf("$ref %q names an anchor; anchors are not supported (a $ref to one overflows gojsonschema's stack)", s), ErrUnsupportedKeyword)
	}
	if mode == modeAny {
		return nil // never followed by gojsonschema
	}
	target, ok := resolvePointer(c.root, frag)
	if !ok {
		return c.fail(at, "$ref", fmt.Sprintf("$ref %q does not resolve inside the schema", s), ErrInvalidSchema)
	}
	switch target.(type) {
	case map[string]any, bool:
	default:
		return c.fail(at, "$ref", fmt.Sprintf("$ref %q does not point at a schema", s), ErrInvalidSchema)
	}
	c.pending = append(c.pending, frag)
	return nil
}

// cycle is a depth-first search over in-place edges: $ref and the
// applicators that apply a subschema to the same instance. A back edge is a
// loop that gojsonschema would follow until the stack overflows.
func (c *checker) cycle(v any, ptr string, stack []string) error {
	switch c.state[ptr] {
	case 1:
		loop := make([]string, 0, len(stack)+1)
		for i := len(stack) - 1; i >= 0; i-- {
			if stack[i] == ptr {
				stack = stack[i:]
				break
			}
		}
		for _, p := range append(stack, ptr) {
			loop = append(loop, "#"+p)
		}
		return c.fail(ptr, "$ref", "a $ref loop that never descends into the instance ("+strings.Join(loop, " → ")+"); validation would recurse forever", ErrRefCycle)
	case 2:
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		c.state[ptr] = 2
		return nil
	}
	c.state[ptr] = 1
	stack = append(stack, ptr)
	next := func(child any, cp string) error { return c.cycle(child, cp, stack) }
	if ref, ok := m["$ref"].(string); ok {
		u, err := url.Parse(ref)
		if err == nil {
			tp := u.Fragment
			if t, ok := resolvePointer(c.root, tp); ok {
				if err := next(t, tp); err != nil {
					return err
				}
			}
		}
	}
	for _, k := range inPlaceSchemaKeywords {
		if e, ok := m[k]; ok {
			if err := next(e, ptr+"/"+k); err != nil {
				return err
			}
		}
	}
	for _, k := range inPlaceArrayKeywords {
		if arr, ok := m[k].([]any); ok {
			for i, e := range arr {
				if err := next(e, ptr+"/"+k+"/"+strconv.Itoa(i)); err != nil {
					return err
				}
			}
		}
	}
	if deps, ok := m["dependencies"].(map[string]any); ok {
		for _, name := range sortedKeys(deps) {
			if err := next(deps[name], ptr+"/dependencies/"+escapePointer(name)); err != nil {
				return err
			}
		}
	}
	c.state[ptr] = 2
	return nil
}

// rootProperties returns the top-level property names of a schema and
// whether other members are refused, following a root $ref. It returns nil
// when the schema does not say.
func rootProperties(root any) (map[string]bool, bool) {
	node := root
	for range 8 {
		m, ok := node.(map[string]any)
		if !ok {
			return nil, false
		}
		if ref, ok := m["$ref"].(string); ok {
			u, err := url.Parse(ref)
			if err != nil {
				return nil, false
			}
			if node, ok = resolvePointer(root, u.Fragment); !ok {
				return nil, false
			}
			continue
		}
		props, ok := m["properties"].(map[string]any)
		if !ok {
			return nil, false
		}
		names := make(map[string]bool, len(props))
		for k := range props {
			names[k] = true
		}
		closed := false
		if ap, ok := m["additionalProperties"].(bool); ok && !ap {
			if _, hasPattern := m["patternProperties"]; !hasPattern {
				closed = true
			}
		}
		return names, closed
	}
	return nil, false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
