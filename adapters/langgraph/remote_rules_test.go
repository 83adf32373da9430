package langgraph_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// A thread that still has a node to run waits for a person even when the
// stream showed no interrupt (modes without values or updates): the task
// asks, with the thread's next and pending interrupts; it has no result.
func TestRemoteWaitingThreadIsNoResult(t *testing.T) {
	f, hs := newFake(t)
	f.streams = []string{"event: metadata\ndata: {\"run_id\":\"run-1\"}\n\n" +
		"event: messages\ndata: [{\"type\":\"ai\",\"content\":\"draft ready\",\"id\":\"m1\"},{\"langgraph_node\":\"draft\"}]\n\n"}
	f.state = `{"values":{"messages":[]},"next":["publish"],"tasks":[{"id":"t1","name":"publish","interrupts":[]}]}`
	env, rm := newEnv(t, hs.URL, "publish", nil)
	out := ask(t, env, rm, "write", "")
	require.False(t, out.OK(), "%s", out.Message.Payload)
	q := asked(t, env, out)
	assert.Equal(t, []any{"publish"}, q.Details["langgraph_next"])
	assert.Equal(t, []any{}, q.Details["interrupts"])
	assert.Equal(t, "LangGraph run paused before publish: answer to continue", q.Text)
}

// An interrupt reported only in a subgraph's namespace (two deep) is the
// task's question, the interrupt once.
func TestRemoteNestedInterruptAsks(t *testing.T) {
	f, hs := newFake(t)
	in := `{"__interrupt__":[{"value":"Deep?","id":"i-deep"}]}`
	f.streams = []string{"event: metadata\ndata: {\"run_id\":\"run-1\"}\n\n" +
		"event: updates|middle:a|inner:b\ndata: " + in + "\n\n" +
		"event: updates|middle:a\ndata: " + in + "\n\n"}
	f.state = `{"values":{"messages":[]},"next":["middle"],"tasks":[{"id":"a","name":"middle","interrupts":[{"value":"Deep?","id":"i-deep"}]}]}`
	env, rm := newEnv(t, hs.URL, "nested", nil)
	out := ask(t, env, rm, "go", "")
	require.False(t, out.OK(), "%s", out.Message.Payload)
	q := asked(t, env, out)
	assert.Equal(t, "Deep?", q.Text)
	assert.Len(t, q.Details["interrupts"], 1)
}

// A frame the translator refuses is kept as x.langgraph.invalid_frame with
// credentials redacted and its data bounded.
func TestRemoteInvalidFrameRedactedAndBounded(t *testing.T) {
	f, hs := newFake(t)
	long := strings.Repeat("c", 300)
	f.streams = []string{"event: metadata\ndata: {\"run_id\":\"run-1\"}\n\n" +
		"event: checkpoints\ndata: {\"config\":{\"configurable\":{\"checkpoint_id\":\"" + long + "\",\"authorization\":\"Bearer s3cret-token\"}},\"pad\":\"" + strings.Repeat("p", 100<<10) + "\"}\n\n" +
		"event: values\ndata: {\"messages\":[]}\n\n"}
	env, rm := newEnv(t, hs.URL, "agent", nil)
	out := ask(t, env, rm, "go", "")
	require.True(t, out.OK(), "%+v", out.Err)
	bad := env.Events(store.Query{TaskID: out.TaskID, TypePrefix: "x.langgraph.invalid_frame"})
	require.Len(t, bad, 1)
	assert.NotContains(t, string(bad[0].Payload), "s3cret")
	assert.Contains(t, string(bad[0].Payload), "truncated")
	assert.Less(t, len(bad[0].Payload), 40<<10)
}

