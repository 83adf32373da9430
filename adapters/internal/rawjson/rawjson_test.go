package rawjson

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/protocol"
)

func TestMembersObjectRoundTrip(t *testing.T) {
	in := []byte(`{ "b" : [1, 2], "a":{"x" : "\u00e9"}, "c":null }`)
	ms, err := Members(in)
	require.NoError(t, err)
	var names []string
	for _, m := range ms {
		names = append(names, m.Name)
	}
	assert.Equal(t, []string{"b", "a", "c"}, names, "members keep their order")
	assert.Equal(t, `{"b":[1,2],"a":{"x":"\u00e9"},"c":null}`, string(Object(ms)))
	assert.Equal(t, `{"k":true}`, string(Object([]Member{Field("k", []byte(" true "))})))

	_, err = Members([]byte(`[1]`))
	assert.Error(t, err, "an array is not an object")
}

func TestReaders(t *testing.T) {
	s, ok := Str([]byte(`"a\nb"`))
	assert.True(t, ok)
	assert.Equal(t, "a\nb", s)
	_, ok = Str([]byte(`12`))
	assert.False(t, ok)
	assert.Equal(t, "nothing", KindName(nil))
	assert.Equal(t, "boolean", KindName([]byte(`false`)))
	assert.Equal(t, "object", KindName([]byte(`{}`)))

	v := ToAny([]byte(`{"n":12345678901234567890}`))
	assert.Equal(t, map[string]any{"n": json.Number("12345678901234567890")}, v, "numbers stay exact")
	b, err := FromAny(map[string]any{"z": "<b>", "a": 1})
	require.NoError(t, err)
	assert.Equal(t, `{"a":1,"z":"<b>"}`, string(b), "keys sorted, no HTML escaping")

	f, ok := Number(json.Number("2.5"))
	assert.True(t, ok)
	assert.Equal(t, 2.5, f)
	_, ok = Number("2.5")
	assert.False(t, ok)

	m := &protocol.Message{Meta: map[string]any{"s": "x", "b": true}}
	assert.Equal(t, "x", MetaString(m, "s"))
	bv, ok := MetaBool(m, "b")
	assert.True(t, ok && bv)
}

func TestOptString(t *testing.T) {
	for _, c := range []struct {
		in      string
		s       string
		present bool
		code    protocol.Code
	}{
		{``, "", false, ""},
		{`null`, "", false, ""},
		{`"x"`, "x", true, ""},
		{`""`, "", true, ""},
		{`1`, "", false, protocol.CodeWrongType},
		{`{}`, "", false, protocol.CodeWrongType},
	} {
		s, present, code, _ := OptString([]byte(c.in))
		assert.Equal(t, c.s, s, c.in)
		assert.Equal(t, c.present, present, c.in)
		assert.Equal(t, c.code, code, c.in)
	}
}

func TestToAnyScalars(t *testing.T) {
	for in, want := range map[string]any{
		`null`: nil, ` true `: true, `false`: false, `"a\u00e9"`: "aé",
		` 12345678901234567890 `: json.Number("12345678901234567890"), `-1.5e3`: json.Number("-1.5e3"),
		`[1,"x"]`: []any{json.Number("1"), "x"},
	} {
		assert.Equal(t, want, ToAny([]byte(in)), in)
	}
}
