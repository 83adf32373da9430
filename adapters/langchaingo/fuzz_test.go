package langchaingo

import (
	"encoding/json"
	"slices"
	"testing"
)

// FuzzDecodeInputs feeds task.request payloads to the chain input
// decoder, for a chain of one input and one of two: it never panics, a
// JSON string is the one input, and what it accepts holds every input the
// chain needs.
func FuzzDecodeInputs(f *testing.F) {
	for _, s := range []string{`"hello"`, `{"text":"hi"}`, `{"text":1}`, `{"input":"x"}`, `{"what":"a","city":"b"}`, `{"what":"a"}`, `[1,2]`, `null`, `{"text":"a","b":1}`, `"\ud800"`, `{`, `1e999`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, needed := range [][]string{{"input"}, {"what", "city"}} {
			in, err := decodeInputs(raw, needed)
			var s string
			if len(needed) == 1 && json.Unmarshal(raw, &s) == nil && (err != nil || in["input"] != s) {
				t.Fatalf("%q: %v, %v", raw, in, err)
			}
			if err != nil {
				continue
			}
			for _, k := range needed {
				if _, ok := in[k]; !ok {
					t.Fatalf("%q accepted without %q: %v", raw, k, in)
				}
			}
			if slices.Contains(needed, "city") && len(in) == 0 {
				t.Fatalf("%q: empty inputs", raw)
			}
		}
	})
}
