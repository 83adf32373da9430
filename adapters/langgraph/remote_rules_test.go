package langgraph_test

import (
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
	assert.Equal(t, protocol.CodeInputRequired, out.Err.Code)
	assert.Equal(t, []any{"publish"}, out.Err.Details["langgraph_next"])
	assert.Contains(t, out.Err.Message, "publish")
}

// An interrupt reported only in a subgraph's namespace (two deep) ends the
// attempt with INPUT_REQUIRED, the interrupt once.
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
	assert.Equal(t, protocol.CodeInputRequired, out.Err.Code)
	assert.Equal(t, "Deep?", out.Err.Message)
	assert.Len(t, out.Err.Details["interrupts"], 1)
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
