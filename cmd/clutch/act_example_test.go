package main

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

// clutch get prints one event, by message id or by seq: the line tail
// prints, then the message as stored.
func Example_get() {
	dir, _ := os.MkdirTemp("", "clutch")
	defer os.RemoveAll(dir)
	db := exampleFile(dir)

	run([]string{"get", "--db", db, "2"}, os.Stdout, os.Stderr)
	run([]string{"get", "--db", db, "msg_1", "--json"}, os.Stdout, os.Stderr)
	// Output:
	// 2      08:00:00.000  task.result      agent:ken              task_1 {"answer":"large"}
	// {
	//   "v": "clutch/0.1",
	//   "id": "msg_2",
	//   "ts": "2026-11-26T08:00:01.000Z",
	//   "thread_id": "thr_1",
	//   "run_id": "run_1",
	//   "task_id": "task_1",
	//   "from": {
	//     "agent_id": "agent:ken"
	//   },
	//   "to": [],
	//   "type": "task.result",
	//   "payload": {
	//     "answer": "large"
	//   },
	//   "attempt": 1
	// }
	// {"seq":1,"time":"2026-11-26T08:00:00.000Z","message":{"v":"clutch/0.1","id":"msg_1","ts":"2026-11-26T08:00:00.000Z","thread_id":"thr_1","run_id":"run_1","task_id":"task_1","from":{"agent_id":"agent:ui"},"to":[{"agent_id":"agent:ken"}],"type":"task.request","payload_type":"research.query.v1","payload":{"query":"market size?"},"attempt":1}}
}

// clutch agents lists the agents a store's registry events register,
// and shows one agent's card.
func Example_agents() {
	dir, _ := os.MkdirTemp("", "clutch")
	defer os.RemoveAll(dir)
	db := filepath.Join(dir, "events.db")
	clock := func() time.Time { return time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC) }
	st, _ := boltstore.Open(db, &boltstore.Options{Clock: clock})
	reg, _ := registry.Open(context.Background(), st, nil)
	reg.Register(context.Background(), &protocol.AgentCard{
		V: protocol.Version, AgentID: "agent:ken", Display: &protocol.Display{Name: "Ken", Desc: "Web researcher"},
		Capabilities: []protocol.Capability{{ID: "skill:research", Tags: []string{"web", "fintech"}}},
		Limits:       &protocol.Limits{MaxConcurrency: 2},
	}, nil)
	st.Close()

	run([]string{"agents", "--db", db}, os.Stdout, os.Stderr)
	run([]string{"agents", "--db", db, "agent:ken"}, os.Stdout, os.Stderr)
	// Output:
	// AGENT      NAME  STATUS   IN FLIGHT  CAPABILITIES
	// agent:ken  Ken   offline  0/2        skill:research
	// agent:ken  Ken
	//   Web researcher
	// status        offline, 0/2 in flight, recent success 100%
	// card version  clutch/0.1
	// limits        at most 2 tasks at once
	// capabilities:
	//   skill:research  tags web, fintech
}
