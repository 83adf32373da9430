package adaptertest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/clutchprotocol/clutch/adapters"
)

// Files reads the files matching pattern (filepath.Glob, relative to the
// test's package) as valid Cases named by their base names, failing tb
// unless exactly want files match — so a fixture that goes missing fails
// the contract instead of shrinking it.
func Files(tb testing.TB, pattern string, want int) []Case {
	tb.Helper()
	files, err := filepath.Glob(pattern)
	if err != nil || len(files) != want {
		tb.Fatalf("adaptertest: %s matches %d files, want %d (%v)", pattern, len(files), want, err)
	}
	out := make([]Case, 0, len(files))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, Case{Name: filepath.Base(f), Raw: b})
	}
	return out
}

// BenchInbound measures a.Inbound of raw, with allocations and bytes/s.
func BenchInbound(b *testing.B, a adapters.Adapter, raw []byte) {
	ctx := context.Background()
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := a.Inbound(ctx, raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchOutbound measures a.Outbound of the first message Inbound makes of
// raw, with allocations.
func BenchOutbound(b *testing.B, a adapters.Adapter, raw []byte) {
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
