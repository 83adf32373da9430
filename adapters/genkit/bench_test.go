package genkit_test

import (
	"context"
	"testing"

	"github.com/clutchprotocol/clutch/router"
)

// BenchmarkToolLoopDirect runs a flow's generate loop (a model call, a
// tool call, a model call) with the fake model, as Genkit runs it.
func BenchmarkToolLoopDirect(b *testing.B) {
	ctx := context.Background()
	g := newGenkit(b)
	defineModel(g, "tooler", 0, callThen("weather", map[string]any{"city": "Oslo"}))
	flow := chatFlow(g, "forecaster", "fake/tooler", defineWeather(g, nil))
	b.ReportAllocs()
	for b.Loop() {
		out, err := flow.Run(ctx, "Weather in Oslo?")
		if err != nil || out != "answer: sunny in Oslo" {
			b.Fatal(out, err)
		}
	}
}

// BenchmarkToolLoopBridge runs the same flow through the bridge as a
// Clutch task on memstore: its request, decision, accept, two model calls,
// the tool's call and result and the task's result are stored.
func BenchmarkToolLoopBridge(b *testing.B) {
	ctx := context.Background()
	r, _ := newRouter(b, nil)
	g := newGenkit(b)
	defineModel(g, "tooler", 0, callThen("weather", map[string]any{"city": "Oslo"}))
	register(b, r, "agent:forecaster", chatFlow(g, "forecaster", "fake/tooler", defineWeather(g, nil)), nil)
	b.ReportAllocs()
	for b.Loop() {
		out, err := submit(b, r, "skill:forecaster", "Weather in Oslo?").Wait(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if res, err := router.ResultAs[string](out); err != nil || res != "answer: sunny in Oslo" {
			b.Fatal(res, err)
		}
	}
}
