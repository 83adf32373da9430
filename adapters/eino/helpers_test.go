package eino_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/components/tool/utils"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/flow/agent/react"
	"github.com/cloudwego/eino/schema"
	"go.uber.org/goleak"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fakeModel is a deterministic eino chat model (model.ToolCallingChatModel):
// reply says what it answers to the conversation so far. Its stream puts
// the content out in chunks of chunk bytes, the tool calls in the first
// chunk and the finish reason and usage in the last.
type fakeModel struct {
	reply func(ctx context.Context, in []*schema.Message) (*schema.Message, error)
	chunk int
}

func (f *fakeModel) Generate(ctx context.Context, in []*schema.Message, _ ...model.Option) (*schema.Message, error) {
	return f.reply(ctx, in)
}

func (f *fakeModel) Stream(ctx context.Context, in []*schema.Message, _ ...model.Option) (*schema.StreamReader[*schema.Message], error) {
	m, err := f.reply(ctx, in)
	if err != nil {
		return nil, err
	}
	n := max(f.chunk, 1)
	var chunks []*schema.Message
	if len(m.ToolCalls) > 0 || m.Content == "" {
		chunks = append(chunks, &schema.Message{Role: schema.Assistant, ToolCalls: m.ToolCalls})
	}
	for s := m.Content; s != ""; {
		k := min(n, len(s))
		chunks = append(chunks, &schema.Message{Role: schema.Assistant, Content: s[:k]})
		s = s[k:]
	}
	chunks[len(chunks)-1].ResponseMeta = m.ResponseMeta
	return schema.StreamReaderFromArray(chunks), nil
}

func (f *fakeModel) WithTools([]*schema.ToolInfo) (model.ToolCallingChatModel, error) { return f, nil }

func (f *fakeModel) GetType() string { return "Fake" }

// callThen is a model that calls the tool name with args, then answers
// with "answer: " and the tool's result.
func callThen(name, args string) *fakeModel {
	return &fakeModel{reply: func(_ context.Context, in []*schema.Message) (*schema.Message, error) {
		last := in[len(in)-1]
		if last.Role == schema.Tool {
			m := schema.AssistantMessage("answer: "+last.Content, nil)
			m.ResponseMeta = &schema.ResponseMeta{FinishReason: "stop", Usage: &schema.TokenUsage{PromptTokens: 20, CompletionTokens: 5, TotalTokens: 25}}
			return m, nil
		}
		m := schema.AssistantMessage("", []schema.ToolCall{{ID: "call_1", Type: "function", Function: schema.FunctionCall{Name: name, Arguments: args}}})
		m.ResponseMeta = &schema.ResponseMeta{FinishReason: "tool_calls", Usage: &schema.TokenUsage{PromptTokens: 10, CompletionTokens: 3, TotalTokens: 13}}
		return m, nil
	}}
}

type cityArgs struct {
	City string `json:"city" jsonschema:"description=the city"`
}

// weather is a tool that answers at once.
func weather(tb testing.TB) tool.InvokableTool {
	tb.Helper()
	w, err := utils.InferTool("weather", "The weather in a city", func(_ context.Context, in cityArgs) (string, error) {
		return "sunny in " + in.City, nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

// broken is a tool that fails.
func broken(tb testing.TB) tool.InvokableTool {
	tb.Helper()
	w, err := utils.InferTool("weather", "The weather in a city", func(_ context.Context, in cityArgs) (string, error) {
		return "", errors.New("the weather service is down")
	})
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

// payTool asks a person before it pays: it interrupts the graph, and on
// resume pays when the answer is "yes".
func payTool(tb testing.TB) tool.InvokableTool {
	tb.Helper()
	w, err := utils.InferTool("pay", "Pay an amount", func(ctx context.Context, in struct {
		Amount int `json:"amount"`
	}) (string, error) {
		if was, _, _ := tool.GetInterruptState[any](ctx); !was {
			return "", tool.Interrupt(ctx, map[string]any{"question": fmt.Sprintf("Pay %d EUR?", in.Amount)})
		}
		_, has, answer := tool.GetResumeContext[any](ctx)
		if !has {
			return "", errors.New("resumed without an answer")
		}
		if answer == "yes" {
			return fmt.Sprintf("paid %d EUR", in.Amount), nil
		}
		return fmt.Sprintf("not paid (%v)", answer), nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

// reactGraph is eino's own ReAct agent graph over m and tools, compiled
// (with the checkpoint store cs, when not nil).
func reactGraph(tb testing.TB, m model.ToolCallingChatModel, cs compose.CheckPointStore, tools ...tool.BaseTool) compose.Runnable[[]*schema.Message, *schema.Message] {
	tb.Helper()
	ctx := context.Background()
	ag, err := react.NewAgent(ctx, &react.AgentConfig{ToolCallingModel: m, ToolsConfig: compose.ToolsNodeConfig{Tools: tools}, MaxStep: 12})
	if err != nil {
		tb.Fatal(err)
	}
	g, opts := ag.ExportGraph()
	var copts []compose.GraphCompileOption
	if cs != nil {
		copts = append(copts, compose.WithCheckPointStore(cs))
	}
	r, err := compose.NewChain[[]*schema.Message, *schema.Message]().AppendGraph(g, opts...).Compile(ctx, copts...)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// newRouter returns a router on st (a new memstore when nil), closed
// when the test ends.
func newRouter(tb testing.TB, st store.Store) (*router.Router, store.Store) {
	tb.Helper()
	ctx := context.Background()
	if st == nil {
		m, err := memstore.New(nil)
		if err != nil {
			tb.Fatal(err)
		}
		st = m
	}
	reg, err := registry.Open(ctx, st, nil)
	if err != nil {
		tb.Fatal(err)
	}
	r, err := router.New(st, reg, &router.Options{Logger: slog.New(slog.DiscardHandler), MaxAttempts: 1})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		r.Close()
		st.Close()
	})
	return r, st
}

// submit submits payload requiring capability and returns the handle.
func submit(tb testing.TB, r *router.Router, capability string, payload any) *router.Handle {
	tb.Helper()
	req, err := r.NewRequest("agent:user", "", payload)
	if err != nil {
		tb.Fatal(err)
	}
	req.Requires = []string{capability}
	h, err := r.Submit(context.Background(), req)
	if err != nil {
		tb.Fatal(err)
	}
	return h
}

// events returns the events of the run runID, in order.
func events(tb testing.TB, st store.Store, runID string) []*protocol.Message {
	tb.Helper()
	var out []*protocol.Message
	for ev, err := range st.Read(context.Background(), store.Query{RunID: runID}) {
		if err != nil {
			tb.Fatal(err)
		}
		m, err := ev.Message()
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// payloadOf returns the payload of the first event of type typ, decoded.
func payloadOf[T any](tb testing.TB, msgs []*protocol.Message, typ protocol.Type, nth int) T {
	tb.Helper()
	for _, m := range msgs {
		if m.Type != typ {
			continue
		}
		if nth > 0 {
			nth--
			continue
		}
		var v T
		if err := json.Unmarshal(m.Payload, &v); err != nil {
			tb.Fatalf("%s: %v", typ, err)
		}
		return v
	}
	tb.Fatalf("no %s", typ)
	var v T
	return v
}

func join(s []string) string { return strings.Join(s, "\n") }

// wantSeq fails the test when got is not want.
func wantSeq(tb testing.TB, got, want []string) {
	tb.Helper()
	if join(got) != join(want) {
		tb.Fatalf("events:\n%s\nwant:\n%s", join(got), join(want))
	}
}
