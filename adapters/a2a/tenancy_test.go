package a2a

import (
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/store"
)

// TestContextsAreTheCallers: a contextId (A2A) or sessionId (simple
// surface) that another caller created first is refused like a missing
// task, and nothing is written into it; the owner goes on in it
// (docs/protocol.md §6.7).
func TestContextsAreTheCallers(t *testing.T) {
	e := newTestEnv(t, nil)
	mine := e.client(t, "echo")
	other := newSDKClientAs(t, e.hs.URL+AgentsPath+"/echo", otherKey)

	first := send(t, mine, textMsg("hello"))
	ctxID := first.ContextID
	require.NotEmpty(t, ctxID)

	// The other caller names tester's context: refused, nothing stored.
	req := textMsg("let me in")
	req.Message.ContextID = ctxID
	_, err := other.SendMessage(ctxT(t), req)
	require.Error(t, err)
	assert.ErrorIs(t, err, a2a.ErrInvalidParams)
	for _, m := range e.Events(store.Query{ThreadID: ctxID}) {
		assert.NotEqual(t, "agent:other", m.From.AgentID, "%s in tester's context", m.Type)
	}

	// A context the other caller creates first is the other caller's.
	squat := textMsg("squat")
	squat.Message.ContextID = "ctx-planned"
	send(t, other, squat)
	late := textMsg("mine")
	late.Message.ContextID = "ctx-planned"
	_, err = mine.SendMessage(ctxT(t), late)
	assert.ErrorIs(t, err, a2a.ErrInvalidParams)

	// Tester goes on in its own context.
	again := textMsg("again")
	again.Message.ContextID = ctxID
	assert.Equal(t, ctxID, send(t, mine, again).ContextID)

	// The simple surface: another caller's sessionId is refused (400), the
	// owner's is accepted.
	status, _, body := httpDo(t, "POST", e.hs.URL+"/agents/echo/run", `{"prompt":"x","sessionId":"`+ctxID+`"}`, "X-API-Key", otherKey)
	assert.Equal(t, 400, status, body)
	assert.Contains(t, body, "no thread "+ctxID)
	status, _, body = httpDo(t, "POST", e.hs.URL+"/agents/echo/run", `{"prompt":"x","sessionId":"`+ctxID+`"}`, "X-API-Key", testKey)
	assert.Equal(t, 200, status, body)
	for _, m := range e.Events(store.Query{ThreadID: ctxID, TypePrefix: "task.request"}) {
		assert.Equal(t, tester, m.From.AgentID)
	}
	// A reserved thread is nobody's.
	status, _, body = httpDo(t, "POST", e.hs.URL+"/agents/echo/run", `{"prompt":"x","sessionId":"thr_registry"}`, "X-API-Key", testKey)
	assert.Equal(t, 400, status, body)
}
