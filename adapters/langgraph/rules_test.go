package langgraph_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/adapters/langgraph"
	"github.com/clutchprotocol/clutch/protocol"
)

// The rules every translation holds, whatever the input (issue 31): an
// interrupt in any form is INPUT_REQUIRED and never a result, each task
// ends once, Detect knows what Inbound takes, every envelope fits the
// store, credentials never land, and strict JSON errors ignore layout.

// terminals counts the terminal events of each task.
func terminals(msgs []*protocol.Message) map[string][]string {
	out := map[string][]string{}
	for _, m := range msgs {
		switch m.Type {
		case protocol.TypeTaskResult, protocol.TypeTaskError, protocol.TypeTaskCancel, protocol.TypeTaskTimeout:
			out[m.TaskID] = append(out[m.TaskID], string(m.Type))
		}
	}
	return out
}

func inputRequired(t *testing.T, m *protocol.Message) protocol.ErrorPayload {
	t.Helper()
	require.Equal(t, protocol.TypeTaskError, m.Type)
	ep, err := protocol.DecodePayload[protocol.ErrorPayload](m)
	require.NoError(t, err)
	require.Equal(t, protocol.CodeInputRequired, ep.Code)
	return ep
}

// A static interruptBefore ends with a values frame whose __interrupt__
// is empty: the run waits for a person, it has no result.
func TestStaticInterruptIsInputRequired(t *testing.T) {
	msgs := inbound(t, "event: metadata\ndata: {\"run_id\":\"r1\",\"attempt\":1}\n\n"+
		"event: values\ndata: {\"messages\":[{\"type\":\"human\",\"content\":\"hi\",\"id\":\"h1\"}]}\n\n"+
		"event: values\ndata: {\"messages\":[{\"type\":\"human\",\"content\":\"hi\",\"id\":\"h1\"}],\"__interrupt__\":[]}\n\n"+
		"event: end\ndata: null\n\n")
	require.Equal(t, []string{"task.accept", "task.progress", "task.progress", "task.error", "x.langgraph.end"}, types(msgs))
	inputRequired(t, msgs[3])
	assert.Equal(t, "task:r1", msgs[3].TaskID)
	// The same in an updates frame.
	msgs = inbound(t, `[{"event":"updates","data":{"__interrupt__":[]}},{"event":"end","data":null}]`)
	require.Equal(t, []string{"task.progress", "task.error", "x.langgraph.end"}, types(msgs))
}

// An interrupt two subgraphs deep is INPUT_REQUIRED of the innermost task
// and, at the end of the stream, of the run: the end frame is no result.
func TestNestedSubgraphInterrupt(t *testing.T) {
	msgs := inbound(t, "event: metadata\ndata: {\"run_id\":\"r2\"}\n\n"+
		"event: updates|outer:t1|inner:t2\ndata: {\"__interrupt__\":[{\"value\":\"deep?\",\"id\":\"i-deep\"}]}\n\n"+
		"event: updates\ndata: {\"__interrupt__\":[{\"value\":\"deep?\",\"id\":\"i-deep\"}]}\n\n"+
		"event: end\ndata: null\n\n")
	assert.NotContains(t, types(msgs), "task.result")
	var asked []string
	for _, m := range msgs {
		if m.Type == protocol.TypeTaskError {
			inputRequired(t, m)
			asked = append(asked, m.TaskID)
		}
	}
	assert.Equal(t, []string{"task:t2", "task:r2"}, asked, "asked in the task that raised it, then the run waits")
	assert.Equal(t, "task:t1", msgs[1].ParentTaskID)
}

// Repeated interrupts of one node (each resume, a run of its own, meets
// the next) are each a question.
func TestRepeatedInterruptsInOneNode(t *testing.T) {
	for _, id := range []string{"i-1", "i-2"} {
		s := newTranslator(t).NewStream(langgraph.Scope{RunID: "run:" + id, TaskID: "task:" + id, ThreadID: "thread:x"})
		msgs, err := s.Inbound(context.Background(), []byte(`{"event":"updates","data":{"__interrupt__":[{"value":"q `+id+`","id":"`+id+`"}]}}`))
		require.NoError(t, err)
		require.Equal(t, []string{"task.progress", "task.error"}, types(msgs))
		assert.Equal(t, "q "+id, inputRequired(t, msgs[1]).Message)
	}
}

