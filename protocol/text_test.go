package protocol

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
)

var textNames = []string{"title", "text", "query"}

func TestPayloadText(t *testing.T) {
	for _, c := range []struct{ payload, want string }{
		{`"Plan the launch"`, "Plan the launch"},
		{` "  spaced  " `, "  spaced  "}, // as it is: callers collapse white space
		{`"\u00e9t\u00e9 \ud83d\ude00\n"`, "été 😀\n"},
		{`{"query":"q","text":"t"}`, "t"},                // the order of names, not of the object
		{`{"query":"q","text":" \n\t ","title":7}`, "q"}, // blank and non-string values are skipped
		{`{"title":{"title":"deep"},"other":"x"}`, ""},   // only top-level members
		{`{"a":[1,{"b":"c"}],"text":"after nesting"}`, "after nesting"},
		{`{"Title":"case matters"}`, ""},
		{`{"t\u0069tle":"escaped key"}`, "escaped key"},
		{`"   "`, ""}, {`""`, ""}, {`null`, ""}, {`12`, ""}, {`["text"]`, ""}, {`{}`, ""}, {``, ""},
		// Not strict JSON: nothing.
		{`{"text":"a","text":"b"}`, ""}, {`{"text":"a"`, ""}, {`{"text":"a"} x`, ""}, {`"a" "b"`, ""},
		{"\"\xff\"", ""}, {`{"text":"\ud800"}`, ""}, {`{"x":[` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `],"text":"deep"}`, ""},
	} {
		if got := PayloadText([]byte(c.payload), textNames...); got != c.want {
			t.Errorf("PayloadText(%s) = %q, want %q", c.payload, got, c.want)
		}
	}
	if got := PayloadText([]byte(`{"text":"x"}`)); got != "" {
		t.Errorf("without names: %q", got)
	}
}

// The text is a copy: changing the payload afterwards does not change it.
func TestPayloadTextCopies(t *testing.T) {
	for _, p := range []string{`"plain"`, `{"text":"plain"}`} {
		b := []byte(p)
		got := PayloadText(b, textNames...)
		for i := range b {
			b[i] = 'X'
		}
		if got != "plain" {
			t.Fatalf("PayloadText(%s) changed with its payload: %q", p, got)
		}
	}
}

// FuzzPayloadText: PayloadText never panics; it finds text only in strict
// JSON, and there the text encoding/json finds: the string payload or the
// first non-blank string member in the order of the names.
func FuzzPayloadText(f *testing.F) {
	for _, s := range []string{
		`"x"`, `{"title":"t","text":"x"}`, `{"query":"q","text":"  "}`, `{"text":"a","text":"b"}`,
		`{"a":{"text":"no"},"query":"yes"}`, `"\ud83d\ude00"`, `{"text":1}`, `[]`, `{`, "\"\xff\"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got := PayloadText(data, textNames...)
		if got == "" {
			return
		}
		if !utf8.ValidString(got) || blank(got) {
			t.Fatalf("PayloadText(%q) = %q: not valid UTF-8, or blank", data, got)
		}
		if !jsontext.Value(data).IsValid() {
			t.Fatalf("PayloadText found %q in %q, which strict jsontext rejects", got, data)
		}
		var v any
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("encoding/json refuses %q: %v", data, err)
		}
		want := ""
		switch v := v.(type) {
		case string:
			want = v
		case map[string]any:
			for _, k := range textNames {
				if s, ok := v[k].(string); ok && strings.TrimSpace(s) != "" {
					want = s
					break
				}
			}
		}
		if got != want {
			t.Fatalf("PayloadText(%q) = %q, encoding/json finds %q", data, got, want)
		}
	})
}
