package protocol

import (
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MaxIDLength is the longest id accepted in id, thread_id, run_id, task_id,
// parent_task_id, idempotency_key and agent ids (docs/protocol.md §11 "the envelope":
// foreign ids of any form survive up to this length).
const MaxIDLength = 256

// Validate checks the semantic rules of the envelope that decoding does not:
//
//   - v is [Version]; type is a §2 type or x.<vendor>.<name> (§2);
//   - id, thread_id, run_id and task_id are non-empty, and every id is at
//     most [MaxIDLength] bytes;
//   - ts is an RFC 3339 timestamp (§1.2 "ISO 8601"; docs/protocol.md §11 asks RFC 3339);
//   - from.agent_id and each to[].agent_id start with "agent:" (Appendix B);
//     a recipient may also be a group ("group:");
//   - attempt ≥ 1 (§5.3, 1-based);
//   - payload is one strict JSON value;
//   - payload_type looks like "research.summary.v1" and schema_ref like
//     "schema://clutch/research/summary@1" (§3.2);
//   - requires[] and prefers[] entries look like "<kind>:<name>" (§1.4, §4.2),
//     and tool_allowlist entries like "mcp:browser";
//   - security.auth has a scheme; attachments have a kind and a ref.
//
// The error is an [*Error] with Code INVALID_FIELD (or the more precise code
// of the rule) and the JSON pointer of the field.
func (m *Message) Validate() error {
	if m == nil {
		return &Error{Code: CodeMissingField, Offset: -1, Detail: "nil message"}
	}
	if m.valid && m.raw != nil {
		// Its bytes are fixed and its fields passed before: fields may
		// change only through Reset, which clears this (docs/protocol.md §11 "the hot
		// path": each message is checked once on its way through).
		return nil
	}
	if err := m.validate(); err != nil {
		return err
	}
	m.valid = m.raw != nil
	return nil
}

func (m *Message) validate() error {
	if m.V != Version {
		if m.V == "" {
			return invalid(CodeMissingField, "/v", "v is required")
		}
		return invalid(CodeUnsupportedVersion, "/v", "version "+quote(m.V)+", this package speaks "+quote(Version))
	}
	for _, f := range [...]struct {
		path, v string
		req     bool
	}{
		{"/id", m.ID, true}, {"/thread_id", m.ThreadID, true}, {"/run_id", m.RunID, true},
		{"/task_id", m.TaskID, true}, {"/parent_task_id", m.ParentTaskID, false},
		{"/idempotency_key", m.IdempotencyKey, false},
	} {
		if err := checkID(f.path, f.v, f.req); err != nil {
			return err
		}
	}
	if m.TS == "" {
		return invalid(CodeMissingField, "/ts", "ts is required")
	}
	if !validTimestamp(m.TS) {
		return invalid(CodeInvalidField, "/ts", "ts "+quote(m.TS)+" is not an RFC 3339 timestamp")
	}
	if err := checkAgent("/from/agent_id", m.From.AgentID, false); err != nil {
		return err
	}
	if m.To == nil {
		return invalid(CodeMissingField, "/to", "to is required (an empty list lets the router choose)")
	}
	for i, p := range m.To {
		if err := checkAgent("/agent_id", p.AgentID, true); err != nil {
			err.Path = "/to/" + strconv.Itoa(i) + err.Path // built only on failure
			return err
		}
	}
	if m.Type == "" {
		return invalid(CodeMissingField, "/type", "type is required")
	}
	if !m.Type.Valid() {
		return invalid(CodeUnknownType, "/type", "type "+quote(string(m.Type))+" is neither a docs/protocol.md §2 type nor x.<vendor>.<name>")
	}
	if m.Attempt < 1 {
		return invalid(CodeInvalidField, "/attempt", "attempt must be ≥ 1, got "+strconv.Itoa(m.Attempt))
	}
	if len(m.Payload) == 0 {
		return invalid(CodeMissingField, "/payload", "payload is required")
	}
	if m.raw == nil && !m.payloadChecked() { // Decode and SetPayload checked theirs
		if err := checkJSON(m.Payload, "/payload"); err != nil {
			return err
		}
	}
	if m.PayloadType != "" && !ValidPayloadType(m.PayloadType) {
		return invalid(CodeInvalidField, "/payload_type", "payload_type "+quote(m.PayloadType)+" is not of the form <domain>.<name>.v<N>")
	}
	if m.SchemaRef != "" && !ValidSchemaRef(m.SchemaRef) {
		return invalid(CodeInvalidField, "/schema_ref", "schema_ref "+quote(m.SchemaRef)+" is not of the form schema://<ns>/<path>@<N>")
	}
	for i, r := range m.Requires {
		if !validCapabilityRef(r) {
			return invalid(CodeInvalidField, "/requires/"+strconv.Itoa(i), "requires entry "+quote(r)+" is not of the form <kind>:<name>")
		}
	}
	for i, r := range m.Prefers {
		if !validCapabilityRef(r) {
			return invalid(CodeInvalidField, "/prefers/"+strconv.Itoa(i), "prefers entry "+quote(r)+" is not of the form <kind>:<name>")
		}
	}
	if s := m.Security; s != nil {
		if s.Auth != nil && s.Auth.Scheme == "" {
			return invalid(CodeMissingField, "/security/auth/scheme", "security.auth needs a scheme")
		}
		if s.Policy != nil {
			for i, t := range s.Policy.ToolAllowlist {
				if !validCapabilityRef(t) {
					return invalid(CodeInvalidField, "/security/policy/tool_allowlist/"+strconv.Itoa(i), "tool_allowlist entry "+quote(t)+" is not of the form <kind>:<name>")
				}
			}
		}
	}
	for i := range m.Attachments {
		a := &m.Attachments[i]
		if a.Kind == "" {
			return invalid(CodeMissingField, "/attachments/"+strconv.Itoa(i)+"/kind", "attachment needs a kind")
		}
		if a.Ref == "" {
			return invalid(CodeMissingField, "/attachments/"+strconv.Itoa(i)+"/ref", "attachment needs a ref")
		}
		if a.Size < 0 {
			return invalid(CodeInvalidField, "/attachments/"+strconv.Itoa(i)+"/size", "size must not be negative")
		}
	}
	for k := range m.Extensions {
		if isDefinedField(k) {
			return invalid(CodeInvalidField, "/"+escapePointer(k), "an extension may not use the name of a defined field")
		}
	}
	return nil
}

func checkID(path, v string, required bool) *Error {
	if v == "" {
		if required {
			return invalid(CodeMissingField, path, path[1:]+" is required")
		}
		return nil
	}
	if len(v) > MaxIDLength {
		return invalid(CodeInvalidField, path, path[1:]+" is "+strconv.Itoa(len(v))+" bytes, limit "+strconv.Itoa(MaxIDLength))
	}
	return nil
}

func checkAgent(path, v string, allowGroup bool) *Error {
	if err := checkID(path, v, true); err != nil {
		return err
	}
	if strings.HasPrefix(v, PrefixAgent) && len(v) > len(PrefixAgent) {
		return nil
	}
	if allowGroup && strings.HasPrefix(v, PrefixGroup) && len(v) > len(PrefixGroup) {
		return nil
	}
	return invalid(CodeInvalidField, path, "agent id "+quote(v)+" must start with \"agent:\"")
}

// ValidPayloadType reports whether s has the form of a payload type (§3.2):
// <domain>.<name>.v<N> — dot-separated segments of letters, digits, '_' and
// '-', at least a domain and a name, then "v" and a number without leading
// zeros ("research.summary.v1", "code.review.v12").
func ValidPayloadType(s string) bool {
	if len(s) > MaxIDLength {
		return false
	}
	i := strings.LastIndexByte(s, '.')
	if i <= 0 || !validVersionSegment(s[i+1:]) {
		return false
	}
	// A domain and a name before the version.
	return strings.IndexByte(s[:i], '.') > 0 && validSegments(s[:i], '.')
}

// validSegments reports whether s is non-empty segments of name characters
// separated by sep (which is not a name character), in one pass.
func validSegments(s string, sep byte) bool {
	prev := sep // the start counts as a separator: no empty first segment
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == sep {
			if prev == sep {
				return false
			}
		} else if !isNameChar(c) {
			return false
		}
		prev = c
	}
	return prev != sep // covers "" and an empty last segment
}

