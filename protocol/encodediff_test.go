package protocol

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// randMessages makes messages with every field of the envelope set, unset
// or empty at random, from strings that need escapes, hold non-ASCII or
// invalid UTF-8 at every position, payloads and extensions that are valid
// or not, and meta values of every Go type the writer handles; about half
// of them are invalid somewhere.
type randMessages struct{ r *rand.Rand }

func (g randMessages) pick(n int) int { return g.r.IntN(n) }

func (g randMessages) str() string {
	pool := []string{
		"", "a", "agent:ken", "msg_01JDQ4ZK6W3V2Z8Q9R1T5Y7N2B", "2026-11-25T13:20:11.123Z", "research",
		"research.summary.v1", "schema://clutch/research/summary@1", "skill:research", "mcp:browser",
		"x.acme.thing", "task.result", "a\"b", `back\slash`, "tab\there", "new\nline", "\x00\x01\x1f\x7f",
		"é", "日本語のテキスト", "\u2028\u2029", "emoji 😀 here", "bad \xff utf8", "\xc3", "\xed\xa0\x80",
		strings.Repeat("x", 300), strings.Repeat("ab\"", 30),
	}
	if g.pick(3) > 0 {
		return pool[g.pick(len(pool))]
	}
	// A random string around the 8-byte words of the fast paths.
	b := make([]byte, g.pick(24))
	for i := range b {
		switch g.pick(30) {
		case 0:
			b[i] = byte(g.pick(256))
		case 1, 2:
			b[i] = byte(g.pick(0x20))
		case 3, 4, 5:
			b[i] = `"\:/~`[g.pick(5)]
		default:
			b[i] = byte('a' + g.pick(26))
		}
	}
	return string(b)
}

func (g randMessages) opt() string {
	if g.pick(2) == 0 {
		return ""
	}
	return g.str()
}

func (g randMessages) strs() []string {
	switch g.pick(4) {
	case 0:
		return nil
	case 1:
		return []string{}
	}
	s := make([]string, 1+g.pick(3))
	for i := range s {
		s[i] = g.str()
	}
	return s
}

var randPayloads = []string{
	`null`, `{}`, `[]`, `"s"`, `1.5e3`, `{"a":1}`, `{"title":"x","findings":["a","b"],"n":[1,2,{"c":null}]}`,
	`{"a":1,"a":2}`, `[1,`, `{"a":"\ud800"}`, "\"\xff\"", `{"a":1} x`, ` {"pad": true} `, `tru`, `{"k":"` + strings.Repeat("y", 40) + `"}`,
	`{"esc":"a\"b\\c\u00e9\ud83d\ude00"}`, "{\"ctl\":\"a\x01\"}", ``,
}

func (g randMessages) value(depth int) any {
	if depth > 3 {
		return "leaf"
	}
	switch g.pick(22) {
	case 0:
		return nil
	case 1:
		return g.str()
	case 2:
		return g.pick(2) == 0
	case 3:
		return json.Number([]string{"1", "-2.5e3", "", "01", "1.", `"s"`, "true", "null", "[1]", "12345678901234567890"}[g.pick(10)])
	case 4:
		return []float64{0, -0.0, 1.5, 1e-7, 1e21, 123456789, math.NaN(), math.Inf(1), 5e-324, 1e-6}[g.pick(10)]
	case 5:
		return float32([]float64{0, 1.5, 1e-7, 3.4e38, 1e21}[g.pick(5)])
	case 6:
		return g.pick(1000) - 500
	case 7:
		return int64(g.r.Int64())
	case 8:
		return int32(g.pick(1 << 20))
	case 9:
		return g.r.Uint64()
	case 10, 11, 12:
		m := map[string]any{}
		for range g.pick(12) { // beyond the 8 members kept on the stack
			m[g.str()] = g.value(depth + 1)
		}
		return m
	case 13, 14:
		l := make([]any, g.pick(4))
		for i := range l {
			l[i] = g.value(depth + 1)
		}
		return l
	case 15:
		return g.strs()
	case 16:
		return json.RawMessage(randPayloads[g.pick(len(randPayloads))])
	case 17:
		return struct {
			A int    `json:"a"`
			B string `json:"b"`
		}{1, g.str()}
	case 18:
		return map[string]int{"z": 1, "a": 2}
	case 19:
		return make(chan int) // cannot be encoded
	case 20:
		return []int{1, 2}
	default:
		return g.str()
	}
}

