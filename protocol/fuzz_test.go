package protocol

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/go-json-experiment/json/jsontext"
	"github.com/google/go-cmp/cmp"
)

func addFileSeeds(f *testing.F, patterns ...string) {
	for _, p := range patterns {
		files, _ := filepath.Glob(filepath.Join("testdata", p))
		for _, file := range files {
			b, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(b)
		}
	}
}

// FuzzDecode: Decode never panics; what it accepts is valid strict JSON by a
// second, independent parser (no parser differential); whatever decodes
// re-encodes and decodes to an equal value.
func FuzzDecode(f *testing.F) {
	addFileSeeds(f, "examples/*.json", "signed/*.json")
	for _, s := range []string{
		env(``),
		env(`,"meta":{"a":[1,-2.5e3,true,null,{"b":"\u00e9"}]},"x_ext":{"k":[]}`),
		env(`,"security":{"auth":{"scheme":"ed25519","kid":"k","sig":"s"},"policy":{"sandbox":true,"tool_allowlist":["mcp:a"]}}`),
		env(`,"attachments":[{"kind":"artifact_ref","ref":"artifact:x","size":3,"sha256":"ab"}],"trace":{"trace_id":"t"}`),
		env(`,"id":"dup"`),
		env(`,"domain":"\ud83d\ude02\ud800"`),
		`{"v":"clutch/0.1"`,
		`[]`, `null`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if !jsontext.Value(data).IsValid() {
			t.Fatalf("Decode accepted input that strict jsontext rejects: %q", data)
		}
		_ = m.Validate()
		c := m.Clone()
		c.Reset()
		b, err := appendMessage(nil, c)
		if err != nil {
			t.Fatalf("re-encode of decoded message: %v", err)
		}
		m2, err := Decode(b)
		if err != nil {
			t.Fatalf("decode of re-encoded %q: %v", b, err)
		}
		if diff := cmp.Diff(m, m2, cmpMessage, cmp.Comparer(jsonEqual)); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
	})
}

// FuzzDecodeAgentCard: DecodeAgentCard never panics and what it accepts
// re-encodes and decodes to an equal card.
func FuzzDecodeAgentCard(f *testing.F) {
	addFileSeeds(f, "examples/02-agentcard.json")
	for _, s := range []string{
		`{"v":"clutch/0.1","agent_id":"agent:a","capabilities":[]}`,
		`{"v":"clutch/0.1","agent_id":"agent:a","capabilities":[{"id":"skill:x","tags":["t"],"trust_level":"prod"}],"limits":{"max_concurrency":1},"x":1}`,
		`{"v":"clutch/0.1","agent_id":"agent:a","capabilities":[],"agent_id":"agent:b"}`,
		`{"v":"clutch/0.1","agent_id":"agent:a","capabilities":[],"security":{"sandbox":true,"keys":[{"kid":"k1","alg":"ed25519","public_key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8"}]}}`,
		`{"v":"clutch/0.1","agent_id":"a","capabilities":[{"id":"skill:x","extra":1}]}`,
		`{}`, `[`, ``,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeAgentCard(data)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			return
		}
		if !jsontext.Value(data).IsValid() {
			t.Fatalf("DecodeAgentCard accepted input that strict jsontext rejects: %q", data)
		}
		b, err := EncodeAgentCard(c)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		c2, err := DecodeAgentCard(b)
		if err != nil {
			t.Fatalf("decode of re-encoded %q: %v", b, err)
		}
		if diff := cmp.Diff(c, c2, cmp.Comparer(jsonEqual)); diff != "" {
			t.Fatalf("round trip (-first +second):\n%s", diff)
		}
	})
}

// FuzzValidTimestamp: the fast timestamp check agrees with time.Parse on
// every input.
func FuzzValidTimestamp(f *testing.F) {
	for _, s := range []string{
		"2026-03-14T09:26:53.589Z", "2024-02-29T00:00:00.000Z", "2023-02-29T00:00:00.000Z",
		"1900-02-29T00:00:00.000Z", "2000-02-29T23:59:59.999Z", "2026-04-31T00:00:00.000Z",
		"2026-13-01T00:00:00.000Z", "2026-00-01T00:00:00.000Z", "2026-01-00T00:00:00.000Z",
		"2026-01-01T24:00:00.000Z", "2026-01-01T23:60:00.000Z", "2026-01-01T23:59:60.000Z",
		"0000-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z", "2026-01-01t00:00:00.000Z",
		"2026-01-01T00:00:00.000z", "2026-01-01T00:00:00.00aZ", "+026-01-01T00:00:00.000Z",
		"2026-01-01T00:00:00Z", "2026-01-01T00:00:00.123456789+02:00", "2026-1-01T00:00:00.000Z",
		"", "2026-01-01 00:00:00.000Z", "2026-01-01T00:00:00,000Z",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := time.Parse(time.RFC3339Nano, s)
		if got, want := validTimestamp(s), err == nil; got != want {
			t.Fatalf("validTimestamp(%q) = %v, time.Parse says %v (%v)", s, got, want, err)
		}
	})
}

// DecodeValue accepts exactly what strict jsontext accepts (within its
// depth limit), and what it gives encodes back to the same value.
func FuzzDecodeValue(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,-2.5e3,true,null,{"b":"\u00e9"}]}`, `"x"`, `12345678901234567890.5`, `[]`, ` {} `,
		`{"a":1,"a":2}`, `"\ud800"`, "\"\xff\"", `{} x`, "\xef\xbb\xbf{}", `[1,]`, ``, ` `,
	} {
		f.Add([]byte(s))
	}
	d := Decoder{MaxDepth: 100}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := d.DecodeValue(data)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error of type %T: %v", err, err)
			}
			if CodeOf(err) != CodeTooDeep && jsontext.Value(data).IsValid() {
				t.Fatalf("DecodeValue refused input that strict jsontext accepts: %q: %v", data, err)
			}
			return
		}
		if !jsontext.Value(data).IsValid() {
			t.Fatalf("DecodeValue accepted input that strict jsontext rejects: %q", data)
		}
		var w writer
		b := w.anyValue(nil, v, 0)
		if w.err != nil {
			t.Fatalf("encoding %#v: %v", v, w.err)
		}
		v2, err := d.DecodeValue(b)
		if err != nil || !reflect.DeepEqual(v, v2) {
			t.Fatalf("decode of re-encoded %q: %#v, %v; want %#v", b, v2, err, v)
		}
	})
}
