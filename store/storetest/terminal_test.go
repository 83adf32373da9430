package storetest_test

import (
	"context"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/clutchprotocol/clutch/store/storetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckTerminals(t *testing.T) {
	ids := protocol.NewIDs(nil)
	type ev struct {
		typ       protocol.Type
		attempt   int
		willRetry bool
	}
	cases := []struct {
		name    string
		events  []ev
		problem string // "" for none
		open    bool
	}{
		{"result", []ev{{"task.request", 1, false}, {"routing.decision", 1, false}, {"task.accept", 1, false}, {"task.progress", 1, false}, {"task.result", 1, false}}, "", false},
		{"retried in the attempt loop", []ev{{"task.request", 1, false}, {"task.accept", 1, false}, {"task.error", 1, true}, {"routing.decision", 2, false}, {"task.accept", 2, false}, {"task.result", 2, false}}, "", false},
		{"partial retry", []ev{{"task.request", 1, false}, {"task.accept", 1, false}, {"task.timeout", 1, false}, {"routing.decision", 2, false}, {"task.accept", 2, false}, {"task.result", 2, false}}, "", false},
		{"open", []ev{{"task.request", 1, false}, {"routing.decision", 1, false}, {"task.accept", 1, false}}, "", true},
		{"open retry", []ev{{"task.request", 1, false}, {"task.error", 1, false}, {"routing.decision", 2, false}}, "", true},
		{"interrupted then result", []ev{{"task.request", 1, false}, {"task.accept", 1, false}, {"task.error", 1, false}, {"task.result", 1, false}}, "two terminal events", false},
		{"interrupted before the accept", []ev{{"task.request", 1, false}, {"task.error", 1, false}, {"routing.decision", 1, false}, {"task.accept", 1, false}, {"task.result", 1, false}}, "after the task ended", false},
		{"two requests", []ev{{"task.request", 1, false}, {"task.result", 1, false}, {"task.request", 1, false}}, "more than one task.request", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st, err := memstore.New(nil)
			require.NoError(t, err)
			defer st.Close()
			req := ids.NewMessage(protocol.TypeTaskRequest, "agent:ui")
			req.To = []protocol.Participant{{AgentID: "agent:orchestrator"}}
			require.NoError(t, req.SetPayload(map[string]any{}))
			for i, e := range c.events {
				var m *protocol.Message
				if e.typ == protocol.TypeTaskRequest && i == 0 {
					m = req
				} else {
					m = ids.Reply(req, e.typ, "agent:a")
					m.Attempt = e.attempt
					var payload any = map[string]any{}
					switch e.typ {
					case protocol.TypeTaskError, protocol.TypeTaskCancel, protocol.TypeTaskTimeout, protocol.TypeRoutingFailure:
						ep := protocol.ErrorPayload{Code: protocol.CodeInterrupted, Message: "x"}
						if e.willRetry {
							ep.Details = map[string]any{"will_retry": true}
						}
						payload = ep
					case protocol.TypeRoutingDecision:
						payload = protocol.RoutingDecision{Selected: "agent:a", Candidates: []string{"agent:a"}, Reason: "test"}
					}
					require.NoError(t, m.SetPayload(payload))
				}
				if e.typ == protocol.TypeTaskRequest && i > 0 {
					m.ID = ids.NewMessage(protocol.TypeTaskRequest, "agent:ui").ID
				}
				_, err := st.Append(context.Background(), m)
				require.NoError(t, err)
			}
			rep, err := storetest.CheckTerminals(context.Background(), st)
			require.NoError(t, err)
			assert.Equal(t, 1, rep.Tasks)
			if c.problem == "" {
				assert.Empty(t, rep.Problems)
			} else if assert.Len(t, rep.Problems, 1) {
				assert.Contains(t, rep.Problems[0].Detail, c.problem)
				assert.Equal(t, req.TaskID, rep.Problems[0].TaskID)
			}
			if c.open {
				assert.Equal(t, []string{req.TaskID}, rep.Open)
			} else {
				assert.Empty(t, rep.Open)
			}
		})
	}
}
