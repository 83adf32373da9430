package mcp

import (
	"maps"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
)

// singleTyped rewrites an input schema inferred from a Go type so that
// every schema in it has one "type" (docs/protocol.md §15.1): hosts that
// map tool schemas onto a single-type dialect (Gemini-style function
// declarations) refuse ["null", "array"], and the MCP Inspector's --strict
// flags it. An optional member is one not in "required", never a
// nullable one: ["null", T] becomes T. A member of Go type any, which has
// no type at all, becomes an anyOf of the single types a JSON value may
// have. The handler drops members given as null before it validates, so
// a host that sends null for "not given" is still understood.
func singleTyped(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if len(s.Types) > 0 {
		types := slices.DeleteFunc(slices.Clone(s.Types), func(t string) bool { return t == "null" })
		if len(types) == 1 {
			s.Type, s.Types = types[0], nil
		} else {
			s.Types = nil
			for _, t := range types {
				s.AnyOf = append(s.AnyOf, &jsonschema.Schema{Type: t})
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
		p := s.Properties[k]
		if p.Type == "" && len(p.Types) == 0 && len(p.AnyOf) == 0 && p.Ref == "" {
			p.AnyOf = anyValue()
		}
		singleTyped(p)
	}
	if s.Type == "array" && s.Items == nil {
		s.Items = &jsonschema.Schema{AnyOf: anyValue()}
	}
	singleTyped(s.Items)
	for _, c := range s.AnyOf {
		singleTyped(c)
	}
}

// anyValue is "any JSON value but null" with one type per branch.
func anyValue() []*jsonschema.Schema {
	return []*jsonschema.Schema{
		{Type: "string"}, {Type: "number"}, {Type: "boolean"}, {Type: "object"},
		{Type: "array", Items: &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
			{Type: "string"}, {Type: "number"}, {Type: "boolean"}, {Type: "object"},
		}}},
	}
}

// dropNulls removes the members of args given as null: for a tool, null
// is "not given" (see singleTyped).
func dropNulls(args map[string]any) {
	for k, v := range args {
		if v == nil {
			delete(args, k)
		}
	}
}
