package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/xeipuuv/gojsonschema"

	"github.com/clutchprotocol/clutch/protocol"
)

// Validate validates a payload (raw JSON) against the schema. Violation
// paths are relative to the payload. See [Registry.Validate].
func (s *Schema) Validate(payload []byte) error { return s.validate(payload, "") }

func (s *Schema) validate(payload []byte, prefix string) error {
	doc, err := decodePayload(payload, s.maxBytes)
	if err != nil {
		return err
	}
	return s.validateDoc(doc, prefix)
}

func (s *Schema) validateDoc(doc any, prefix string) error {
	res, err := run(s.compiled, doc)
	if err != nil {
		return err
	}
	if res.Valid() {
		return nil
	}
	return &ValidationError{PayloadType: s.payloadType, Violations: violations(res.Errors(), prefix)}
}

// Validate validates a payload (raw JSON bytes) against the schema of
// payloadType. It returns nil when the payload is valid; a
// [*ValidationError] listing every violation (paths relative to the
// payload) when it is not; an error wrapping [ErrInvalidJSON] or
// [ErrTooLarge] when it is not one JSON value within the size limit; and
// one wrapping [ErrUnknownPayloadType] when no schema is registered, unless
// the registry is permissive.
func (r *Registry) Validate(payloadType string, payload []byte) error {
	s, ok := (*r.snap.Load())[payloadType]
	if !ok {
		return r.unknown(payloadType, payload)
	}
	return s.validate(payload, "")
}

func (r *Registry) unknown(payloadType string, payload []byte) error {
	if !protocol.ValidPayloadType(payloadType) {
		return errorf(ErrInvalidPayloadType, "payload type %q is not of the form <domain>.<name>.v<N>", payloadType)
	}
	return r.unregistered(payloadType, payload)
}

// unregistered is the outcome of a well-formed payload type the registry
// does not hold.
func (r *Registry) unregistered(payloadType string, payload []byte) error {
	if !r.permissive {
		return &unknownTypeError{payloadType: payloadType}
	}
	_, err := decodePayload(payload, r.maxBytes)
	return err
}

// ValidateMessage validates a message's payload against the schema of its
// payload_type (docs/protocol.md §3). A message without payload_type and schema_ref
// carries no structured contract and passes. Otherwise:
//   - payload_type must be well formed, and schema_ref, when present, must
//     be the reference of payload_type ("research.summary.v1" ↔
//     "schema://clutch/research/summary@1", §3.2), else the error wraps
//     [ErrSchemaRefMismatch]; a schema_ref without payload_type stands for
//     the payload type it names under schema://clutch/;
//   - an unknown payload_type fails with [ErrUnknownPayloadType] unless the
//     registry is permissive;
//   - a payload that fails its schema gives a [*ValidationError] whose
//     paths are relative to the message ("/payload/findings").
func (r *Registry) ValidateMessage(m *protocol.Message) error {
	s, err := r.schemaFor(m)
	if err != nil || s == nil {
		return err
	}
	return s.validate(m.Payload, "/payload")
}

// schemaFor resolves the schema of a message. It returns a nil schema and
// nil error when there is nothing to validate (no contract, or an unknown
// type in a permissive registry whose payload is at least JSON).
//
// The form of payload_type and schema_ref is the envelope's, which
// [protocol.Message.Validate] checks: a registered payload type is well
// formed, so only a payload_type the registry does not hold is checked
// again, to tell a malformed one from an unknown one. The schema_ref
// agreement is compared with [protocol.SchemaRefFor], the one mapping.
func (r *Registry) schemaFor(m *protocol.Message) (*Schema, error) {
	if m == nil {
		return nil, errorf(ErrInvalidOptions, "nil message")
	}
	pt := m.PayloadType
	if pt == "" {
		if m.SchemaRef == "" {
			return nil, nil
		}
		pt = payloadTypeForRef(m.SchemaRef) // whose reference is m.SchemaRef
		if pt == "" {
			if !r.permissive {
				return nil, errorf(ErrUnknownPayloadType, "schema_ref %q names no payload type of this registry", m.SchemaRef)
			}
			_, err := decodePayload(m.Payload, r.maxBytes)
			return nil, err
		}
	}
	if s, ok := (*r.snap.Load())[pt]; ok {
		if m.SchemaRef != "" && m.SchemaRef != s.ref { // s.ref is protocol.SchemaRefFor(pt)
			return nil, refMismatch(m.SchemaRef, pt, s.ref)
		}
		return s, nil
	}
	if !protocol.ValidPayloadType(pt) {
		return nil, errorf(ErrInvalidPayloadType, "payload_type %q is not of the form <domain>.<name>.v<N>", pt)
	}
	if want := protocol.SchemaRefFor(pt); m.SchemaRef != "" && m.SchemaRef != want {
		return nil, refMismatch(m.SchemaRef, pt, want)
	}
	return nil, r.unregistered(pt, m.Payload)
}

