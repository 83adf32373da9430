package protocol

import (
	"encoding/json"
)

// Default limits of a zero [Decoder].
const (
	DefaultMaxBytes = 1 << 20 // 1 MiB
	DefaultMaxDepth = 64
)

// Decoder holds the limits for decoding. The zero value uses the defaults;
// [Decode] and [DecodeAgentCard] use a zero Decoder.
type Decoder struct {
	// MaxBytes is the largest input accepted, DefaultMaxBytes when 0.
	MaxBytes int
	// MaxDepth is the deepest nesting of objects and arrays accepted inside
	// payload, meta and extension values, DefaultMaxDepth when 0.
	MaxDepth int
}

func (d Decoder) limits() (maxBytes, maxDepth int) {
	maxBytes, maxDepth = d.MaxBytes, d.MaxDepth
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if maxDepth <= 0 {
		maxDepth = DefaultMaxDepth
	}
	return
}

// DecodeValue decodes data, one JSON value of any kind, into the Go values
// Decode gives meta values: map[string]any, []any, string, json.Number
// (numbers keep every digit), bool and nil. It is as strict as Decode:
// duplicate object names, invalid UTF-8, lone surrogate escapes and
// anything but white space after the value are errors (an *Error, code
// INVALID_JSON, INVALID_UTF8 or DUPLICATE_KEY), and so are input over
// MaxBytes (TOO_LARGE) and nesting deeper than MaxDepth (TOO_DEEP). Strings share
// one copy of data; data itself is not retained.
func (d Decoder) DecodeValue(data []byte) (any, error) {
	maxBytes, maxDepth := d.limits()
	if len(data) > maxBytes {
		return nil, newError(CodeTooLarge, "", maxBytes, "value is %d bytes, limit %d", len(data), maxBytes)
	}
	sc := scanner{data: data, s: string(data), maxDepth: maxDepth}
	if sc.peek(); sc.pos >= len(data) {
		return nil, sc.err(CodeInvalidJSON, "empty input")
	}
	v, err := sc.anyValue(0)
	if err != nil {
		return nil, err
	}
	if sc.peek() != 0 || sc.pos < len(data) {
		return nil, sc.err(CodeInvalidJSON, "data after the JSON value")
	}
	return v, nil
}

// Decode decodes one envelope strictly with the default limits. See
// [Decoder.Decode].
func Decode(data []byte) (*Message, error) { return Decoder{}.Decode(data) }

// field bits, in the order of docs/protocol.md §1.2, for duplicate and missing-field checks.
const (
	fV = 1 << iota
	fID
	fTS
	fThread
	fRun
	fTask
	fParent
	fTrace
	fFrom
	fTo
	fType
	fDomain
	fPayloadType
	fSchemaRef
	fPayload
	fRequires
	fPrefers
	fSecurity
	fAttachments
	fIdem
	fAttempt
	fMeta
)

var required = []struct {
	bit  int
	name string
}{
	{fV, "v"}, {fID, "id"}, {fTS, "ts"}, {fThread, "thread_id"}, {fRun, "run_id"},
	{fTask, "task_id"}, {fFrom, "from"}, {fTo, "to"}, {fType, "type"}, {fPayload, "payload"},
}

// Decode decodes one envelope. It is strict (docs/protocol.md §1.2; docs/protocol.md §11 "the
// envelope"): the input must be one JSON object of at most MaxBytes, in valid
// UTF-8, with no duplicate key at any depth, every field of the JSON type
// docs/protocol.md §1.2 gives it, every required field present, "v" equal to [Version] and
// "type" a §2 type or an x.<vendor>.<name> extension. Each failure is an
// [*Error] with a stable [Code], the JSON pointer of the field and the byte
// offset.
//
// Members the protocol does not define are kept, verbatim, in
// [Message.Extensions] when they are top-level; inside the protocol's own
// objects (from, to[], trace, security, auth, policy, attachments[]) they are
// an UNKNOWN_FIELD error, because a misspelt policy field must not silently
// disable the policy.
//
// Decode checks structure, not meaning: call [Message.Validate] for the
// semantic rules. The returned message keeps a copy of data (see
// [Message.Raw]); data itself is not retained.
func (d Decoder) Decode(data []byte) (*Message, error) {
	maxBytes, maxDepth := d.limits()
	if len(data) > maxBytes {
		return nil, newError(CodeTooLarge, "", maxBytes, "message is %d bytes, limit %d", len(data), maxBytes)
	}
	raw := append([]byte(nil), data...)
	sc := scanner{data: raw, s: string(raw), maxDepth: maxDepth}
	m := &Message{Attempt: 1, raw: raw}
	if sc.peek() != '{' {
		if sc.pos >= len(raw) {
			return nil, sc.err(CodeInvalidJSON, "empty input")
		}
		return nil, sc.wrongType("object")
	}
	var seen int
	err := sc.objectDedup(func(k string) *Error {
		keyEnd := sc.pos
		bit, e := sc.member(m, k, seen)
		if e != nil {
			return prefix(e, k)
		}
		if bit < 0 {
			sc.pos = keyEnd
			return &Error{Code: CodeDuplicateKey, Path: "/" + escapePointer(k), Offset: int64(keyEnd), Detail: "duplicate key " + quote(k)}
		}
		seen |= bit
		return nil
	}, false)
	if err != nil {
		return nil, err
	}
	if sc.peek() != 0 || sc.pos < len(raw) {
		return nil, sc.err(CodeInvalidJSON, "data after the JSON object")
	}
	for _, r := range required {
		if seen&r.bit == 0 {
			return nil, newError(CodeMissingField, "/"+r.name, -1, "required field %q is missing", r.name)
		}
	}
	return m, nil
}

