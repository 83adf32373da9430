package retention_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/clutchprotocol/clutch/store/retention"
)

// Keep the newest ended run; the older one goes and leaves a tombstone.
// A run still running is kept whatever the policy says.
func ExampleApply() {
	ctx := context.Background()
	st, _ := memstore.New(nil)
	defer st.Close()
	for _, run := range []string{"run_old", "run_new", "run_busy"} {
		req := protocol.NewMessage(protocol.TypeTaskRequest, "agent:ken")
		req.RunID, req.TaskID, req.Payload = run, "task_"+run, json.RawMessage(`{"text":"work"}`)
		msgs := []*protocol.Message{req}
		if run != "run_busy" {
			res := protocol.NewMessage(protocol.TypeTaskResult, "agent:worker")
			res.RunID, res.TaskID, res.Payload = run, req.TaskID, json.RawMessage(`{"text":"done"}`)
			msgs = append(msgs, res)
		}
		if _, err := st.Append(ctx, msgs...); err != nil {
			fmt.Println(err)
			return
		}
	}
	rep, err := retention.Apply(ctx, st, retention.Policy{MaxRuns: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, ts := range rep.Removed {
		fmt.Println("removed", ts.RunID, "by", ts.Policy, "-", ts.Events, "events")
	}
	fmt.Println("ended:", rep.Ended, "not ended:", rep.Active)
	// Output:
	// removed run_old by max_runs=1 - 2 events
	// ended: 2 not ended: 1
}
