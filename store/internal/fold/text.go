package fold

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/clutchprotocol/clutch/protocol"
)

// TitleMax is the most bytes of a title, and FailureMessageMax of a
// failure's message.
const (
	TitleMax          = 120
	FailureMessageMax = 200
)

// titleNames are the payload members a title is taken from, in order.
var titleNames = []string{"title", "text", "query", "message", "content", "summary", "prompt", "goal"}

// Titles reports whether an event of type t can give its run or thread a
// title: a task.request or a chat.message.
func Titles(t protocol.Type) bool {
	return t == protocol.TypeTaskRequest || t == protocol.TypeChatMessage
}

// Title is the title an event of type t with this payload type and
// payload gives: "" when t does not give one (Titles); else the payload's
// text (protocol.PayloadText with the members title, text, query,
// message, content, summary, prompt, goal), else the payload type, with
// white space and control characters collapsed and cut to TitleMax bytes
// (Clip); "" when both are blank.
func Title(t protocol.Type, payloadType string, payload []byte) string {
	if !Titles(t) {
		return ""
	}
	if t := Clip(protocol.PayloadText(payload, titleNames...), TitleMax); t != "" {
		return t
	}
	return Clip(payloadType, TitleMax)
}

// FailureOf is what failed, when m ends its task (ends, from
// protocol.EndsTask) with a task.error or a task.timeout: its task, the
// agent (the payload's details.agent when it is an agent id — a
// non-empty string of at most protocol.MaxIDLength bytes — as in a
// timeout the router records, else the sender), and the code and message
// of its error payload (cut to protocol.MaxIDLength and FailureMessageMax
// bytes: they are the sender's words). A payload that does not read as an
// error payload gives an empty code and message. nil for any other event.
func FailureOf(m *protocol.Message, ends bool) *Failure {
	if !ends || (m.Type != protocol.TypeTaskError && m.Type != protocol.TypeTaskTimeout) {
		return nil
	}
	f := &Failure{TaskID: m.TaskID, AgentID: m.From.AgentID}
	if ep, err := protocol.DecodePayload[protocol.ErrorPayload](m); err == nil {
		f.Code, f.Message = protocol.Code(cut(string(ep.Code), protocol.MaxIDLength)), cut(ep.Message, FailureMessageMax)
		if a, ok := ep.Details["agent"].(string); ok && a != "" && len(a) <= protocol.MaxIDLength {
			f.AgentID = a
		}
	}
	return f
}

// Clip collapses each run of white space and control characters in s to
// one space, trims it at both ends, and cuts what is left to at most max
// bytes (cut). A title has no control characters: it is one line of text
// for people, and a NUL could not be stored in every database.
func Clip(s string, max int) string {
	// A new string in every case, never a part of s: a title must not keep
	// a large payload alive.
	var b strings.Builder
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			space = b.Len() > 0
			continue
		}
		if b.Len() == 0 {
			b.Grow(min(len(s), max+1+utf8.UTFMax))
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		if b.WriteRune(r); b.Len() > max {
			break // enough to know it is cut
		}
	}
	return cut(b.String(), max)
}

// cut returns s when it has at most max bytes, else its longest prefix
// that ends at a rune boundary and leaves room for "…" (without a
// trailing space), followed by "…": at most max bytes in all.
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	n := max - len("…")
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	for n > 0 && s[n-1] == ' ' {
		n--
	}
	return s[:n] + "…"
}
