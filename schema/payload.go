package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/xeipuuv/gojsonschema"
)

// decodePayload decodes one JSON value for gojsonschema (numbers as
// json.Number) with the size limit, refusing trailing data. It does the
// decoding gojsonschema's own bytes loader would do, plus the trailing-data
// check that loader lacks, so validating costs one decode.
func decodePayload(payload []byte, maxBytes int) (any, error) {
	if len(payload) > maxBytes {
		return nil, errorf(ErrTooLarge, "payload is %d bytes, limit %d", len(payload), maxBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(payload))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if len(bytes.TrimSpace(payload)) == 0 {
			return nil, errorf(ErrInvalidJSON, "payload is empty")
		}
		return nil, wrapCause(ErrInvalidJSON, err, "payload")
	}
	if off := dec.InputOffset(); off < int64(len(payload)) {
		for _, c := range payload[off:] {
			if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
				return nil, errorf(ErrInvalidJSON, "payload has data after the JSON value at offset %d", off)
			}
		}
	}
	if n, ok := hugeNumber(v); ok {
		return nil, errorf(ErrTooLarge, "payload number %s is beyond what is validated (at most %d characters, exponent at most %d)", abbreviate(string(n)), maxNumberLen, maxExponent)
	}
	return v, nil
}

// Limits on number literals. gojsonschema turns every number of a payload
// into a big.Rat, whatever the schema says; 1e999999 alone costs about a
// quarter of a second (measured), so a small payload could burn minutes of
// CPU. No real payload comes near these limits (float64 stops at 1e308).
const (
	maxNumberLen = 256
	maxExponent  = 1000
)

func abbreviate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// hugeNumber returns the first number of v over the limits.
func hugeNumber(v any) (json.Number, bool) {
	switch x := v.(type) {
	case json.Number:
		if len(x) > maxNumberLen {
			return x, true
		}
		if i := strings.IndexAny(string(x), "eE"); i >= 0 {
			exp := strings.TrimLeft(string(x[i+1:]), "+-")
			exp = strings.TrimLeft(exp, "0")
			if len(exp) > 4 || (len(exp) == 4 && exp > "1000") {
				return x, true
			}
		}
	case map[string]any:
		for _, e := range x {
			if n, ok := hugeNumber(e); ok {
				return n, true
			}
		}
	case []any:
		for _, e := range x {
			if n, ok := hugeNumber(e); ok {
				return n, true
			}
		}
	}
	return "", false
}

// run validates a decoded document, turning a gojsonschema panic into an
// error.
func run(s *gojsonschema.Schema, doc any) (res *gojsonschema.Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, wrapCause(ErrInternal, fmt.Errorf("%v", r), "gojsonschema panicked while validating")
		}
	}()
	return s.Validate(gojsonschema.NewRawLoader(doc))
}

// keywords maps gojsonschema's error types to the JSON Schema keyword that
// failed.
var keywords = map[string]string{
	"false":                           "false",
	"required":                        "required",
	"invalid_type":                    "type",
	"number_any_of":                   "anyOf",
	"number_one_of":                   "oneOf",
	"number_all_of":                   "allOf",
	"number_not":                      "not",
	"missing_dependency":              "dependencies",
	"internal":                        "internal",
	"const":                           "const",
	"enum":                            "enum",
	"array_no_additional_items":       "additionalItems",
	"array_min_items":                 "minItems",
	"array_max_items":                 "maxItems",
	"unique":                          "uniqueItems",
	"contains":                        "contains",
	"array_min_properties":            "minProperties",
	"array_max_properties":            "maxProperties",
	"additional_property_not_allowed": "additionalProperties",
	"invalid_property_pattern":        "patternProperties",
	"invalid_property_name":           "propertyNames",
	"string_gte":                      "minLength",
	"string_lte":                      "maxLength",
	"pattern":                         "pattern",
	"format":                          "format",
	"multiple_of":                     "multipleOf",
	"number_gte":                      "minimum",
	"number_gt":                       "exclusiveMinimum",
	"number_lte":                      "maximum",
	"number_lt":                       "exclusiveMaximum",
	"condition_then":                  "then",
	"condition_else":                  "else",
}

// ctxSep joins context segments so that they can be split again; a member
// name that contains it would only be reported under a wrong path.
const ctxSep = "\x00\x1f"

// violations converts gojsonschema's result errors. prefix is prepended to
// every path ("/payload" when the document validated is a message).
func violations(errs []gojsonschema.ResultError, prefix string) []Violation {
	out := make([]Violation, 0, len(errs))
	for _, e := range errs {
		kw, ok := keywords[e.Type()]
		if !ok {
			kw = e.Type()
		}
		if kw == "allOf" && len(errs) > 1 {
			// gojsonschema reports the failing subschemas' errors too, so
			// "must validate all the schemas" adds nothing.
			continue
		}
		path := contextPointer(e.Context())
		switch kw {
		case "required", "additionalProperties":
			if p, ok := e.Details()["property"].(string); ok {
				path += "/" + escapePointer(p)
			}
		case "dependencies":
			if p, ok := e.Details()["dependency"].(string); ok {
				path += "/" + escapePointer(p)
			}
		}
		out = append(out, Violation{Path: prefix + path, Keyword: kw, Message: e.Description()})
	}
	sortViolations(out)
	return out
}

func sortViolations(vs []Violation) {
	sort.SliceStable(vs, func(i, j int) bool {
		if vs[i].Path != vs[j].Path {
			return vs[i].Path < vs[j].Path
		}
		return vs[i].Keyword < vs[j].Keyword
	})
}

// contextPointer turns gojsonschema's context ("(root)", "findings", "0")
// into a JSON pointer ("/findings/0").
func contextPointer(c *gojsonschema.JsonContext) string {
	if c == nil {
		return ""
	}
	segs := strings.Split(c.String(ctxSep), ctxSep)
	var b strings.Builder
	for _, s := range segs[1:] { // segs[0] is "(root)"
		b.WriteByte('/')
		b.WriteString(escapePointer(s))
	}
	return b.String()
}
