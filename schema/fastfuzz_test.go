package schema

import (
	"errors"
	"testing"
)

// FuzzFastValidate checks the fast path against the slow path
// (decodePayload + gojsonschema), the reference, on a schema chosen from
// fastSchemas and the built-ins and any payload bytes:
//   - fast says valid ⇒ the slow path accepts the payload;
//   - fast says invalid ⇒ the slow path refuses it (a violation or an
//     error); only a bail leaves the question open;
//   - the public result (Schema.Validate, Registry.ValidateMessage) is the
//     slow path's, error for error.
//
// Run one keyword family with CLUTCH_FASTFUZZ_FAMILY=number (see
// fastSchemas for the families).
func FuzzFastValidate(f *testing.F) {
	reg, schemas, _ := fastSeedRegistry(f)
	for i := range schemas {
		for _, p := range fastPayloads {
			f.Add(uint16(i), []byte(p))
		}
	}
	f.Fuzz(func(t *testing.T, which uint16, payload []byte) {
		s := schemas[int(which)%len(schemas)]
		checkFast(t, reg, s, payload)
	})
}

// checkFast runs the properties of FuzzFastValidate for one schema and
// payload and returns the fast path's verdict.
func checkFast(t *testing.T, reg *Registry, s *Schema, payload []byte) verdict {
	t.Helper()
	if s.fast == nil {
		t.Fatalf("%s: no fast path for %s", s.PayloadType(), s.JSON())
	}
	v := s.fast.check(payload, s.maxBytes)
	slow := slowValidate(s, payload, "")
	switch {
	case v == fastValid && slow != nil:
		t.Fatalf("%s %s: fast path says valid, gojsonschema says %v\npayload: %q", s.PayloadType(), s.JSON(), slow, payload)
	case v == fastInvalid && slow == nil:
		t.Fatalf("%s %s: fast path says invalid, gojsonschema says valid\npayload: %q", s.PayloadType(), s.JSON(), payload)
	}
	if err := sameError(s.Validate(payload), slow); err != nil {
		t.Fatalf("%s: Validate(%q): %v", s.PayloadType(), payload, err)
	}
	m := message(s.PayloadType(), "")
	m.Payload = payload
	if err := sameError(reg.ValidateMessage(m), slowValidate(s, payload, "/payload")); err != nil {
		t.Fatalf("%s: ValidateMessage(%q): %v", s.PayloadType(), payload, err)
	}
	return v
}

// FuzzFastSchema fuzzes the schema as well: whatever document registers
// and gets a fast path, the fast path agrees with gojsonschema on a few
// payloads and the fuzzed one.
func FuzzFastSchema(f *testing.F) {
	for _, fs := range fastSchemas {
		f.Add([]byte(fs.doc), []byte(`{"a":"x","b":1}`))
	}
	payloads := [][]byte{[]byte(`{}`), []byte(`[]`), []byte(`""`), []byte(`"abc"`), []byte(`null`), []byte(`0`), []byte(`1.5`), []byte(`-7`),
		[]byte(`true`), []byte(`{"a":{"a":[1,{"a":null}]}}`), []byte(`[1,"a",[2]]`), []byte(`{"a":"x","b":1}`)}
	f.Fuzz(func(t *testing.T, doc, payload []byte) {
		reg := newRegistry(t, &Options{NoBuiltins: true, MaxPayloadBytes: 1 << 16})
		if err := reg.Register("fuzz.schema.v1", doc); err != nil {
			var se *SchemaError
			if !errors.As(err, &se) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("unexpected error %T: %v", err, err)
			}
			return
		}
		s, _ := reg.Lookup("fuzz.schema.v1")
		if s.fast == nil {
			return
		}
		checkFast(t, reg, s, payload)
		for _, p := range payloads {
			checkFast(t, reg, s, p)
		}
	})
}
