package schema

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
)

// TestUnknownPayloadTypeSaidOnce: the error names the payload type once,
// quoted, after the words that say what is wrong.
func TestUnknownPayloadTypeSaidOnce(t *testing.T) {
	reg := newRegistry(t, nil)
	err := reg.Validate("research.query.v2", []byte(`{}`))
	if got, want := err.Error(), `schema: unknown payload type "research.query.v2"`; got != want {
		t.Fatalf("Validate: %q, want %q", got, want)
	}
	err = reg.ValidateMessage(message("research.query.v2", `{}`))
	if got, want := err.Error(), `schema: unknown payload type "research.query.v2"`; got != want {
		t.Fatalf("ValidateMessage: %q, want %q", got, want)
	}
	if !errors.Is(err, ErrUnknownPayloadType) || protocol.CodeOf(err) != protocol.CodeValidation {
		t.Fatalf("%v: not ErrUnknownPayloadType with VALIDATION", err)
	}
}

// TestViolationJSON: a violation's JSON members are lower-case, the same
// as in ErrorDetails.
func TestViolationJSON(t *testing.T) {
	reg := newRegistry(t, nil)
	ve := validationErr(t, reg.Validate(PayloadResearchQuery, []byte(`{}`)))
	b, err := json.Marshal(ve.Violations[0])
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]string
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	v := ve.Violations[0]
	want := map[string]string{"path": v.Path, "keyword": v.Keyword, "message": v.Message}
	if len(got) != 3 || got["path"] != want["path"] || got["keyword"] != want["keyword"] || got["message"] != want["message"] {
		t.Fatalf("violation JSON %s, want the members %v", b, want)
	}
	d, _ := json.Marshal(ve.ErrorDetails()["violations"].([]any)[0])
	var fromDetails map[string]string
	if err := json.Unmarshal(d, &fromDetails); err != nil || len(fromDetails) != 3 || fromDetails["path"] != v.Path ||
		fromDetails["keyword"] != v.Keyword || fromDetails["message"] != v.Message {
		t.Fatalf("ErrorDetails %s, json.Marshal %s: not the same shape", d, b)
	}
}