// The question of an interrupt value: a string as it is, an object's
// question, message or description, else the nodes the run paused before;
// text bounded; choices and a schema only when valid; credentials never.
func TestRemoteQuestionOfInterruptValues(t *testing.T) {
	long := strings.Repeat("é", 3000) // 6000 bytes
	for _, c := range []struct {
		name, value string
		text        string
		choices     []string
		schema      string
	}{
		{"string", `"Ship it?"`, "Ship it?", nil, ""},
		{"question", `{"question":"Which?","message":"not this"}`, "Which?", nil, ""},
		{"message", `{"message":"Proceed?","extra":1}`, "Proceed?", nil, ""},
		{"description", `{"description":"Review the draft"}`, "Review the draft", nil, ""},
		{"no text", `{"action":"send","to":"bob"}`, "LangGraph run paused before ask: answer to continue", nil, ""},
		{"number", `42`, "LangGraph run paused before ask: answer to continue", nil, ""},
		{"choices", `{"question":"Colour?","choices":["red","green"]}`, "Colour?", []string{"red", "green"}, ""},
		{"choices not strings", `{"question":"Colour?","choices":["red",1]}`, "Colour?", nil, ""},
		{"choices repeated", `{"question":"Colour?","choices":["red","red"]}`, "Colour?", nil, ""},
		{"schema", `{"question":"How many?","schema":{"type":"integer"}}`, "How many?", nil, `{"type":"integer"}`},
		{"schema and choices", `{"question":"How many?","choices":["1"],"schema":{"type":"integer"}}`, "How many?", nil, ""},
		{"secret", `"Bearer abc.def"`, "[redacted]", nil, ""},
		{"long", `"` + long + `"`, strings.Repeat("é", (protocol.MaxQuestionText-len("…"))/2) + "…", nil, ""}, // cut at a rune
	} {
		t.Run(c.name, func(t *testing.T) {
			f, hs := newFake(t)
			in := `[{"value":` + c.value + `,"id":"i1"}]`
			f.streams = []string{"event: metadata\ndata: {\"run_id\":\"run-1\"}\n\nevent: updates\ndata: {\"__interrupt__\":" + in + "}\n\n"}
			f.state = `{"values":{"messages":[]},"next":["ask"],"tasks":[{"id":"t1","name":"ask","interrupts":` + in + `,"result":null}],"checkpoint":{"checkpoint_id":"c1"}}`
			env, rm := newEnv(t, hs.URL, "ask", nil)
			q := asked(t, env, ask(t, env, rm, "go", ""))
			assert.Equal(t, c.text, q.Text)
			assert.Equal(t, c.choices, q.Choices)
			if c.schema == "" {
				assert.Empty(t, q.Schema)
			} else {
				assert.JSONEq(t, c.schema, string(q.Schema))
			}
			assert.Equal(t, "c1", q.Details["langgraph_checkpoint_id"])
			assert.NotContains(t, jsonString(t, q.Details), "abc.def")
		})
	}
}

func jsonString(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// Interrupts too big for a question's details keep their ids, their
// values replaced by a marker; the question's text is still theirs, and
// the answer resumes them.
func TestRemoteHugeInterruptFitsTheQuestion(t *testing.T) {
	f, hs := newFake(t)
	parts := make([]string, 20)
	for i := range parts {
		parts[i] = strings.Repeat(string(rune('a'+i)), 15<<10)
	}
	in := `[{"value":{"question":"Big?","parts":` + jsonString(t, parts) + `},"id":"i1"}]`
	f.streams = []string{"event: metadata\ndata: {\"run_id\":\"run-1\"}\n\nevent: updates\ndata: {\"__interrupt__\":" + in + "}\n\n",
		"event: metadata\ndata: {\"run_id\":\"run-2\"}\n\nevent: values\ndata: {\"messages\":[]}\n\n"}
	pending := `{"values":{"messages":[]},"next":["ask"],"tasks":[{"id":"t1","name":"ask","interrupts":` + in + `,"result":null}]}`
	f.states = []string{pending, pending, `{"values":{"messages":[]},"next":[]}`}
	env, rm := newEnv(t, hs.URL, "ask", nil)
	out := ask(t, env, rm, "go", "")
	q := asked(t, env, out)
	assert.Equal(t, "Big?", q.Text)
	list, _ := q.Details["interrupts"].([]any)
	require.Len(t, list, 1)
	one := list[0].(map[string]any)
	assert.Equal(t, "i1", one["id"])
	marker, _ := one["value"].(map[string]any)
	assert.Equal(t, true, marker["truncated"])
	assert.NotEmpty(t, marker["sha256"])
	f.mu.Lock()
	f.thread = `{"thread_id":"x","status":"interrupted","interrupts":{"t1":[{"value":"Big?","id":"i1"}]}}`
	f.mu.Unlock()
	out2 := answerAs(t, env, out, "fine")
	require.True(t, out2.OK(), "%+v", out2.Err)
	assert.Contains(t, f.bodies["POST /threads/"+rm.ThreadID(out.Message.ThreadID)+"/runs/stream"], `"command":{"resume":"fine"}`)
}
