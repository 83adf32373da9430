package clowl

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/clutchprotocol/clutch/adapters/internal/rawjson"

	"github.com/clutchprotocol/clutch/protocol"
)

// SystemPrompt is the system-prompt text of the CLowl spec (docs/protocol.md §14.7,
// "System Prompt Injection"), verbatim, for LLM-backed agents. The spec
// still writes it for v0.1 ("cl":"0.1", ctx as a string) and for the
// semantic layer only: the runtime wraps what the model writes with ids,
// timestamps and trace ids (§7 "Architecture Note"). Inbound refuses the
// model's raw output with UNSUPPORTED_VERSION (E014) until it is wrapped;
// SystemPromptV02 describes the v0.2 wire form instead.
const SystemPrompt = `You speak CLowl v0.1 for agent-to-agent messages. Format:
{"cl":"0.1","mid":"<msg_id>","p":"<P>","from":"<id>","to":"<id>","cid":"<thread>","body":{"t":"<task>","d":{}},"ctx":"<ref>"}

p (Performatives): REQ=request, INF=info, ACK=proceeding, ERR=failed (needs code+msg in d), DLGT=delegate, DONE=completed (result in d).
t (Tasks): search, write, read, analyze, draft, review, deploy, notify, audit, summarize, translate, schedule, approve, escalate. Custom: x-prefix.
ctx: path/URL/hash. NEVER inline large context; reference it.
Error d: {"code":"E001-E016","msg":"...","retry":bool}

Rules: Output RAW JSON only. No markdown. No extra text. Keep 'd' payload flat. All fields required. Use natural language ONLY for human-facing output.`

// SystemPromptV02 is this package's own short prompt for models that
// write whole CLowl v0.2 messages (the wire form Inbound accepts), in the
// style of SystemPrompt. It is not part of the spec.
const SystemPromptV02 = `You speak CLowl v0.2 for agent-to-agent messages. Format:
{"clowl":"0.2","mid":"<unique id>","ts":<unix seconds>,"tid":"<trace id>","pid":"<mid you answer or null>","p":"<P>","from":"<id>","to":"<id>|\"*\"|[\"<id>\",...]","cid":"<thread>","body":{"t":"<task>","d":{}},"ctx":{"ref":"<path or URL or null>","inline":"<fallback text or null>","hash":"<sha256 hex or null>"}}

p: REQ=request, INF=inform, ACK=proceeding, ERR=failed, DLGT=delegate, DONE=completed (result in d), CNCL=cancel, QRY=query, PROG=progress, CAPS=capabilities.
DLGT d needs "delegation_mode": "transfer"|"fork"|"assist". PROG d: {"pct":0-100,"note":"..."}. CAPS d: {"supports":["<task>:<kind>",...],"clowl":"0.2"}.
Error d: {"code":"E001-E016","msg":"...","retry":bool}. ctx, tid, pid, auth, det are optional; no other fields.

Rules: Output RAW JSON only. No markdown. No extra text. Keep 'd' flat. Use natural language ONLY for human-facing output.`

// Translate returns the English translation of a CLowl message (docs/protocol.md §14
// §1: "every message has a deterministic English translation"): Parse,
// then Message.English.
func Translate(raw []byte) (string, error) {
	m, err := Parse(raw)
	if err != nil {
		return "", err
	}
	return m.English(), nil
}

// EnglishOf returns the English translation of an envelope: the CLowl
// message Outbound would send (FromEnvelope), translated. It fails for the
// types CLowl has no performative for.
func EnglishOf(m *protocol.Message) (string, error) {
	cm, err := FromEnvelope(m)
	if err != nil {
		return "", err
	}
	return cm.English(), nil
}

