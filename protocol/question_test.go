package protocol

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestQuestionValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		q     Question
		field string // "" when valid
	}{
		{"text only", Question{Text: "Which market?"}, ""},
		{"choices", Question{Text: "Pick", Choices: []string{"fintech", "health"}}, ""},
		{"schema", Question{Text: "Budget?", Schema: json.RawMessage(`{"type":"number"}`)}, ""},
		{"approval", Question{Kind: QuestionApproval, Text: "Send the email?", Details: map[string]any{"tool": "mail.send"}}, ""},
		{"answerers", Question{Text: "ok?", Who: &Answerers{Agents: []string{"agent:alice"}, Scopes: []string{"admin"}}}, ""},
		{"no text", Question{}, "payload.text"},
		{"long text", Question{Text: strings.Repeat("x", MaxQuestionText+1)}, "payload.text"},
		{"bad utf-8", Question{Text: "\xff"}, "payload.text"},
		{"unknown kind", Question{Kind: "poll", Text: "x"}, "payload.kind"},
		{"empty choice", Question{Text: "x", Choices: []string{"a", ""}}, "payload.choices"},
		{"repeated choice", Question{Text: "x", Choices: []string{"a", "a"}}, "payload.choices"},
		{"too many choices", Question{Text: "x", Choices: strings.Split(strings.Repeat("c,", MaxQuestionChoices)+"z", ",")}, "payload.choices"},
		{"schema not an object", Question{Text: "x", Schema: json.RawMessage(`[1]`)}, "payload.schema"},
		{"schema and choices", Question{Text: "x", Choices: []string{"a"}, Schema: json.RawMessage(`{}`)}, "payload.schema"},
		{"approval with choices", Question{Kind: QuestionApproval, Text: "x", Choices: []string{"a"}}, "payload.choices"},
		{"bad answerer", Question{Text: "x", Who: &Answerers{Agents: []string{"alice"}}}, "payload.who.agents"},
	} {
		err := tc.q.Validate()
		if tc.field == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
			continue
		}
		var pe *Error
		if !errors.As(err, &pe) || pe.Code != CodeInvalidField || pe.Path != tc.field {
			t.Errorf("%s: got %v, want INVALID_FIELD at %s", tc.name, err, tc.field)
		}
	}
}

func TestQuestionMayAnswer(t *testing.T) {
	def := Question{Text: "x"}
	who := Question{Text: "x", Who: &Answerers{Requester: true, Agents: []string{"agent:alice"}, Scopes: []string{"approve"}}}
	for _, tc := range []struct {
		q      *Question
		agent  string
		scopes []string
		want   bool
	}{
		{&def, "agent:ken", nil, true}, // the requester by default
		{&def, "agent:eve", []string{"admin"}, false},
		{&who, "agent:ken", nil, true},
		{&who, "agent:alice", nil, true},
		{&who, "agent:bob", []string{"submit", "approve"}, true},
		{&who, "agent:eve", []string{"submit"}, false},
	} {
		if got := tc.q.MayAnswer(tc.agent, "agent:ken", tc.scopes); got != tc.want {
			t.Errorf("%s %v on %+v: %v, want %v", tc.agent, tc.scopes, tc.q.Who, got, tc.want)
		}
	}
}

func TestQuestionCheckValue(t *testing.T) {
	free := Question{Text: "x"}
	pick := Question{Text: "x", Choices: []string{"fintech", "health"}}
	appr := Question{Kind: QuestionApproval, Text: "x"}
	for _, tc := range []struct {
		q    *Question
		v    string
		ok   bool
		name string
	}{
		{&free, `"anything"`, true, "free text"},
		{&free, `{"n":1}`, true, "free object"},
		{&free, `{"n":`, false, "not JSON"},
		{&free, ``, false, "empty"},
		{&pick, `"fintech"`, true, "a choice"},
		{&pick, `"retail"`, false, "not a choice"},
		{&pick, `1`, false, "not a string"},
		{&appr, `{"decision":"approve"}`, true, "approve"},
		{&appr, `{"decision":"reject","reason":"too risky"}`, true, "reject"},
		{&appr, `{"decision":"edit","arguments":{"to":"ops@example.com"}}`, true, "edit"},
		{&appr, `{"decision":"edit"}`, false, "edit without arguments"},
		{&appr, `{"decision":"approve","arguments":{}}`, false, "arguments without edit"},
		{&appr, `{"decision":"maybe"}`, false, "unknown decision"},
		{&appr, `{"decision":"approve","extra":1}`, false, "unknown field"},
		{&appr, `"approve"`, false, "a bare string"},
	} {
		err := tc.q.CheckValue(json.RawMessage(tc.v))
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
		if err != nil && !errors.Is(err, CodeInvalidField) {
			t.Errorf("%s: %v is not INVALID_FIELD", tc.name, err)
		}
	}
}

// FuzzAnswerValue: an answer's value from outside never panics the check,
// and what it accepts is JSON that fits the question.
func FuzzAnswerValue(f *testing.F) {
	for _, s := range []string{`"fintech"`, `{"decision":"approve"}`, `{"decision":"edit","arguments":[1]}`, `1`, `{`, "\xff", `null`} {
		f.Add(s, 0)
		f.Add(s, 1)
		f.Add(s, 2)
	}
	qs := []Question{{Text: "x"}, {Text: "x", Choices: []string{"fintech", "health"}}, {Kind: QuestionApproval, Text: "x"}}
	f.Fuzz(func(t *testing.T, v string, k int) {
		q := &qs[uint(k)%uint(len(qs))]
		if err := q.CheckValue(json.RawMessage(v)); err == nil && !json.Valid([]byte(v)) {
			t.Fatalf("accepted %q, which is not JSON", v)
		}
	})
}

// FuzzQuestionPayload: a task.question payload decoded from outside never
// panics Validate or MayAnswer.
func FuzzQuestionPayload(f *testing.F) {
	for _, s := range []string{
		`{"question_id":"task_1.q0","index":0,"text":"Which market?","choices":["a","b"]}`,
		`{"text":"x","kind":"approval","who":{"requester":true,"agents":["agent:a"],"scopes":["admin"]},"deadline":"2026-01-01T00:00:00Z"}`,
		`{"text":"x","schema":{"type":"object"}}`, `{}`, `[]`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var q Question
		if json.Unmarshal([]byte(s), &q) != nil {
			return
		}
		if q.Validate() == nil && q.Text == "" {
			t.Fatal("a question without text passed")
		}
		q.MayAnswer("agent:x", "agent:y", []string{"admin"})
	})
}

func TestQuestionIDs(t *testing.T) {
	id := QuestionID("task_01.q9x", 12)
	if task, n, ok := ParseQuestionID(id); !ok || task != "task_01.q9x" || n != 12 {
		t.Errorf("round trip of %s: %s %d %v", id, task, n, ok)
	}
	for _, bad := range []string{"task_01", ".q0", "task_01.q", "task_01.q-1", "task_01.q01", "task_01.qx"} {
		if _, _, ok := ParseQuestionID(bad); ok {
			t.Errorf("%q parsed", bad)
		}
	}
}
