package protocol

import (
	"encoding/json"
	"time"
)

// Message is the Clutch envelope (ClutchMessage, docs/protocol.md §1.1–§1.2).
// Its JSON names are those of the field reference, docs/protocol.md §1.2.
//
// A Message obtained from [Decode] remembers the exact bytes it arrived in
// (see [Message.Raw]); a Message built in Go is encoded once, by [Encode], and
// remembers those bytes. Changing a field after that does not change Raw;
// call [Encode] again (or [Message.Reset]) to re-encode. A Message must not
// be changed while other goroutines read it.
type Message struct {
	V            string        `json:"v"`
	ID           string        `json:"id"`
	TS           string        `json:"ts"` // RFC 3339; see [Message.Time]
	ThreadID     string        `json:"thread_id"`
	RunID        string        `json:"run_id"`
	TaskID       string        `json:"task_id"`
	ParentTaskID string        `json:"parent_task_id,omitempty"` // "" encodes as absent; null decodes as ""
	Trace        *Trace        `json:"trace,omitempty"`
	From         Participant   `json:"from"`
	To           []Participant `json:"to"`
	Type         Type          `json:"type"`
	Domain       string        `json:"domain,omitempty"`
	PayloadType  string        `json:"payload_type,omitempty"`
	SchemaRef    string        `json:"schema_ref,omitempty"`
	// Payload is the type-specific content as raw JSON. Use [DecodePayload]
	// and [Message.SetPayload] to move between it and Go values.
	Payload        json.RawMessage `json:"payload"`
	Requires       []string        `json:"requires,omitempty"`
	Prefers        []string        `json:"prefers,omitempty"`
	Security       *Security       `json:"security,omitempty"`
	Attachments    []Attachment    `json:"attachments,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
	// Attempt is the 1-based retry attempt (§5.3). Decoding a message without
	// "attempt" sets 1, the default of docs/protocol.md §1.2; 0 is invalid.
	Attempt int `json:"attempt"`
	// Meta holds framework-specific metadata. Decoded numbers are
	// json.Number, so no digit is lost; objects are map[string]any and
	// arrays []any.
	Meta map[string]any `json:"meta,omitempty"`
	// Extensions holds top-level members the protocol does not define, each
	// as its raw JSON value, so that foreign fields survive a round trip and
	// are covered by a signature. Names of defined fields are not allowed.
	Extensions map[string]json.RawMessage `json:"-"`

	raw     []byte // the exact bytes this message was decoded from or encoded to
	checked []byte // the payload SetPayload produced and checked
	valid   bool   // Validate passed while raw was set
}

// MetaStep is the meta key that names the workflow step a message answers
// ("meta": {"step": "research"}, docs/protocol.md §3.4). A router copies a
// task.request's meta.step to the task's result.
const MetaStep = "step"

// Participant is a sender or recipient: {"agent_id": "agent:ken", "role": "worker"}.
type Participant struct {
	AgentID string `json:"agent_id"`
	Role    string `json:"role,omitempty"`
}

// Trace carries distributed tracing ids (§1.1).
type Trace struct {
	TraceID      string `json:"trace_id,omitempty"`
	SpanID       string `json:"span_id,omitempty"`
	ParentSpanID string `json:"parent_span_id,omitempty"`
}

// Security carries authentication and policy (§1.1, §6).
type Security struct {
	Auth   *Auth   `json:"auth,omitempty"`
	Policy *Policy `json:"policy,omitempty"`
}

// Auth is a message signature (§6); see [Sign] and [Verify].
type Auth struct {
	Scheme string `json:"scheme"`        // "ed25519"
	Kid    string `json:"kid,omitempty"` // key id, resolved by a KeyResolver
	Sig    string `json:"sig,omitempty"` // base64url without padding
}

// Policy constrains where and with which tools a task may run (§4.2, §6).
type Policy struct {
	// Sandbox requires a sandboxed agent. False means no requirement.
	Sandbox bool `json:"sandbox,omitempty"`
	// ToolAllowlist, when set, lists the only tool servers (e.g. "mcp:browser")
	// the task may use.
	ToolAllowlist []string `json:"tool_allowlist,omitempty"`
}

// Attachment references an artifact (§1.1, §8.2).
type Attachment struct {
	Kind      string `json:"kind"`                 // "artifact_ref", "url", "inline", ...
	Ref       string `json:"ref"`                  // "artifact:sha256:<hex>", a URL, ...
	MediaType string `json:"media_type,omitempty"` // e.g. "application/pdf"
	Name      string `json:"name,omitempty"`
	Size      int64  `json:"size,omitempty"`
	// SHA256 is the hex digest of the content, when known (docs/protocol.md has no
	// digest field; CLowl's ctx.hash needs one).
	SHA256 string `json:"sha256,omitempty"`
}

// Raw returns the exact bytes m was decoded from or last encoded to, or nil
// for a message that has never been encoded. The slice is shared: do not
// modify it.
func (m *Message) Raw() []byte { return m.raw }

// Reset forgets the remembered bytes, so the next [Encode] encodes the
// current fields. Use it after changing a decoded message on purpose (which
// invalidates any signature it carried).
func (m *Message) Reset() { m.raw, m.valid = nil, false }

// Time parses TS.
func (m *Message) Time() (time.Time, error) { return time.Parse(time.RFC3339Nano, m.TS) }

// SetPayload encodes v as the payload. v may be a json.RawMessage or []byte
// holding JSON, which is checked and kept as is. It forgets any remembered
// bytes (see [Message.Reset]).
func (m *Message) SetPayload(v any) error {
	var b []byte
	switch x := v.(type) {
	case json.RawMessage:
		b = x
	case []byte:
		b = x
	default:
		out, err := marshalPayload(v)
		if err != nil {
			return &Error{Code: CodeWrongType, Path: "/payload", Offset: -1, Detail: "payload cannot be encoded as JSON", Err: err}
		}
		// Our encoders and JSON v2 emit strict JSON only (v2 checks the
		// output of MarshalJSON methods), so it needs no second check.
		m.Payload, m.checked = out, out
		m.raw, m.valid = nil, false
		return nil
	}
	if err := checkJSON(b, "/payload"); err != nil {
		return err
	}
	m.Payload = append(json.RawMessage(nil), b...)
	m.checked = m.Payload
	m.raw, m.valid = nil, false
	return nil
}

// payloadChecked reports whether m.Payload is the slice SetPayload checked.
func (m *Message) payloadChecked() bool {
	return len(m.Payload) > 0 && len(m.checked) == len(m.Payload) && &m.checked[0] == &m.Payload[0]
}

// DecodePayload decodes m.Payload into a new T, strictly: duplicate keys,
// invalid UTF-8 and members T does not define are errors.
func DecodePayload[T any](m *Message) (T, error) {
	var v T
	err := unmarshalStrict(m.Payload, &v)
	if err != nil {
		return v, wrapUnmarshal(err, "/payload")
	}
	return v, nil
}

// Clone returns a deep copy of m that shares no memory with it, including
// the remembered bytes.
func (m *Message) Clone() *Message {
	c := *m
	if m.Trace != nil {
		t := *m.Trace
		c.Trace = &t
	}
	if m.To != nil {
		c.To = append(make([]Participant, 0, len(m.To)), m.To...) // an empty to stays empty, not nil
	}
	c.Payload = append(json.RawMessage(nil), m.Payload...)
	c.Requires = cloneStrings(m.Requires)
	c.Prefers = cloneStrings(m.Prefers)
	if m.Security != nil {
		s := *m.Security
		if s.Auth != nil {
			a := *s.Auth
			s.Auth = &a
		}
		if s.Policy != nil {
			p := *s.Policy
			p.ToolAllowlist = cloneStrings(p.ToolAllowlist)
			s.Policy = &p
		}
		c.Security = &s
	}
	if m.Attachments != nil {
		c.Attachments = append([]Attachment(nil), m.Attachments...)
	}
	if m.Meta != nil {
		c.Meta = cloneAny(m.Meta).(map[string]any)
	}
	if m.Extensions != nil {
		c.Extensions = make(map[string]json.RawMessage, len(m.Extensions))
		for k, v := range m.Extensions {
			c.Extensions[k] = append(json.RawMessage(nil), v...)
		}
	}
	if m.raw != nil {
		c.raw = append([]byte(nil), m.raw...)
	}
	return &c
}

func cloneStrings(s []string) []string {
	if s == nil {
		return nil
	}
	return append([]string(nil), s...)
}

func cloneAny(v any) any {
	switch x := v.(type) {
	case map[string]any:
		c := make(map[string]any, len(x))
		for k, e := range x {
			c[k] = cloneAny(e)
		}
		return c
	case []any:
		c := make([]any, len(x))
		for i, e := range x {
			c[i] = cloneAny(e)
		}
		return c
	}
	return v
}

// MarshalJSON makes encoding/json (and JSON v2) use [Encode], so a Message
// embedded in the caller's own structs encodes exactly as on the wire,
// extensions included, and a decoded message keeps its bytes.
func (m *Message) MarshalJSON() ([]byte, error) { return Encode(m) }

// UnmarshalJSON makes encoding/json (and JSON v2) use [Decode], with its
// strictness and limits.
func (m *Message) UnmarshalJSON(b []byte) error {
	d, err := Decode(b)
	if err != nil {
		return err
	}
	*m = *d
	return nil
}
