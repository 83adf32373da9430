package schema

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/clutchprotocol/clutch/protocol"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func newRegistry(t testing.TB, opts *Options) *Registry {
	t.Helper()
	r, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return r
}

// validationErr asserts that err is a *ValidationError and returns it.
func validationErr(t testing.TB, err error) *ValidationError {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("want *ValidationError, got %T: %v", err, err)
	}
	if !errors.Is(err, ErrValidation) || !errors.Is(err, protocol.CodeValidation) {
		t.Fatalf("ValidationError does not match ErrValidation / CodeValidation: %v", err)
	}
	if protocol.CodeOf(err) != protocol.CodeValidation {
		t.Fatalf("CodeOf = %s", protocol.CodeOf(err))
	}
	if len(ve.Violations) == 0 {
		t.Fatalf("ValidationError without violations")
	}
	return ve
}

// hasViolation reports whether ve holds a violation at path with keyword.
func hasViolation(ve *ValidationError, path, keyword string) bool {
	for _, v := range ve.Violations {
		if v.Path == path && v.Keyword == keyword {
			return true
		}
	}
	return false
}

// message returns a task.result message carrying payload.
func message(payloadType, payload string) *protocol.Message {
	m := protocol.NewMessage(protocol.TypeTaskResult, "agent:ken")
	m.PayloadType = payloadType
	m.Payload = json.RawMessage(payload)
	return m
}

// mustJSON encodes v.
func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// without returns the JSON object doc with member name removed.
func without(t testing.TB, doc, name string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	delete(m, name)
	return string(mustJSON(t, m))
}

// with returns the JSON object doc with member name set to the raw value.
func with(t testing.TB, doc, name, raw string) string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	m[name] = json.RawMessage(raw)
	return string(mustJSON(t, m))
}

func contains(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func newOf(t reflect.Type) any { return reflect.New(t).Interface() }
