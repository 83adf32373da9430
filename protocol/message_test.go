package protocol

import (
	"encoding/json"
	"testing"
	"time"
)

func TestTypes(t *testing.T) {
	if n := len(Types()); n != 19 {
		t.Fatalf("%d types, docs/protocol.md §2 has 19", n)
	}
	for _, typ := range Types() {
		if !typ.Standard() || typ.Extension() || !typ.Valid() {
			t.Errorf("%s misclassified", typ)
		}
	}
	for typ, want := range map[Type]bool{
		"x.acme.audit": true, "x.acme.audit.v2": true, "x.acme-co.a_b": true,
		"x.acme": false, "x..a": false, "x.acme.": false, "x.Acme.a": false, "acme.audit": false,
		"x.acme.a b": false, "task.done": false, "": false,
	} {
		if got := typ.Valid(); got != want {
			t.Errorf("%q.Valid() = %v, want %v", typ, got, want)
		}
	}
	if !TypeTaskTimeout.Terminal() || TypeTaskProgress.Terminal() || TypeTaskError.Family() != "task" {
		t.Fatal("Terminal/Family")
	}
}

func TestSchemaRefFor(t *testing.T) {
	for in, want := range map[string]string{
		"research.summary.v1": "schema://clutch/research/summary@1",
		"code.output.v12":     "schema://clutch/code/output@12",
		"review.feedback":     "",
		"bad type.v1":         "",
		"summary.v1":          "",
		"code.output.v01":     "",
	} {
		if got := SchemaRefFor(in); got != want {
			t.Errorf("SchemaRefFor(%q) = %q, want %q", in, got, want)
		}
		if want != "" && !ValidSchemaRef(want) {
			t.Errorf("%q is not a valid schema ref", want)
		}
	}
}

func TestCloneKeepsEmptyTo(t *testing.T) {
	m := NewMessage(TypeTaskRequest, "agent:a")
	c := m.Clone()
	if c.To == nil {
		t.Fatal("Clone turned an empty to into nil")
	}
	if _, err := Encode(c); err != nil {
		t.Fatal(err)
	}
}

// The fast path of validTimestamp sees only strings of its own shape:
// random digits in that shape, compared with time.Parse.
func TestValidTimestampShape(t *testing.T) {
	r := seededRand(t, 5, 6)
	b := []byte("0000-00-00T00:00:00.000Z")
	for range 300000 {
		for _, i := range []int{0, 1, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 17, 18, 20, 21, 22} {
			b[i] = byte('0' + r.IntN(10))
		}
		if r.IntN(2) == 0 { // mostly plausible months, days and times
			b[5], b[6] = byte('0'+r.IntN(2)), byte('0'+r.IntN(10))
			b[8], b[11], b[14], b[17] = byte('0'+r.IntN(4)), byte('0'+r.IntN(3)), byte('0'+r.IntN(7)), byte('0'+r.IntN(7))
		}
		s := string(b)
		_, err := time.Parse(time.RFC3339Nano, s)
		if got := validTimestamp(s); got != (err == nil) {
			t.Fatalf("validTimestamp(%q) = %v, time.Parse: %v", s, got, err)
		}
	}
}

func TestEndsTask(t *testing.T) {
	ids := NewIDs(nil)
	withErr := func(details map[string]any) *Message {
		m := ids.NewMessage(TypeTaskError, "agent:a")
		if err := m.SetPayload(ErrorPayload{Code: CodeTimeout, Message: "slow", Details: details}); err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, c := range []struct {
		m    *Message
		want bool
	}{
		{ids.NewMessage(TypeTaskResult, "agent:a"), true},
		{ids.NewMessage(TypeTaskCancel, "agent:a"), true},
		{ids.NewMessage(TypeTaskTimeout, "agent:a"), true},
		{withErr(nil), true},
		{withErr(map[string]any{"will_retry": false}), true},
		{withErr(map[string]any{"will_retry": true}), false},
		{ids.NewMessage(TypeTaskProgress, "agent:a"), false},
		{ids.NewMessage(TypeTaskRequest, "agent:a"), false},
	} {
		if got := EndsTask(c.m); got != c.want {
			t.Errorf("EndsTask(%s %s) = %v", c.m.Type, c.m.Payload, got)
		}
	}
}

// TestEndsTaskErrorPayloads: for task.error, EndsTask (which decodes the
// payload only when it may name will_retry) answers as decoding every
// payload would, on payloads that spell the name plainly, escaped, nested
// elsewhere, or not at all, valid or not.
func TestEndsTaskErrorPayloads(t *testing.T) {
	for _, p := range []string{
		`{"code":"TIMEOUT","message":"slow","retryable":true}`,
		`{"code":"TIMEOUT","message":"slow","retryable":true,"details":{"will_retry":true}}`,
		`{"code":"TIMEOUT","message":"slow","retryable":true,"details":{"will_retry":false}}`,
		`{"code":"TIMEOUT","message":"slow","retryable":true,"details":{"will_retry":"yes"}}`,
		`{"code":"TIMEOUT","message":"slow","retryable":true,"details":{"will\u005fretry":true}}`,
		`{"code":"TIMEOUT","message":"will_retry","retryable":true,"details":{"x":{"will_retry":true}}}`,
		`{"code":"TIMEOUT","message":"slow","retryable":true,"details":{"will_retry":true},"extra":1}`,
		`{"code":"TIMEOUT","message":"say \"hi\"","retryable":true,"details":{"attempt":2}}`,
		`{"code":"TIMEOUT","message":"slow","details":{"Will_Retry":true}}`,
		`{"code":"TIMEOUT"`, `null`, `[]`, `"will_retry"`,
	} {
		m := &Message{Type: TypeTaskError, Payload: json.RawMessage(p)}
		ep, err := DecodePayload[ErrorPayload](m)
		want := err != nil || ep.Details["will_retry"] != true
		if got := EndsTask(m); got != want {
			t.Errorf("EndsTask(task.error %s) = %v, decoding says %v", p, got, want)
		}
	}
}
