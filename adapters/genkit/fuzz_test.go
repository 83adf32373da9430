package genkit

import (
	"encoding/json"
	"testing"
)

// FuzzDecodeInput feeds task.request payloads to the flow input decoder:
// it never panics, a string input takes any JSON string, and a decoded
// struct input re-encodes.
func FuzzDecodeInput(f *testing.F) {
	for _, s := range []string{`"hello"`, `{"text":"hi"}`, `{"text":1}`, `{"city":"Oslo"}`, `[1,2]`, `null`, `{"text":"a","b":1}`, `"\ud800"`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := decodeInput[string](raw)
		var want string
		if json.Unmarshal(raw, &want) == nil && (err != nil || s != want) {
			t.Fatalf("%q: %q, %v", raw, s, err)
		}
		v, err := decodeInput[struct {
			City string `json:"city"`
		}](raw)
		if err == nil {
			if _, err := json.Marshal(v); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// FuzzDecodeCheckpoint feeds checkpoint artifacts (read back from a
// store) to their decoder: it never panics, and what it accepts can be
// resumed from.
func FuzzDecodeCheckpoint(f *testing.F) {
	for _, s := range []string{
		`{"index":0,"model":"fake/m","messages":[{"role":"model","content":[{"toolRequest":{"name":"pay","ref":"1"}}]}],"interrupts":[{"toolRequest":{"name":"pay","ref":"1"}}]}`,
		`{"index":2,"done":[{}],"model":"m","messages":[{}],"interrupts":[{}]}`,
		`{"index":0,"model":"m","messages":[null],"interrupts":[{"text":"x"}]}`,
		`{"index":-1}`, `[]`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cp, err := decodeCheckpoint(data)
		if err != nil {
			return
		}
		if cp.Model == "" || cp.Index > len(cp.Done) || len(cp.Interrupts) == 0 || cp.Messages[len(cp.Messages)-1] == nil {
			t.Fatalf("accepted %s", data)
		}
		for _, p := range cp.Interrupts {
			if p.ToolRequest.Name == "" {
				t.Fatalf("accepted %s", data)
			}
		}
	})
}

// FuzzInterruptOf feeds span status texts to the interrupt reader: it
// never panics and knows an interrupt by its prefix alone.
func FuzzInterruptOf(f *testing.F) {
	for _, s := range []string{"tool execution interrupted", "tool execution interrupted: \n\n{\n  \"question\": \"Pay?\"\n}", "tool execution interrupted: {", "boom", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		_, ok := interruptOf(msg)
		if ok != (len(msg) >= len(interruptPrefix) && msg[:len(interruptPrefix)] == interruptPrefix) {
			t.Fatalf("%q: %v", msg, ok)
		}
	})
}
