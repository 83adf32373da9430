package autogen_test

import (
	"testing"

	"github.com/clutchprotocol/clutch/adapters/adaptertest"
)

// A typical event of a current AutoGen release: a TextMessage with id,
// created_at, usage and metadata (one chat.message).
func BenchmarkInboundText(b *testing.B) {
	adaptertest.BenchInbound(b, newAdapter(), lines(b, "agentchat_events_constructed.jsonl")[13])
}

// A tool call request (one tool.call, arguments parsed).
func BenchmarkInboundToolCall(b *testing.B) {
	adaptertest.BenchInbound(b, newAdapter(), lines(b, "agentchat_tool_call_round.jsonl")[1])
}

// A streaming chunk of an older release, without id: its id is derived
// from a digest of its canonical form.
func BenchmarkInboundChunkNoID(b *testing.B) {
	adaptertest.BenchInbound(b, newAdapter(), lines(b, "agentchat_streaming_chunks.jsonl")[1])
}

func BenchmarkOutboundText(b *testing.B) {
	adaptertest.BenchOutbound(b, newAdapter(), lines(b, "agentchat_events_constructed.jsonl")[13])
}
