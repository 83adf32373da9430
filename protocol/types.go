package protocol

import (
	"bytes"
	"strings"
)

// Version is the only protocol version this package speaks (docs/protocol.md §1.2).
const Version = "clutch/0.1"

// Type is a message type: one of the 19 of docs/protocol.md §2 or an extension
// named x.<vendor>.<name>.
type Type string

// The message types of docs/protocol.md §2.
const (
	// §2.1 Task lifecycle.
	TypeTaskRequest  Type = "task.request"
	TypeTaskAccept   Type = "task.accept"
	TypeTaskProgress Type = "task.progress"
	TypeTaskResult   Type = "task.result"
	TypeTaskError    Type = "task.error"
	TypeTaskCancel   Type = "task.cancel"
	TypeTaskTimeout  Type = "task.timeout"
	// §2.7 People in the loop: a task asks and waits; an answer resumes it.
	TypeTaskQuestion Type = "task.question"
	TypeTaskAnswer   Type = "task.answer"
	// §2.2 Conversation.
	TypeChatMessage Type = "chat.message"
	TypeChatSystem  Type = "chat.system"
	// §2.3 Tooling / MCP.
	TypeToolCall   Type = "tool.call"
	TypeToolResult Type = "tool.result"
	TypeToolError  Type = "tool.error"
	// §2.4 Agent lifecycle.
	TypeAgentRegister  Type = "agent.register"
	TypeAgentHeartbeat Type = "agent.heartbeat"
	TypeAgentUpdate    Type = "agent.update"
	// §2.5 Routing.
	TypeRoutingDecision Type = "routing.decision"
	TypeRoutingFailure  Type = "routing.failure"
)

// Types returns the 19 message types of docs/protocol.md §2, in its order.
func Types() []Type {
	return []Type{
		TypeTaskRequest, TypeTaskAccept, TypeTaskProgress, TypeTaskResult,
		TypeTaskError, TypeTaskCancel, TypeTaskTimeout, TypeTaskQuestion, TypeTaskAnswer,
		TypeChatMessage, TypeChatSystem,
		TypeToolCall, TypeToolResult, TypeToolError,
		TypeAgentRegister, TypeAgentHeartbeat, TypeAgentUpdate,
		TypeRoutingDecision, TypeRoutingFailure,
	}
}

// internType returns the constant for a standard type name, so decoding does
// not allocate a string for it, and "" when s is not one of §2.
func internType(s []byte) Type {
	switch string(s) {
	case "task.request":
		return TypeTaskRequest
	case "task.accept":
		return TypeTaskAccept
	case "task.progress":
		return TypeTaskProgress
	case "task.result":
		return TypeTaskResult
	case "task.error":
		return TypeTaskError
	case "task.cancel":
		return TypeTaskCancel
	case "task.timeout":
		return TypeTaskTimeout
	case "task.question":
		return TypeTaskQuestion
	case "task.answer":
		return TypeTaskAnswer
	case "chat.message":
		return TypeChatMessage
	case "chat.system":
		return TypeChatSystem
	case "tool.call":
		return TypeToolCall
	case "tool.result":
		return TypeToolResult
	case "tool.error":
		return TypeToolError
	case "agent.register":
		return TypeAgentRegister
	case "agent.heartbeat":
		return TypeAgentHeartbeat
	case "agent.update":
		return TypeAgentUpdate
	case "routing.decision":
		return TypeRoutingDecision
	case "routing.failure":
		return TypeRoutingFailure
	}
	return ""
}

// Standard reports whether t is one of the 19 types of docs/protocol.md §2.
func (t Type) Standard() bool { return internType([]byte(t)) != "" }

// Extension reports whether t has the extension form x.<vendor>.<name>:
// "x.", a vendor of lower-case letters, digits and '-', a dot, and a name of
// lower-case letters, digits, '-', '_' and '.'.
func (t Type) Extension() bool {
	s := string(t)
	if len(s) > 256 || !strings.HasPrefix(s, "x.") {
		return false
	}
	vendor, name, ok := strings.Cut(s[2:], ".")
	if !ok || vendor == "" || name == "" {
		return false
	}
	for i := 0; i < len(vendor); i++ {
		if c := vendor[i]; !(isLowerAlnum(c) || c == '-') {
			return false
		}
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(isLowerAlnum(c) || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return name[len(name)-1] != '.'
}

// Valid reports whether t is a standard type or a well-formed extension.
func (t Type) Valid() bool { return t.Standard() || t.Extension() }

// Family returns the part before the first dot ("task" for task.result).
func (t Type) Family() string {
	f, _, _ := strings.Cut(string(t), ".")
	return f
}

// Terminal reports whether t ends a task (§2.1): result, error, cancel or
// timeout.
func (t Type) Terminal() bool {
	switch t {
	case TypeTaskResult, TypeTaskError, TypeTaskCancel, TypeTaskTimeout:
		return true
	}
	return false
}

// EndsTask reports whether m ends its task for good: a task.result,
// task.cancel or task.timeout, or a task.error that does not announce a
// retry (details.will_retry, docs/protocol.md §5.3). An error payload that
// cannot be read counts as final.
func EndsTask(m *Message) bool {
	switch m.Type {
	case TypeTaskResult, TypeTaskCancel, TypeTaskTimeout:
		return true
	case TypeTaskError:
		// Without the name will_retry in its bytes (and no escape that
		// could spell it) the payload cannot announce a retry, and the
		// answer is true whether it decodes or not: no decoding needed.
		if !bytes.Contains(m.Payload, willRetry) && bytes.IndexByte(m.Payload, '\\') < 0 {
			return true
		}
		ep, err := DecodePayload[ErrorPayload](m)
		return err != nil || ep.Details["will_retry"] != true
	}
	return false
}

var willRetry = []byte("will_retry")

// The reserved prefixes of docs/protocol.md Appendix B.
const (
	PrefixAgent    = "agent:"
	PrefixGroup    = "group:"
	PrefixTask     = "task:"
	PrefixRun      = "run:"
	PrefixThread   = "thread:"
	PrefixCall     = "call:" // tool call ids an adapter derives (§2.3.1)
	PrefixArtifact = "artifact:"
	PrefixSchema   = "schema://"
	PrefixMCP      = "mcp:"
	PrefixSkill    = "skill:"
	PrefixTool     = "tool:"
)

func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
