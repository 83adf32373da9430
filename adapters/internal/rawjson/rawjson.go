package rawjson

import (
	"bytes"
	"encoding/json"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/protocol"
)

// Kind returns the kind of a raw value, 0 when absent.
func Kind(v []byte) jsontext.Kind { return jsontext.Value(v).Kind() }

// KindName names the kind of v in error details.
func KindName(v []byte) string {
	switch k := Kind(v); k {
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

// Str returns the string a raw JSON string holds.
func Str(v []byte) (string, bool) {
	if Kind(v) != '"' {
		return "", false
	}
	b, err := jsontext.AppendUnquote(nil, v)
	return string(b), err == nil
}

// OptString reads an optional string member: absent and null give "" and
// present=false; anything but a string gives the code and detail of the
// error a translator reports.
func OptString(v []byte) (s string, present bool, code protocol.Code, detail string) {
	switch Kind(v) {
	case 0, 'n':
		return "", false, "", ""
	case '"':
		s, ok := Str(v)
		if !ok {
			return "", false, protocol.CodeInvalidJSON, "bad string"
		}
		return s, true, "", ""
	}
	return "", false, protocol.CodeWrongType, "want a string, got " + KindName(v)
}

// ToAny decodes a raw value into the types protocol.Decode gives meta
// values (json.Number for numbers). Scalars, most of the values it sees,
// are read directly; objects and arrays go through encoding/json.
func ToAny(v []byte) any {
	v = bytes.TrimSpace(v)
	switch Kind(v) {
	case 'n':
		return nil
	case 't':
		return true
	case 'f':
		return false
	case '"':
		if s, ok := Str(v); ok {
			return s
		}
		return nil
	case '0':
		return json.Number(v)
	}
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	var out any
	if d.Decode(&out) != nil {
		return nil
	}
	return out
}

// FromAny encodes a meta value (map keys sorted, no HTML escaping).
func FromAny(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// Compact returns v without insignificant whitespace.
func Compact(v []byte) []byte {
	out := append(jsontext.Value(nil), v...)
	if out.Compact() != nil {
		return append([]byte(nil), v...)
	}
	return out
}

// Member is one Member of a JSON object, in order.
type Member struct {
	Name  string
	Value jsontext.Value
}

// Field returns the member name: v.
func Field(name string, v []byte) Member { return Member{Name: name, Value: v} }

// Members returns the members of a JSON object in order.
func Members(obj []byte) ([]Member, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.ReadToken(); err != nil {
		return nil, err
	} else if tok.Kind() != '{' {
		return nil, &jsonv2.SemanticError{JSONKind: tok.Kind()}
	}
	var out []Member
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
		out = append(out, Member{name, append(jsontext.Value(nil), v...)})
	}
	return out, nil
}

// Object writes members as a compact JSON object.
func Object(ms []Member) []byte {
	b := []byte{'{'}
	for i, mb := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		b, _ = jsontext.AppendQuote(b, mb.Name)
		b = append(b, ':')
		b = append(b, Compact(mb.Value)...)
	}
	return append(b, '}')
}

// MetaString returns m.Meta[k] when it is a string.
func MetaString(m *protocol.Message, k string) string {
	s, _ := m.Meta[k].(string)
	return s
}

// MetaBool returns m.Meta[k] when it is a bool.
func MetaBool(m *protocol.Message, k string) (bool, bool) {
	b, ok := m.Meta[k].(bool)
	return b, ok
}

// Number reads a JSON number meta value of any Go numeric type.
func Number(v any) (float64, bool) {
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
