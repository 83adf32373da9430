package a2a

import (
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/internal/backends"
	"github.com/clutchprotocol/clutch/store"
)

// TestContextsAreTheCallers: contextIds (A2A) and sessionIds (simple
// surface) are per caller. Another caller naming tester's context — or
// one tester means to use later — gets a context of its own: the answer
// reads exactly as for a context nobody has used (no oracle), nothing is
// written into tester's thread, and tester goes on in it
// (docs/protocol.md §6.7).
func TestContextsAreTheCallers(t *testing.T) {
	backends.Each(t, func(t *testing.T, st store.Store) {
		e := newTestEnvOn(t, st, nil)
		mine := e.client(t, "echo")
		other := newSDKClientAs(t, e.hs.URL+AgentsPath+"/echo", otherKey)

		first := send(t, mine, textMsg("hello"))
		ctxID := first.ContextID
		require.NotEmpty(t, ctxID)
		thread := e.Events(store.Query{TaskID: string(first.ID), TypePrefix: "task.request"})[0].ThreadID

		// The other caller names tester's context, and a fresh one: both are
		// answered alike, each in a thread of the other caller's own.
		for _, id := range []string{ctxID, "ctx-nobody-used"} {
			req := textMsg("let me in")
			req.Message.ContextID = id
			task := send(t, other, req)
			assert.Equal(t, a2a.TaskStateCompleted, task.Status.State, id)
			assert.Equal(t, id, task.ContextID, "the caller's contextId is echoed")
			got := e.Events(store.Query{TaskID: string(task.ID), TypePrefix: "task.request"})[0]
			assert.NotEqual(t, thread, got.ThreadID, "%s: the other caller landed in tester's thread", id)
		}
		for _, m := range e.Events(store.Query{ThreadID: thread}) {
			assert.NotEqual(t, "agent:other", m.From.AgentID, "%s in tester's context", m.Type)
		}

		// A context the other caller uses first is still tester's own later.
		squat := textMsg("squat")
		squat.Message.ContextID = "ctx-planned"
		squatted := send(t, other, squat)
		late := textMsg("mine")
		late.Message.ContextID = "ctx-planned"
		mineLate := send(t, mine, late)
		assert.Equal(t, a2a.TaskStateCompleted, mineLate.Status.State)
		assert.NotEqual(t,
			e.Events(store.Query{TaskID: string(squatted.ID), TypePrefix: "task.request"})[0].ThreadID,
			e.Events(store.Query{TaskID: string(mineLate.ID), TypePrefix: "task.request"})[0].ThreadID)

		// Tester goes on in its own context, and lists only its own tasks there.
		again := textMsg("again")
		again.Message.ContextID = ctxID
		next := send(t, mine, again)
		assert.Equal(t, ctxID, next.ContextID)
		assert.Equal(t, thread, e.Events(store.Query{TaskID: string(next.ID), TypePrefix: "task.request"})[0].ThreadID)
		list, err := mine.ListTasks(ctxT(t), &a2a.ListTasksRequest{ContextID: ctxID})
		require.NoError(t, err)
		var listed []a2a.TaskID
		for _, task := range list.Tasks {
			listed = append(listed, task.ID)
		}
		assert.Equal(t, []a2a.TaskID{next.ID, first.ID}, listed, "newest first")

		// The simple surface: the other caller's sessionId is its own session.
		status, _, body := httpDo(t, "POST", e.hs.URL+"/agents/echo/run", `{"prompt":"x","sessionId":"`+ctxID+`"}`, "X-API-Key", otherKey)
		assert.Equal(t, 200, status, body)
		assert.Contains(t, body, `"sessionId":"`+ctxID+`"`)
		status, _, body = httpDo(t, "POST", e.hs.URL+"/agents/echo/run", `{"prompt":"x","sessionId":"`+ctxID+`"}`, "X-API-Key", testKey)
		assert.Equal(t, 200, status, body)
		for _, m := range e.Events(store.Query{ThreadID: thread}) {
			assert.NotEqual(t, "agent:other", m.From.AgentID, "%s in tester's thread", m.Type)
		}
		// A reserved thread id as a sessionId is only a name: the thread is
		// the caller's own, never the reserved one.
		status, _, body = httpDo(t, "POST", e.hs.URL+"/agents/echo/run", `{"prompt":"x","sessionId":"thr_registry"}`, "X-API-Key", testKey)
		assert.Equal(t, 200, status, body)
		for _, m := range e.Events(store.Query{ThreadID: "thr_registry"}) {
			assert.NotEqual(t, tester, m.From.AgentID)
		}
	})
}
