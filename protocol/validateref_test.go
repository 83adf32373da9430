package protocol

// Message.validate and validCapabilityRef as they were before the encode
// path was made cheaper: the reference TestValidateMatchesReference compares
// them with, refusal for refusal.

import (
	"strconv"
	"strings"
)

func refValidate(m *Message) error {
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
		if !refValidCapabilityRef(r) {
			return invalid(CodeInvalidField, "/requires/"+strconv.Itoa(i), "requires entry "+quote(r)+" is not of the form <kind>:<name>")
		}
	}
	for i, r := range m.Prefers {
		if !refValidCapabilityRef(r) {
			return invalid(CodeInvalidField, "/prefers/"+strconv.Itoa(i), "prefers entry "+quote(r)+" is not of the form <kind>:<name>")
		}
	}
	if s := m.Security; s != nil {
		if s.Auth != nil && s.Auth.Scheme == "" {
			return invalid(CodeMissingField, "/security/auth/scheme", "security.auth needs a scheme")
		}
		if s.Policy != nil {
			for i, t := range s.Policy.ToolAllowlist {
				if !refValidCapabilityRef(t) {
					return invalid(CodeInvalidField, "/security/policy/tool_allowlist/"+strconv.Itoa(i), "tool_allowlist entry "+quote(t)+" is not of the form <kind>:<name>")
				}
			}
		}
	}
	for i, a := range m.Attachments {
		p := "/attachments/" + strconv.Itoa(i)
		if a.Kind == "" {
			return invalid(CodeMissingField, p+"/kind", "attachment needs a kind")
		}
		if a.Ref == "" {
			return invalid(CodeMissingField, p+"/ref", "attachment needs a ref")
		}
		if a.Size < 0 {
			return invalid(CodeInvalidField, p+"/size", "size must not be negative")
		}
	}
	for k := range m.Extensions {
		if isDefinedField(k) {
			return invalid(CodeInvalidField, "/"+escapePointer(k), "an extension may not use the name of a defined field")
		}
	}
	return nil
}

func refValidCapabilityRef(s string) bool {
	if len(s) > MaxIDLength {
		return false
	}
	kind, name, ok := strings.Cut(s, ":")
	if !ok || kind == "" || name == "" {
		return false
	}
	for i := 0; i < len(kind); i++ {
		if c := kind[i]; !(isLowerAlnum(c) || c == '_' || c == '-') {
			return false
		}
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// refValidSegments reports whether s is non-empty segments of name characters
// separated by sep.
func refValidSegments(s string, sep byte) bool {
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == sep {
			if i == start || !refIsNameSeg(s[start:i]) {
				return false
			}
			start = i + 1
		}
	}
	return true
}

func refIsNameSeg(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
