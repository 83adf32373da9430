package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

// exampleFile writes a small store file with fixed ids and times.
func exampleFile(dir string) string {
	path := filepath.Join(dir, "events.db")
	clock := func() time.Time { return time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC) }
	st, err := boltstore.Open(path, &boltstore.Options{Clock: clock})
	if err != nil {
		panic(err)
	}
	req := protocol.NewMessage(protocol.TypeTaskRequest, "agent:ui")
	req.ID, req.TS, req.RunID, req.ThreadID, req.TaskID = "msg_1", "2026-11-26T08:00:00.000Z", "run_1", "thr_1", "task_1"
	req.To = []protocol.Participant{{AgentID: "agent:ken"}}
	req.PayloadType = "research.query.v1"
	req.Payload = json.RawMessage(`{"query":"market size?"}`)
	res := protocol.NewMessage(protocol.TypeTaskResult, "agent:ken")
	res.ID, res.TS, res.RunID, res.ThreadID, res.TaskID = "msg_2", "2026-11-26T08:00:01.000Z", "run_1", "thr_1", "task_1"
	res.Payload = json.RawMessage(`{"answer":"large"}`)
	if _, err := st.Append(context.Background(), req, res); err != nil {
		panic(err)
	}
	st.Close()
	return path
}

// clutch tail prints the latest events of a store file, one line each.
func Example_tail() {
	dir, _ := os.MkdirTemp("", "clutch")
	defer os.RemoveAll(dir)
	db := exampleFile(dir)

	run([]string{"tail", "--db", db}, os.Stdout, os.Stderr)
	// Output:
	// 1      08:00:00.000  task.request     agent:ui               task_1 research.query.v1 → agent:ken
	// 2      08:00:00.000  task.result      agent:ken              task_1 {"answer":"large"}
}

// clutch export writes events as CloudEvents, the message bytes as
// stored in data.
func Example_export() {
	dir, _ := os.MkdirTemp("", "clutch")
	defer os.RemoveAll(dir)
	db := exampleFile(dir)

	run([]string{"export", "--db", db, "--type", "task.result", "--format", "cloudevents"}, os.Stdout, os.Stderr)
	// Output:
	// {"specversion":"1.0","id":"msg_2","source":"/runs/run_1","type":"io.github.clutchprotocol.task.result","subject":"task_1","time":"2026-11-26T08:00:01.000Z","datacontenttype":"application/json","clutchseq":2,"data":{"v":"clutch/0.1","id":"msg_2","ts":"2026-11-26T08:00:01.000Z","thread_id":"thr_1","run_id":"run_1","task_id":"task_1","from":{"agent_id":"agent:ken"},"to":[],"type":"task.result","payload":{"answer":"large"},"attempt":1}}
}

// clutch backup copies a store file; clutch restore checks a backup and
// puts it in place.
func Example_backupRestore() {
	dir, _ := os.MkdirTemp("", "clutch")
	defer os.RemoveAll(dir)
	db := exampleFile(dir)
	bak := filepath.Join(dir, "backup.db")
	restored := filepath.Join(dir, "restored.db")

	run([]string{"backup", "--db", db, "--out", bak}, io.Discard, os.Stderr)
	var out strings.Builder
	run([]string{"restore", "--from", bak, "--db", restored}, &out, os.Stderr)
	fmt.Print(strings.ReplaceAll(out.String(), dir, "DIR"))
	run([]string{"tail", "--db", restored}, os.Stdout, os.Stderr)
	// Output:
	// restored: DIR/restored.db from DIR/backup.db, events up to seq 2
	// 1      08:00:00.000  task.request     agent:ui               task_1 research.query.v1 → agent:ken
	// 2      08:00:00.000  task.result      agent:ken              task_1 {"answer":"large"}
}