// With every stream mode on, a node task is started by tasks and debug
// frames and ended by both: one start, one end.
func TestOneTerminalEventPerTask(t *testing.T) {
	start := `{"id":"nt1","name":"model","input":{},"triggers":["start:model"]}`
	end := `{"id":"nt1","name":"model","error":null,"result":{"messages":[]},"interrupts":[]}`
	msgs := inbound(t, `[{"event":"metadata","data":{"run_id":"r3"}},`+
		`{"event":"tasks","data":`+start+`},{"event":"debug","data":{"type":"task","timestamp":"2026-11-26T00:00:00Z","step":1,"payload":`+start+`}},`+
		`{"event":"tasks","data":`+end+`},{"event":"debug","data":{"type":"task_result","timestamp":"2026-11-26T00:00:00Z","step":1,"payload":`+end+`}},`+
		`{"event":"error","data":{"error":"ValueError","message":"late"}},{"event":"end","data":null}]`)
	for task, ends := range terminals(msgs) {
		assert.Len(t, ends, 1, "task %s ends %v", task, ends)
	}
	n := 0
	for _, m := range msgs {
		if m.Type == protocol.TypeTaskRequest {
			n++
		}
	}
	assert.Equal(t, 1, n, "one task.request for the node task")
}

// Detect recognises every shape Inbound translates.
func TestDetectEverythingInboundTakes(t *testing.T) {
	tr := newTranslator(t)
	for _, raw := range []string{
		`{"event":"error","data":{"error":"ValueError","message":"x"}}`,
		`{"event":"error","data":"Run not found"}`,
		`{"event":"updates","data":{"agent":{"messages":[]}}}`,
		`{"event":"values","data":{"messages":[]},"id":"3"}`,
		`{"type":"event","method":"lifecycle","seq":1,"params":{"namespace":[],"timestamp":1,"data":{"event":"running"}}}`,
		`{"type":"updates","ns":["sub:1"],"data":{"n":{}}}`,
		`{"type":"values","ns":[],"data":{},"interrupts":[]}`,
		`{"run_id":"r","thread_id":"t","assistant_id":"a","status":"error","error":"x"}`,
		`{"thread_id":"t","created_at":"2026-01-01T00:00:00Z","status":"idle"}`,
		`{"type":"ai","content":"hello","id":"m1"}`,
		"{\n  \"event\": \"updates\",\n  \"data\": {}\n}",
		`[{"event":"updates","data":{}},{"event":"end","data":null}]`,
		"{\"event\":\"updates\",\"data\":{}}\n{\"event\":\"end\",\"data\":null}\n",
		"data: {\"a\":1}\n\n",
		":heartbeat\n\nevent: end\ndata: null\n\n",
	} {
		_, err := tr.Inbound(context.Background(), []byte(raw))
		require.NoError(t, err, raw)
		assert.True(t, tr.Detect([]byte(raw)), "Detect refused what Inbound takes: %s", raw)
	}
	for _, raw := range []string{`{"hello":"world"}`, `[1,2]`, `plain text`, `{"jsonrpc":"2.0","method":"x"}`} {
		assert.False(t, tr.Detect([]byte(raw)), raw)
	}
	reg, err := adapters.NewRegistry(tr)
	require.NoError(t, err)
	_, a, err := reg.Inbound(context.Background(), []byte(`{"event":"error","data":"Run not found"}`))
	require.NoError(t, err)
	assert.Equal(t, langgraph.Name, a.Name())
}

// A checkpoint id too long for an idempotency key is refused as
// INVALID_FIELD, not turned into an envelope that fails Validate.
func TestLongCheckpointIDRefused(t *testing.T) {
	long := strings.Repeat("c", 300)
	_, err := newTranslator(t).Inbound(context.Background(), []byte(`{"event":"checkpoints","data":{"config":{"configurable":{"checkpoint_id":"`+long+`"}},"values":{}}}`))
	require.Error(t, err)
	assert.Equal(t, protocol.CodeInvalidField, protocol.CodeOf(err))
	// At the limit it is kept.
	ok := strings.Repeat("c", protocol.MaxIDLength-len("lg-checkpoint:"))
	msgs := inbound(t, `{"event":"checkpoints","data":{"config":{"configurable":{"checkpoint_id":"`+ok+`"}},"values":{}}}`)
	require.NoError(t, msgs[0].Validate())
	assert.Equal(t, "lg-checkpoint:"+ok, msgs[0].IdempotencyKey)
}

var secrets = []string{"Bearer s3cret-token", "k-s3cret", "session=s3cret"}

