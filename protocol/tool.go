package protocol

import "strings"

// The call id of tool events (docs/protocol.md §2.3.1). An emitter states
// it in the payload: tool.call and tool.result at the top
// ({"call_id": ...}), tool.error in the wire error's details
// ({"details": {"call_id": ...}}), the same id on a call and on its
// outcome. A reader pairs a call with its outcome by that id alone; the
// events stored before the rule are read by the fallbacks of
// [ToolCallID].

// ToolCallID returns the call id of a tool event as a reader takes it
// (docs/protocol.md §2.3.1):
//
//   - tool.call: its payload's call_id; else, for a call recorded before
//     the rule, the event's own id;
//   - tool.result and tool.error: its payload's call_id, else its
//     payload's details.call_id.
//
// A call id is a non-empty JSON string; any other value counts as none.
// ok is false for an outcome that states no call id (recorded before the
// rule: see §2.3.1 for how such an event may be shown) and for events of
// other types.
func ToolCallID(m *Message) (id string, ok bool) {
	if m == nil || !isToolType(m.Type) {
		return "", false
	}
	top, details, _ := scanCallIDs(m.Payload)
	if top.str && top.id != "" {
		return top.id, true
	}
	if m.Type == TypeToolCall {
		return m.ID, m.ID != ""
	}
	if details.str && details.id != "" {
		return details.id, true
	}
	return "", false
}

// CheckToolCallID checks that a tool event states its call id where
// docs/protocol.md §2.3.1 puts it, as every new tool event must: a tool.call
// or tool.result payload is an object with a member call_id, a tool.error
// payload an object whose details object has one; the id is a string of 1
// to [MaxIDLength] bytes. It returns nil for events of other types.
//
// The error is an [*Error] whose Path names the member:
// MISSING_FIELD when it is absent, WRONG_TYPE when it or the payload (or
// details) is not of its JSON type, INVALID_FIELD when the id is empty or
// too long. Decoding does not apply this check: stored events written
// before the rule stay readable (see [ToolCallID]).
func CheckToolCallID(m *Message) error {
	if m == nil || !isToolType(m.Type) {
		return nil
	}
	top, details, shape := scanCallIDs(m.Payload)
	if shape != "" {
		return invalid(CodeWrongType, shape, "a "+string(m.Type)+" payload must be a JSON object stating its call_id (docs/protocol.md §2.3.1)")
	}
	path, c := "/payload/call_id", top
	if m.Type == TypeToolError {
		path, c = "/payload/details/call_id", details
	}
	switch {
	case !c.present:
		return invalid(CodeMissingField, path, "a "+string(m.Type)+" must state its call's id in "+path[len("/payload/"):]+" (docs/protocol.md §2.3.1)")
	case !c.str:
		return invalid(CodeWrongType, path, "call_id must be a string")
	case c.id == "":
		return invalid(CodeInvalidField, path, "call_id is empty")
	}
	if err := checkID(path, c.id, true); err != nil {
		return err
	}
	return nil
}

func isToolType(t Type) bool {
	return t == TypeToolCall || t == TypeToolResult || t == TypeToolError
}

// callIDMember is what a payload holds under the name call_id.
type callIDMember struct {
	id      string // its value, when it is a string
	present bool   // the member exists
	str     bool   // and is a string
}

// scanCallIDs reads the top-level call_id and details.call_id of a tool
// payload. shape is "" when the payload is a JSON object whose details,
// if present, is an object; else the path of what is not ("/payload",
// "/payload/details"). Invalid JSON is reported as "/payload".
func scanCallIDs(payload []byte) (top, details callIDMember, shape string) {
	// The keys are only compared; the one string kept is copied.
	sc := scanner{data: payload, maxDepth: DefaultMaxDepth, borrow: true}
	if sc.peek() != '{' {
		return top, details, "/payload"
	}
	read := func(c *callIDMember) *Error {
		c.present = true
		if sc.peek() != '"' {
			_, _, err := sc.skip(1)
			return err
		}
		s, err := sc.str()
		if err != nil {
			return err
		}
		c.id, c.str = strings.Clone(s), true
		return nil
	}
	err := sc.object(func(k string) *Error {
		switch k {
		case "call_id":
			return read(&top)
		case "details":
			if sc.peek() != '{' {
				if !sc.null() {
					shape = "/payload/details"
					_, _, err := sc.skip(1)
					return err
				}
				return nil
			}
			return sc.object(func(k string) *Error {
				if k == "call_id" {
					return read(&details)
				}
				_, _, err := sc.skip(2)
				return err
			})
		}
		_, _, err := sc.skip(1)
		return err
	})
	if err != nil || sc.peek() != 0 || sc.pos < len(payload) {
		return callIDMember{}, callIDMember{}, "/payload"
	}
	return top, details, shape
}
