package langchaingo_test

import (
	"context"
	"testing"

	"github.com/tmc/langchaingo/chains"

	"github.com/clutchprotocol/clutch/router"
)

// BenchmarkToolLoopDirect runs a one-shot agent executor's tool loop (a
// model call, a tool call, a model call) with the fake model, as
// LangChainGo runs it.
func BenchmarkToolLoopDirect(b *testing.B) {
	ctx := context.Background()
	ex := oneShot(newModel(action("weather", "Oslo"), final("sunny in Oslo")), weather(nil))
	b.ReportAllocs()
	for b.Loop() {
		out, err := chains.Run(ctx, ex, "Weather in Oslo?")
		if err != nil || out != "sunny in Oslo" {
			b.Fatal(out, err)
		}
	}
}

// BenchmarkToolLoopBridge runs the same executor through the bridge as a
// Clutch task on memstore: its request, decision, accept, two model calls,
// the tool's call and result and the task's result are stored.
func BenchmarkToolLoopBridge(b *testing.B) {
	ctx := context.Background()
	r, _ := newRouter(b, nil)
	register(b, r, "agent:forecaster", oneShot(newModel(action("weather", "Oslo"), final("sunny in Oslo")), weather(nil)), nil)
	b.ReportAllocs()
	for b.Loop() {
		out, err := submit(b, r, "skill:forecaster", "Weather in Oslo?").Wait(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if res, err := router.ResultAs[string](out); err != nil || res != "sunny in Oslo" {
			b.Fatal(res, err)
		}
	}
}
