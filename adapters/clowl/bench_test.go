package clowl_test

import (
	"github.com/clutchprotocol/clutch/adapters/adaptertest"
	"os"
	"testing"

	"github.com/clutchprotocol/clutch/adapters/clowl"
)

// A typical REQ (examples-v0.2.md §1, with a ctx reference): inbound
// (strict JSON check, schema validation, mapping) and outbound (mapping,
// encoding, schema validation).
func BenchmarkInboundREQ(b *testing.B) {
	raw, err := os.ReadFile("testdata/examples-v0.2/01-m001-REQ.json")
	if err != nil {
		b.Fatal(err)
	}
	adaptertest.BenchInbound(b, clowl.New(nil), raw)
}

func BenchmarkOutboundREQ(b *testing.B) {
	raw, err := os.ReadFile("testdata/examples-v0.2/01-m001-REQ.json")
	if err != nil {
		b.Fatal(err)
	}
	adaptertest.BenchOutbound(b, clowl.New(nil), raw)
}

// The English translation of the same REQ.
func BenchmarkTranslateREQ(b *testing.B) {
	raw, err := os.ReadFile("testdata/examples-v0.2/01-m001-REQ.json")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := clowl.Translate(raw); err != nil {
			b.Fatal(err)
		}
	}
}
