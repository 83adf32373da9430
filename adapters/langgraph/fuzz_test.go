package langgraph_test

import (
	"context"
	"os"
	"path/filepath"
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
	tr := newTranslator(f)
	f.Fuzz(func(t *testing.T, raw []byte) {
		msgs, err := adaptertest.CheckInbound(context.Background(), tr, raw)
		if err != nil {
			t.Fatal(err)
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
