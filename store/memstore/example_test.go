package memstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// Append a task's events and read them back by run, then append one of
// them again: deduplication reports the stored event instead.
func Example() {
	ctx := context.Background()
	clock := func() time.Time { return time.Date(2026, 2, 1, 13, 20, 11, 0, time.UTC) }
	s, err := memstore.New(&memstore.Options{Clock: clock})
	if err != nil {
		panic(err)
	}
	defer s.Close()

	ids := protocol.NewIDs(&protocol.IDOptions{Clock: clock})
	req := ids.NewMessage(protocol.TypeTaskRequest, "agent:orchestrator")
	req.To = []protocol.Participant{{AgentID: "agent:ken"}}
	req.Payload = json.RawMessage(`{"question":"market size?"}`)
	res := ids.Reply(req, protocol.TypeTaskResult, "agent:ken")
	res.Payload = json.RawMessage(`{"answer":"large"}`)

	if _, err := s.Append(ctx, req, res); err != nil {
		panic(err)
	}
	for ev, err := range s.Read(ctx, store.Query{RunID: req.RunID}) {
		if err != nil {
			panic(err)
		}
		m, _ := ev.Message()
		fmt.Println(ev.Seq, m.Type, m.From.AgentID, ev.Time.Format(time.RFC3339))
	}
	again, _ := s.Append(ctx, res)
	fmt.Printf("duplicate=%v of seq %d by %v\n", again[0].Duplicate, again[0].Seq, again[0].DuplicateBy)
	// Output:
	// 1 task.request agent:orchestrator 2026-02-01T13:20:11Z
	// 2 task.result agent:ken 2026-02-01T13:20:11Z
	// duplicate=true of seq 2 by id
}
