package boltstore_test

import (
	"encoding/json"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

// BenchmarkRemoveRuns removes 100 ended runs of 10 events each (two
// tasks of five events) per RemoveRuns call, from a store that keeps
// growing by as many runs that stay, with fsync on: the events/s removed.
func BenchmarkRemoveRuns(b *testing.B) {
	s, err := boltstore.Open(filepath.Join(b.TempDir(), "events.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	ids := protocol.NewIDs(&protocol.IDOptions{Entropy: rand.NewChaCha8([32]byte{7})})
	runs := func(n int) ([]*protocol.Message, []string) {
		var msgs []*protocol.Message
		var runIDs []string
		for range n {
			run, thread := ids.RunID(), ids.ThreadID()
			runIDs = append(runIDs, run)
			for range 2 {
				task := ids.TaskID()
				for _, typ := range []protocol.Type{protocol.TypeTaskRequest, protocol.TypeTaskAccept, protocol.TypeTaskProgress, protocol.TypeTaskProgress, protocol.TypeTaskResult} {
					m := ids.NewMessage(typ, "agent:worker")
					m.RunID, m.ThreadID, m.TaskID = run, thread, task
					m.To = []protocol.Participant{{AgentID: "agent:orchestrator"}}
					m.Payload = json.RawMessage(`{"title":"a run of ten events"}`)
					msgs = append(msgs, m)
				}
			}
		}
		return msgs, runIDs
	}
	const perCall = 100
	var removed int
	var took time.Duration
	for b.Loop() {
		b.StopTimer()
		keep, _ := runs(perCall)
		gone, goneIDs := runs(perCall)
		for _, batch := range [][]*protocol.Message{keep, gone} {
			for i := 0; i < len(batch); i += 50 {
				if _, err := s.Append(b.Context(), batch[i:min(i+50, len(batch))]...); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.StartTimer()
		start := time.Now()
		ts, err := s.RemoveRuns(b.Context(), goneIDs, store.Removal{Policy: "bench"})
		took += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		for _, t := range ts {
			removed += t.Events
		}
	}
	b.ReportMetric(float64(removed)/took.Seconds(), "events/s")
}
