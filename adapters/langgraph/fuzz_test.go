package langgraph_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/adapters/langgraph"
	"github.com/clutchprotocol/clutch/protocol"
)

func seeds(f *testing.F, glob string) {
	files, _ := filepath.Glob(glob)
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
}

// FuzzInbound checks the contract on JSON input (records, arrays, JSON
// lines): no panic, typed errors, valid envelopes, a stable round trip.
// Seeds: every JSON fixture.
func FuzzInbound(f *testing.F) {
	seeds(f, "testdata/fixtures/*.json")
	seeds(f, "testdata/fixtures/*.jsonl")
	f.Add([]byte(`{"event":"values","data":{"__interrupt__":[{"value":"ok?","id":"i1"}]}}`))
	// The shapes of issue 31: a static interrupt, a nested one, tasks and
	// debug frames of one task, error frames, protocol-v2 events, v2 parts,
	// a pretty-printed duplicate, a long checkpoint id, echoed credentials.
	f.Add([]byte(`[{"event":"values","data":{"messages":[],"__interrupt__":[]}},{"event":"end","data":null}]`))
	f.Add([]byte(`[{"event":"updates|a:1|b:2","data":{"__interrupt__":[{"value":"deep?","id":"i2"}]}},{"event":"end","data":null}]`))
	f.Add([]byte(`[{"event":"tasks","data":{"id":"t","name":"n","input":{},"triggers":[]}},{"event":"debug","data":{"type":"task_result","payload":{"id":"t","name":"n","error":null,"result":{},"interrupts":[]}}},{"event":"tasks","data":{"id":"t","name":"n","error":null,"result":{},"interrupts":[]}}]`))
	f.Add([]byte(`{"event":"error","data":{"error":"ValueError","message":"boom"}}`))
	f.Add([]byte(`{"type":"event","method":"lifecycle","seq":1,"params":{"namespace":[],"data":{"event":"failed","error":"x"}}}`))
	f.Add([]byte(`{"type":"updates","ns":["s:1"],"data":{"n":{}},"interrupts":[]}`))
	f.Add([]byte("{\n  \"event\": \"values\",\n  \"data\": {\"a\": 1, \"a\": 2}\n}\n"))
	f.Add([]byte(`{"event":"checkpoints","data":{"config":{"configurable":{"checkpoint_id":"` + strings.Repeat("c", 300) + `"}}}}`))
	f.Add([]byte(`{"run_id":"r","thread_id":"t","assistant_id":"a","status":"error","error":"e","metadata":{"authorization":"Bearer x"}}`))
	tr := newTranslator(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		msgs, err := adaptertest.CheckInbound(context.Background(), tr, raw)
		if err != nil {
			t.Fatal(err)
		}
		if msgs != nil && !tr.Detect(raw) {
			t.Fatalf("Inbound took what Detect refuses: %q", raw)
		}
		ends := map[string]int{}
		for _, m := range msgs {
			switch m.Type {
			case protocol.TypeTaskResult, protocol.TypeTaskError, protocol.TypeTaskCancel, protocol.TypeTaskTimeout:
				if ends[m.TaskID]++; ends[m.TaskID] > 1 {
					t.Fatalf("task %s ends twice", m.TaskID)
				}
			}
		}
		if msgs != nil && tr.CanHandle(msgs[0]) {
			if err := adaptertest.CheckFixpoint(context.Background(), tr, msgs[0]); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// FuzzSSE checks the SSE frame parser and the per-frame translation of a
// Stream: any bytes as a stream, and any event name with any data as one
// frame. Seeds: the SSE fixtures.
func FuzzSSE(f *testing.F) {
	seeds(f, "testdata/fixtures/*.sse")
	f.Add([]byte("event: error\ndata: \"Run not found\"\n\n: heartbeat\n"))
	f.Add([]byte("event: end\ndata: null\nid: 9\n\n"))
	f.Add([]byte("event: values\ndata: {\"__interrupt__\": []}\n\nevent: end\ndata: null\n\n"))
	f.Add([]byte("event: updates|a:1|b:2\ndata: {\"__interrupt__\":[{\"value\":\"deep?\",\"id\":\"i\"}]}\n\nevent: end\ndata: null\n\n"))
	f.Add([]byte("event: error\ndata: {\n  \"error\": \"Error\",\n  \"message\": \"branch bad failed\",\n  \"message\": \"dup\"\n}\n\n"))
	f.Add([]byte("data: {\"a\":1}\n\n:heartbeat\n"))
	tr := newTranslator(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		if _, err := adaptertest.CheckInbound(context.Background(), tr, raw); err != nil {
			t.Fatal(err)
		}
		// The same bytes as the data of one frame of each mode.
		for _, mode := range []string{"values", "updates|n:1", "messages", "messages/partial", "debug", "tasks", "events", "error", "custom"} {
			s := tr.NewStream(langgraph.Scope{RunID: "run:r", ThreadID: "thread:t", TaskID: "task:r"})
			msgs, err := s.Frame(context.Background(), langgraph.Frame{Event: mode, Data: raw})
			if err != nil {
				if protocol.CodeOf(err) == "" {
					t.Fatalf("untyped error %v", err)
				}
				continue
			}
			for _, m := range msgs {
				if err := m.Validate(); err != nil {
					t.Fatalf("%s: %v", mode, err)
				}
				if _, err := protocol.Encode(m); err != nil {
					t.Fatalf("%s: %v", mode, err)
				}
			}
		}
	})
}
