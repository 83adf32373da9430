package multiagent

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/protocol"
)

// checkJSON checks raw with the protocol's strict scanner: one JSON value,
// valid UTF-8 without lone surrogates, no duplicate key at any depth, at
// most protocol.DefaultMaxDepth deep. Message.SetPayload runs exactly that
// check on the bytes it is given, so the adapter refuses what the store
// would refuse, with the same codes.
func checkJSON(raw []byte) error {
	var probe protocol.Message
	if err := probe.SetPayload(json.RawMessage(raw)); err != nil {
		var pe *protocol.Error
		if errors.As(err, &pe) {
			return inErr(pe.Code, strings.TrimPrefix(pe.Path, "/payload"), pe.Detail, nil)
		}
		return inErr(protocol.CodeInvalidJSON, "", "", err)
	}
	return nil
}

// decodeErr turns a JSON v2 error into an inbound error with a code and
// path (base is prefixed to the path).
func decodeErr(err error, base string) error {
	code, path := protocol.CodeInvalidJSON, base
	var syn *jsontext.SyntacticError
	var sem *jsonv2.SemanticError
	switch {
	case errors.As(err, &syn):
		path += string(syn.JSONPointer)
		switch {
		case errors.Is(syn.Err, jsontext.ErrDuplicateName):
			code = protocol.CodeDuplicateKey
		case syn.Err != nil && strings.Contains(syn.Err.Error(), "UTF-8"):
			code = protocol.CodeInvalidUTF8
		}
	case errors.As(err, &sem):
		path += string(sem.JSONPointer)
		code = protocol.CodeWrongType
	}
	return inErr(code, path, "", err)
}

// kind returns the JSON kind of a raw value: '"', '0' (number), '{', '[',
// 't', 'f', 'n', or 0 when absent.
func kind(v []byte) byte {
	if len(v) == 0 {
		return 0
	}
	switch c := v[0]; c {
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return '0'
	default:
		return c
	}
}

func kindName(k byte) string {
	switch k {
	case '"':
		return "string"
	case '0':
		return "number"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "nothing"
}

// str returns the string a raw JSON string holds.
func str(v []byte) (string, bool) {
	if kind(v) != '"' {
		return "", false
	}
	if bytes.IndexByte(v[1:len(v)-1], '\\') < 0 {
		return string(v[1 : len(v)-1]), true
	}
	b, err := jsontext.AppendUnquote(nil, v)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// wantString reads an optional string member: absent and null give ""
// and present=false.
func wantString(v []byte, path string) (s string, present bool, err error) {
	switch kind(v) {
	case 0, 'n':
		return "", false, nil
	case '"':
		s, ok := str(v)
		if !ok {
			return "", false, inErr(protocol.CodeInvalidJSON, path, "bad string", nil)
		}
		return s, true, nil
	}
	return "", false, inErr(protocol.CodeWrongType, path, "want a string, got "+kindName(kind(v)), nil)
}

// appendString appends s as a JSON string.
func appendString(b []byte, s string) ([]byte, error) {
	return jsontext.AppendQuote(b, s)
}

// toAny decodes one raw JSON value into the types protocol.Decode gives
// meta values: map[string]any, []any, string, bool, json.Number, nil.
func toAny(v []byte) any {
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	var out any
	if err := d.Decode(&out); err != nil {
		return nil
	}
	return out
}

// fromAny encodes a meta-style value as JSON.
func fromAny(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// metaString returns meta[k] when it is a string.
func metaString(m *protocol.Message, k string) string {
	s, _ := m.Meta[k].(string)
	return s
}

// metaBool returns meta[k] when it is a bool.
func metaBool(m *protocol.Message, k string) (bool, bool) {
	b, ok := m.Meta[k].(bool)
	return b, ok
}

// number reads a JSON number meta value of any Go numeric type.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}

// compact returns v without insignificant whitespace.
func compact(v []byte) []byte {
	out := append(jsontext.Value(nil), v...)
	if err := out.Compact(); err != nil {
		return append([]byte(nil), v...)
	}
	return out
}

func itoa(i int) string { return strconv.Itoa(i) }

// member is one member of a JSON object, in order.
type member struct {
	name  string
	value jsontext.Value
}

// members returns the members of a JSON object in order.
func members(obj []byte) ([]member, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.ReadToken(); err != nil {
		return nil, err
	} else if tok.Kind() != '{' {
		return nil, &jsonv2.SemanticError{JSONKind: tok.Kind()}
	}
	var out []member
	for dec.PeekKind() != '}' {
		tok, err := dec.ReadToken()
		if err != nil {
			return nil, err
		}
		name := tok.String()
		v, err := dec.ReadValue()
		if err != nil {
			return nil, err
		}
		out = append(out, member{name, append(jsontext.Value(nil), v...)})
	}
	return out, nil
}

// buildObject writes members as a compact JSON object.
func buildObject(ms []member) []byte {
	b := []byte{'{'}
	for i, mb := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		b, _ = appendString(b, mb.name)
		b = append(b, ':')
		b = append(b, compact(mb.value)...)
	}
	return append(b, '}')
}
