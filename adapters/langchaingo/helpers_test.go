package langchaingo_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/callbacks"
	"github.com/tmc/langchaingo/chains"
	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/fake"
	"github.com/tmc/langchaingo/tools"
	"go.uber.org/goleak"

	"github.com/clutchprotocol/clutch/adapters/langchaingo"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// model is LangChainGo's fake LLM (llms/fake, its answers in turn) as a
// provider serves it: it calls its callbacks handler as the providers do
// (HandleLLMGenerateContentStart, then End or HandleLLMError), states its
// usage in GenerationInfo under the names OpenAI's provider uses, fails
// when ctx has ended, and streams its answer in chunks of chunk bytes
// when given a streaming func.
type model struct {
	llm   *fake.LLM
	cb    callbacks.Handler
	chunk int
	err   error // every call fails with it
	calls atomic.Int32
}

// newModel is a model answering answers in turn, recorded by the bridge
// as the model "fake-model" of the provider "fake".
func newModel(answers ...string) *model {
	return &model{llm: fake.NewFakeLLM(answers), cb: langchaingo.Callbacks{Model: "fake-model", Provider: "fake"}}
}

func (m *model) GenerateContent(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	m.calls.Add(1)
	if m.cb != nil {
		m.cb.HandleLLMGenerateContentStart(ctx, msgs)
	}
	resp, err := m.answer(ctx, msgs, options...)
	if err != nil {
		if m.cb != nil {
			m.cb.HandleLLMError(ctx, err)
		}
		return nil, err
	}
	if m.cb != nil {
		m.cb.HandleLLMGenerateContentEnd(ctx, resp)
	}
	return resp, nil
}

func (m *model) answer(ctx context.Context, msgs []llms.MessageContent, options ...llms.CallOption) (*llms.ContentResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if m.err != nil {
		return nil, m.err
	}
	resp, err := m.llm.GenerateContent(ctx, msgs, options...)
	if err != nil {
		return nil, err
	}
	ch := resp.Choices[0]
	ch.StopReason = "stop"
	ch.GenerationInfo = map[string]any{"PromptTokens": 10, "CompletionTokens": 3, "TotalTokens": 13}
	var o llms.CallOptions
	for _, opt := range options {
		opt(&o)
	}
	if o.StreamingFunc != nil {
		for s := ch.Content; s != ""; {
			k := min(max(m.chunk, 1), len(s))
			if err := o.StreamingFunc(ctx, []byte(s[:k])); err != nil {
				return nil, err
			}
			s = s[k:]
		}
	}
	return resp, nil
}

func (m *model) Call(ctx context.Context, prompt string, options ...llms.CallOption) (string, error) {
	return llms.GenerateFromSinglePrompt(ctx, m, prompt, options...)
}

// funcTool is a tool of a func.
type funcTool struct {
	name string
	fn   func(ctx context.Context, input string) (string, error)
}

func (f *funcTool) Name() string        { return f.name }
func (f *funcTool) Description() string { return "The " + f.name + " tool." }
func (f *funcTool) Call(ctx context.Context, input string) (string, error) {
	return f.fn(ctx, input)
}

// weather is the tool "weather", which answers at once, or fails with
// err when err is not nil.
func weather(err error) tools.Tool {
	return &funcTool{name: "weather", fn: func(_ context.Context, city string) (string, error) {
		if err != nil {
			return "", err
		}
		return "sunny in " + city, nil
	}}
}

// action is an answer of the one-shot agent's model that calls tool with
// input.
func action(tool, input string) string {
	return "Thought: I should use " + tool + ".\nAction: " + tool + "\nAction Input: " + input
}

// final is an answer of the one-shot agent's model that ends the run.
func final(answer string) string { return "Thought: I know it now.\nFinal Answer: " + answer }

// oneShot is an executor of LangChainGo's one-shot (MRKL) agent.
func oneShot(m llms.Model, ts ...tools.Tool) *agents.Executor {
	return agents.NewExecutor(agents.NewOneShotAgent(m, ts), agents.WithMaxIterations(5))
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

// register wraps chain as the agent id and registers it with r.
func register(tb testing.TB, r *router.Router, id string, chain chains.Chain, opts *langchaingo.Options) *langchaingo.Agent {
	tb.Helper()
	a, err := langchaingo.New(id, chain, opts)
	if err != nil {
		tb.Fatal(err)
	}
	if err := r.Register(context.Background(), a.Card(), a.Handle); err != nil {
		tb.Fatal(err)
	}
	return a
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

// payloadOf returns the payload of the nth event of type typ, decoded.
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

// wantSeq fails the test when got is not want.
func wantSeq(tb testing.TB, got, want []string) {
	tb.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		tb.Fatalf("events:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// wireError returns err's wire error, failing the test when it has none.
func wireError(tb testing.TB, err error) *protocol.ErrorPayload {
	tb.Helper()
	var ep *protocol.ErrorPayload
	if !errors.As(err, &ep) {
		tb.Fatalf("error %#v is not a wire error", err)
	}
	return ep
}

type toolEvent struct {
	CallID  string          `json:"call_id"`
	Tool    string          `json:"tool"`
	Name    string          `json:"name"`
	Args    json.RawMessage `json:"args"`
	Content json.RawMessage `json:"content"`
}
