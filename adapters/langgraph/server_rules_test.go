//go:build unix

package langgraph_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/adapters/langgraph"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/store"
)

// serverState is what GET /threads/{id}/state of the real server says.
type serverState struct {
	Values struct {
		Messages []struct {
			Content any `json:"content"`
		} `json:"messages"`
	} `json:"values"`
	Next  []string `json:"next"`
	Tasks []struct {
		Name       string `json:"name"`
		Error      any    `json:"error"`
		Interrupts []struct {
			ID    string `json:"id"`
			Value any    `json:"value"`
		} `json:"interrupts"`
	} `json:"tasks"`
}

func stateOf(t *testing.T, url string, rm *langgraph.Remote, clutchThread string) serverState {
	t.Helper()
	resp, err := http.Get(url + "/threads/" + rm.ThreadID(clutchThread) + "/state")
	require.NoError(t, err)
	defer resp.Body.Close()
	var st serverState
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	return st
}

// oneEndPerTask checks the store: every task of the run has exactly one
// terminal event, and the root task's is the outcome.
func oneEndPerTask(t *testing.T, env *routertest.Env, runID string) {
	t.Helper()
	ends := map[string][]string{}
	for _, m := range env.Events(store.Query{RunID: runID}) {
		switch m.Type {
		case protocol.TypeTaskResult, protocol.TypeTaskError, protocol.TypeTaskCancel, protocol.TypeTaskTimeout:
			ends[m.TaskID] = append(ends[m.TaskID], string(m.Type))
		}
	}
	for task, e := range ends {
		assert.Len(t, e, 1, "task %s ends %v", task, e)
	}
}

// A static interruptBefore: the run stops before "publish" and the task
// asks (the thread's next is ["publish"]); the answer continues it.
func TestServerStaticInterruptBefore(t *testing.T) {
	url := agentServer(t)
	for _, modes := range [][]string{nil, {"values"}, {"updates", "tasks", "debug"}, {"messages-tuple"}} {
		env, rm := newEnv(t, url, "publish", &langgraph.RemoteOptions{StreamModes: modes})
		thread := freshThread(t)
		out := ask(t, env, rm, "write it", thread)
		require.False(t, out.OK(), "modes %v: %s", modes, out.Message.Payload)
		q := asked(t, env, out)
		st := stateOf(t, url, rm, thread)
		assert.Equal(t, []string{"publish"}, st.Next)
		assert.Equal(t, []any{"publish"}, q.Details["langgraph_next"], "modes %v", modes)
		assert.Equal(t, []any{}, q.Details["interrupts"], "modes %v", modes)
		assert.NotEmpty(t, q.Details["langgraph_checkpoint_id"], "modes %v", modes)
		assert.Equal(t, "LangGraph run paused before publish: answer to continue", q.Text)
		oneEndPerTask(t, env, out.Message.RunID)

		out2 := answerAs(t, env, out, "go ahead")
		require.True(t, out2.OK(), "modes %v: %+v", modes, out2.Err)
		assert.Contains(t, string(out2.Message.Payload), "published")
		assert.Empty(t, stateOf(t, url, rm, thread).Next)
		oneEndPerTask(t, env, out.Message.RunID)
	}
}

// An interrupt two subgraphs deep is the task's question, with and
// without subgraph events; the answer resumes it.
func TestServerNestedSubgraphInterrupt(t *testing.T) {
	url := agentServer(t)
	for _, sub := range []bool{true, false} {
		env, rm := newEnv(t, url, "nested", &langgraph.RemoteOptions{Subgraphs: sub})
		thread := freshThread(t)
		out := ask(t, env, rm, "start", thread)
		require.False(t, out.OK(), "subgraphs %v: %s", sub, out.Message.Payload)
		q := asked(t, env, out)
		assert.Equal(t, "Deep question: go on?", q.Text)
		st := stateOf(t, url, rm, thread)
		require.Equal(t, []string{"middle"}, st.Next)
		require.Len(t, st.Tasks, 1)
		require.Len(t, st.Tasks[0].Interrupts, 1)
		ids, _ := q.Details["interrupts"].([]any)
		require.Len(t, ids, 1, "the interrupt once: %v", ids)
		assert.Equal(t, st.Tasks[0].Interrupts[0].ID, ids[0].(map[string]any)["id"])
		oneEndPerTask(t, env, out.Message.RunID)

		out2 := answerAs(t, env, out, "yes")
		require.True(t, out2.OK(), "subgraphs %v: %+v", sub, out2.Err)
		assert.Contains(t, string(out2.Message.Payload), "inner got: yes")
	}
}

