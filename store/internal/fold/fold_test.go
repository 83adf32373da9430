package fold

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/clutchprotocol/clutch/protocol"
)

func TestClip(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{"", 10, ""},
		{" \t\n\u00a0\u2003 ", 10, ""},
		{"  a \n\n b\tc  ", 10, "a b c"},
		{"abcdefghij", 10, "abcdefghij"},
		{"abcdefghijk", 10, "abcdefg…"},
		{"abcdef hijk", 10, "abcdef…"},                // no space before the "…"
		{"abcdef  \n  hijk", 10, "abcdef…"},           // collapsed first
		{"ab" + strings.Repeat("é", 10), 10, "abéé…"}, // 2+2+2 bytes, then "…": 9 ≤ 10
		{"😀😀😀", 10, "😀…"},
		{"\xff\xfeok", 10, "\uFFFD\uFFFDok"},          // invalid UTF-8 becomes U+FFFD
		{"a\x00b\x1b[1m\u0085c\x7f", 10, "a b [1m c"}, // control characters are white space
		{"\x00\x01", 10, ""},
	} {
		got := Clip(c.in, c.max)
		if got != c.want || len(got) > c.max || !utf8.ValidString(got) {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}

func TestTitle(t *testing.T) {
	for _, c := range []struct{ payloadType, payload, want string }{
		{"", `"ask"`, "ask"},
		{"a.b.v1", `{"goal":"g","summary":"s"}`, "s"},
		{"a.b.v1", `{"other":"o"}`, "a.b.v1"},
		{"a.b.v1", `{"text":"  "}`, "a.b.v1"},
		{"", `{"other":"o"}`, ""},
		{"", `null`, ""},
		{"", ``, ""},
	} {
		if got := Title(protocol.TypeChatMessage, c.payloadType, []byte(c.payload)); got != c.want {
			t.Errorf("Title(%q, %s) = %q, want %q", c.payloadType, c.payload, got, c.want)
		}
	}
	if got := Title(protocol.TypeTaskResult, "a.b.v1", []byte(`"done"`)); got != "" {
		t.Errorf("a task.result gives the title %q", got)
	}
}

func TestFailureOf(t *testing.T) {
	m := &protocol.Message{Type: protocol.TypeTaskError, TaskID: "task_1", From: protocol.Participant{AgentID: "agent:ken"},
		Payload: []byte(`{"code":"TOOL_FAILED","message":"` + strings.Repeat("x", 300) + `","retryable":false}`)}
	f := FailureOf(m, true)
	if f == nil || f.TaskID != "task_1" || f.AgentID != "agent:ken" || f.Code != protocol.CodeToolFailed ||
		f.Message != strings.Repeat("x", 197)+"…" {
		t.Fatalf("FailureOf a final task.error = %+v", f)
	}
	if f := FailureOf(m, false); f != nil {
		t.Fatalf("an error that announces a retry: %+v", f)
	}
	m.Type = protocol.TypeTaskCancel
	if f := FailureOf(m, true); f != nil {
		t.Fatalf("a cancel: %+v", f)
	}
	m.Type = protocol.TypeTaskTimeout
	m.Payload = []byte(`{"code":"TIMEOUT","message":"late","retryable":true,"details":{"agent":"agent:slow"}}`)
	if f := FailureOf(m, true); f == nil || f.AgentID != "agent:slow" || f.Code != protocol.CodeTimeout || f.Message != "late" {
		t.Fatalf("a timeout names the agent of its details: %+v", f)
	}
	long := strings.Repeat("y", 300)
	m.Payload = []byte(`{"code":"` + long + `","message":"late","retryable":true,"details":{"agent":"agent:` + long + `"}}`)
	if f := FailureOf(m, true); f == nil || f.AgentID != "agent:ken" || f.Code != protocol.Code(strings.Repeat("y", 253)+"…") {
		t.Fatalf("an agent longer than an id is not one, a code is cut: %+v", f)
	}
}

// TestTaskStepWaiting walks one task through questions, answers, attempts
// and its end, with the counts each step changes.
func TestTaskStepWaiting(t *testing.T) {
	type step struct {
		typ     protocol.Type
		attempt int
		ends    bool
		want    TaskState
		d       Delta
	}
	var st TaskState
	known := false
	for i, s := range []step{
		{protocol.TypeTaskRequest, 1, false, TaskState{}, Delta{Tasks: 1}},
		{protocol.TypeTaskQuestion, 1, false, TaskState{Waiting: true, Attempt: 1}, Delta{Waiting: 1}},
		{protocol.TypeTaskQuestion, 1, false, TaskState{Waiting: true, Attempt: 1}, Delta{}},
		{protocol.TypeTaskProgress, 1, false, TaskState{Waiting: true, Attempt: 1}, Delta{}},
		{protocol.TypeTaskAnswer, 1, false, TaskState{}, Delta{Waiting: -1}},
		{protocol.TypeTaskAnswer, 1, false, TaskState{}, Delta{}},
		{protocol.TypeTaskQuestion, 2, false, TaskState{Waiting: true, Attempt: 2}, Delta{Waiting: 1}},
		{protocol.TypeTaskQuestion, 3, false, TaskState{Waiting: true, Attempt: 3}, Delta{}},
		{protocol.TypeTaskAccept, 4, false, TaskState{}, Delta{Waiting: -1}},
		{protocol.TypeTaskQuestion, 4, false, TaskState{Waiting: true, Attempt: 4}, Delta{Waiting: 1}},
		{protocol.TypeTaskCancel, 4, true, TaskState{Ended: true, Attempt: 4}, Delta{Ended: 1, Waiting: -1}},
		{protocol.TypeTaskQuestion, 4, false, TaskState{Ended: true, Attempt: 4}, Delta{}},
		{protocol.TypeTaskAnswer, 4, false, TaskState{Ended: true, Attempt: 4}, Delta{}},
	} {
		if !NeedsTask("task_1", s.typ, s.attempt, s.ends) && s.d != (Delta{}) {
			t.Fatalf("step %d: %s changes the counts but NeedsTask is false", i, s.typ)
		}
		next, changed, d := TaskStep(s.typ, s.attempt, s.ends, st, known)
		if next != s.want || d != s.d || changed != (next != st || !known) {
			t.Fatalf("step %d (%s, attempt %d): %+v, changed %v, %+v; want %+v, %+v", i, s.typ, s.attempt, next, changed, d, s.want, s.d)
		}
		st, known = next, true
	}
}

// TestFoldAllocs: an event that cannot set a title, name an agent or
// carry a failure costs Fold no allocation, nor does a request once the
// summary has a title.
func TestFoldAllocs(t *testing.T) {
	s := &Summary{}
	t0 := time.Unix(1, 0)
	Fold(s, "run_1", Event{RunID: "run_1", AgentID: "agent:ui", Type: protocol.TypeTaskRequest, Payload: []byte(`{"text":"ask"}`)}, 1, t0, Delta{Tasks: 1})
	Fold(s, "run_1", Event{RunID: "run_1", AgentID: "agent:ken", Type: protocol.TypeTaskAccept, Payload: []byte(`null`)}, 2, t0, Delta{})
	if s.Title != "ask" || len(s.Agents) != 1 {
		t.Fatalf("summary %+v", s)
	}
	seq := uint64(3)
	for _, e := range []Event{
		{RunID: "run_1", AgentID: "agent:ken", Type: protocol.TypeTaskProgress, Payload: []byte(`{"text":"50%"}`)},
		{RunID: "run_1", AgentID: "agent:ken", Type: protocol.TypeTaskAccept, Payload: []byte(`null`)},
		{RunID: "run_1", AgentID: "agent:ui", Type: protocol.TypeTaskRequest, Payload: []byte(`{"text":"another"}`)},
		{RunID: "run_1", AgentID: "agent:ui", Type: protocol.TypeChatMessage, Payload: []byte(`"hi"`)},
		{RunID: "run_1", AgentID: "agent:ken", Type: protocol.TypeTaskResult, Ends: true, Payload: []byte(`{"title":"done"}`)},
	} {
		if n := testing.AllocsPerRun(100, func() { Fold(s, "run_1", e, seq, t0, Delta{}); seq++ }); n != 0 {
			t.Errorf("Fold of a %s: %v allocations", e.Type, n)
		}
	}
	if s.Title != "ask" {
		t.Fatalf("title changed to %q", s.Title)
	}
}

// TestFoldBytes: Fold adds each event's Size to Bytes.
func TestFoldBytes(t *testing.T) {
	s := &Summary{}
	t0 := time.Unix(1, 0)
	want := int64(0)
	for i, size := range []int{310, 0, 1 << 20, 7} {
		Fold(s, "run_1", Event{RunID: "run_1", AgentID: "agent:ken", Type: protocol.TypeTaskProgress, Size: size}, uint64(i+1), t0, Delta{})
		want += int64(size)
		if s.Bytes != want {
			t.Fatalf("after event %d of %d bytes: Bytes %d, want %d", i+1, size, s.Bytes, want)
		}
	}
}

func TestListed(t *testing.T) {
	s := Summary{Agents: []string{"a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9"}}
	Listed(&s)
	if len(s.Agents) != 8 || s.AgentsMore != 2 || cap(s.Agents) != 8 {
		t.Fatalf("Listed: %v +%d", s.Agents, s.AgentsMore)
	}
	Listed(&s) // a second time changes nothing
	if len(s.Agents) != 8 || s.AgentsMore != 2 {
		t.Fatalf("Listed twice: %v +%d", s.Agents, s.AgentsMore)
	}
}