// validVersionSegment accepts "v" and a number without leading zeros, so
// that every version has one spelling.
func validVersionSegment(v string) bool {
	return len(v) >= 2 && v[0] == 'v' && validVersionNumber(v[1:])
}

// validVersionNumber accepts a version number: digits, no leading zero.
func validVersionNumber(n string) bool {
	if n == "" || (n[0] == '0' && len(n) > 1) {
		return false
	}
	for i := 0; i < len(n); i++ {
		if n[i] < '0' || n[i] > '9' {
			return false
		}
	}
	return true
}

func isNameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// ValidSchemaRef reports whether s has the form of a schema reference
// (§3.2): "schema://", a namespace, one or more path segments and "@<N>".
func ValidSchemaRef(s string) bool {
	if len(s) > MaxIDLength || !strings.HasPrefix(s, PrefixSchema) {
		return false
	}
	rest := s[len(PrefixSchema):]
	at := strings.LastIndexByte(rest, '@')
	if at < 0 || !validVersionNumber(rest[at+1:]) {
		return false
	}
	path := rest[:at]
	return strings.IndexByte(path, '/') > 0 && validSegments(path, '/')
}

// SchemaRefFor returns the canonical schema reference of a payload type
// (§3.2): "research.summary.v1" → "schema://clutch/research/summary@1". It
// returns "" when payloadType is not well formed.
func SchemaRefFor(payloadType string) string {
	if ref, ok := schemaRefs.Load(payloadType); ok {
		return ref.(string)
	}
	if !ValidPayloadType(payloadType) {
		return ""
	}
	i := strings.LastIndexByte(payloadType, '.')
	ref := PrefixSchema + "clutch/" + strings.ReplaceAll(payloadType[:i], ".", "/") + "@" + payloadType[i+2:]
	if schemaRefsLen.Load() < maxSchemaRefs {
		if _, loaded := schemaRefs.LoadOrStore(payloadType, ref); !loaded {
			schemaRefsLen.Add(1)
		}
	}
	return ref
}