// English returns the message's English translation. The same message
// always gives the same sentence: the time is UTC, and objects are
// written in their JCS (RFC 8785) form, members sorted. The templates are
// listed in the package doc ("English translation").
func (m *Message) English() string {
	var b strings.Builder
	b.WriteString("[" + time.Unix(m.TS, 0).UTC().Format("2006-01-02 15:04:05") + " UTC] ")
	if m.TID != "" {
		b.WriteString("[" + token(m.TID) + "] ")
	}
	b.WriteString(token(m.From) + " → ")
	if len(m.To) == 1 && !m.ToList {
		b.WriteString(token(m.To[0]))
	} else {
		to := make([]string, len(m.To))
		for i, x := range m.To {
			to[i] = token(x)
		}
		b.WriteString("[" + strings.Join(to, ", ") + "]")
	}
	b.WriteString(": ")
	name := m.P.Name()
	if name == "" {
		name = string(m.P)
	}
	b.WriteString(name + " ")
	ms, _ := rawjson.Members(m.Body.D)
	switch m.P {
	case ERR:
		b.WriteString(errSentence(m.Body.T, ms))
	case DLGT:
		mode, rest := "", ms[:0:0]
		for _, mb := range ms {
			if mb.Name == "delegation_mode" {
				mode, _ = rawjson.Str(mb.Value)
			} else {
				rest = append(rest, mb)
			}
		}
		b.WriteString(token(m.Body.T) + " [" + token(mode) + "]" + summary(rest))
	case PROG:
		b.WriteString(token(m.Body.T) + progSentence(ms))
	case CNCL:
		reason, rest := "", ms[:0:0]
		for _, mb := range ms {
			if s, ok := rawjson.Str(mb.Value); ok && mb.Name == "reason" {
				reason = s
			} else {
				rest = append(rest, mb)
			}
		}
		b.WriteString(token(m.Body.T))
		if reason != "" {
			b.WriteString(" — " + quotedText(reason))
		}
		if len(rest) > 0 {
			b.WriteString(summary(rest))
		}
	case CAPS:
		v, supports := Version, []string{}
		for _, mb := range ms {
			switch mb.Name {
			case "clowl":
				if s, ok := rawjson.Str(mb.Value); ok {
					v = s
				}
			case "supports":
				for _, c := range capabilities([]byte(`{"supports":` + string(mb.Value) + `}`)) {
					supports = append(supports, token(strings.TrimPrefix(c.ID, "skill:")))
				}
			}
		}
		b.WriteString("CLowl v" + token(v) + " | supports: " + strings.Join(supports, ", "))
	default: // REQ, INF, ACK, DONE, QRY
		b.WriteString(token(m.Body.T) + summary(ms))
	}
	if c := m.Ctx; c != nil {
		switch {
		case c.Ref != "":
			b.WriteString(" | ctx: ref " + token(c.Ref))
			if c.Hash != "" {
				b.WriteString(" (sha256 " + token(prefix(c.Hash, 12)) + "…)")
			}
			if c.Inline != "" {
				b.WriteString(", inline fallback of " + strconv.Itoa(len([]rune(c.Inline))) + " characters")
			}
		case c.Inline != "":
			b.WriteString(" | ctx: inline, " + strconv.Itoa(len([]rune(c.Inline))) + " characters")
		}
	}
	if m.Det != nil && *m.Det {
		b.WriteString(" [deterministic]")
	}
	if m.PID != "" {
		b.WriteString(" (re: " + token(m.PID) + ")")
	}
	if m.Auth != "" {
		b.WriteString(" [authenticated]")
	}
	return b.String()
}

// summary renders body.d members: nothing when empty, "key: value" for a
// single string member, else the JCS form of the object.
func summary(ms []rawjson.Member) string {
	switch {
	case len(ms) == 0:
		return ""
	case len(ms) == 1:
		if s, ok := rawjson.Str(ms[0].Value); ok {
			return " — " + token(ms[0].Name) + ": " + quotedText(s)
		}
	}
	canon, err := protocol.Canonical(rawjson.Object(ms))
	if err != nil {
		canon = rawjson.Object(ms)
	}
	return " — " + visible(string(canon))
}

