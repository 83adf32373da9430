package clowl_test

import (
	"context"
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
	a := clowl.New(nil)
	ctx := context.Background()
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Inbound(ctx, raw); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOutboundREQ(b *testing.B) {
	raw, err := os.ReadFile("testdata/examples-v0.2/01-m001-REQ.json")
	if err != nil {
		b.Fatal(err)
	}
	a := clowl.New(nil)
	ctx := context.Background()
	msgs, err := a.Inbound(ctx, raw)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Outbound(ctx, msgs[0]); err != nil {
			b.Fatal(err)
		}
	}
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
