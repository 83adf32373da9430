package protocol

// The encoder as it was when every method appended through w.b: the
// reference TestEncodeMatchesReference compares appendMessage with, byte for
// byte and error for error.

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// refAppendMessage encodes m without validating it.
func refAppendMessage(b []byte, m *Message) ([]byte, error) {
	w := refWriter{b: b}
	w.b = append(w.b, `{"v":`...)
	w.str(m.V)
	w.field("id", m.ID)
	w.field("ts", m.TS)
	w.field("thread_id", m.ThreadID)
	w.field("run_id", m.RunID)
	w.field("task_id", m.TaskID)
	w.optField("parent_task_id", m.ParentTaskID)
	if t := m.Trace; t != nil {
		w.b = append(w.b, `,"trace":{`...)
		w.members(func() {
			w.optMember("trace_id", t.TraceID)
			w.optMember("span_id", t.SpanID)
			w.optMember("parent_span_id", t.ParentSpanID)
		})
	}
	w.b = append(w.b, `,"from":`...)
	w.participant(&m.From)
	w.b = append(w.b, `,"to":[`...)
	for i := range m.To {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.participant(&m.To[i])
	}
	w.b = append(w.b, ']')
	w.field("type", string(m.Type))
	w.optField("domain", m.Domain)
	w.optField("payload_type", m.PayloadType)
	w.optField("schema_ref", m.SchemaRef)
	w.b = append(w.b, `,"payload":`...)
	if len(m.Payload) == 0 {
		w.fail(&Error{Code: CodeMissingField, Path: "/payload", Offset: -1, Detail: "payload is empty"})
	}
	w.b = append(w.b, m.Payload...)
	w.strings("requires", m.Requires)
	w.strings("prefers", m.Prefers)
	if s := m.Security; s != nil {
		w.b = append(w.b, `,"security":{`...)
		w.members(func() {
			if a := s.Auth; a != nil {
				w.key("auth")
				w.b = append(w.b, `{"scheme":`...)
				w.str(a.Scheme)
				w.optField("kid", a.Kid)
				w.optField("sig", a.Sig)
				w.b = append(w.b, '}')
			}
			if p := s.Policy; p != nil {
				w.key("policy")
				w.b = append(w.b, '{')
				w.members(func() {
					if p.Sandbox {
						w.key("sandbox")
						w.b = append(w.b, "true"...)
					}
					if p.ToolAllowlist != nil {
						w.key("tool_allowlist")
						w.strArray(p.ToolAllowlist)
					}
				})
			}
		})
	}
	if m.Attachments != nil {
		w.b = append(w.b, `,"attachments":[`...)
		for i := range m.Attachments {
			a := &m.Attachments[i]
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.b = append(w.b, `{"kind":`...)
			w.str(a.Kind)
			w.field("ref", a.Ref)
			w.optField("media_type", a.MediaType)
			w.optField("name", a.Name)
			if a.Size != 0 {
				w.b = append(w.b, `,"size":`...)
				w.b = strconv.AppendInt(w.b, a.Size, 10)
			}
			w.optField("sha256", a.SHA256)
			w.b = append(w.b, '}')
		}
		w.b = append(w.b, ']')
	}
	w.optField("idempotency_key", m.IdempotencyKey)
	w.b = append(w.b, `,"attempt":`...)
	w.b = strconv.AppendInt(w.b, int64(m.Attempt), 10)
	if m.Meta != nil {
		w.b = append(w.b, `,"meta":`...)
		w.anyValue(m.Meta, 0)
		if w.err != nil {
			w.err.Path = "/meta" + w.err.Path
		}
	}
	if len(m.Extensions) > 0 {
		keys := make([]string, 0, len(m.Extensions))
		for k := range m.Extensions {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if isDefinedField(k) {
				w.fail(&Error{Code: CodeInvalidField, Path: "/" + escapePointer(k), Offset: -1, Detail: "an extension may not use the name of a defined field"})
			}
			v := m.Extensions[k]
			if err := checkJSON(v, "/"+escapePointer(k)); err != nil {
				w.fail(err.(*Error))
			}
			w.b = append(w.b, ',')
			w.str(k)
			w.b = append(w.b, ':')
			w.b = append(w.b, v...)
		}
	}
	w.b = append(w.b, '}')
	if w.err != nil {
		return nil, w.err
	}
	return w.b, nil
}

// refWriter appends JSON; the first error sticks.
type refWriter struct {
	b     []byte
	err   *Error
	first bool // inside members(): no member written yet
}

func (w *refWriter) fail(e *Error) {
	if w.err == nil {
		w.err = e
	}
}

