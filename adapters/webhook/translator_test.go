package webhook

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/store"
)

// crewAIMapping maps a crewAI AMP webhook batch ({"events": [...]}): one
// extension event per item, in the run of the crew's execution.
var crewAIMapping = &Mapping{
	Each: "/events", Type: "x.crewai.event",
	Payload: "/data", RunID: "/execution_id", IdempotencyKey: "/id",
	Meta: map[string]string{"crewai_type": "/type", "timestamp": "/timestamp"},
}

// langGraphMapping maps a LangGraph Agent Server run webhook (the run object
// and its status).
var langGraphMapping = &Mapping{
	Type: "x.langgraph.run", RunID: "/run_id", ThreadID: "/thread_id",
	Meta: map[string]string{"status": "/status", "assistant_id": "/assistant_id"},
}

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/fixtures/" + name)
	require.NoError(t, err)
	return b
}

func TestTranslatorContract(t *testing.T) {
	for _, c := range []struct {
		name    string
		m       *Mapping
		fixture string
		invalid []adaptertest.Case
	}{
		{"crewai", crewAIMapping, "amp_webhook_events_batch.json", []adaptertest.Case{
			{Name: "events not an array", Raw: []byte(`{"events":{}}`), Code: protocol.CodeWrongType},
			{Name: "no events", Raw: []byte(`{}`), Code: protocol.CodeMissingField},
			{Name: "item without data", Raw: []byte(`{"events":[{"id":"e","execution_id":"x"}]}`), Code: protocol.CodeMissingField},
		}},
		{"langgraph", langGraphMapping, "platform_run_object.json", []adaptertest.Case{
			{Name: "no run", Raw: []byte(`{"thread_id":"t"}`), Code: protocol.CodeMissingField},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, err := NewTranslator(c.m, "agent:"+c.name, nil)
			require.NoError(t, err)
			adaptertest.Run(t, tr, &adaptertest.Options{
				Valid:       []adaptertest.Case{{Name: c.fixture, Raw: fixture(t, c.fixture)}},
				Invalid:     c.invalid,
				NoRoundTrip: true,
			})
		})
	}
}

func TestTranslatorMapsFixtures(t *testing.T) {
	tr, err := NewTranslator(crewAIMapping, "agent:crew", nil)
	require.NoError(t, err)
	msgs, err := tr.Inbound(context.Background(), fixture(t, "amp_webhook_events_batch.json"))
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	m := msgs[0]
	assert.Equal(t, protocol.Type("x.crewai.event"), m.Type)
	assert.Equal(t, "crew-run-id", m.RunID)
	assert.Equal(t, "agent:crew", m.From.AgentID)
	assert.Equal(t, "llm_call_started", m.Meta["crewai_type"])
	assert.Equal(t, 0, m.Meta[MetaIndex])
	assert.NotEmpty(t, m.IdempotencyKey)
	var data struct{ Model string }
	require.NoError(t, json.Unmarshal(m.Payload, &data))
	assert.Equal(t, "gpt-4", data.Model)

	_, err = tr.Outbound(context.Background(), m)
	assert.ErrorIs(t, err, adapters.ErrOutbound)
	assert.False(t, tr.CanHandle(m))

	lg, err := NewTranslator(langGraphMapping, "agent:graph", nil)
	require.NoError(t, err)
	msgs, err = lg.Inbound(context.Background(), fixture(t, "platform_run_object.json"))
	require.NoError(t, err)
	require.Len(t, msgs, 1)
	assert.Equal(t, "my_run_id", msgs[0].RunID)
	assert.Equal(t, "my_thread_id", msgs[0].ThreadID)
	assert.Equal(t, "pending", msgs[0].Meta["status"])
}

// A batch is all or nothing: one bad item and nothing is stored; a
// redelivery stores each item once; items keep their order.
func TestHandlerBatch(t *testing.T) {
	env := routertest.New(t, nil)
	secret := newSecret(t)
	h, err := NewHandler(env.Router, crewAIMapping, map[string]auth.Caller{secret: {AgentID: "agent:crew", Scopes: []string{auth.ScopeSubmit}}}, nil)
	require.NoError(t, err)
	now := env.Clock.Now()

	bad := `{"events":[{"id":"e1","execution_id":"x1","type":"task_started","timestamp":"t","data":{}},{"id":"e2","execution_id":"x1","type":"task_completed"}]}`
	status, out := serve(t, h, delivery(t, secret, "b1", now, bad))
	assert.Equal(t, 400, status)
	assert.Equal(t, "MISSING_FIELD", out["code"])
	assert.Equal(t, "/events/1/data", out["path"])
	assert.Equal(t, uint64(0), lastSeq(t, env))

	good := `{"events":[{"id":"e1","execution_id":"x1","type":"task_started","timestamp":"t","data":{"n":1}},{"id":"e2","execution_id":"x1","type":"task_completed","timestamp":"t","data":{"n":2}}]}`
	status, out = serve(t, h, delivery(t, secret, "b2", now, good))
	require.Equal(t, 200, status, out)
	envs := out["envelopes"].([]any)
	require.Len(t, envs, 2)
	// The same events again, in another delivery (crewAI retries batches):
	// deduplicated by the events' own ids.
	status, out = serve(t, h, delivery(t, secret, "b3", now, good))
	require.Equal(t, 200, status, out)
	for _, e := range out["envelopes"].([]any) {
		assert.Equal(t, true, e.(map[string]any)["duplicate"])
	}
	got := env.Events(store.Query{RunID: "x1"})
	require.Len(t, got, 2)
	assert.Equal(t, "task_started", got[0].Meta["crewai_type"])
	assert.Equal(t, "task_completed", got[1].Meta["crewai_type"])
}

func TestHandlerEmptyBatch(t *testing.T) {
	env := routertest.New(t, nil)
	secret := newSecret(t)
	h, err := NewHandler(env.Router, crewAIMapping, map[string]auth.Caller{secret: submitter}, nil)
	require.NoError(t, err)
	status, out := serve(t, h, delivery(t, secret, "e0", env.Clock.Now(), `{"events":[]}`))
	assert.Equal(t, 200, status, "an empty batch is delivered: nothing to do")
	assert.Equal(t, []any{}, out["envelopes"])
}
