package protocol

import (
	"encoding/json"
	"errors"
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Encode returns the wire bytes of m. A message that already has bytes (it
// was decoded, or encoded before) returns them unchanged, so a signed message
// is never re-encoded (docs/protocol.md §11 "the hot path"). Otherwise Encode validates m
// ([Message.Validate]), encodes it once in the field order of docs/protocol.md §1.2, remembers
// the bytes and returns them. The returned slice is shared with m: do not
// modify it.
func Encode(m *Message) ([]byte, error) {
	if m == nil {
		return nil, &Error{Code: CodeMissingField, Offset: -1, Detail: "nil message"}
	}
	if m.raw != nil {
		return m.raw, nil
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	buf := encodeBufs.Get().(*[]byte)
	b, err := appendMessage((*buf)[:0], m)
	if err != nil {
		encodeBufs.Put(buf)
		return nil, err
	}
	// The bytes live as long as the event does (a memstore holds them):
	// give them an exact-size allocation and reuse the scratch buffer.
	raw := make([]byte, len(b))
	copy(raw, b) // make then copy into a local: the new slice is not zeroed first
	m.raw = raw
	m.valid = true // validated just above, against the fields now encoded
	if cap(b) <= 64<<10 {
		*buf = b
		encodeBufs.Put(buf)
	}
	return m.raw, nil
}

var encodeBufs = sync.Pool{New: func() any { b := make([]byte, 0, 2048); return &b }}

// appendMessage encodes m without validating it.
//
// The writer's methods take the buffer and return it, as strconv's Append
// functions do: the buffer stays in registers instead of being loaded from
// and stored back to the writer at every append.
func appendMessage(b []byte, m *Message) ([]byte, error) {
	var w writer
	b = w.str(append(b, `{"v":`...), m.V)
	b = w.str(append(b, `,"id":`...), m.ID)
	b = w.str(append(b, `,"ts":`...), m.TS)
	b = w.str(append(b, `,"thread_id":`...), m.ThreadID)
	b = w.str(append(b, `,"run_id":`...), m.RunID)
	b = w.str(append(b, `,"task_id":`...), m.TaskID)
	b = w.optField(b, `,"parent_task_id":`, m.ParentTaskID)
	if t := m.Trace; t != nil {
		b = append(b, `,"trace":{`...)
		n := len(b)
		b = w.optMember(b, n, `"trace_id":`, t.TraceID)
		b = w.optMember(b, n, `"span_id":`, t.SpanID)
		b = w.optMember(b, n, `"parent_span_id":`, t.ParentSpanID)
		b = append(b, '}')
	}
	b = w.participant(append(b, `,"from":`...), &m.From)
	b = append(b, `,"to":[`...)
	for i := range m.To {
		if i > 0 {
			b = append(b, ',')
		}
		b = w.participant(b, &m.To[i])
	}
	b = append(b, ']')
	b = w.str(append(b, `,"type":`...), string(m.Type))
	b = w.optField(b, `,"domain":`, m.Domain)
	b = w.optField(b, `,"payload_type":`, m.PayloadType)
	b = w.optField(b, `,"schema_ref":`, m.SchemaRef)
	b = append(b, `,"payload":`...)
	if len(m.Payload) == 0 {
		w.fail(&Error{Code: CodeMissingField, Path: "/payload", Offset: -1, Detail: "payload is empty"})
	}
	b = append(b, m.Payload...)
	if m.Requires != nil {
		b = w.strArray(append(b, `,"requires":`...), m.Requires)
	}
	if m.Prefers != nil {
		b = w.strArray(append(b, `,"prefers":`...), m.Prefers)
	}
	if s := m.Security; s != nil {
		b = append(b, `,"security":{`...)
		n := len(b)
		if a := s.Auth; a != nil {
			b = w.str(append(b, `"auth":{"scheme":`...), a.Scheme)
			b = w.optField(b, `,"kid":`, a.Kid)
			b = w.optField(b, `,"sig":`, a.Sig)
			b = append(b, '}')
		}
		if p := s.Policy; p != nil {
			b = comma(b, n)
			b = append(b, `"policy":{`...)
			np := len(b)
			if p.Sandbox {
				b = append(b, `"sandbox":true`...)
			}
			if p.ToolAllowlist != nil {
				b = comma(b, np)
				b = w.strArray(append(b, `"tool_allowlist":`...), p.ToolAllowlist)
			}
			b = append(b, '}')
		}
		b = append(b, '}')
	}
	if m.Attachments != nil {
		b = append(b, `,"attachments":[`...)
		for i := range m.Attachments {
			a := &m.Attachments[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = w.str(append(b, `{"kind":`...), a.Kind)
			b = w.str(append(b, `,"ref":`...), a.Ref)
			b = w.optField(b, `,"media_type":`, a.MediaType)
			b = w.optField(b, `,"name":`, a.Name)
			if a.Size != 0 {
				b = strconv.AppendInt(append(b, `,"size":`...), a.Size, 10)
			}
			b = w.optField(b, `,"sha256":`, a.SHA256)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = w.optField(b, `,"idempotency_key":`, m.IdempotencyKey)
	b = strconv.AppendInt(append(b, `,"attempt":`...), int64(m.Attempt), 10)
	if m.Meta != nil {
		failed := w.err != nil
		b = w.object(append(b, `,"meta":`...), m.Meta, 0)
		if !failed && w.err != nil {
			w.err.Path = "/meta" + w.err.Path
		}
	}
	if len(m.Extensions) > 0 {
		b = w.extensions(b, m.Extensions)
	}
	b = append(b, '}')
	if w.err != nil {
		return nil, w.err
	}
	return b, nil
}

// extensions appends the extension members, sorted by name.
func (w *writer) extensions(b []byte, ext map[string]json.RawMessage) []byte {
	for _, k := range sortedKeys(ext, make([]string, 0, len(ext))) {
		if isDefinedField(k) {
			w.fail(&Error{Code: CodeInvalidField, Path: "/" + escapePointer(k), Offset: -1, Detail: "an extension may not use the name of a defined field"})
		}
		v := ext[k]
		if err := checkJSON(v, "/"+escapePointer(k)); err != nil {
			w.fail(err.(*Error))
		}
		b = w.str(append(b, ','), k)
		b = append(b, ':')
		b = append(b, v...)
	}
	return b
}

// sortedKeys appends m's keys to buf, sorted.
func sortedKeys[V any](m map[string]V, buf []string) []string {
	for k := range m {
		buf = append(buf, k)
	}
	slices.Sort(buf)
	return buf
}

func isDefinedField(k string) bool {
	switch k {
	case "v", "id", "ts", "thread_id", "run_id", "task_id", "parent_task_id", "trace", "from", "to",
		"type", "domain", "payload_type", "schema_ref", "payload", "requires", "prefers", "security",
		"attachments", "idempotency_key", "attempt", "meta":
		return true
	}
	return false
}

// writer appends JSON to the buffer its methods are given and return; the
// first error sticks.
type writer struct {
	err *Error
}

func (w *writer) fail(e *Error) {
	if w.err == nil {
		w.err = e
	}
}

// optField appends key (`,"name":`, written as is) and the string v, unless
// v is empty.
func (w *writer) optField(b []byte, key, v string) []byte {
	if v == "" {
		return b
	}
	return w.str(append(b, key...), v)
}

// optMember appends key (`"name":`) and v unless v is empty, after a comma
// when the object, whose members start at b[n], has one already.
func (w *writer) optMember(b []byte, n int, key, v string) []byte {
	if v == "" {
		return b
	}
	return w.str(append(comma(b, n), key...), v)
}

// comma appends the comma before an object's next member when the object,
// whose members start at b[n], has one already.
func comma(b []byte, n int) []byte {
	if len(b) > n {
		b = append(b, ',')
	}
	return b
}

func (w *writer) participant(b []byte, p *Participant) []byte {
	b = w.str(append(b, `{"agent_id":`...), p.AgentID)
	b = w.optField(b, `,"role":`, p.Role)
	return append(b, '}')
}

func (w *writer) strArray(b []byte, v []string) []byte {
	b = append(b, '[')
	for i, s := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = w.str(b, s)
	}
	return append(b, ']')
}

const hexDigits = "0123456789abcdef"

// str appends s as a JSON string. Invalid UTF-8 is an error, never replaced.
func (w *writer) str(b []byte, s string) []byte {
	// Most strings (ids, timestamps, names) are plain ASCII: test them 8
	// bytes at a time (SWAR), the tail with one word that overlaps the
	// last one, and copy them whole.
	i, n := 0, len(s)
	for ; i+8 <= n; i += 8 {
		if !plainBits(load8(s[i:])) {
			return w.strEscape(b, s, i)
		}
	}
	if i < n {
		if n >= 8 {
			if !plainBits(load8(s[n-8:])) {
				return w.strEscape(b, s, i)
			}
		} else {
			for ; i < n; i++ {
				if !plainASCII[s[i]] {
					return w.strEscape(b, s, i)
				}
			}
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// strEscape is str for a string whose bytes before i are plain.
func (w *writer) strEscape(b []byte, s string, i int) []byte {
	b = append(b, '"')
	start := 0
	for i < len(s) {
		i = skipPlain(s, i)
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
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		i++
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// skipPlain returns the index of the first byte at or after i that is not
// plain, testing 8 bytes at a time while 8 are left, or an index of the
// last 7 bytes (which the caller tests one by one), or len(s).
func skipPlain(s string, i int) int {
	for i+8 <= len(s) {
		if m := notPlain(load8(s[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
		i += 8
	}
	return i
}

// ones and highs are the byte masks of str's word-at-a-time test.
const ones, highs = 0x0101010101010101, 0x8080808080808080

// load8 returns the first 8 bytes of s (at least 8 long), little endian:
// one load.
func load8(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// plainBits reports whether the 8 bytes of x are all plain ASCII
// (plainASCII: printable, not '"' or '\\').
func plainBits(x uint64) bool { return notPlain(x) == 0 }

// notPlain returns the high bits of the bytes of x that are not plain: a
// byte is not plain when ≥ 0x80, < 0x20 (given < 0x80), '"' or '\\'; each
// test sets its high bit. A borrow may also mark a plain byte above a bad
// one, never below: the lowest bit set is the first byte that is not plain
// (bits.TrailingZeros64 / 8, the bytes being little endian).
func notPlain(x uint64) uint64 {
	q, bs := x^(ones*'"'), x^(ones*'\\')
	return (x | (x - ones*0x20) | (q-ones)&^q | (bs-ones)&^bs) & highs
}

// anyValue appends a Meta value. Common types are written directly, others
// through the JSON v2 marshaler with deterministic map order. An error's
// path is relative to v; it is built only on failure.
func (w *writer) anyValue(b []byte, v any, depth int) []byte {
	if depth > DefaultMaxDepth {
		w.fail(&Error{Code: CodeTooDeep, Offset: -1, Detail: "value nested too deeply"})
		return b
	}
	switch x := v.(type) {
	case nil:
		return append(b, "null"...)
	case string:
		return w.str(b, x)
	case bool:
		return strconv.AppendBool(b, x)
	case json.Number:
		if x == "" || checkJSON([]byte(x), "") != nil || x[0] == '"' || x[0] == '[' || x[0] == '{' || x[0] == 't' || x[0] == 'f' || x[0] == 'n' {
			w.fail(&Error{Code: CodeWrongType, Offset: -1, Detail: "json.Number " + strconv.Quote(string(x)) + " is not a JSON number"})
			return b
		}
		return append(b, x...)
	case float64:
		return w.float(b, x, 64)
	case float32:
		return w.float(b, float64(x), 32)
	case int:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case int32:
		return strconv.AppendInt(b, int64(x), 10)
	case uint64:
		return strconv.AppendUint(b, x, 10)
	case map[string]any:
		return w.object(b, x, depth)
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			failed := w.err != nil
			b = w.anyValue(b, e, depth+1)
			if !failed && w.err != nil {
				w.err.Path = "/" + strconv.Itoa(i) + w.err.Path
			}
		}
		return append(b, ']')
	case []string:
		return w.strArray(b, x)
	case json.RawMessage:
		if err := checkJSON(x, ""); err != nil {
			w.fail(err.(*Error))
			return b
		}
		return append(b, x...)
	default:
		out, err := marshalValue(v)
		if err != nil {
			w.fail(&Error{Code: CodeWrongType, Offset: -1, Detail: "value cannot be encoded as JSON", Err: err})
			return b
		}
		return append(b, out...)
	}
}

// metaMember is a member of a map that object writes.
type metaMember struct {
	k string
	v any
}

// object appends x at depth with its members sorted by name. A small map's
// members are gathered on the stack with their values, so that writing
// them needs neither a slice of keys on the heap nor a lookup per key.
func (w *writer) object(b []byte, x map[string]any, depth int) []byte {
	var few [8]metaMember
	ms := few[:0]
	if len(x) > len(few) {
		ms = make([]metaMember, 0, len(x))
	}
	for k, v := range x {
		ms = append(ms, metaMember{k, v})
	}
	slices.SortFunc(ms, func(a, b metaMember) int { return strings.Compare(a.k, b.k) })
	b = append(b, '{')
	for i := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		b = w.str(b, ms[i].k)
		b = append(b, ':')
		failed := w.err != nil
		b = w.anyValue(b, ms[i].v, depth+1)
		if !failed && w.err != nil {
			w.err.Path = "/" + escapePointer(ms[i].k) + w.err.Path
		}
	}
	return append(b, '}')
}

func (w *writer) float(b []byte, f float64, bits int) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		w.fail(&Error{Code: CodeWrongType, Offset: -1, Detail: "NaN and infinities are not JSON numbers"})
		return b
	}
	// Shortest form, exponent for very large or small values (ES6 style).
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, bits)
	if n := len(b); format == 'e' && n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
		b[n-2] = b[n-1] // "1e-07" → "1e-7", as JSON v2 writes it
		b = b[:n-1]
	}
	return b
}

func quote(s string) string { return strconv.Quote(s) }

// marshalPayload encodes a payload: plain values (strings, booleans, maps
// and slices of them) with the envelope's own writer, as it writes meta;
// everything else with JSON v2.
func marshalPayload(v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return []byte("null"), nil
	case string, bool, map[string]any, []any, []string:
		var w writer
		b := w.anyValue(make([]byte, 0, 64), x, 0)
		if w.err != nil {
			return nil, w.err
		}
		return b, nil
	case *RoutingDecision:
		// The router writes one per task: its own writer, not reflection.
		return x.appendJSON(make([]byte, 0, x.sizeHint()))
	case json.Marshaler:
		// Call it directly and check its output with the strict scanner,
		// which is what JSON v2 would do at several times the cost.
		b, err := x.MarshalJSON()
		if err != nil {
			return nil, err
		}
		if err := checkJSON(b, ""); err != nil {
			return nil, err
		}
		return append([]byte(nil), b...), nil // the marshaler may reuse b
	default:
		return marshalValue(v)
	}
}

// marshalValue encodes an arbitrary Go value with JSON v2: deterministic map
// order, invalid UTF-8 rejected.
func marshalValue(v any) ([]byte, error) {
	return jsonv2.Marshal(v, jsonv2.Deterministic(true))
}

// unmarshalStrict decodes JSON v2-style: duplicate names and invalid UTF-8
// rejected (the v2 defaults), unknown members rejected.
func unmarshalStrict(b []byte, v any) error {
	return jsonv2.Unmarshal(b, v, jsonv2.RejectUnknownMembers(true))
}

// wrapUnmarshal turns a JSON v2 error into an *Error with a code and path.
func wrapUnmarshal(err error, base string) *Error {
	e := &Error{Code: CodeInvalidJSON, Path: base, Offset: -1, Err: err}
	var syn *jsontext.SyntacticError
	var sem *jsonv2.SemanticError
	switch {
	case errors.As(err, &syn):
		e.Offset = syn.ByteOffset
		e.Path = base + string(syn.JSONPointer)
		switch {
		case errors.Is(syn.Err, jsontext.ErrDuplicateName):
			e.Code = CodeDuplicateKey
		case syn.Err != nil && strings.Contains(syn.Err.Error(), "UTF-8"):
			e.Code = CodeInvalidUTF8
		}
	case errors.As(err, &sem):
		e.Offset = sem.ByteOffset
		e.Path = base + string(sem.JSONPointer)
		e.Code = CodeWrongType
		if errors.Is(sem.Err, jsonv2.ErrUnknownName) {
			e.Code = CodeUnknownField
		}
		var syn2 *jsontext.SyntacticError
		if errors.As(sem.Err, &syn2) {
			e.Code = CodeInvalidJSON
		}
	}
	e.Err = err
	return e
}
