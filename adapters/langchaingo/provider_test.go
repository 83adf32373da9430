package langchaingo_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/agents"
	"github.com/tmc/langchaingo/llms/openai"
	"github.com/tmc/langchaingo/tools"

	"github.com/clutchprotocol/clutch/adapters/langchaingo"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
)

// chatServer is an OpenAI chat completions endpoint on the loopback: it
// asks for the tool weather until the conversation holds the tool's
// output, then answers with it, stating usage as OpenAI does.
func chatServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var in struct {
			Messages []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			} `json:"messages"`
		}
		if err := json.Unmarshal(body, &in); err != nil || !strings.HasSuffix(req.URL.Path, "/chat/completions") {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		last := in.Messages[len(in.Messages)-1]
		msg := map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{
			"id": "call_1", "type": "function", "function": map[string]any{"name": "weather", "arguments": `{"__arg1":"Oslo"}`},
		}}}
		finish := "tool_calls"
		if last.Role == "tool" {
			msg, finish = map[string]any{"role": "assistant", "content": "answer: " + last.Content.(string)}, "stop"
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-test",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   map[string]any{"prompt_tokens": 12, "completion_tokens": 4, "total_tokens": 16},
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// LangChainGo's OpenAI provider, given Callbacks, and its OpenAI
// functions agent, against a chat completions endpoint on the loopback:
// each model call is one x.clutch.model_call with the usage, finish
// reason and tool calls the provider reported, and the function call is
// a tool call of the task.
func TestOpenAIProvider(t *testing.T) {
	ctx := context.Background()
	srv := chatServer(t)
	client := srv.Client()
	t.Cleanup(client.CloseIdleConnections)
	llm, err := openai.New(openai.WithBaseURL(srv.URL), openai.WithToken("test"), openai.WithModel("gpt-test"),
		openai.WithHTTPClient(client), openai.WithCallback(langchaingo.Callbacks{Model: "gpt-test", Provider: "openai"}))
	if err != nil {
		t.Fatal(err)
	}
	r, st := newRouter(t, nil)
	ex := agents.NewExecutor(agents.NewOpenAIFunctionsAgent(llm, []tools.Tool{weather(nil)}))
	register(t, r, "agent:forecaster", ex, nil)
	h := submit(t, r, "skill:forecaster", "Weather in Oslo?")
	out, err := h.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := router.ResultAs[string](out); err != nil || res != "answer: sunny in Oslo" {
		t.Fatalf("result %q, %v", res, err)
	}
	msgs := events(t, st, h.Request().RunID)
	wantSeq(t, routertest.Sequence(t, msgs, ""), toolLoopSeq)
	first := payloadOf[router.ModelCall](t, msgs, router.TypeModelCall, 0)
	second := payloadOf[router.ModelCall](t, msgs, router.TypeModelCall, 1)
	if first.Model != "gpt-test" || first.Provider != "openai" || first.FinishReason != "tool_calls" || first.ToolCalls != 1 ||
		first.InputTokens != 12 || first.OutputTokens != 4 || first.TotalTokens != 16 {
		t.Fatalf("first model call %+v", first)
	}
	if second.FinishReason != "stop" || second.ToolCalls != 0 || second.TotalTokens != 16 {
		t.Fatalf("second model call %+v", second)
	}
	if call := payloadOf[toolEvent](t, msgs, protocol.TypeToolCall, 0); string(call.Args) != `"Oslo"` {
		t.Fatalf("tool.call %+v", call)
	}
}
