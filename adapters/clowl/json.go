package clowl

import (
	"bytes"
	"encoding/json"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/protocol"
)

// Raw JSON values are read and written with jsontext; the input was
// checked by adapters.DecodeJSON, so these readers see valid JSON only.

// kind returns the kind of a raw value, 0 when absent.
func kind(v []byte) jsontext.Kind { return jsontext.Value(v).Kind() }

// kindName names the kind of v in error details.
func kindName(v []byte) string {
	switch k := kind(v); k {
	case 0:
		return "nothing"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	default:
		return k.String()
	}
}

// str returns the string a raw JSON string holds.
func str(v []byte) (string, bool) {
	if kind(v) != '"' {
		return "", false
	}
	b, err := jsontext.AppendUnquote(nil, v)
	return string(b), err == nil
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
	return "", false, inErr(protocol.CodeWrongType, path, "want a string, got "+kindName(v), nil)
}

// toAny decodes a raw value into the types protocol.Decode gives meta
// values (json.Number for numbers).
func toAny(v []byte) any {
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	var out any
	if d.Decode(&out) != nil {
		return nil
	}
	return out
}

// fromAny encodes a meta value (map keys sorted, no HTML escaping).
func fromAny(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// compact returns v without insignificant whitespace.
func compact(v []byte) []byte {
	out := append(jsontext.Value(nil), v...)
	if out.Compact() != nil {
		return append([]byte(nil), v...)
	}
	return out
}

// member is one member of a JSON object, in order.
type member struct {
	Name  string
	Value jsontext.Value
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

// object writes members as a compact JSON object.
func object(ms []member) []byte {
	b := []byte{'{'}
	for i, mb := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		b, _ = jsontext.AppendQuote(b, mb.Name)
		b = append(b, ':')
		b = append(b, compact(mb.Value)...)
	}
	return append(b, '}')
}

// metaString returns m.Meta[k] when it is a string.
func metaString(m *protocol.Message, k string) string {
	s, _ := m.Meta[k].(string)
	return s
}

// metaBool returns m.Meta[k] when it is a bool.
func metaBool(m *protocol.Message, k string) (bool, bool) {
	b, ok := m.Meta[k].(bool)
	return b, ok
}