func errSentence(t string, ms []rawjson.Member) string {
	code, msg, retry, cause := "?", "", "", ""
	var rest []rawjson.Member
	for _, mb := range ms {
		s, isStr := rawjson.Str(mb.Value)
		switch {
		case mb.Name == "code" && isStr:
			code = s
		case mb.Name == "msg" && isStr:
			msg = s
		case mb.Name == "retry" && (rawjson.Kind(mb.Value) == 't' || rawjson.Kind(mb.Value) == 'f'):
			retry = map[bool]string{true: "retryable", false: "not retryable"}[rawjson.Kind(mb.Value) == 't']
		case mb.Name == "cascade_err" && isStr:
			cause = s
		default:
			rest = append(rest, mb)
		}
	}
	var b strings.Builder
	if t != "error" {
		b.WriteString(token(t) + " ")
	}
	b.WriteString("[" + token(code) + "]")
	if msg != "" {
		b.WriteString(" " + quotedText(msg))
	}
	if cause != "" {
		b.WriteString(" (cause " + token(cause) + ")")
	}
	if retry != "" {
		b.WriteString(" — " + retry)
	}
	b.WriteString(summary(rest))
	return b.String()
}

func progSentence(ms []rawjson.Member) string {
	var parts []string
	var rest []rawjson.Member
	for _, mb := range ms {
		s, isStr := rawjson.Str(mb.Value)
		switch {
		case mb.Name == "pct" && rawjson.Kind(mb.Value) == '0':
			parts = append(parts, string(mb.Value)+"%")
		case mb.Name == "phase" && isStr:
			parts = append(parts, "phase "+quotedText(s))
		case mb.Name == "note" && isStr:
			parts = append(parts, quotedText(s))
		case mb.Name == "seq" && rawjson.Kind(mb.Value) == '0':
			parts = append(parts, "#"+string(mb.Value))
		case mb.Name == "final" && rawjson.Kind(mb.Value) == 't':
			parts = append(parts, "final")
		case mb.Name == "final" && rawjson.Kind(mb.Value) == 'f':
		default:
			rest = append(rest, mb)
		}
	}
	out := ""
	if len(parts) > 0 {
		out = " — " + strings.Join(parts, ", ")
	}
	return out + summary(rest)
}

// Boundaries (docs/protocol.md §6.5). The sentence is read by people and
// by models; the strings in it come from the message, which is outside
// input. Free text (values, msg, reason, phase, note) is always written as
// a JSON string literal: quoted, with '"', '\\', control characters and
// every other invisible or line-breaking character escaped, so it cannot
// end its quotes or start a line of its own. Names (ids, t, codes, keys,
// refs) are written bare when they are plain tokens, quoted like free
// text otherwise.

// maxToken is the longest string written bare.
const maxToken = 256

// token writes s bare when it is a plain token — letters, digits and
// . _ : @ / # * + ~ = - only — and as quotedText does otherwise.
func token(s string) string {
	if s == "" || len(s) > maxToken {
		return quotedText(s)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("._:@/#*+~=-", c) >= 0) {
			return quotedText(s)
		}
	}
	return s
}

// quotedText writes s as a JSON string literal that shows every character:
// '"' and '\\' escaped, \n \r \t, and \uXXXX for every other rune that is
// not a printable character or a space (controls, line and paragraph
// separators, bidirectional and other format characters).
func quotedText(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == ' ' || r != utf8.RuneError && unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			escapeRune(&b, r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// visible escapes, in JSON text, the runes JSON allows raw in strings but
// that are invisible or break lines (U+2028, bidirectional controls, …);
// outside strings JSON text has none. The value is unchanged.
func visible(j string) string {
	clean := true
	for _, r := range j {
		if r >= 0x80 && !unicode.IsPrint(r) {
			clean = false
			break
		}
	}
	if clean {
		return j
	}
	var b strings.Builder
	for _, r := range j {
		if r >= 0x80 && !unicode.IsPrint(r) {
			escapeRune(&b, r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

func escapeRune(b *strings.Builder, r rune) {
	if r > 0xffff {
		r1, r2 := utf16.EncodeRune(r)
		fmt.Fprintf(b, `\u%04x\u%04x`, r1, r2)
		return
	}
	fmt.Fprintf(b, `\u%04x`, r)
}

// prefix returns at most n bytes of s, cut at a rune boundary.
func prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
