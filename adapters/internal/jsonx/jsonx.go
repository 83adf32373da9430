// Package jsonx holds the raw-JSON helpers the message-language adapters
// (clowl, multiagent) share: strict checks with the protocol's scanner,
// JSON v2 error translation, small readers of raw values, ordered object
// Members. Errors are *adapters.Error of the named adapter.
package jsonx

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/clutchprotocol/clutch/adapters"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/protocol"
)

// CheckJSON checks raw with the protocol's strict scanner: one JSON value,
// valid UTF-8 without lone surrogates, no duplicate key at any depth, at
// most protocol.DefaultMaxDepth deep. Message.SetPayload runs exactly that
// check on the bytes it is given, so the adapter refuses what the store
// would refuse, with the same codes.
func CheckJSON(adapter string, raw []byte) error {
	var probe protocol.Message
	if err := probe.SetPayload(json.RawMessage(raw)); err != nil {
		var pe *protocol.Error
		if errors.As(err, &pe) {
			return adapters.InboundError(adapter, pe.Code, strings.TrimPrefix(pe.Path, "/payload"), pe.Detail, nil)
		}
		return adapters.InboundError(adapter, protocol.CodeInvalidJSON, "", "", err)
	}
	return nil
}

// DecodeErr turns a JSON v2 error into an inbound error with a code and
// path (base is prefixed to the path).
func DecodeErr(adapter string, err error, base string) error {
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
	return adapters.InboundError(adapter, code, path, "", err)
}

// Kind returns the JSON kind of a raw value: '"', '0' (number), '{', '[',
// 't', 'f', 'n', or 0 when absent.
func Kind(v []byte) byte {
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

func KindName(k byte) string {
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

// Str returns the string a raw JSON string holds.
func Str(v []byte) (string, bool) {
	if Kind(v) != '"' {
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

// WantString reads an optional string member: absent and null give ""
// and present=false.
func WantString(adapter string, v []byte, path string) (s string, present bool, err error) {
	switch Kind(v) {
	case 0, 'n':
		return "", false, nil
	case '"':
		s, ok := Str(v)
		if !ok {
			return "", false, adapters.InboundError(adapter, protocol.CodeInvalidJSON, path, "bad string", nil)
		}
		return s, true, nil
	}
	return "", false, adapters.InboundError(adapter, protocol.CodeWrongType, path, "want a string, got "+KindName(Kind(v)), nil)
}

// AppendString appends s as a JSON string.
func AppendString(b []byte, s string) ([]byte, error) {
	return jsontext.AppendQuote(b, s)
}

// ToAny decodes one raw JSON value into the types protocol.Decode gives
// meta values: map[string]any, []any, string, bool, json.Number, nil.
func ToAny(v []byte) any {
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	var out any
	if err := d.Decode(&out); err != nil {
		return nil
	}
	return out
}

// FromAny encodes a meta-style value as JSON.
func FromAny(v any) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

// MetaString returns meta[k] when it is a string.
func MetaString(m *protocol.Message, k string) string {
	s, _ := m.Meta[k].(string)
	return s
}

// MetaBool returns meta[k] when it is a bool.
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

// Compact returns v without insignificant whitespace.
func Compact(v []byte) []byte {
	out := append(jsontext.Value(nil), v...)
	if err := out.Compact(); err != nil {
		return append([]byte(nil), v...)
	}
	return out
}

// Member is one member of a JSON object, in order. It is an alias of an
// unnamed struct so that the adapters can write members as {name, value}
// pairs.
type Member = struct {
	Name  string
	Value jsontext.Value
}

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

// BuildObject writes members as a compact JSON object.
func BuildObject(ms []Member) []byte {
	b := []byte{'{'}
	for i, mb := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		b, _ = AppendString(b, mb.Name)
		b = append(b, ':')
		b = append(b, Compact(mb.Value)...)
	}
	return append(b, '}')
}
