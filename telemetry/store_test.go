package telemetry_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// A measured store keeps the conditional append of the store it wraps
// (the router and a team node look for it on the store they are given),
// and counts only the events a conditional batch stored.
func TestWrapStoreKeepsConditional(t *testing.T) {
	e := newEnv(t, nil)
	c, ok := e.st.(store.Conditional)
	require.True(t, ok, "the wrapped memstore's AppendIfNew is hidden")
	ctx := context.Background()
	msg := func() *protocol.Message {
		m := e.r.IDs().NewMessage(protocol.TypeChatMessage, "agent:ui")
		m.RunID, m.ThreadID = "run_cond", "thr_cond"
		require.NoError(t, m.SetPayload(map[string]string{"text": "hi"}))
		return m
	}
	first := msg()
	res, err := c.AppendIfNew(ctx, first, msg())
	require.NoError(t, err)
	require.True(t, res[0].Stored() && res[1].Stored(), "a new first stores the batch: %+v", res)
	res, err = c.AppendIfNew(ctx, first, msg(), msg())
	require.NoError(t, err)
	assert.True(t, res[0].Duplicate, "%+v", res)
	assert.False(t, res[1].Stored() || res[2].Stored(), "a duplicate first stores nothing: %+v", res)

	var stored int64
	for _, err := range e.st.Read(ctx, store.Query{RunID: "run_cond"}) {
		require.NoError(t, err)
		stored++
	}
	require.EqualValues(t, 2, stored)
	assert.Equal(t, []string{"clutch.event.type=chat.message " + itoa(stored)}, points(e.metrics()["clutch.store.events"]))
}
