package rawjson

import (
	"testing"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/protocol"
)

func TestValuesOneOrLines(t *testing.T) {
	vs, err := Values("t", []byte("{\n  \"a\": [1,\n 2]\n}\n"))
	require.NoError(t, err)
	require.Len(t, vs, 1, "a pretty-printed object is one value")
	vs, err = Values("t", []byte("{\"a\":1}\n\n{\"b\":\n 2}\n[3]\n"))
	require.NoError(t, err)
	require.Len(t, vs, 3, "JSON lines; a value may span lines")
	assert.Equal(t, `{"b":`+"\n"+` 2}`, string(vs[1]))
	_, err = Values("t", []byte(`{"a":1} {"b":2}`))
	assert.Equal(t, protocol.CodeInvalidJSON, protocol.CodeOf(err), "two values on one line are not JSON lines")
}

// A refusal has the same code however the input is laid out.
func TestValuesErrorsIgnoreFormatting(t *testing.T) {
	for _, c := range []struct {
		name, compact, pretty string
		code                  protocol.Code
	}{
		{"duplicate key", `{"event":"values","data":{"a":1,"a":2}}`, "{\n  \"event\": \"values\",\n  \"data\": {\n    \"a\": 1,\n    \"a\": 2\n  }\n}\n", protocol.CodeDuplicateKey},
		{"duplicate at the top", `{"a":1,"a":2}`, "{\n\"a\":1,\n\"a\":2\n}", protocol.CodeDuplicateKey},
		{"invalid UTF-8", "{\"a\":\"\xff\"}", "{\n  \"a\": \"\xff\"\n}", protocol.CodeInvalidUTF8},
		{"syntax", `{"a":1,}`, "{\n  \"a\": 1,\n}", protocol.CodeInvalidJSON},
	} {
		_, err := Values("t", []byte(c.compact))
		assert.Equal(t, c.code, protocol.CodeOf(err), "%s compact: %v", c.name, err)
		_, err = Values("t", []byte(c.pretty))
		assert.Equal(t, c.code, protocol.CodeOf(err), "%s pretty: %v", c.name, err)
	}
	// In JSON lines, the bad line is named.
	_, err := Values("t", []byte("{\"a\":1}\n{\n \"b\":1,\n \"b\":2}\n"))
	assert.Equal(t, protocol.CodeDuplicateKey, protocol.CodeOf(err))
	assert.ErrorContains(t, err, "line 2")
	_, err = Values("t", []byte("{\"a\":1}\n{\"b\":}\n"))
	assert.Equal(t, protocol.CodeInvalidJSON, protocol.CodeOf(err))
	assert.ErrorContains(t, err, "line 2")
}

// FuzzValues: whatever the value, indenting it (or compacting it) does not
// change whether it is accepted or the code of its refusal.
func FuzzValues(f *testing.F) {
	f.Add([]byte(`{"event":"values","data":{"a":1,"a":2}}`))
	f.Add([]byte("{\n  \"a\": 1,\n  \"a\": 2\n}\n"))
	f.Add([]byte("{\"a\":\"\xff\"}"))
	f.Add([]byte("{\"a\":1}\n{\"b\":2}\n"))
	f.Add([]byte(`[{"x":[1,2,{"y":null,"y":true}]}]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		vs, err := Values("t", raw)
		if err != nil && protocol.CodeOf(err) == "" {
			t.Fatalf("untyped error %v", err)
		}
		if err == nil && len(vs) == 0 {
			t.Fatal("no value and no error")
		}
		lenient := []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}
		one := jsontext.Value(append([]byte(nil), raw...))
		if !one.IsValid(lenient...) {
			return
		}
		for _, layout := range []func(*jsontext.Value) error{
			func(v *jsontext.Value) error { return v.Indent(lenient...) },
			func(v *jsontext.Value) error { return v.Compact(lenient...) },
		} {
			v := jsontext.Value(append([]byte(nil), raw...))
			if layout(&v) != nil {
				return
			}
			_, err2 := Values("t", v)
			if protocol.CodeOf(err) != protocol.CodeOf(err2) {
				t.Fatalf("%q: %v; laid out %q: %v", raw, err, v, err2)
			}
		}
	})
}
