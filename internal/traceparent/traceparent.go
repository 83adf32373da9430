package traceparent

import "github.com/clutchprotocol/clutch/protocol"

// Header is the name of the HTTP header, and of the MCP _meta member, that
// carries the value.
const Header = "traceparent"

// Format returns the traceparent value of t, or "" when t is nil or its
// trace_id or span_id is not a valid W3C id (32 and 16 lowercase hex
// digits, not all zero).
func Format(t *protocol.Trace) string {
	if t == nil || !validID(t.TraceID, 32) || !validID(t.SpanID, 16) {
		return ""
	}
	return "00-" + t.TraceID + "-" + t.SpanID + "-01"
}

// Parse reads a traceparent value into a Trace with its trace_id and its
// span_id (the sender's span). It reports false for a malformed value: a
// version other than 2 hex digits (ff is invalid), ids that are not
// lowercase hex of the right length or are all zero, a version 00 value
// of another length than 55 bytes, a later version not followed by "-"
// after its first 55 bytes.
func Parse(s string) (*protocol.Trace, bool) {
	if len(s) < 55 || s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return nil, false
	}
	ver, tid, sid, flags := s[:2], s[3:35], s[36:52], s[53:55]
	if !isHex(ver) || ver == "ff" || !isHex(flags) || !validID(tid, 32) || !validID(sid, 16) {
		return nil, false
	}
	switch {
	case ver == "00" && len(s) != 55:
		return nil, false
	case len(s) > 55 && s[55] != '-':
		return nil, false
	}
	return &protocol.Trace{TraceID: tid, SpanID: sid}, true
}

// validID reports whether id is n lowercase hex digits, not all zero.
func validID(id string, n int) bool {
	if len(id) != n || !isHex(id) {
		return false
	}
	for i := range len(id) {
		if id[i] != '0' {
			return true
		}
	}
	return false
}

func isHex(s string) bool {
	for i := range len(s) {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
