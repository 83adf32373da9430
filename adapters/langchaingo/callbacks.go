package langchaingo

import (
	"context"
	"reflect"
	"sync"
	"time"

	"github.com/tmc/langchaingo/callbacks"
	"github.com/tmc/langchaingo/llms"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
)

// Callbacks is the bridge's callbacks.Handler: give it to a model at its
// construction (openai.WithCallback(&langchaingo.Callbacks{Model:
// "gpt-4o", Provider: "openai"})) and every call of that model inside a
// Clutch task (router.TaskFrom(ctx) != nil) is recorded as one
// x.clutch.model_call of the task (docs/protocol.md §2.3.2) when it ends
// (HandleLLMGenerateContentEnd or HandleLLMError). One value serves any
// number of tasks at once: it finds the task in the context the model is
// called with, and keeps nothing itself. Outside a task it does nothing.
//
// Its other methods do nothing: tool calls are recorded by WrapTool
// (HandleToolStart and HandleToolEnd name no call, so a start could not
// be paired with its end exactly), streamed chunks by Options.Stream.
type Callbacks struct {
	callbacks.SimpleHandler
	// Model names the model in the events when its response does not
	// (GenerationInfo "model"). Default "unknown".
	Model string
	// Provider names who serves it ("openai", "ollama"); "" when not
	// known.
	Provider string
}

var _ callbacks.Handler = Callbacks{}

// HandleLLMGenerateContentStart notes when the model call started.
func (c Callbacks) HandleLLMGenerateContentStart(ctx context.Context, _ []llms.MessageContent) {
	if rn := runFrom(ctx); rn != nil {
		rn.mu.Lock()
		rn.starts = append(rn.starts, time.Now())
		rn.mu.Unlock()
	}
}

// HandleLLMGenerateContentEnd records the model call: its model,
// provider, usage, finish reason, the tool calls it asked for and how
// long it took.
func (c Callbacks) HandleLLMGenerateContentEnd(ctx context.Context, res *llms.ContentResponse) {
	t := router.TaskFrom(ctx)
	if t == nil || res == nil { // Mistral ends a failed call with nil, then HandleLLMError
		return
	}
	rn := runFrom(ctx)
	mc := modelCallOf(c.model(res), c.Provider, res, rn.took())
	if rn != nil {
		_ = rn.flush(ctx) // the call's streamed text goes before its record
	}
	_, _ = t.RecordModelCall(context.WithoutCancel(ctx), mc)
}

// HandleLLMError records the failed model call with its error, and notes
// the failure so the task's error is DEPENDENCY.
func (c Callbacks) HandleLLMError(ctx context.Context, err error) {
	t := router.TaskFrom(ctx)
	if t == nil || err == nil {
		return
	}
	rn := runFrom(ctx)
	mc := modelCallOf(c.model(nil), c.Provider, nil, rn.took())
	ep := protocol.NewErrorPayload(err)
	mc.Error = &ep
	if rn != nil && ctx.Err() == nil {
		rn.fail(&failure{name: mc.Model, msg: err.Error(), code: ep.Code})
	}
	_, _ = t.RecordModelCall(context.WithoutCancel(ctx), mc)
}

// model is the model's name: the response's GenerationInfo "model", else
// c.Model, else "unknown".
func (c Callbacks) model(res *llms.ContentResponse) string {
	if res != nil {
		for _, ch := range res.Choices {
			if ch == nil {
				continue
			}
			if m, ok := ch.GenerationInfo["model"].(string); ok && m != "" {
				return m
			}
		}
	}
	if c.Model != "" {
		return c.Model
	}
	return "unknown"
}

// modelCallOf is the x.clutch.model_call payload of a model's response:
// usage from the first choice's GenerationInfo that states it
// (InputTokens or PromptTokens, OutputTokens or CompletionTokens,
// TotalTokens — the names LangChainGo's providers use — a missing total
// being the sum), the first choice's StopReason as the finish reason, the
// tool calls of every choice (a legacy FuncCall counts as one), and took
// as the duration. res may be nil.
func modelCallOf(model, provider string, res *llms.ContentResponse, took time.Duration) router.ModelCall {
	mc := router.ModelCall{Model: model, Provider: provider, DurationMS: took.Milliseconds()}
	if res == nil {
		return mc
	}
	usage := false
	for i, ch := range res.Choices {
		if ch == nil {
			continue
		}
		if i == 0 {
			mc.FinishReason = ch.StopReason
		}
		n := len(ch.ToolCalls)
		if n == 0 && ch.FuncCall != nil {
			n = 1
		}
		mc.ToolCalls += n
		if usage {
			continue
		}
		in, okIn := count(ch.GenerationInfo, "InputTokens", "PromptTokens")
		out, okOut := count(ch.GenerationInfo, "OutputTokens", "CompletionTokens")
		total, okTotal := count(ch.GenerationInfo, "TotalTokens")
		if usage = okIn || okOut || okTotal; usage {
			if !okTotal {
				total = in + out
			}
			mc.InputTokens, mc.OutputTokens, mc.TotalTokens = in, out, total
		}
	}
	return mc
}

// count is the first of keys in info that holds a number.
func count(info map[string]any, keys ...string) (int, bool) {
	for _, k := range keys {
		switch v := info[k].(type) {
		case int:
			return v, true
		case int32:
			return int(v), true
		case int64:
			return int(v), true
		case float64:
			return int(v), true
		}
	}
	return 0, false
}

// runKey is the context key of a run of the bridge.
type runKey struct{}

// run is one run of a chain by Handle: what the callbacks, the wrapped
// tools and the streaming func share.
type run struct {
	text *router.TextStream // the streamed text, safe for the concurrent callbacks

	mu     sync.Mutex
	starts []time.Time // of model calls that have not ended, oldest first
	failed *failure    // the first tool or model that failed
}

// failure is a tool's or a model's failure in a run.
type failure struct {
	tool            bool
	name, call, msg string
	code            protocol.Code
}

func runFrom(ctx context.Context) *run {
	rn, _ := ctx.Value(runKey{}).(*run)
	return rn
}

// took is how long the oldest model call that has not ended has taken; 0
// for a nil run or when no start was noted. LangChainGo's callbacks name
// no call, so calls that overlap in one run are paired in order.
func (rn *run) took() time.Duration {
	if rn == nil {
		return 0
	}
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if len(rn.starts) == 0 {
		return 0
	}
	start := rn.starts[0]
	rn.starts = rn.starts[1:]
	return time.Since(start)
}

// fail notes f when it is the run's first failure.
func (rn *run) fail(f *failure) {
	rn.mu.Lock()
	if rn.failed == nil {
		rn.failed = f
	}
	rn.mu.Unlock()
}

// Progress is the payload of the task.progress events of a streamed run:
// the text the model streamed since the last one.
type Progress = router.TextProgress

// stream is the run's streaming func (chains.WithStreamingFunc): it
// gathers chunks and stores a task.progress once ProgressBytes are
// there. Its error (the task has ended) stops the model's stream.
func (rn *run) stream(ctx context.Context, chunk []byte) error {
	return rn.text.Write(ctx, string(chunk))
}

// flush stores what is left of the streamed text.
func (rn *run) flush(ctx context.Context) error {
	return rn.text.Flush(ctx)
}

// isNil reports whether v is nil or an interface holding a nil pointer.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Func, reflect.Interface, reflect.Chan:
		return rv.IsNil()
	}
	return false
}
