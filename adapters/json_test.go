package adapters

import (
	"errors"
	"strings"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/stretchr/testify/assert"

	"github.com/clutchprotocol/clutch/protocol"
)

func TestDecodeJSONRefusals(t *testing.T) {
	type target struct {
		A struct {
			B []int `json:"b"`
		} `json:"a"`
	}
	for _, c := range []struct {
		name string
		raw  string
		code protocol.Code
		path string
	}{
		{"syntax", `{"a":`, protocol.CodeInvalidJSON, ""},
		{"duplicate", `{"a":{"b":[],"b":[]}}`, protocol.CodeDuplicateKey, "/a/b"},
		{"utf8", "{\"a\":{\"x\":\"\xff\"}}", protocol.CodeInvalidUTF8, "/a/x"},
		{"lone surrogate", `{"a":{"x":"\ud800"}}`, protocol.CodeInvalidUTF8, "/a/x"},
		{"deep", `{"a":` + strings.Repeat("[", protocol.DefaultMaxDepth+1) + strings.Repeat("]", protocol.DefaultMaxDepth+1) + `}`, protocol.CodeTooDeep, ""},
		{"wrong type", `{"a":{"b":[1,"x"]}}`, protocol.CodeWrongType, "/a/b/1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var v target
			err := DecodeJSON("x", []byte(c.raw), &v)
			var ae *Error
			if !assert.True(t, errors.As(err, &ae), "%v", err) {
				return
			}
			assert.Equal(t, c.code, ae.Code, "%v", err)
			if c.path != "" {
				assert.Equal(t, c.path, ae.Path, "%v", err)
			}
			assert.Equal(t, "x", ae.Adapter)
			assert.ErrorIs(t, err, ErrInbound)
			assert.ErrorIs(t, err, c.code)
		})
	}
	var v map[string]any
	assert.NoError(t, DecodeJSON("x", []byte(`{"a":{"b":[1]}}`), &v))
}

// JSONError prefixes the pointer of a value decoded on its own with base.
func TestJSONErrorBase(t *testing.T) {
	var l []string
	err := jsonv2.Unmarshal([]byte(`["a",1]`), &l)
	ae := JSONError("x", "/trace/parents", err)
	assert.Equal(t, protocol.CodeWrongType, ae.Code)
	assert.Equal(t, "/trace/parents/1", ae.Path)
	err = jsonv2.Unmarshal([]byte(`{"k":1,"k":2}`), new(map[string]int))
	assert.Equal(t, protocol.CodeDuplicateKey, JSONError("x", "/d", err).Code)
}

// Only the error's own code matches: ErrInbound's generic code does not.
func TestErrorMatchesOwnCodeOnly(t *testing.T) {
	err := InboundError("x", protocol.CodeDuplicateKey, "/a", "", nil)
	assert.ErrorIs(t, err, ErrInbound)
	assert.ErrorIs(t, err, protocol.CodeDuplicateKey)
	assert.NotErrorIs(t, err, protocol.CodeInvalidField)
	assert.NotErrorIs(t, err, ErrOutbound)
	assert.Equal(t, protocol.CodeDuplicateKey, protocol.CodeOf(err))
}
