package agui_test

import (
	"fmt"
	"testing"

	"github.com/clutchprotocol/clutch/gateway/agui"
	"github.com/clutchprotocol/clutch/protocol"
)

// benchRun returns the stored bytes of a run like the worker's, with
// progress, tool calls and a delegated subtask: n events in all.
func benchRun(b *testing.B, n int) [][]byte {
	b.Helper()
	ids := protocol.NewIDs(nil)
	root := ids.NewMessage(protocol.TypeTaskRequest, "agent:ui")
	_ = root.SetPayload(agui.InputPayload{Text: "what changed in Nordic payments this quarter?", MessageID: "user-1"})
	out := [][]byte{}
	add := func(m *protocol.Message) {
		raw, err := protocol.Encode(m)
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, raw)
	}
	add(root)
	reply := func(t protocol.Type, from string, payload any) *protocol.Message {
		m := ids.Reply(root, t, from)
		if err := m.SetPayload(payload); err != nil {
			b.Fatal(err)
		}
		return m
	}
	add(reply(protocol.TypeRoutingDecision, "agent:orchestrator", protocol.RoutingDecision{Selected: "agent:ken", Candidates: []string{"agent:ken", "agent:rita"}, Reason: "matched requires[skill:research], lowest load (0 in flight)", Scores: map[string]float64{"agent:ken": 1, "agent:rita": 0.5}}))
	add(reply(protocol.TypeTaskAccept, "agent:ken", map[string]any{}))
	for i := 0; len(out) < n-1; i++ {
		switch i % 3 {
		case 0:
			add(reply(protocol.TypeTaskProgress, "agent:ken", map[string]any{"step": "searching", "pct": i % 100}))
		case 1:
			call := reply(protocol.TypeToolCall, "agent:ken", map[string]any{"tool": "mcp:search", "name": "search", "args": map[string]any{"q": fmt.Sprintf("nordic payments %d", i), "limit": 10}})
			add(call)
			add(reply(protocol.TypeToolResult, "agent:ken", map[string]any{"tool": "mcp:search", "name": "search", "call_id": call.ID,
				"content": []any{map[string]any{"type": "text", "text": "3 hits"}}, "structuredContent": map[string]any{"hits": 3, "top": "https://example.com/a"}}))
		case 2:
			add(reply(protocol.TypeChatMessage, "agent:ken", map[string]any{"text": "looking at the second source"}))
		}
	}
	add(reply(protocol.TypeTaskResult, "agent:ken", map[string]any{"text": "Three things changed: instant payments, fees, and a new scheme."}))
	return out
}

// BenchmarkTranslate measures the handler's per-event work: decode the
// stored event, translate it, encode the AG-UI events as SSE frames.
// events/s counts Clutch events.
func BenchmarkTranslate(b *testing.B) {
	const n = 1000
	run := benchRun(b, n)
	msgs := make([]*protocol.Message, len(run))
	for i, raw := range run {
		m, err := protocol.Decode(raw)
		if err != nil {
			b.Fatal(err)
		}
		msgs[i] = m
	}
	b.Run("decode+translate+encode", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		var evs []agui.Event
		for b.Loop() {
			tr := agui.NewTranslator("thread", "run", nil)
			for i, raw := range run {
				m, err := protocol.Decode(raw)
				if err != nil {
					b.Fatal(err)
				}
				evs = tr.Translate(evs[:0], uint64(i+1), m)
				buf = buf[:0]
				for j := range evs {
					buf = evs[j].AppendJSON(append(buf, "data: "...))
					buf = append(buf, '\n', '\n')
				}
			}
			if !tr.Done() {
				b.Fatal("not done")
			}
		}
		b.ReportMetric(float64(b.N*len(run))/b.Elapsed().Seconds(), "events/s")
	})
	b.Run("translate+encode", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		var evs []agui.Event
		for b.Loop() {
			tr := agui.NewTranslator("thread", "run", nil)
			for i, m := range msgs {
				evs = tr.Translate(evs[:0], uint64(i+1), m)
				buf = buf[:0]
				for j := range evs {
					buf = evs[j].AppendJSON(append(buf, "data: "...))
					buf = append(buf, '\n', '\n')
				}
			}
		}
		b.ReportMetric(float64(b.N*len(msgs))/b.Elapsed().Seconds(), "events/s")
	})
}