// schemaRefs caches SchemaRefFor: a program uses a handful of payload types,
// each on every message. The cache stops growing at maxSchemaRefs entries,
// so that payload types from outside cannot grow it without bound.
var (
	schemaRefs    sync.Map // payload type → schema ref
	schemaRefsLen atomic.Int64
)

const maxSchemaRefs = 4096

// validCapabilityRef accepts "<kind>:<name>": a kind of lower-case letters,
// digits, '_' and '-', then a non-empty name without spaces or control
// characters ("skill:research", "tool:browser", "domain:fintech", "mcp:files").
func validCapabilityRef(s string) bool {
	if len(s) > MaxIDLength {
		return false
	}
	// The kind runs to the first ':' (which it cannot hold).
	i := 0
	for ; i < len(s) && s[i] != ':'; i++ {
		if c := s[i]; !(isLowerAlnum(c) || c == '_' || c == '-') {
			return false
		}
	}
	if i == 0 || i >= len(s)-1 { // no kind, no ':' or no name
		return false
	}
	for i++; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// validTimestamp reports whether ts is an RFC 3339 timestamp, as
// time.Parse(time.RFC3339Nano, ts) accepts them. The form this package
// writes ("2026-03-14T09:26:53.589Z") is checked digit by digit, which
// costs a tenth of time.Parse; anything else goes to time.Parse, so the
// answer is always time.Parse's (FuzzValidTimestamp compares them).
func validTimestamp(ts string) bool {
	if len(ts) == 24 && ts[4] == '-' && ts[7] == '-' && ts[10] == 'T' && ts[13] == ':' &&
		ts[16] == ':' && ts[19] == '.' && ts[23] == 'Z' {
		year, ok1 := digits(ts[0:4])
		month, ok2 := digits(ts[5:7])
		day, ok3 := digits(ts[8:10])
		hour, ok4 := digits(ts[11:13])
		minute, ok5 := digits(ts[14:16])
		sec, ok6 := digits(ts[17:19])
		_, ok7 := digits(ts[20:23])
		if ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7 &&
			month >= 1 && month <= 12 && day >= 1 && day <= daysIn(month, year) &&
			hour <= 23 && minute <= 59 && sec <= 59 {
			return true
		}
	}
	_, err := time.Parse(time.RFC3339Nano, ts)
	return err == nil
}

// digits returns the value of s, which must be ASCII digits only.
func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
