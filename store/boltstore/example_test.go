package boltstore_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

// Open a file, append a task's events, reopen it and follow the run from
// the start: the events and their seqs are still there.
func Example() {
	dir, err := os.MkdirTemp("", "clutch")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "events.db")
	ctx := context.Background()

	s, err := boltstore.Open(path, nil)
	if err != nil {
		panic(err)
	}
	ids := protocol.NewIDs(nil)
	req := ids.NewMessage(protocol.TypeTaskRequest, "agent:orchestrator")
	req.To = []protocol.Participant{{AgentID: "agent:ken"}}
	req.Payload = json.RawMessage(`{"question":"market size?"}`)
	res := ids.Reply(req, protocol.TypeTaskResult, "agent:ken")
	res.Payload = json.RawMessage(`{"answer":"large"}`)
	if _, err := s.Append(ctx, req, res); err != nil {
		panic(err)
	}
	s.Close()

	s, err = boltstore.Open(path, nil)
	if err != nil {
		panic(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	for ev, err := range s.Follow(ctx, store.Query{RunID: req.RunID, Limit: 2}) {
		if err != nil {
			panic(err)
		}
		m, _ := ev.Message()
		fmt.Println(ev.Seq, m.Type, m.From.AgentID)
	}
	again, _ := s.Append(ctx, res)
	fmt.Println("duplicate:", again[0].Duplicate, "of seq", again[0].Seq)
	// Output:
	// 1 task.request agent:orchestrator
	// 2 task.result agent:ken
	// duplicate: true of seq 2
}