// A Send fan-out whose one branch throws: the task fails with the
// branch's error (the run's status is error), once.
func TestServerSendFanOutFailingBranch(t *testing.T) {
	url := agentServer(t)
	env, rm := newEnv(t, url, "fanout", &langgraph.RemoteOptions{
		StreamModes: []string{"values", "updates", "tasks", "debug", "checkpoints"}})
	thread := freshThread(t)
	out := ask(t, env, rm, "go", thread)
	require.False(t, out.OK())
	assert.Equal(t, protocol.CodeToolFailed, out.Err.Code)
	assert.Contains(t, out.Err.Message, "branch bad failed on purpose")
	oneEndPerTask(t, env, out.Message.RunID)
	// The server agrees: the run failed and the failing work task is the
	// one whose error the task reports.
	resp, err := http.Get(url + "/threads/" + rm.ThreadID(thread) + "/runs")
	require.NoError(t, err)
	defer resp.Body.Close()
	var runs []struct {
		Status string `json:"status"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&runs))
	require.Len(t, runs, 1)
	assert.Equal(t, "error", runs[0].Status)
	st := stateOf(t, url, rm, thread)
	var failed []string
	for _, tk := range st.Tasks {
		if s, _ := tk.Error.(string); strings.Contains(s, "branch bad") {
			failed = append(failed, tk.Name)
		}
	}
	assert.Equal(t, []string{"work"}, failed)
	// Each branch's node task was reported under the Clutch task: three
	// work tasks started.
	starts := map[string]bool{}
	for _, m := range env.Events(store.Query{TaskID: out.TaskID, TypePrefix: "task.progress"}) {
		if m.PayloadType != langgraph.PayloadTask {
			continue
		}
		var p map[string]any
		require.NoError(t, json.Unmarshal(m.Payload, &p))
		if pl, ok := p["payload"].(map[string]any); ok {
			p = pl // a debug frame
		}
		if p["name"] == "work" && p["input"] != nil {
			starts[p["id"].(string)] = true
		}
	}
	assert.Len(t, starts, 3)
}

// One node interrupting twice: two questions in a row in one task, each
// matching the thread's pending interrupt (a new interrupt id each time);
// the second answer completes the node with both answers.
func TestServerRepeatedInterruptsInOneNode(t *testing.T) {
	url := agentServer(t)
	env, rm := newEnv(t, url, "twice", nil)
	thread := freshThread(t)
	out := ask(t, env, rm, "start", thread)
	var ids []any
	for i, c := range []struct{ text, answer string }{{"First question?", "one"}, {"Second question?", "two"}} {
		q := asked(t, env, out)
		assert.Equal(t, c.text, q.Text)
		assert.Equal(t, i, q.Index)
		assert.Equal(t, out.TaskID, out.Message.TaskID)
		st := stateOf(t, url, rm, thread)
		require.Len(t, st.Tasks, 1)
		require.Len(t, st.Tasks[0].Interrupts, 1)
		assert.Equal(t, c.text, st.Tasks[0].Interrupts[0].Value)
		in, _ := q.Details["interrupts"].([]any)
		require.Len(t, in, 1)
		assert.Equal(t, st.Tasks[0].Interrupts[0].ID, in[0].(map[string]any)["id"])
		ids = append(ids, in[0].(map[string]any)["id"])
		oneEndPerTask(t, env, out.Message.RunID)
		first := out.TaskID
		out = answerAs(t, env, out, c.answer)
		assert.Equal(t, first, out.TaskID, "the same task runs on")
	}
	require.True(t, out.OK(), "%+v", out.Err)
	assert.NotEqual(t, ids[0], ids[1])
	assert.Contains(t, string(out.Message.Payload), "answers: one, two")
	assert.Empty(t, stateOf(t, url, rm, thread).Next)
	assert.Len(t, runsOf(t, url, rm.ThreadID(thread)), 3)
	assert.Equal(t, 0, env.Router.Waiting())
}
