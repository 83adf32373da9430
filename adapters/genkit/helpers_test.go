package genkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/core"
	"github.com/firebase/genkit/go/genkit"
	"go.uber.org/goleak"

	clutchgenkit "github.com/clutchprotocol/clutch/adapters/genkit"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// TestMain fails the package if a test leaves a goroutine behind. The
// signal watcher genkit.Init starts for the process is Genkit's, not a
// run's.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("os/signal.signal_recv"), goleak.IgnoreTopFunction("os/signal.loop"))
}

// newGenkit returns a Genkit instance, whose context ends with the test.
func newGenkit(tb testing.TB) *genkit.Genkit {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	return genkit.Init(ctx)
}

// reply says what a fake model answers to a request.
type reply func(ctx context.Context, req *ai.ModelRequest) (*ai.ModelResponse, error)

// defineModel defines the deterministic model "fake/<name>": reply makes
// its response, which states the request (as real plugins do); when
// streamed, its text goes out in chunks of chunk bytes.
func defineModel(g *genkit.Genkit, name string, chunk int, fn reply) ai.Model {
	return genkit.DefineModel(g, "fake/"+name, &ai.ModelOptions{Supports: &ai.ModelSupports{Tools: true, Multiturn: true, SystemRole: true}},
		func(ctx context.Context, req *ai.ModelRequest, cb ai.ModelStreamCallback) (*ai.ModelResponse, error) {
			resp, err := fn(ctx, req)
			if err != nil {
				return nil, err
			}
			resp.Request = req
			if cb != nil {
				for s := resp.Text(); s != ""; {
					k := min(max(chunk, 1), len(s))
					if err := cb(ctx, &ai.ModelResponseChunk{Content: []*ai.Part{ai.NewTextPart(s[:k])}}); err != nil {
						return nil, err
					}
					s = s[k:]
				}
			}
			return resp, nil
		})
}

// callThen is a model that calls the tool name with input, then answers
// with "answer: " and the tool's output.
func callThen(name string, input any) reply {
	return func(_ context.Context, req *ai.ModelRequest) (*ai.ModelResponse, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == ai.RoleTool {
			out := last.Content[0].ToolResponse.Output
			return &ai.ModelResponse{Message: ai.NewModelTextMessage(fmt.Sprint("answer: ", out)), FinishReason: ai.FinishReasonStop,
				Usage: &ai.GenerationUsage{InputTokens: 20, OutputTokens: 5, TotalTokens: 25}}, nil
		}
		msg := &ai.Message{Role: ai.RoleModel, Content: []*ai.Part{ai.NewToolRequestPart(&ai.ToolRequest{Name: name, Ref: "call_1", Input: input})}}
		return &ai.ModelResponse{Message: msg, FinishReason: ai.FinishReasonStop,
			Usage: &ai.GenerationUsage{InputTokens: 10, OutputTokens: 3, TotalTokens: 13}}, nil
	}
}

type cityArgs struct {
	City string `json:"city"`
}

// defineWeather defines the tool "weather", which answers at once, or
// fails with err when err is not nil.
func defineWeather(g *genkit.Genkit, err error) ai.Tool {
	return genkit.DefineTool(g, "weather", "The weather in a city", func(_ *ai.ToolContext, in cityArgs) (string, error) {
		if err != nil {
			return "", err
		}
		return "sunny in " + in.City, nil
	})
}

type payArgs struct {
	Amount int `json:"amount"`
}

// definePay defines the tool "pay", which asks before it pays: it
// interrupts, and once restarted with an answer pays when it is "yes".
func definePay(g *genkit.Genkit) *ai.ToolDef[payArgs, string] {
	return genkit.DefineTool(g, "pay", "Pay an amount", func(tc *ai.ToolContext, in payArgs) (string, error) {
		if !tc.IsResumed() {
			return "", tc.Interrupt(&ai.InterruptOptions{Metadata: map[string]any{"question": fmt.Sprintf("Pay %d EUR?", in.Amount)}})
		}
		if answer, _ := clutchAnswer(tc); answer == "yes" {
			return fmt.Sprintf("paid %d EUR", in.Amount), nil
		}
		return "not paid", nil
	})
}

func clutchAnswer(tc *ai.ToolContext) (string, bool) {
	return ai.ResumedValue[string](tc, "answer")
}

// chatFlow defines the flow name: one Generate of the model with tools
// over the request's text, whose text is the flow's output.
func chatFlow(g *genkit.Genkit, name, model string, tools ...ai.ToolRef) *core.Flow[string, string, struct{}] {
	return genkit.DefineFlow(g, name, func(ctx context.Context, in string) (string, error) {
		resp, err := clutchgenkit.Generate(ctx, g, ai.WithModelName(model), ai.WithPrompt(in), ai.WithTools(tools...))
		if err != nil {
			return "", err
		}
		return resp.Text(), nil
	})
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

// register wraps flow as the agent id and registers it with r.
func register[In, Out, Stream any](tb testing.TB, r *router.Router, id string, flow *core.Flow[In, Out, Stream], opts *clutchgenkit.Options) *clutchgenkit.Agent[In, Out, Stream] {
	tb.Helper()
	a, err := clutchgenkit.New(id, flow, opts)
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