func refMismatch(ref, pt, want string) error {
	return errorf(ErrSchemaRefMismatch, "schema_ref %q, payload_type %s wants %q", ref, pt, want)
}

// payloadTypeForRef inverts [protocol.SchemaRefFor]:
// "schema://clutch/research/summary@1" → "research.summary.v1". It returns
// "" for a reference outside the schema://clutch/ namespace.
func payloadTypeForRef(ref string) string {
	rest, ok := strings.CutPrefix(ref, protocol.PrefixSchema+"clutch/")
	if !ok {
		return ""
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return ""
	}
	pt := strings.ReplaceAll(rest[:at], "/", ".") + ".v" + rest[at+1:]
	if protocol.SchemaRefFor(pt) != ref { // "" when pt is malformed
		return ""
	}
	return pt
}

// decodePayload decodes a payload for gojsonschema, within the size and
// number limits. The value goes to gojsonschema as it is (NewRawLoader, in
// run), so a payload is decoded once: gojsonschema's NewBytesLoader would
// decode the same bytes with encoding/json, and its NewGoLoader encodes the
// value and decodes it again.
func decodePayload(payload []byte, maxBytes int) (any, error) {
	if len(payload) > maxBytes {
		return nil, errorf(ErrTooLarge, "payload is %d bytes, limit %d", len(payload), maxBytes)
	}
	v, err := decodeJSON(payload)
	if err != nil {
		if len(bytes.TrimSpace(payload)) == 0 {
			return nil, errorf(ErrInvalidJSON, "payload is empty")
		}
		return nil, wrapCause(ErrInvalidJSON, err, "payload")
	}
	if n, ok := hugeNumber(v); ok {
		return nil, errorf(ErrTooLarge, "payload number %s is beyond what is validated (at most %d characters, exponent at most %d)", abbreviate(string(n)), maxNumberLen, maxExponent)
	}
	return v, nil
}

// decodeJSON decodes exactly one JSON value into the values gojsonschema
// expects (map[string]any, []any, string, bool, nil, and json.Number for
// numbers, so that they stay exact), and refuses data after it. The
// envelope's strict scanner reads it (protocol.Decoder.DecodeValue):
// duplicate object names, invalid UTF-8 and lone surrogates are refused.
// It reads payloads and schema documents alike.
func decodeJSON(data []byte) (any, error) {
	return valueDecoder.DecodeValue(data)
}

// valueDecoder sets no size limit of its own (callers check theirs first)
// and allows the nesting depth JSON readers commonly do.
var valueDecoder = protocol.Decoder{MaxBytes: math.MaxInt, MaxDepth: 10000}

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
			if n, err := strconv.Atoi(exp); err != nil || n > maxExponent {
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

// ValidateValue validates value (raw JSON) against a JSON Schema given as
// bytes: the schema of a question's answer (router.ValueValidator). The
// schema gets the checks a registered one gets (MaxSchemaBytes, no remote
// references: ErrTooLarge, ErrInvalidSchema, ErrRemoteRef); the value
// those of a payload, and a [*ValidationError] lists its violations.
func (r *Registry) ValidateValue(schemaJSON, value json.RawMessage) error {
	const name = "answer.value.v1" // names the schema in errors
	if len(schemaJSON) > MaxSchemaBytes {
		return errorf(ErrTooLarge, "the answer's schema is %d bytes, limit %d", len(schemaJSON), MaxSchemaBytes)
	}
	pr, err := prepareSchema(name, schemaJSON)
	if err != nil {
		return err
	}
	compiled, err := compile(name, pr.doc)
	if err != nil {
		return err
	}
	s := &Schema{payloadType: name, compiled: compiled, maxBytes: r.maxBytes}
	return s.validate(value, "")
}