func (w *refWriter) field(k, v string) {
	w.b = append(w.b, ',', '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':')
	w.str(v)
}

func (w *refWriter) optField(k, v string) {
	if v != "" {
		w.field(k, v)
	}
}

// members writes the members emitted by f and closes the object, handling
// the commas between optional members.
func (w *refWriter) members(f func()) {
	saved := w.first
	w.first = true
	f()
	w.first = saved
	w.b = append(w.b, '}')
}

func (w *refWriter) key(k string) {
	if !w.first {
		w.b = append(w.b, ',')
	}
	w.first = false
	w.str(k)
	w.b = append(w.b, ':')
}

func (w *refWriter) optMember(k, v string) {
	if v != "" {
		w.key(k)
		w.str(v)
	}
}

func (w *refWriter) participant(p *Participant) {
	w.b = append(w.b, `{"agent_id":`...)
	w.str(p.AgentID)
	w.optField("role", p.Role)
	w.b = append(w.b, '}')
}

func (w *refWriter) strings(k string, v []string) {
	if v == nil {
		return
	}
	w.b = append(w.b, ',', '"')
	w.b = append(w.b, k...)
	w.b = append(w.b, '"', ':')
	w.strArray(v)
}

func (w *refWriter) strArray(v []string) {
	w.b = append(w.b, '[')
	for i, s := range v {
		if i > 0 {
			w.b = append(w.b, ',')
		}
		w.str(s)
	}
	w.b = append(w.b, ']')
}

// str appends s as a JSON string. Invalid UTF-8 is an error, never replaced.
func (w *refWriter) str(s string) {
	w.b = append(w.b, '"')
	start := 0
	for i := 0; i < len(s); {
		// Skip 8 plain ASCII bytes at a time (SWAR): ids, timestamps and
		// most text.
		for i+8 <= len(s) && plainBits(load8(s[i:])) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if plainASCII[c] {
			i++
			continue
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				w.fail(&Error{Code: CodeInvalidUTF8, Offset: -1, Detail: "string holds invalid UTF-8: " + strconv.Quote(s)})
			}
			i += size
			continue
		}
		w.b = append(w.b, s[start:i]...)
		switch c {
		case '"', '\\':
			w.b = append(w.b, '\\', c)
		case '\n':
			w.b = append(w.b, '\\', 'n')
		case '\r':
			w.b = append(w.b, '\\', 'r')
		case '\t':
			w.b = append(w.b, '\\', 't')
		case '\b':
			w.b = append(w.b, '\\', 'b')
		case '\f':
			w.b = append(w.b, '\\', 'f')
		default:
			w.b = append(w.b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		i++
		start = i
	}
	w.b = append(w.b, s[start:]...)
	w.b = append(w.b, '"')
}

// anyValue appends a Meta value. Common types are written directly, others
// through the JSON v2 marshaler with deterministic map order. An error's
// path is relative to v; it is built only on failure.
func (w *refWriter) anyValue(v any, depth int) {
	if depth > DefaultMaxDepth {
		w.fail(&Error{Code: CodeTooDeep, Offset: -1, Detail: "value nested too deeply"})
		return
	}
	switch x := v.(type) {
	case nil:
		w.b = append(w.b, "null"...)
	case string:
		w.str(x)
	case bool:
		w.b = strconv.AppendBool(w.b, x)
	case json.Number:
		if x == "" || checkJSON([]byte(x), "") != nil || x[0] == '"' || x[0] == '[' || x[0] == '{' || x[0] == 't' || x[0] == 'f' || x[0] == 'n' {
			w.fail(&Error{Code: CodeWrongType, Offset: -1, Detail: "json.Number " + strconv.Quote(string(x)) + " is not a JSON number"})
			return
		}
		w.b = append(w.b, x...)
	case float64:
		w.float(x, 64)
	case float32:
		w.float(float64(x), 32)
	case int:
		w.b = strconv.AppendInt(w.b, int64(x), 10)
	case int64:
		w.b = strconv.AppendInt(w.b, x, 10)
	case int32:
		w.b = strconv.AppendInt(w.b, int64(x), 10)
	case uint64:
		w.b = strconv.AppendUint(w.b, x, 10)
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		w.b = append(w.b, '{')
		for i, k := range keys {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			w.str(k)
			w.b = append(w.b, ':')
			failed := w.err != nil
			w.anyValue(x[k], depth+1)
			if !failed && w.err != nil {
				w.err.Path = "/" + escapePointer(k) + w.err.Path
			}
		}
		w.b = append(w.b, '}')
	case []any:
		w.b = append(w.b, '[')
		for i, e := range x {
			if i > 0 {
				w.b = append(w.b, ',')
			}
			failed := w.err != nil
			w.anyValue(e, depth+1)
			if !failed && w.err != nil {
				w.err.Path = "/" + strconv.Itoa(i) + w.err.Path
			}
		}
		w.b = append(w.b, ']')
	case []string:
		w.strArray(x)
	case json.RawMessage:
		if err := checkJSON(x, ""); err != nil {
			w.fail(err.(*Error))
			return
		}
		w.b = append(w.b, x...)
	default:
		b, err := marshalValue(v)
		if err != nil {
			w.fail(&Error{Code: CodeWrongType, Offset: -1, Detail: "value cannot be encoded as JSON", Err: err})
			return
		}
		w.b = append(w.b, b...)
	}
}

func (w *refWriter) float(f float64, bits int) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		w.fail(&Error{Code: CodeWrongType, Offset: -1, Detail: "NaN and infinities are not JSON numbers"})
		return
	}
	// Shortest form, exponent for very large or small values (ES6 style).
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	w.b = strconv.AppendFloat(w.b, f, format, -1, bits)
	if n := len(w.b); format == 'e' && n >= 4 && w.b[n-4] == 'e' && w.b[n-3] == '-' && w.b[n-2] == '0' {
		w.b[n-2] = w.b[n-1] // "1e-07" → "1e-7", as JSON v2 writes it
		w.b = w.b[:n-1]
	}
}
