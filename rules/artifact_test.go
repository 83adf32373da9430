package rules

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeCommand(t *testing.T) {
	c, err := DecodeCommand([]byte(`{"resource":"context","op":{"update":{"id":"ctx-123","body":"# New content\n","description":"Clarify setup notes"}}}`))
	require.NoError(t, err)
	assert.Equal(t, Command{Resource: "context", Op: "update", ID: "ctx-123", Body: "# New content\n", Description: "Clarify setup notes"}, c)
	c, err = DecodeCommand([]byte(`{"op":{"rename":{"id":"r1","new_path":"a/b.md"}},"resource":"rule"}`))
	require.NoError(t, err)
	assert.Equal(t, Command{Resource: "rule", Op: "rename", ID: "r1", NewPath: "a/b.md"}, c)

	for _, bad := range []string{
		``, `null`, `[]`, `"x"`, `{}`,
		`{"resource":"context"}`,
		`{"op":{"discard":{"id":"x"}}}`,
		`{"resource":"workflow","op":{"discard":{"id":"x"}}}`,
		`{"resource":1,"op":{"discard":{"id":"x"}}}`,
		`{"resource":"rule","op":{}}`,
		`{"resource":"rule","op":null}`,
		`{"resource":"rule","op":{"discard":{"id":"x"},"delete":{"id":"x"}}}`,
		`{"resource":"rule","op":{"publish":{"id":"x"}}}`,
		`{"resource":"rule","op":{"discard":null}}`,
		`{"resource":"rule","op":{"discard":{}}}`,
		`{"resource":"rule","op":{"discard":{"id":7}}}`,
		`{"resource":"rule","op":{"discard":{"id":"x","body":"y"}}}`,
		`{"resource":"rule","op":{"create":{"path":"a.md"}}}`,
		`{"resource":"rule","op":{"discard":{"id":"x"}},"extra":1}`,
		`{"resource":"rule","resource":"rule","op":{"discard":{"id":"x"}}}`,
		`{"resource":"rule","op":{"discard":{"id":"x","id":"y"}}}`,
		"{\"resource\":\"rule\",\"op\":{\"discard\":{\"id\":\"\xff\"}}}",
		`{"resource":"rule","op":{"discard":{"id":"x"}}} {}`,
	} {
		_, err := DecodeCommand([]byte(bad))
		assert.ErrorIs(t, err, ErrInvalidCommand, bad)
	}
}

// FuzzDecodeCommand: no panic; an accepted command is well formed and
// survives re-encoding.
func FuzzDecodeCommand(f *testing.F) {
	for _, s := range []string{
		`{"resource":"context","op":{"create":{"path":"spec/a.md","body":"# A\n","description":"d"}}}`,
		`{"resource":"rule","op":{"update":{"id":"r","body":""}}}`,
		`{"resource":"mpf","op":{"delete":{"id":"META_PROMPT.md"}}}`,
		`{"resource":"rule","op":{"rename":{"id":"r","new_path":"x.md"}}}`,
		`{"resource":"rule","op":{"discard":{"id":"tmp-1"}}}`,
		`{"resource":"rule","op":{"discard":{"id":"x"},"delete":{"id":"x"}}}`,
		`{"resource":"rule","resource":"rule"}`, `[]`, `{"op":{"x":1}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeCommand(data)
		if err != nil {
			return
		}
		if _, ok := opFields[c.Op]; !ok {
			t.Fatalf("op %q accepted", c.Op)
		}
		if c.Resource != "context" && c.Resource != "rule" && c.Resource != "mpf" {
			t.Fatalf("resource %q accepted", c.Resource)
		}
		fields := map[string]string{"id": c.ID, "path": c.Path, "new_path": c.NewPath, "body": c.Body, "description": c.Description}
		inner := map[string]string{}
		for _, k := range append(opFields[c.Op].required, opFields[c.Op].optional...) {
			inner[k] = fields[k]
		}
		b, err := json.Marshal(map[string]any{"resource": c.Resource, "op": map[string]any{c.Op: inner}})
		if err != nil {
			t.Fatal(err)
		}
		c2, err := DecodeCommand(b)
		if err != nil || c2 != c {
			t.Fatalf("round trip: %v %+v %+v", err, c, c2)
		}
	})
}
