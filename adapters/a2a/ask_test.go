package a2a

import (
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// TestAskOverA2A: a task that asks is INPUT_REQUIRED (not failed), its
// status message carries the question; the client's next message on the
// task answers it and the same task completes. A value that is not a
// choice, and another caller, are refused; a waiting task can be
// cancelled.
func TestAskOverA2A(t *testing.T) {
	e := newTestEnv(t, nil)
	mine := e.client(t, "echo")
	other := newSDKClientAs(t, e.hs.URL+AgentsPath+"/echo", otherKey)

	task := send(t, mine, textMsg("ask:fintech|health"))
	require.Equal(t, a2a.TaskStateInputRequired, task.Status.State)
	require.NotNil(t, task.Status.Message)
	parts := task.Status.Message.Parts
	require.Len(t, parts, 2)
	assert.Equal(t, "Which one?", parts[0].Text())
	assert.Equal(t, kindQuestion, parts[1].Metadata[MetaKind])
	assert.Contains(t, mustJSON(t, parts[1].Data()), `"choices":["fintech","health"]`)

	// Not a choice: invalid params, nothing stored, still waiting.
	bad := textMsg("retail")
	bad.Message.TaskID = task.ID
	_, err := mine.SendMessage(ctxT(t), bad)
	assert.ErrorIs(t, err, a2a.ErrInvalidParams)
	// Another caller does not see the task.
	theirs := textMsg("fintech")
	theirs.Message.TaskID = task.ID
	_, err = other.SendMessage(ctxT(t), theirs)
	assert.ErrorIs(t, err, a2a.ErrTaskNotFound)

	answer := textMsg("fintech")
	answer.Message.TaskID = task.ID
	done := send(t, mine, answer)
	assert.Equal(t, task.ID, done.ID, "the answer continues the same task")
	assert.Equal(t, a2a.TaskStateCompleted, done.Status.State)
	require.Len(t, done.Artifacts, 1)
	assert.Equal(t, "echo: answered fintech", done.Artifacts[0].Parts[0].Text())
	answers := e.Events(store.Query{TaskID: string(task.ID), TypePrefix: string(protocol.TypeTaskAnswer)})
	require.Len(t, answers, 1)
	assert.Equal(t, tester, answers[0].From.AgentID)

	// Streaming: the stream of an asking task ends at INPUT_REQUIRED; the
	// stream of the answer carries the task to its end.
	var states []a2a.TaskState
	var id a2a.TaskID
	for ev, err := range mine.SendStreamingMessage(ctxT(t), textMsg("ask:")) {
		require.NoError(t, err)
		if st, ok := ev.(*a2a.TaskStatusUpdateEvent); ok {
			states = append(states, st.Status.State)
			id = st.TaskID
		}
	}
	require.NotEmpty(t, states)
	assert.Equal(t, a2a.TaskStateInputRequired, states[len(states)-1])
	answer = textMsg("anything at all")
	answer.Message.TaskID = id
	states = nil
	for ev, err := range mine.SendStreamingMessage(ctxT(t), answer) {
		require.NoError(t, err)
		switch ev := ev.(type) {
		case *a2a.Task: // the snapshot first: the whole story when the task ended before it was read
			states = append(states, ev.Status.State)
		case *a2a.TaskStatusUpdateEvent:
			states = append(states, ev.Status.State)
		}
	}
	require.NotEmpty(t, states)
	assert.Equal(t, a2a.TaskStateCompleted, states[len(states)-1])

	// Cancel while waiting.
	waiting := send(t, mine, textMsg("ask:"))
	require.Equal(t, a2a.TaskStateInputRequired, waiting.Status.State)
	c, err := mine.CancelTask(ctxT(t), &a2a.CancelTaskRequest{ID: waiting.ID})
	require.NoError(t, err)
	assert.Equal(t, a2a.TaskStateCanceled, c.Status.State)
}
