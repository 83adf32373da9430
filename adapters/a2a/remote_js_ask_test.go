package a2a

import (
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestJSPeerRemoteAsk: the @a2a-js/sdk echo server's input:<q> stops its
// task in INPUT_REQUIRED; the Go caller's task asks q and waits, and the
// answer reaches the JS task as a message on it (the JS agent completes
// the task with "answer: <text>").
func TestJSPeerRemoteAsk(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{nil, {"--no-streaming"}} {
		t.Run(map[bool]string{true: "streaming", false: "blocking"}[args == nil], func(t *testing.T) {
			base := startJSServer(t, args...)
			c := newCaller(t, base, nil, 1)
			req, h := c.submit(t, "input:which market?", "thr_js_ask")
			q := c.waitQuestion(t, h)
			assert.Equal(t, "which market?", q.Text)
			id, _ := q.Details["a2a_task_id"].(string)
			require.NotEmpty(t, id)
			assert.Equal(t, "thr_js_ask", q.Details["a2a_context_id"])
			assert.Equal(t, base, q.Details["remote"])
			assert.NotEmpty(t, q.Details["a2a_status_message_id"])

			out, err := c.Wait(c.answer(t, req, q, `"fintech"`))
			require.NoError(t, err)
			assert.JSONEq(t, `{"text":"answer: fintech"}`, string(out.Message.Payload))

			// The JS server's task holds the answer, sent on that task.
			task, err := newSDKClient(t, base).GetTask(ctxT(t), &a2a.GetTaskRequest{ID: a2a.TaskID(id)})
			require.NoError(t, err)
			assert.Equal(t, a2a.TaskStateCompleted, task.Status.State)
			var sent []string
			for _, m := range task.History {
				if m.ID == "clutch-answer-"+q.ID {
					sent = append(sent, textOf(m.Parts))
				}
			}
			assert.Equal(t, []string{"fintech"}, sent, "history: %s", mustJSON(t, task.History))
		})
	}
}
