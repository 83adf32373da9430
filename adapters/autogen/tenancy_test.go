package autogen_test

import (
	"context"
	"net/http"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/internal/backends"
	"github.com/clutchprotocol/clutch/store"
)

func TestMain(m *testing.M) { os.Exit(backends.Main(m)) }

// TestHandlerTenancy (docs/protocol.md §6.7): the caller that posts a run
// owns it and may read it; a second caller with only the submit scope
// ("agent:bob") posting the same run name lands in its own run, reads
// nothing of the first caller's, and stores nothing in it.
func TestHandlerTenancy(t *testing.T) {
	ken := &auth.Caller{AgentID: "agent:ken", Scopes: []string{auth.ScopeSubmit}}
	bob := &auth.Caller{AgentID: "agent:bob", Scopes: []string{auth.ScopeSubmit}}
	ctx := context.Background()
	for _, b := range backends.All() {
		t.Run(b.Name, func(t *testing.T) {
			e := newEndpointOn(t, b.New(t), nil, nil)
			body := read(t, "agentchat_tool_call_round.jsonl")
			status, raw := e.post(t, "r1", kenKey, ndjson, body)
			require.Equal(t, http.StatusOK, status, string(raw))
			kenRun := answer(t, raw).RunID

			owner, ok, err := auth.Owner(ctx, e.st, auth.KindRun, kenRun)
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, "agent:ken", owner, "the caller owns the run it created")
			may, err := auth.MayRead(ctx, e.st, ken, auth.KindRun, kenRun)
			require.NoError(t, err)
			assert.True(t, may, "the caller reads its own run")
			may, err = auth.MayRead(ctx, e.st, bob, auth.KindRun, kenRun)
			require.NoError(t, err)
			assert.False(t, may, "another caller does not")

			before := len(e.run(t, kenRun))
			status, raw = e.post(t, "r1", bobKey, ndjson, body)
			require.Equal(t, http.StatusOK, status, string(raw))
			a := answer(t, raw)
			assert.NotEqual(t, kenRun, a.RunID, "the same run name is another caller's run")
			assert.Zero(t, a.Duplicates, "no dedup against another caller's messages")
			assert.Len(t, e.run(t, kenRun), before, "nothing was written into ken's run")
			for _, err := range e.st.Read(ctx, store.Query{RunID: kenRun, AgentID: "agent:bob"}) {
				require.NoError(t, err)
				t.Error("bob wrote into ken's run")
			}
		})
	}
}
