package webhook

import (
	"context"
	"strings"
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

// batchMapping maps a batch without a run_id pointer: the run is the
// delivery's.
var batchMapping = &Mapping{Each: "/events", Type: "x.shop.event", Payload: "/data", Meta: map[string]string{"kind": "/type"}}

const batchBody = `{"events":[{"type":"a","data":{"n":1}},{"type":"b","data":{"n":2}},{"type":"c","data":{"n":3}}]}`

// The rules of every adapter (adaptertest.RunRules), for the Translator
// of each mapping.
func TestRules(t *testing.T) {
	for _, c := range []struct {
		name string
		m    *Mapping
		body []byte
	}{
		{"crewai", crewAIMapping, fixture(t, "amp_webhook_events_batch.json")},
		{"langgraph", langGraphMapping, fixture(t, "platform_run_object.json")},
		{"batch without run", batchMapping, []byte(batchBody)},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr, err := NewTranslator(c.m, "agent:"+strings.ReplaceAll(c.name, " ", "-"), nil)
			require.NoError(t, err)
			adaptertest.RunRules(t, tr, &adaptertest.RulesOptions{
				Valid:   []adaptertest.Case{{Name: c.name, Raw: c.body}},
				Streams: []adaptertest.Stream{{Name: c.name + " twice", Inputs: [][]byte{c.body, c.body}}},
			})
		})
	}
}

// A batch delivery without a run_id mapping is one run, derived from the
// delivery's id (the package doc), and one thread.
func TestHandlerBatchIsOneRun(t *testing.T) {
	env := routertest.New(t, nil)
	secret := newSecret(t)
	h, err := NewHandler(env.Router, batchMapping, map[string]auth.Caller{secret: {AgentID: "agent:shop", Scopes: []string{auth.ScopeSubmit}}}, nil)
	require.NoError(t, err)
	status, out := serve(t, h, delivery(t, secret, "d1", env.Clock.Now(), batchBody))
	require.Equal(t, 200, status, out)
	envs := out["envelopes"].([]any)
	require.Len(t, envs, 3)
	run := envs[0].(map[string]any)["run_id"]
	for _, e := range envs {
		assert.Equal(t, run, e.(map[string]any)["run_id"])
	}
	got := env.Events(store.Query{RunID: run.(string)})
	require.Len(t, got, 3)
	assert.Equal(t, got[0].ThreadID, got[2].ThreadID)
	// The same delivery again: the same run, every item a duplicate.
	status, out = serve(t, h, delivery(t, secret, "d1", env.Clock.Now(), batchBody))
	require.Equal(t, 200, status, out)
	for _, e := range out["envelopes"].([]any) {
		assert.Equal(t, run, e.(map[string]any)["run_id"])
		assert.Equal(t, true, e.(map[string]any)["duplicate"])
	}
}

// The Translator puts a body's items in one run and thread too.
func TestTranslatorBatchIsOneRun(t *testing.T) {
	tr, err := NewTranslator(batchMapping, "agent:shop", nil)
	require.NoError(t, err)
	msgs, err := tr.Inbound(context.Background(), []byte(batchBody))
	require.NoError(t, err)
	require.Len(t, msgs, 3)
	for _, m := range msgs[1:] {
		assert.Equal(t, msgs[0].RunID, m.RunID)
		assert.Equal(t, msgs[0].ThreadID, m.ThreadID)
		assert.NotEqual(t, msgs[0].TaskID, m.TaskID)
	}
}

// Credentials the body carries (a run webhook echoing its request
// headers) are stored neither in the payload nor in meta, whatever the
// run's status.
func TestCredentialsRedacted(t *testing.T) {
	m := &Mapping{Type: "x.langgraph.run", RunID: "/run_id", Payload: "", Meta: map[string]string{"status": "/status", "config": "/kwargs/config"}}
	tr, err := NewTranslator(m, "agent:graph", nil)
	require.NoError(t, err)
	for _, status := range []string{"pending", "success", "error"} {
		body := `{"run_id":"r1","status":"` + status + `","kwargs":{"config":{"configurable":{"authorization":"Bearer ` + adaptertest.Secret + `","x-api-key":"` + adaptertest.Secret + `","cookie":"c=` + adaptertest.Secret + `","user":"u"}}}}`
		msgs, err := tr.Inbound(context.Background(), []byte(body))
		require.NoError(t, err, status)
		b, err := protocol.Encode(msgs[0])
		require.NoError(t, err)
		assert.NotContains(t, string(b), adaptertest.Secret, status)
		assert.Contains(t, string(b), `"user":"u"`, status)
	}
}

// A payload just under the body limit gives an envelope the store holds.
func TestHugePayloadFits(t *testing.T) {
	tr, err := NewTranslator(&Mapping{Type: "x.shop.event", Payload: "/data"}, "agent:shop", nil)
	require.NoError(t, err)
	body := `{"data":{"text":"` + strings.Repeat("t", DefaultMaxBodyBytes-100) + `"}}`
	msgs, err := tr.Inbound(context.Background(), []byte(body))
	require.NoError(t, err)
	require.NoError(t, adaptertest.CheckStorable(msgs))
	assert.Contains(t, string(msgs[0].Payload), "… [truncated, ")
	var _ adapters.Adapter = tr
}