// Echoed request headers are redacted in every status of a run webhook,
// in payload, details and meta.
func TestWebhookCredentialsRedactedInEveryStatus(t *testing.T) {
	for _, status := range []string{"pending", "running", "success", "error", "timeout", "interrupted"} {
		raw := `{"run_id":"r9","thread_id":"th","assistant_id":"agent","status":"` + status + `","error":"it failed",` +
			`"metadata":{"headers":{"authorization":"Bearer s3cret-token","x-api-key":"k-s3cret","Cookie":"session=s3cret"}},` +
			`"kwargs":{"config":{"configurable":{"authorization":"Bearer s3cret-token"}}}}`
		for _, m := range inbound(t, raw) {
			b, err := protocol.Encode(m)
			require.NoError(t, err)
			for _, s := range secrets {
				assert.NotContains(t, string(b), s, "status %s", status)
			}
		}
	}
	// The same in error frames, task errors and stream events.
	for _, raw := range []string{
		`{"event":"error","data":{"error":"E","message":"m","headers":{"authorization":"Bearer s3cret-token"}}}`,
		`{"event":"tasks","data":{"id":"t","name":"n","error":"boom","result":null,"config":{"x-api-key":"k-s3cret"}}}`,
		`{"event":"on_chain_error","run_id":"r","name":"g","data":{"error":"boom","input":{"cookie":"session=s3cret"}},"parent_ids":[]}`,
		`{"event":"updates","data":{"n":{"auth":"Bearer s3cret-token"}}}`,
	} {
		for _, m := range inbound(t, raw) {
			b, err := protocol.Encode(m)
			require.NoError(t, err)
			for _, s := range secrets {
				assert.NotContains(t, string(b), s, raw)
			}
		}
	}
}

// fits checks that every envelope can be stored and read back.
func fits(t *testing.T, msgs []*protocol.Message) {
	t.Helper()
	for _, m := range msgs {
		require.NoError(t, m.Validate())
		b, err := protocol.Encode(m)
		require.NoError(t, err)
		require.LessOrEqual(t, len(b), protocol.DefaultMaxBytes, "%s is over the store's limit", m.Type)
		_, err = protocol.Decode(b)
		require.NoError(t, err, "%s", m.Type)
	}
}

// Error text is kept once, bounded, with a marker and its size.
func TestLargeErrorTextNotDuplicated(t *testing.T) {
	big := strings.Repeat("x", protocol.DefaultMaxBytes-200)
	for _, raw := range []string{
		"event: error\ndata: \"" + big + "\"\n\n",
		"event: error\ndata: {\"error\":\"ValueError\",\"message\":\"" + big + "\"}\n\n",
		`{"run_id":"r","thread_id":"t","assistant_id":"a","status":"error","error":"` + big + `"}`,
		`{"event":"tasks","data":{"id":"t1","name":"n","error":"` + big + `","result":null}}`,
	} {
		msgs := inbound(t, raw)
		fits(t, msgs)
		ep, err := protocol.DecodePayload[protocol.ErrorPayload](msgs[len(msgs)-1])
		require.NoError(t, err)
		assert.Contains(t, ep.Message, "truncated")
		assert.Contains(t, ep.Message, itoa(len(big)))
		assert.Less(t, len(ep.Message), 64<<10)
	}
}

// State near the input limit still gives envelopes the store holds (the
// end frame's result repeats the last values frame).
func TestLargeStateFitsTheStore(t *testing.T) {
	big := strings.Repeat("y", protocol.DefaultMaxBytes-300)
	tr := newTranslator(t)
	s := tr.NewStream(langgraph.Scope{})
	var all []*protocol.Message
	for _, raw := range []string{
		"event: metadata\ndata: {\"run_id\":\"r\"}\n\n",
		"event: values\ndata: {\"text\":\"" + big + "\"}\n\n",
		"event: end\ndata: null\n\n",
	} {
		msgs, err := s.Inbound(context.Background(), []byte(raw))
		require.NoError(t, err)
		all = append(all, msgs...)
	}
	fits(t, all)
	assert.Equal(t, []string{"task.accept", "task.progress", "task.result"}, types(all))
	assert.Contains(t, string(all[2].Payload), `"truncated":true`)
}

func itoa(n int) string { return strconv.Itoa(n) }

// The real server's captures, every mode on (tasks and debug report each
// node task twice): one start and one end per task.
func TestRecordedStreamsOneEndPerTask(t *testing.T) {
	for _, c := range adaptertest.Files(t, "testdata/recorded/*.sse", 6) {
		msgs := inbound(t, string(c.Raw))
		starts := map[string]int{}
		for _, m := range msgs {
			if m.Type == protocol.TypeTaskRequest {
				starts[m.TaskID]++
			}
		}
		for task, n := range starts {
			assert.Equal(t, 1, n, "%s: task %s starts %d times", c.Name, task, n)
		}
		for task, ends := range terminals(msgs) {
			assert.Len(t, ends, 1, "%s: task %s ends %v", c.Name, task, ends)
		}
	}
}
