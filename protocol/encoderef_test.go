package protocol

// The encoder as it was when every method appended through w.b: the
// reference TestEncodeMatchesReference compares appendMessage with, byte for
// byte and error for error. It keeps the parts whose logic was rewritten:
// the envelope's layout (commas between optional members), and objects
// (sorted keys, error paths). Strings and scalar values are written by the
// writer itself: TestStrMatchesByteAtATime checks its strings against a
// byte-at-a-time encoder, the RoutingDecision tests its floats against
// JSON v2. Unlike the old encoder, it leaves an error raised before meta
// out of /meta, as appendMessage does.

import (
	"slices"
	"strconv"
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
		failed := w.err != nil
		w.b = append(w.b, `,"meta":`...)
		w.anyValue(m.Meta, 0)
		if !failed && w.err != nil {
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

// str appends s as writer.str does.
func (w *refWriter) str(s string) {
	var sw writer
	w.b = sw.str(w.b, s)
	if sw.err != nil {
		w.fail(sw.err)
	}
}

// anyValue appends a Meta value: objects and arrays here, the other
// values as writer.anyValue writes them. An error's path is relative to v.
func (w *refWriter) anyValue(v any, depth int) {
	if depth > DefaultMaxDepth {
		w.fail(&Error{Code: CodeTooDeep, Offset: -1, Detail: "value nested too deeply"})
		return
	}
	switch x := v.(type) {
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
	default:
		var lw writer
		w.b = lw.anyValue(w.b, v, depth)
		if lw.err != nil {
			w.fail(lw.err)
		}
	}
}
