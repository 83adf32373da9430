package rules

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/internal/backends"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
)

// TestSessionTenancy (docs/protocol.md §6.7): a second caller
// ("agent:eve") naming the first caller's task gets a session of its own,
// as for an id nobody used, so none of its events lands in that caller's
// run and the answer is no oracle; its own sessions live in
// reserved runs no outside caller writes; the library's run is reserved.
func TestSessionTenancy(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends.All() {
		t.Run(b.Name, func(t *testing.T) {
			st := b.New(t)
			reg, err := schema.New(nil)
			require.NoError(t, err)
			l, err := Open(ctx, st, &Options{Workspace: "team", Schemas: reg})
			require.NoError(t, err)
			req := protocol.NewMessage(protocol.TypeTaskRequest, "agent:ken")
			req.To = []protocol.Participant{{AgentID: "agent:orchestrator"}}
			_, err = st.Append(ctx, req)
			require.NoError(t, err)

			// Ken's task id and an id nobody used read alike to eve: a
			// session run of her own, never ken's run.
			for _, id := range []string{req.TaskID, "task_nobody", ""} {
				s, err := l.Session(ctx, "agent:eve", id)
				require.NoError(t, err, id)
				_, err = s.Setup(ctx, map[string]string{"META_PROMPT.md": ""})
				require.NoError(t, err)
				assert.True(t, protocol.Reserved(s.Ref().RunID), "a session run is reserved: %s", s.Ref().RunID)
				assert.NotEqual(t, req.RunID, s.Ref().RunID)
				assert.Equal(t, id, s.Ref().SessionID)
			}
			for _, err := range st.Read(ctx, store.Query{RunID: req.RunID, AgentID: "agent:eve"}) {
				require.NoError(t, err)
				t.Error("eve's session wrote into ken's run")
			}
			assert.True(t, protocol.Reserved(l.runID), "the library's run %s is reserved", l.runID)
		})
	}
}
