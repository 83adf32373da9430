package protocol

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// base is a minimal complete envelope; cases splice fields into it.
const base = `{"v":"clutch/0.1","id":"msg_1","ts":"2026-02-01T13:20:11.123Z","thread_id":"thr_1","run_id":"run_1","task_id":"task_1","from":{"agent_id":"agent:a"},"to":[{"agent_id":"agent:b"}],"type":"task.request","payload":{"q":1}`

func env(extra string) string { return base + extra + "}" }

func TestDecodeErrors(t *testing.T) {
	long := strings.Repeat("x", 300)
	deep := strings.Repeat("[", 100) + strings.Repeat("]", 100)
	cases := []struct {
		name  string
		in    string
		code  Code
		path  string
		limit int
	}{
		{"empty", ``, CodeInvalidJSON, "", 0},
		{"not an object", `[1]`, CodeWrongType, "", 0},
		{"truncated", base, CodeInvalidJSON, "", 0},
		{"trailing data", env(``) + `{}`, CodeInvalidJSON, "", 0},
		{"bad literal", env(`,"meta":{"a":nul}`), CodeInvalidJSON, "/meta/a", 0},
		{"bad number", env(`,"attempt":01`), CodeInvalidJSON, "", 0},
		{"bad escape", env(`,"domain":"a\q"`), CodeInvalidJSON, "/domain", 0},
		{"control char", env(",\"domain\":\"a\x01\""), CodeInvalidJSON, "/domain", 0},
		{"invalid utf8", env(",\"domain\":\"a\xff\""), CodeInvalidUTF8, "/domain", 0},
		{"invalid utf8 in payload", strings.Replace(env(``), `{"q":1}`, "{\"q\":\"\xc3\x28\"}", 1), CodeInvalidUTF8, "/payload/q", 0},
		{"lone surrogate", env(`,"domain":"\ud800"`), CodeInvalidUTF8, "/domain", 0},
		{"lone low surrogate", env(`,"domain":"\udc00x"`), CodeInvalidUTF8, "/domain", 0},
		{"duplicate top key", env(`,"id":"msg_2"`), CodeDuplicateKey, "/id", 0},
		{"duplicate escaped key", env(`,"\u0069d":"msg_2"`), CodeDuplicateKey, "/id", 0},
		{"duplicate extension", env(`,"x_a":1,"x_a":2`), CodeDuplicateKey, "/x_a", 0},
		{"duplicate in payload", strings.Replace(env(``), `{"q":1}`, `{"q":1,"q":2}`, 1), CodeDuplicateKey, "/payload/q", 0},
		{"duplicate deep in meta", env(`,"meta":{"a":[{"b":1,"b":1}]}`), CodeDuplicateKey, "/meta/a/0/b", 0},
		{"duplicate in from", strings.Replace(env(``), `{"agent_id":"agent:a"}`, `{"agent_id":"agent:a","agent_id":"agent:c"}`, 1), CodeDuplicateKey, "/from/agent_id", 0},
		{"wrong type string", strings.Replace(env(``), `"id":"msg_1"`, `"id":1`, 1), CodeWrongType, "/id", 0},
		{"wrong type to", strings.Replace(env(``), `"to":[{"agent_id":"agent:b"}]`, `"to":{"agent_id":"agent:b"}`, 1), CodeWrongType, "/to", 0},
		{"wrong type to elem", strings.Replace(env(``), `"to":[{"agent_id":"agent:b"}]`, `"to":["agent:b"]`, 1), CodeWrongType, "/to/0", 0},
		{"wrong type attempt", env(`,"attempt":"1"`), CodeWrongType, "/attempt", 0},
		{"fractional attempt", env(`,"attempt":1.5`), CodeWrongType, "/attempt", 0},
		{"huge attempt", env(`,"attempt":99999999999`), CodeWrongType, "/attempt", 0},
		{"wrong type sandbox", env(`,"security":{"policy":{"sandbox":"yes"}}`), CodeWrongType, "/security/policy/sandbox", 0},
		{"wrong type requires elem", env(`,"requires":["skill:a",2]`), CodeWrongType, "/requires/1", 0},
		{"wrong type meta", env(`,"meta":[1]`), CodeWrongType, "/meta", 0},
		{"wrong type size", env(`,"attachments":[{"kind":"a","ref":"b","size":"1"}]`), CodeWrongType, "/attachments/0/size", 0},
		{"missing v", strings.Replace(env(``), `"v":"clutch/0.1",`, ``, 1), CodeMissingField, "/v", 0},
		{"missing payload", strings.Replace(base, `,"payload":{"q":1}`, ``, 1) + "}", CodeMissingField, "/payload", 0},
		{"missing agent_id", strings.Replace(env(``), `{"agent_id":"agent:a"}`, `{"role":"x"}`, 1), CodeMissingField, "/from/agent_id", 0},
		{"unknown field in from", strings.Replace(env(``), `{"agent_id":"agent:a"}`, `{"agent_id":"agent:a","name":"x"}`, 1), CodeUnknownField, "/from/name", 0},
		{"unknown field in policy", env(`,"security":{"policy":{"tool_allow_list":["mcp:a"]}}`), CodeUnknownField, "/security/policy/tool_allow_list", 0},
		{"unknown type", strings.Replace(env(``), `"task.request"`, `"task.requested"`, 1), CodeUnknownType, "/type", 0},
		{"bad extension type", strings.Replace(env(``), `"task.request"`, `"x.Acme.thing"`, 1), CodeUnknownType, "/type", 0},
		{"unsupported version", strings.Replace(env(``), `clutch/0.1`, `clutch/0.2`, 1), CodeUnsupportedVersion, "/v", 0},
		{"too large", env(`,"domain":"` + long + `"`), CodeTooLarge, "", 300},
		{"too deep", strings.Replace(env(``), `{"q":1}`, deep, 1), CodeTooDeep, "/payload" + strings.Repeat("/0", 64), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decoder{MaxBytes: tc.limit}.Decode([]byte(tc.in))
			var pe *Error
			if !errors.As(err, &pe) {
				t.Fatalf("err = %v, want *Error %s", err, tc.code)
			}
			if pe.Code != tc.code || pe.Path != tc.path {
				t.Fatalf("got %s at %q (%v), want %s at %q", pe.Code, pe.Path, err, tc.code, tc.path)
			}
			if !errors.Is(err, tc.code) {
				t.Fatalf("errors.Is(err, %s) = false", tc.code)
			}
			if tc.in != "" && (pe.Offset > int64(len(tc.in))) {
				t.Fatalf("offset %d beyond input", pe.Offset)
			}
		})
	}
}