// member decodes the value of top-level member k into m and returns its
// field bit, or -1 when k was seen before (a duplicate key).
func (sc *scanner) member(m *Message, k string, seen int) (int, *Error) {
	if b := fieldBit(k); b != 0 && seen&b != 0 {
		return -1, nil
	} else if b == 0 {
		if _, dup := m.Extensions[k]; dup {
			return -1, nil
		}
	}
	var err *Error
	switch k {
	case "v":
		start := sc.pos
		if m.V, err = sc.str(); err == nil && m.V != Version {
			sc.pos = start
			return 0, sc.err(CodeUnsupportedVersion, "version %q, this package speaks %q", m.V, Version)
		}
		return fV, err
	case "id":
		m.ID, err = sc.str()
		return fID, err
	case "ts":
		m.TS, err = sc.str()
		return fTS, err
	case "thread_id":
		m.ThreadID, err = sc.str()
		return fThread, err
	case "run_id":
		m.RunID, err = sc.str()
		return fRun, err
	case "task_id":
		m.TaskID, err = sc.str()
		return fTask, err
	case "parent_task_id":
		if !sc.null() {
			m.ParentTaskID, err = sc.str()
		}
		return fParent, err
	case "trace":
		if sc.null() {
			return fTrace, nil
		}
		m.Trace = &Trace{}
		return fTrace, sc.trace(m.Trace)
	case "from":
		return fFrom, sc.participant(&m.From)
	case "to":
		if sc.peek() != '[' {
			return 0, sc.wrongType("array")
		}
		m.To = make([]Participant, 0, 2)
		return fTo, sc.array(func(i int) *Error {
			m.To = append(m.To, Participant{})
			return prefixIndex(sc.participant(&m.To[i]), i)
		})
	case "type":
		if sc.peek() != '"' {
			return 0, sc.wrongType("string")
		}
		start := sc.pos
		a, b, esc, e := sc.strRange()
		if e != nil {
			return 0, e
		}
		t := Type(sc.sub(a, b))
		if esc {
			t = Type(unescape(sc.data[a:b]))
		}
		if !t.Valid() {
			sc.pos = start
			return 0, sc.err(CodeUnknownType, "type %q is neither a docs/protocol.md §2 type nor x.<vendor>.<name>", string(t))
		}
		if std := internType(sc.data[a:b]); std != "" {
			t = std
		}
		m.Type = t
		return fType, nil
	case "domain":
		if !sc.null() {
			m.Domain, err = sc.str()
		}
		return fDomain, err
	case "payload_type":
		if !sc.null() {
			m.PayloadType, err = sc.str()
		}
		return fPayloadType, err
	case "schema_ref":
		if !sc.null() {
			m.SchemaRef, err = sc.str()
		}
		return fSchemaRef, err
	case "payload":
		a, b, e := sc.skip(0)
		m.Payload = json.RawMessage(sc.data[a:b:b])
		return fPayload, e
	case "requires":
		m.Requires, err = sc.strings()
		return fRequires, err
	case "prefers":
		m.Prefers, err = sc.strings()
		return fPrefers, err
	case "security":
		if sc.null() {
			return fSecurity, nil
		}
		m.Security = &Security{}
		return fSecurity, sc.security(m.Security)
	case "attachments":
		if sc.null() {
			return fAttachments, nil
		}
		if sc.peek() != '[' {
			return 0, sc.wrongType("array")
		}
		m.Attachments = []Attachment{}
		return fAttachments, sc.array(func(i int) *Error {
			m.Attachments = append(m.Attachments, Attachment{})
			return prefixIndex(sc.attachment(&m.Attachments[i]), i)
		})
	case "idempotency_key":
		if !sc.null() {
			m.IdempotencyKey, err = sc.str()
		}
		return fIdem, err
	case "attempt":
		start := sc.pos
		n, e := sc.integer()
		if e == nil && (n < -1<<31 || n > 1<<31-1) {
			sc.pos = start
			return 0, sc.err(CodeWrongType, "attempt %d out of range", n)
		}
		m.Attempt = int(n)
		return fAttempt, e
	case "meta":
		if sc.null() {
			return fMeta, nil
		}
		if sc.peek() != '{' {
			return 0, sc.wrongType("object")
		}
		v, e := sc.anyValue(0)
		if e == nil {
			m.Meta = v.(map[string]any)
		}
		return fMeta, e
	}
	// Not a field of docs/protocol.md §1.2: keep it verbatim.
	a, b, e := sc.skip(0)
	if e != nil {
		return 0, e
	}
	if m.Extensions == nil {
		m.Extensions = make(map[string]json.RawMessage, 1)
	}
	m.Extensions[k] = json.RawMessage(sc.data[a:b:b])
	return 0, nil
}

