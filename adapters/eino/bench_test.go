package eino_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cloudwego/eino/schema"

	"github.com/clutchprotocol/clutch/adapters/eino"
	"github.com/clutchprotocol/clutch/router"
)

// BenchmarkToolLoopDirect runs eino's ReAct tool loop (a model call, a
// tool call, a model call) with the fake model, as eino runs it.
func BenchmarkToolLoopDirect(b *testing.B) {
	ctx := context.Background()
	g := reactGraph(b, callThen("weather", `{"city":"Oslo"}`), nil, weather(b))
	in := []*schema.Message{schema.UserMessage("Weather in Oslo?")}
	b.ReportAllocs()
	for b.Loop() {
		out, err := g.Invoke(ctx, in)
		if err != nil || out.Content != "answer: sunny in Oslo" {
			b.Fatal(out, err)
		}
	}
}

// BenchmarkToolLoopBridge runs the same loop through the bridge as a
// Clutch task on memstore: its request, decision, accept, two model calls,
// the tool's call and result and the task's result are stored.
func BenchmarkToolLoopBridge(b *testing.B) {
	ctx := context.Background()
	r, _ := newRouter(b, nil)
	register(b, r, "agent:forecaster", reactGraph(b, callThen("weather", `{"city":"Oslo"}`), nil, weather(b)), nil)
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

// BenchmarkStreamingBridge runs a streamed answer of about 1 KiB (4-byte
// chunks, some ending inside a character) through the bridge as a Clutch
// task on memstore, gathered into task.progress events of 64 bytes.
func BenchmarkStreamingBridge(b *testing.B) {
	ctx := context.Background()
	r, _ := newRouter(b, nil)
	answer := strings.Repeat("Grüße aus Malmö ✓ ", 50)
	m := &fakeModel{chunk: 4, reply: func(context.Context, []*schema.Message) (*schema.Message, error) {
		return schema.AssistantMessage(answer, nil), nil
	}}
	register(b, r, "agent:talker", reactGraph(b, m, nil, weather(b)), &eino.Options{Stream: true, ProgressBytes: 64})
	b.ReportAllocs()
	for b.Loop() {
		out, err := submit(b, r, "skill:talker", "Say hello").Wait(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if res, err := router.ResultAs[string](out); err != nil || res != answer {
			b.Fatal(len(res), err)
		}
	}
}