func TestDecodeAccepts(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		m, err := Decode([]byte(env(``)))
		if err != nil {
			t.Fatal(err)
		}
		if m.Attempt != 1 {
			t.Fatalf("attempt defaults to %d, want 1", m.Attempt)
		}
		if err := m.Validate(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("nulls for optional fields", func(t *testing.T) {
		m, err := Decode([]byte(env(`,"parent_task_id":null,"trace":null,"domain":null,"security":null,"meta":null,"attachments":null,"requires":null`)))
		if err != nil {
			t.Fatal(err)
		}
		if m.ParentTaskID != "" || m.Trace != nil || m.Security != nil || m.Meta != nil {
			t.Fatalf("nulls decoded as %+v", m)
		}
	})
	t.Run("whitespace and escapes", func(t *testing.T) {
		in := " \n" + strings.Replace(env(`, "domain" : "caf\u00e9 \"x\" \ud83d\ude02"`), `"msg_1"`, `"msg_\u0031"`, 1) + "\t\n"
		m, err := Decode([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		if m.ID != "msg_1" || m.Domain != "café \"x\" 😂" {
			t.Fatalf("id %q domain %q", m.ID, m.Domain)
		}
		if string(m.Raw()) != in {
			t.Fatal("raw bytes changed")
		}
	})
	t.Run("extensions kept verbatim", func(t *testing.T) {
		m, err := Decode([]byte(env(`,"x_vendor":{"a":[1, 2.50]},"in_reply_to":"msg_0"`)))
		if err != nil {
			t.Fatal(err)
		}
		if string(m.Extensions["x_vendor"]) != `{"a":[1, 2.50]}` || string(m.Extensions["in_reply_to"]) != `"msg_0"` {
			t.Fatalf("extensions = %q", m.Extensions)
		}
		assertRoundTrip(t, m)
	})
	t.Run("meta numbers keep every digit", func(t *testing.T) {
		m, err := Decode([]byte(env(`,"meta":{"big":12345678901234567890123,"f":1.50,"l":[true,null,"s"]}`)))
		if err != nil {
			t.Fatal(err)
		}
		c := m.Clone()
		c.Reset()
		b, err := Encode(c)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"big":12345678901234567890123`) || !strings.Contains(string(b), `"f":1.50`) {
			t.Fatalf("re-encoded meta lost digits: %s", b)
		}
	})
	t.Run("input not retained", func(t *testing.T) {
		in := []byte(env(``))
		m, err := Decode(in)
		if err != nil {
			t.Fatal(err)
		}
		for i := range in {
			in[i] = ' '
		}
		if m.ID != "msg_1" || string(m.Payload) != `{"q":1}` {
			t.Fatal("decoded message aliases the caller's buffer")
		}
	})
	t.Run("extension types", func(t *testing.T) {
		for _, typ := range []string{"x.acme.audit", "x.acme-co.audit.v2", "x.a.b_c"} {
			if _, err := Decode([]byte(strings.Replace(env(``), `"task.request"`, `"`+typ+`"`, 1))); err != nil {
				t.Errorf("%s: %v", typ, err)
			}
		}
	})
}

func TestValidateErrors(t *testing.T) {
	cases := []struct {
		name string
		edit func(m *Message)
		code Code
		path string
	}{
		{"from without agent prefix", func(m *Message) { m.From.AgentID = "ken" }, CodeInvalidField, "/from/agent_id"},
		{"recipient without prefix", func(m *Message) { m.To = []Participant{{AgentID: "agent:b"}, {AgentID: "b"}} }, CodeInvalidField, "/to/1/agent_id"},
		{"attempt zero", func(m *Message) { m.Attempt = 0 }, CodeInvalidField, "/attempt"},
		{"bad ts", func(m *Message) { m.TS = "yesterday" }, CodeInvalidField, "/ts"},
		{"ts without zone", func(m *Message) { m.TS = "2026-02-01T13:20:11" }, CodeInvalidField, "/ts"},
		{"id too long", func(m *Message) { m.ID = strings.Repeat("m", 257) }, CodeInvalidField, "/id"},
		{"missing run", func(m *Message) { m.RunID = "" }, CodeMissingField, "/run_id"},
		{"payload not JSON", func(m *Message) { m.Payload = []byte(`{"a":`) }, CodeInvalidJSON, "/payload/a"},
		{"payload dup key", func(m *Message) { m.Payload = []byte(`{"a":1,"a":2}`) }, CodeDuplicateKey, "/payload/a"},
		{"payload_type form", func(m *Message) { m.PayloadType = "research summary" }, CodeInvalidField, "/payload_type"},
		{"payload_type without version", func(m *Message) { m.PayloadType = "research.summary" }, CodeInvalidField, "/payload_type"},
		{"schema_ref form", func(m *Message) { m.SchemaRef = "http://x/y@1" }, CodeInvalidField, "/schema_ref"},
		{"requires form", func(m *Message) { m.Requires = []string{"research"} }, CodeInvalidField, "/requires/0"},
		{"prefers form", func(m *Message) { m.Prefers = []string{"tool:browser", "domain: fintech"} }, CodeInvalidField, "/prefers/1"},
		{"allowlist form", func(m *Message) { m.Security = &Security{Policy: &Policy{ToolAllowlist: []string{"browser"}}} }, CodeInvalidField, "/security/policy/tool_allowlist/0"},
		{"auth without scheme", func(m *Message) { m.Security = &Security{Auth: &Auth{Kid: "k"}} }, CodeMissingField, "/security/auth/scheme"},
		{"attachment without ref", func(m *Message) { m.Attachments = []Attachment{{Kind: "url"}} }, CodeMissingField, "/attachments/0/ref"},
		{"unknown type", func(m *Message) { m.Type = "task.done" }, CodeUnknownType, "/type"},
		{"version", func(m *Message) { m.V = "clutch/1.0" }, CodeUnsupportedVersion, "/v"},
		{"extension shadows field", func(m *Message) { m.Extensions = map[string]json.RawMessage{"id": json.RawMessage(`"x"`)} }, CodeInvalidField, "/id"},
		{"nil to", func(m *Message) { m.To = nil }, CodeMissingField, "/to"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMessage(TypeTaskRequest, "agent:a")
			tc.edit(m)
			err := m.Validate()
			var pe *Error
			if !errors.As(err, &pe) || pe.Code != tc.code || pe.Path != tc.path {
				t.Fatalf("Validate = %v, want %s at %s", err, tc.code, tc.path)
			}
			if _, err := Encode(m); !errors.Is(err, tc.code) {
				t.Fatalf("Encode = %v, want %s", err, tc.code)
			}
		})
	}
}

func TestEncodeRefusesInvalidUTF8(t *testing.T) {
	m := NewMessage(TypeChatMessage, "agent:a")
	m.Domain = "bad\xffdomain"
	if _, err := Encode(m); !errors.Is(err, CodeInvalidUTF8) {
		t.Fatalf("Encode = %v, want INVALID_UTF8", err)
	}
	m = NewMessage(TypeChatMessage, "agent:a")
	m.Meta = map[string]any{"n": json_number("1x")}
	if _, err := Encode(m); !errors.Is(err, CodeWrongType) {
		t.Fatalf("Encode with bad json.Number = %v, want WRONG_TYPE", err)
	}
}

func TestEncodeKeepsBytes(t *testing.T) {
	m, err := Decode([]byte(" " + env(``)))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != " "+env(``) {
		t.Fatal("Encode re-encoded a decoded message")
	}
	m.Domain = "changed"
	m.Reset()
	b, err = Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"domain":"changed"`) {
		t.Fatalf("after Reset, Encode did not re-encode: %s", b)
	}
}

func TestSetPayloadAndDecodePayload(t *testing.T) {
	type query struct {
		Query string `json:"query"`
		Max   int    `json:"max,omitempty"`
	}
	m := NewMessage(TypeTaskRequest, "agent:ui")
	if err := m.SetPayload(query{Query: "nordic payments", Max: 3}); err != nil {
		t.Fatal(err)
	}
	q, err := DecodePayload[query](m)
	if err != nil || q.Query != "nordic payments" || q.Max != 3 {
		t.Fatalf("DecodePayload = %+v, %v", q, err)
	}
	if err := m.SetPayload([]byte(`{"query":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := DecodePayload[query](m); !errors.Is(err, CodeWrongType) {
		t.Fatalf("wrong type payload: %v", err)
	}
	if err := m.SetPayload([]byte(`{"query":"a","extra":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := DecodePayload[query](m); !errors.Is(err, CodeUnknownField) {
		t.Fatalf("unknown member: %v", err)
	}
	if err := m.SetPayload([]byte(`{"query":"a","query":"b"}`)); !errors.Is(err, CodeDuplicateKey) {
		t.Fatalf("SetPayload accepted a duplicate key: %v", err)
	}
	if err := m.SetPayload(func() {}); !errors.Is(err, CodeWrongType) {
		t.Fatalf("SetPayload of a func: %v", err)
	}
}

func TestStdlibJSONUsesTheCodec(t *testing.T) {
	type wrapper struct {
		Msg  *Message   `json:"msg"`
		Card *AgentCard `json:"card"`
	}
	in := `{"msg":` + env(`,"x_ext":1`) + `,"card":{"v":"clutch/0.1","agent_id":"agent:a","capabilities":[],"x_card":true}}`
	var w wrapper
	if err := json.Unmarshal([]byte(in), &w); err != nil {
		t.Fatal(err)
	}
	if w.Msg.ID != "msg_1" || string(w.Msg.Extensions["x_ext"]) != "1" || string(w.Card.Extensions["x_card"]) != "true" {
		t.Fatalf("decoded %+v %+v", w.Msg, w.Card)
	}
	out, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"msg":` + env(`,"x_ext":1`) + `,"card":{"v":"clutch/0.1","agent_id":"agent:a","capabilities":[],"x_card":true}}`; string(out) != want {
		t.Fatalf("encoded\n%s\nwant\n%s", out, want)
	}
	bad := `{"msg":` + env(`,"id":"again"`) + `}`
	if err := json.Unmarshal([]byte(bad), &w); !errors.Is(err, CodeDuplicateKey) {
		t.Fatalf("encoding/json let a duplicate key through: %v", err)
	}
}

// TestPayloadEncodingMatchesJSONv2: payloads, whether written by the
// envelope's writer (plain values) or by JSON v2 (the protocol's payload
// types), agree with the JSON v2 encoding of the same values and are strict
// JSON.
func TestPayloadEncodingMatchesJSONv2(t *testing.T) {
	for _, v := range []any{
		RoutingDecision{Selected: "agent:ken", Candidates: []string{"agent:ken", "agent:r2"}, Reason: "matched \"x\"", Scores: map[string]float64{"agent:ken": 0.92, "agent:r2": 0.85, "agent:z": 1e-7}, Rejected: map[string]string{"agent:q": "offline"}, Eligible: 2, Considered: 3, Explanation: "Ken chosen over R2: both have \"x\"."},
		RoutingDecision{Selected: "agent:a"},
		ErrorPayload{Code: CodeToolUnavailable, Message: "down", Retryable: true, Details: map[string]any{"tool": "mcp:browser", "n": 5, "list": []any{"a", true, nil}}},
		&ErrorPayload{Code: CodeCycle, Message: "x"},
		map[string]any{"b": "x", "a": []string{"y"}},
	} {
		fast, err := marshalPayload(v)
		if err != nil {
			t.Fatal(err)
		}
		slow, err := marshalValue(v)
		if err != nil {
			t.Fatal(err)
		}
		if !jsonEqual(fast, slow) {
			t.Errorf("%T:\nfast %s\nv2   %s", v, fast, slow)
		}
		if err := checkJSON(fast, ""); err != nil {
			t.Errorf("%T: fast output is not strict JSON: %v", v, err)
		}
	}
	m := NewMessage(TypeTaskError, "agent:a")
	m.Meta = map[string]any{"x": 1}
	if err := m.SetPayload(ErrorPayload{Code: CodeInternal, Details: map[string]any{"f": func() {}}}); err == nil {
		t.Fatal("a func in details was encoded")
	}
	// A payload changed in place after SetPayload is checked again.
	if err := m.SetPayload(map[string]any{"a": 1}); err != nil {
		t.Fatal(err)
	}
	m.Payload = []byte(`{"a":1,"a":2}`)
	if err := m.Validate(); !errors.Is(err, CodeDuplicateKey) {
		t.Fatalf("replaced payload not re-checked: %v", err)
	}
}

// TestValidateOnceForFixedBytes: a message whose bytes are fixed is
// validated once; Reset makes the next Validate look at the fields again.
func TestValidateOnceForFixedBytes(t *testing.T) {
	m, err := Decode([]byte(env(``)))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	m.From.AgentID = "no-prefix"
	m.Reset()
	if err := m.Validate(); !errors.Is(err, CodeInvalidField) {
		t.Fatalf("after Reset, Validate = %v", err)
	}
	bad, err := Decode([]byte(strings.Replace(env(``), `"agent:a"`, `"a"`, 1)))
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // a failure is never cached
		if err := bad.Validate(); !errors.Is(err, CodeInvalidField) {
			t.Fatalf("Validate = %v", err)
		}
	}
}

type marshalsItself struct{ X int }

func (m marshalsItself) MarshalJSON() ([]byte, error) {
	return []byte(`{"x":` + strconv.Itoa(m.X) + `}`), nil
}

type marshalsBadly struct{}

func (marshalsBadly) MarshalJSON() ([]byte, error) { return []byte(`{"a":1,"a":2}`), nil }

func TestSetPayloadMarshaler(t *testing.T) {
	m := NewMessage(TypeChatMessage, "agent:a")
	if err := m.SetPayload(marshalsItself{X: 3}); err != nil || string(m.Payload) != `{"x":3}` {
		t.Fatalf("%s %v", m.Payload, err)
	}
	if err := m.SetPayload(marshalsBadly{}); !errors.Is(err, CodeWrongType) {
		t.Fatalf("a marshaler's duplicate key was accepted: %v", err)
	}
}

func TestDecodeValue(t *testing.T) {
	v, err := Decoder{}.DecodeValue([]byte(` {"s":"a\u00e9","n":[1,-2.5e3,12345678901234567890],"b":true,"z":null,"o":{}} `))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"s": "aé", "n": []any{json.Number("1"), json.Number("-2.5e3"), json.Number("12345678901234567890")},
		"b": true, "z": nil, "o": map[string]any{}}
	if diff := cmp.Diff(want, v); diff != "" {
		t.Errorf("DecodeValue (-want +got):\n%s", diff)
	}
	for _, c := range []struct {
		in   string
		d    Decoder
		code Code
	}{
		{``, Decoder{}, CodeInvalidJSON},
		{`  `, Decoder{}, CodeInvalidJSON},
		{`{} {}`, Decoder{}, CodeInvalidJSON},
		{`{"a":1,"a":2}`, Decoder{}, CodeDuplicateKey},
		{`"\ud800"`, Decoder{}, CodeInvalidUTF8},
		{"\"\xff\"", Decoder{}, CodeInvalidUTF8},
		{`[[[1]]]`, Decoder{MaxDepth: 2}, CodeTooDeep},
		{`[1]`, Decoder{MaxBytes: 2}, CodeTooLarge},
	} {
		if _, err := c.d.DecodeValue([]byte(c.in)); CodeOf(err) != c.code {
			t.Errorf("DecodeValue(%q) = %v, want code %s", c.in, err, c.code)
		}
	}
	if v, err := (Decoder{MaxDepth: 3}).DecodeValue([]byte(`[[[1]]]`)); err != nil || v == nil {
		t.Errorf("at the depth limit: %v, %v", v, err)
	}
}
