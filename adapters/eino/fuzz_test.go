package eino

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/cloudwego/eino/schema"
)

// FuzzDecodeInput feeds request payloads to the input decoder of each
// kind of graph input: it never panics, a JSON string is the user
// message of a chat graph, and what does not decode is an ErrInput.
func FuzzDecodeInput(f *testing.F) {
	for _, s := range []string{`"hi"`, `{"text":"hi"}`, `{"text":1}`, `{"text":"a","b":1}`, `[{"role":"user","content":"x"}]`,
		`{"role":"assistant","content":"y"}`, `{"A":1,"B":2}`, `{`, `null`, `[]`, `"\ud800"`, `123`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // the router stores only JSON payloads
		}
		msgs, err := decodeInput[[]*schema.Message](raw)
		var s string
		if json.Unmarshal(raw, &s) == nil {
			if err != nil || len(msgs) != 1 || msgs[0].Role != schema.User || msgs[0].Content != s {
				t.Fatalf("%q: %v, %v", raw, msgs, err)
			}
			if got, err := decodeInput[string](raw); err != nil || got != s {
				t.Fatalf("%q as a string: %q, %v", raw, got, err)
			}
		}
		if _, err := decodeInput[*schema.Message](raw); err != nil && !isInputError(err) {
			t.Fatalf("%q: %v", raw, err)
		}
		if _, err := decodeInput[struct{ A, B int }](raw); err != nil && !isInputError(err) {
			t.Fatalf("%q: %v", raw, err)
		}
	})
}

func isInputError(err error) bool { return errors.Is(err, ErrInput) }
