package crewai_test

import (
	"encoding/json"
	"testing"

	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"github.com/clutchprotocol/clutch/adapters/crewai"
)

// A typical event: one recorded tool_usage_finished of the delegation
// batch (a tool result with its output), alone in a tracing batch of the
// run, as a tracing client or an AMP webhook sends it one by one.
func BenchmarkInboundToolEvent(b *testing.B) {
	var batch struct {
		Events []json.RawMessage `json:"events"`
	}
	if err := json.Unmarshal(read(b, "trace_batch_delegation_sequential.json"), &batch); err != nil {
		b.Fatal(err)
	}
	raw, err := json.Marshal(map[string]any{"trace_id": "9e29cf0f-0172-4e4b-ad63-a2a36f3c2d7f", "events": batch.Events[10:11]})
	if err != nil {
		b.Fatal(err)
	}
	adaptertest.BenchInbound(b, crewai.New(nil), raw)
}

// A small webhook delivery: the recorded AMP event (an LLM call).
func BenchmarkInboundWebhookEvent(b *testing.B) {
	adaptertest.BenchInbound(b, crewai.New(nil), read(b, "amp_webhook_events_batch.json"))
}

// The whole recorded delegation batch (18 events, 36 KB), per batch.
func BenchmarkInboundDelegationBatch(b *testing.B) {
	adaptertest.BenchInbound(b, crewai.New(nil), read(b, "trace_batch_delegation_sequential.json"))
}
