package multiagent_test

import (
	"context"
	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"os"
	"testing"

	"github.com/clutchprotocol/clutch/adapters/multiagent"
)

// A typical planner envelope (docs/protocol.md §12, canonical example 1: content,
// artifacts, two next actions, confidence): inbound (checks, mapping, the
// derived id, two proposed requests) and outbound of the main message.
func BenchmarkInboundPlan(b *testing.B) {
	raw, err := os.ReadFile("testdata/examples/01-planner-plan.json")
	if err != nil {
		b.Fatal(err)
	}
	adaptertest.BenchInbound(b, multiagent.New(nil), raw)
}

func BenchmarkOutboundPlan(b *testing.B) {
	raw, err := os.ReadFile("testdata/examples/01-planner-plan.json")
	if err != nil {
		b.Fatal(err)
	}
	adaptertest.BenchOutbound(b, multiagent.New(nil), raw)
}

func BenchmarkClaudePrompt(b *testing.B) {
	raw, err := os.ReadFile("testdata/examples/01-planner-plan.json")
	if err != nil {
		b.Fatal(err)
	}
	msgs, err := multiagent.New(nil).Inbound(context.Background(), raw)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := multiagent.ClaudePrompt(msgs[0]); err != nil {
			b.Fatal(err)
		}
	}
}