// fieldBit returns the bit of a defined top-level field, 0 for others.
func fieldBit(k string) int {
	switch k {
	case "v":
		return fV
	case "id":
		return fID
	case "ts":
		return fTS
	case "thread_id":
		return fThread
	case "run_id":
		return fRun
	case "task_id":
		return fTask
	case "parent_task_id":
		return fParent
	case "trace":
		return fTrace
	case "from":
		return fFrom
	case "to":
		return fTo
	case "type":
		return fType
	case "domain":
		return fDomain
	case "payload_type":
		return fPayloadType
	case "schema_ref":
		return fSchemaRef
	case "payload":
		return fPayload
	case "requires":
		return fRequires
	case "prefers":
		return fPrefers
	case "security":
		return fSecurity
	case "attachments":
		return fAttachments
	case "idempotency_key":
		return fIdem
	case "attempt":
		return fAttempt
	case "meta":
		return fMeta
	}
	return 0
}

// strings reads an array of strings; null gives nil.
func (sc *scanner) strings() ([]string, *Error) {
	if sc.null() {
		return nil, nil
	}
	if sc.peek() != '[' {
		return nil, sc.wrongType("array")
	}
	out := make([]string, 0, 4)
	err := sc.array(func(i int) *Error {
		s, err := sc.str()
		out = append(out, s)
		return prefixIndex(err, i)
	})
	return out, err
}

// fields decodes an object whose members are all known; an unknown member is
// an UNKNOWN_FIELD error.
func (sc *scanner) fields(set func(k string) (known bool, err *Error)) *Error {
	if sc.peek() != '{' {
		return sc.wrongType("object")
	}
	return sc.object(func(k string) *Error {
		keyEnd := sc.pos
		known, err := set(k)
		if err != nil {
			return prefix(err, k)
		}
		if !known {
			sc.pos = keyEnd
			return &Error{Code: CodeUnknownField, Path: "/" + escapePointer(k), Offset: int64(keyEnd), Detail: "member " + quote(k) + " is not defined here"}
		}
		return nil
	})
}

func (sc *scanner) optStr(dst *string) *Error {
	if sc.null() {
		return nil
	}
	var err *Error
	*dst, err = sc.str()
	return err
}

func (sc *scanner) participant(p *Participant) *Error {
	var hasID bool
	err := sc.fields(func(k string) (bool, *Error) {
		switch k {
		case "agent_id":
			hasID = true
			var err *Error
			p.AgentID, err = sc.str()
			return true, err
		case "role":
			return true, sc.optStr(&p.Role)
		}
		return false, nil
	})
	if err == nil && !hasID {
		return &Error{Code: CodeMissingField, Path: "/agent_id", Offset: int64(sc.pos), Detail: `required field "agent_id" is missing`}
	}
	return err
}

func (sc *scanner) trace(t *Trace) *Error {
	return sc.fields(func(k string) (bool, *Error) {
		switch k {
		case "trace_id":
			return true, sc.optStr(&t.TraceID)
		case "span_id":
			return true, sc.optStr(&t.SpanID)
		case "parent_span_id":
			return true, sc.optStr(&t.ParentSpanID)
		}
		return false, nil
	})
}

func (sc *scanner) security(s *Security) *Error {
	return sc.fields(func(k string) (bool, *Error) {
		switch k {
		case "auth":
			if sc.null() {
				return true, nil
			}
			s.Auth = &Auth{}
			a := s.Auth
			return true, sc.fields(func(k string) (bool, *Error) {
				switch k {
				case "scheme":
					return true, sc.optStr(&a.Scheme)
				case "kid":
					return true, sc.optStr(&a.Kid)
				case "sig":
					return true, sc.optStr(&a.Sig)
				}
				return false, nil
			})
		case "policy":
			if sc.null() {
				return true, nil
			}
			s.Policy = &Policy{}
			p := s.Policy
			return true, sc.fields(func(k string) (bool, *Error) {
				switch k {
				case "sandbox":
					if sc.null() {
						return true, nil
					}
					var err *Error
					p.Sandbox, err = sc.boolean()
					return true, err
				case "tool_allowlist":
					var err *Error
					p.ToolAllowlist, err = sc.strings()
					return true, err
				}
				return false, nil
			})
		}
		return false, nil
	})
}

func (sc *scanner) attachment(a *Attachment) *Error {
	return sc.fields(func(k string) (bool, *Error) {
		switch k {
		case "kind":
			return true, sc.optStr(&a.Kind)
		case "ref":
			return true, sc.optStr(&a.Ref)
		case "media_type":
			return true, sc.optStr(&a.MediaType)
		case "name":
			return true, sc.optStr(&a.Name)
		case "sha256":
			return true, sc.optStr(&a.SHA256)
		case "size":
			if sc.null() {
				return true, nil
			}
			var err *Error
			a.Size, err = sc.integer()
			return true, err
		}
		return false, nil
	})
}