func (g randMessages) message() *Message {
	m := &Message{
		V:  []string{Version, Version, Version, "", "clutch/9"}[g.pick(5)],
		ID: g.str(), TS: []string{"2026-11-25T13:20:11.123Z", "2026-11-25T13:20:11Z", "2026-02-30T00:00:00.000Z", "", g.str()}[g.pick(5)],
		ThreadID: g.str(), RunID: g.str(), TaskID: g.str(), ParentTaskID: g.opt(),
		From:           Participant{AgentID: []string{"agent:ken", "agent:", "group:x", "ken", g.str()}[g.pick(5)], Role: g.opt()},
		Type:           Type([]string{"task.result", "task.request", "x.acme.ping", "bogus", ""}[g.pick(5)]),
		Domain:         g.opt(),
		PayloadType:    []string{"", "research.summary.v1", "research.v1", "a.b.v01", g.str()}[g.pick(5)],
		SchemaRef:      []string{"", "schema://clutch/research/summary@1", "schema://x@1", "schema://a/b@01", g.str()}[g.pick(5)],
		Payload:        json.RawMessage(randPayloads[g.pick(len(randPayloads))]),
		Requires:       g.strs(),
		Prefers:        g.strs(),
		IdempotencyKey: g.opt(),
		Attempt:        []int{1, 1, 2, 0, -1, math.MaxInt}[g.pick(6)],
	}
	if g.pick(3) > 0 {
		m.ID, m.ThreadID, m.RunID, m.TaskID = "msg_1", "thr_1", "run_1", "task_1"
	}
	if g.pick(2) == 0 {
		m.Trace = &Trace{TraceID: g.opt(), SpanID: g.opt(), ParentSpanID: g.opt()}
	}
	if g.pick(6) > 0 {
		m.To = make([]Participant, g.pick(3))
		for i := range m.To {
			m.To[i] = Participant{AgentID: []string{"agent:a", "group:g", "agent:", g.str()}[g.pick(4)], Role: g.opt()}
		}
	}
	if g.pick(2) == 0 {
		s := &Security{}
		if g.pick(2) == 0 {
			s.Auth = &Auth{Scheme: g.opt(), Kid: g.opt(), Sig: g.opt()}
		}
		if g.pick(2) == 0 {
			s.Policy = &Policy{Sandbox: g.pick(2) == 0, ToolAllowlist: g.strs()}
		}
		m.Security = s
	}
	if g.pick(2) == 0 {
		m.Attachments = make([]Attachment, g.pick(3))
		for i := range m.Attachments {
			m.Attachments[i] = Attachment{Kind: g.opt(), Ref: g.opt(), MediaType: g.opt(), Name: g.opt(), Size: int64(g.pick(5) - 1), SHA256: g.opt()}
		}
	}
	if g.pick(2) == 0 {
		m.Meta = map[string]any{}
		for range g.pick(10) {
			m.Meta[g.str()] = g.value(0)
		}
	}
	if g.pick(3) == 0 {
		m.Extensions = map[string]json.RawMessage{}
		for range 1 + g.pick(3) {
			k := []string{"x_ext", "id", "meta", "zz", g.str()}[g.pick(5)]
			m.Extensions[k] = json.RawMessage(randPayloads[g.pick(len(randPayloads))])
		}
	}
	if g.pick(2) == 0 {
		g.repair(m)
	}
	return m
}

// repair makes the fields validate checks valid, leaving the free text
// (domain, roles, meta, ...) as it is.
func (g randMessages) repair(m *Message) {
	m.V, m.TS, m.Attempt = Version, "2026-11-25T13:20:11.123Z", 1
	m.ID, m.ThreadID, m.RunID, m.TaskID = "msg_1", "thr_1", "run_1", "task_1"
	m.From.AgentID, m.Type = "agent:ken", TypeTaskResult
	if m.To == nil {
		m.To = []Participant{}
	}
	for i := range m.To {
		m.To[i].AgentID = "agent:a"
	}
	m.PayloadType, m.SchemaRef = "research.summary.v1", "schema://clutch/research/summary@1"
	m.Payload = json.RawMessage(randPayloads[g.pick(7)])
	for _, l := range [][]string{m.Requires, m.Prefers} {
		for i := range l {
			l[i] = "skill:s" + strings.Map(func(r rune) rune { return max(r, '!') }, l[i])
		}
	}
	if s := m.Security; s != nil {
		if s.Auth != nil && s.Auth.Scheme == "" {
			s.Auth.Scheme = "ed25519"
		}
		if s.Policy != nil {
			for i := range s.Policy.ToolAllowlist {
				s.Policy.ToolAllowlist[i] = "mcp:t"
			}
		}
	}
	for i := range m.Attachments {
		a := &m.Attachments[i]
		a.Kind, a.Ref, a.Size = "k"+a.Kind, "r"+a.Ref, max(a.Size, 0)
	}
	for k, v := range m.Extensions {
		delete(m.Extensions, k)
		if !isDefinedField(k) {
			m.Extensions[k] = v
		}
	}
}

// sameError reports whether two errors from the encoders or validators are
// the same: both nil, or *Error with the same code, path, offset and
// detail, and causes that print the same.
func sameError(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var x, y *Error
	if !errors.As(a, &x) || !errors.As(b, &y) {
		return false
	}
	return x.Code == y.Code && x.Path == y.Path && x.Offset == y.Offset && x.Detail == y.Detail &&
		(x.Err == nil) == (y.Err == nil) && (x.Err == nil || x.Err.Error() == y.Err.Error())
}

// TestEncodeMatchesReference: appendMessage writes exactly the bytes the
// reference encoder writes, and fails with the same error, on random
// messages, valid and not, and a message that validates encodes to valid
// JSON. (validate's one-pass helpers are compared with their references
// in validateref_test.go.)
func TestEncodeMatchesReference(t *testing.T) {
	g := randMessages{seededRand(t, 19, 7)}
	var encoded, valid int
	for range 50000 {
		m := g.message()
		got, gerr := appendMessage(nil, m)
		want, werr := refAppendMessage(nil, m)
		if string(got) != string(want) {
			t.Fatalf("message %+v:\n got  %s\n want %s", m, got, want)
		}
		if !sameError(gerr, werr) {
			t.Fatalf("message %+v:\n got  error %v\n want error %v", m, gerr, werr)
		}
		verr := m.validate()
		if gerr == nil {
			encoded++
		}
		if verr == nil {
			valid++
		}
		if gerr == nil && verr == nil && (!utf8.Valid(got) || !json.Valid(got)) {
			t.Fatalf("a valid message encoded to invalid JSON: %s", got)
		}
	}
	t.Logf("%d messages encoded, %d valid", encoded, valid)
	if encoded < 5000 || valid < 1000 {
		t.Fatalf("too few messages encode (%d) or validate (%d): the generator does not cover the success paths", encoded, valid)
	}
}
