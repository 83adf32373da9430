package webhook

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/store"
)

// TestMappedIdsStayTheSenders: a mapping that takes run_id from the body
// lets a sender write only into its own runs: another sender's run, or a
// reserved one (the delivery records, the registry), is refused like a
// missing id and nothing is stored (docs/protocol.md §6.7).
func TestMappedIdsStayTheSenders(t *testing.T) {
	env := routertest.New(t, nil)
	s1, s2 := newSecret(t), newSecret(t)
	m := &Mapping{TypeFrom: "/event", Types: map[string]protocol.Type{"a": "x.shop.a"}, Payload: "/data", RunID: "/run"}
	h, err := NewHandler(env.Router, m, map[string]auth.Caller{s1: submitter, s2: other}, nil)
	require.NoError(t, err)
	now := env.Clock.Now()

	status, out := serve(t, h, delivery(t, s1, "e1", now, `{"event":"a","data":{"n":1},"run":"orders"}`))
	require.Equal(t, 200, status, out)
	run := out["run_id"].(string)
	before := lastSeq(t, env)

	for i, body := range []string{
		`{"event":"a","data":{"n":2},"run":"orders"}`,            // the first sender's run
		`{"event":"a","data":{},"run":"run:webhook:deliveries"}`, // delivery records
		`{"event":"a","data":{},"run":"run_registry"}`,           // reserved
	} {
		status, out := serve(t, h, delivery(t, s2, "x"+string(rune('1'+i)), now, body))
		assert.Equal(t, 404, status, out)
		assert.Equal(t, "NOT_FOUND", out["code"])
	}
	assert.Equal(t, before, lastSeq(t, env), "nothing stored")
	for _, e := range env.Events(store.Query{RunID: run}) {
		assert.Equal(t, submitter.AgentID, e.From.AgentID)
	}

	// The first sender goes on in its run.
	status, out = serve(t, h, delivery(t, s1, "e2", now, `{"event":"a","data":{"n":3},"run":"orders"}`))
	assert.Equal(t, 200, status, out)
	assert.Equal(t, run, out["run_id"])
}
