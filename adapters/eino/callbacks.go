package eino

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/cloudwego/eino/callbacks"
	"github.com/cloudwego/eino/components"
	"github.com/cloudwego/eino/components/model"
	"github.com/cloudwego/eino/components/tool"
	"github.com/cloudwego/eino/compose"
	"github.com/cloudwego/eino/schema"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
)

// runKey is the context key of a run of the bridge.
type runKey struct{}

// toolKey carries a tool call from the OnStart of a tool to its OnEnd or
// OnError; modelKey carries a model call's start time.
type (
	toolKey  struct{}
	modelKey struct{}
)

// run is one run of a graph as a task: the eino callbacks.Handler that
// records its model and tool calls (docs/protocol.md §2.3, §2.3.2), what
// failed first, and its checkpoint.
type run struct {
	t     *router.Task
	model string         // Options.Model
	wg    sync.WaitGroup // goroutines reading a callback's copy of a stream

	mu         sync.Mutex
	failed     *failed            // the first model or tool failure
	checkpoint []byte             // the checkpoint to resume from (CheckPointStore.Get)
	ref        string             // the artifact ref of the last checkpoint stored
	calls      []*router.ToolCall // every tool call started, for closeCalls
}

// failed is the first component failure of a run, which the task's error
// names.
type failed struct {
	tool       bool
	name, call string
	err        error
}

func (rn *run) wait() { rn.wg.Wait() }

// closeCalls gives every tool call of the run that has no outcome yet a
// tool.error INTERNAL, so each tool.call pairs with one outcome
// (docs/protocol.md §2.3.1): eino recovers a tool's panic into the
// graph's error, in ToolsNode's goroutines too, without calling the
// tool's OnError. err is the graph's error (nil after a success). Call it
// once the stream readers are done (wait); a call that has its outcome
// records nothing (router.ToolCall.Fail).
func (rn *run) closeCalls(ctx context.Context, err error) {
	rn.mu.Lock()
	calls := rn.calls
	rn.calls = nil
	rn.mu.Unlock()
	msg := "the tool ended without an outcome"
	if err != nil {
		first, _, _ := strings.Cut(err.Error(), "\n")
		msg += ": " + strings.TrimSpace(first)
	}
	ctx = context.WithoutCancel(ctx)
	for _, c := range calls {
		c.Fail(ctx, router.Fail(protocol.CodeInternal, msg, protocol.CodeInternal.Retryable(), nil))
	}
}

func (rn *run) fail(f *failed) {
	rn.mu.Lock()
	if rn.failed == nil {
		rn.failed = f
	}
	rn.mu.Unlock()
}

func (rn *run) checkpointRef() string {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	return rn.ref
}

// failure is the task's error for the graph's error err (not an
// interrupt): ctx's when the task was cancelled, TOOL_FAILED when a tool
// failed first, DEPENDENCY when the model did, else err itself.
func (rn *run) failure(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	rn.mu.Lock()
	f := rn.failed
	rn.mu.Unlock()
	switch {
	case f == nil:
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		if protocol.CodeOf(err) != protocol.CodeInternal {
			return err // a coded error of the graph keeps its code
		}
		return router.Fail(protocol.CodeInternal, "the eino graph failed: "+err.Error(), protocol.CodeInternal.Retryable(), nil)
	case f.tool:
		ep := protocol.NewErrorPayload(f.err)
		d := map[string]any{"tool": Name, "name": f.name, "cause_code": string(ep.Code)}
		if f.call != "" {
			d["call_id"] = f.call
		}
		return router.Fail(protocol.CodeToolFailed, "tool "+f.name+" failed: "+ep.Message, false, d)
	default:
		ep := protocol.NewErrorPayload(f.err)
		return router.Fail(protocol.CodeDependency, "model "+f.name+" failed: "+ep.Message, protocol.CodeDependency.Retryable(), map[string]any{"model": f.name})
	}
}

// Needed limits the handler to model and tool components, so eino does
// not call it for every node of the graph.
func (rn *run) Needed(_ context.Context, info *callbacks.RunInfo, _ callbacks.CallbackTiming) bool {
	return info != nil && (info.Component == components.ComponentOfChatModel || info.Component == components.ComponentOfTool)
}

// OnStart records a tool.call, or notes when a model call started.
func (rn *run) OnStart(ctx context.Context, info *callbacks.RunInfo, input callbacks.CallbackInput) context.Context {
	switch info.Component {
	case components.ComponentOfChatModel:
		return context.WithValue(ctx, modelKey{}, time.Now())
	case components.ComponentOfTool:
		var args any
		if in := tool.ConvCallbackInput(input); in != nil && in.ArgumentsInJSON != "" {
			if json.Valid([]byte(in.ArgumentsInJSON)) {
				args = json.RawMessage(in.ArgumentsInJSON)
			} else {
				args = in.ArgumentsInJSON
			}
		}
		call, err := rn.t.StartTool(ctx, Name, toolName(info), args)
		if err != nil {
			return ctx // the task ended or ctx is done: nothing to pair
		}
		rn.mu.Lock()
		rn.calls = append(rn.calls, call)
		rn.mu.Unlock()
		return context.WithValue(ctx, toolKey{}, call)
	}
	return ctx
}

// OnEnd records a tool.result or a model call.
func (rn *run) OnEnd(ctx context.Context, info *callbacks.RunInfo, output callbacks.CallbackOutput) context.Context {
	switch info.Component {
	case components.ComponentOfChatModel:
		rn.modelCall(ctx, info, model.ConvCallbackOutput(output), nil)
	case components.ComponentOfTool:
		if call, ok := ctx.Value(toolKey{}).(*router.ToolCall); ok {
			_ = call.Done(context.WithoutCancel(ctx), toolContent(tool.ConvCallbackOutput(output)))
		}
	}
	return ctx
}

// OnError records a tool.error or a failed model call. An interrupt of a
// tool is its tool.error INPUT_REQUIRED: the resumed graph calls it anew.
func (rn *run) OnError(ctx context.Context, info *callbacks.RunInfo, err error) context.Context {
	interrupt := isInterrupt(err)
	switch info.Component {
	case components.ComponentOfChatModel:
		if !interrupt && ctx.Err() == nil {
			rn.fail(&failed{name: rn.modelName(info, nil), err: err})
		}
		rn.modelCall(ctx, info, nil, err)
	case components.ComponentOfTool:
		call, _ := ctx.Value(toolKey{}).(*router.ToolCall)
		if interrupt {
			if call != nil {
				call.Fail(context.WithoutCancel(ctx), router.Fail(protocol.CodeInputRequired, "the tool paused for input", false, map[string]any{"interrupted": true}))
			}
			return ctx
		}
		err = toolCause(err)
		f := &failed{tool: true, name: toolName(info), err: err}
		if call != nil {
			f.call = call.ID()
			call.Fail(context.WithoutCancel(ctx), err)
		}
		if ctx.Err() == nil {
			rn.fail(f)
		}
	}
	return ctx
}

// OnStartWithStreamInput is not needed: models and tools take whole
// inputs.
func (rn *run) OnStartWithStreamInput(ctx context.Context, _ *callbacks.RunInfo, input *schema.StreamReader[callbacks.CallbackInput]) context.Context {
	input.Close()
	return ctx
}

// OnEndWithStreamOutput reads the handler's copy of a streamed model or
// tool output to its end, in a goroutine the run waits for, and records
// the call as OnEnd does with the joined output.
func (rn *run) OnEndWithStreamOutput(ctx context.Context, info *callbacks.RunInfo, output *schema.StreamReader[callbacks.CallbackOutput]) context.Context {
	rn.wg.Go(func() {
		defer output.Close()
		var (
			msgs []*schema.Message
			last *model.CallbackOutput
			text strings.Builder
		)
		for {
			c, err := output.Recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rn.OnError(ctx, info, err)
				return
			}
			switch info.Component {
			case components.ComponentOfChatModel:
				if o := model.ConvCallbackOutput(c); o != nil {
					last = o
					if o.Message != nil {
						msgs = append(msgs, o.Message)
					}
				}
			case components.ComponentOfTool:
				if o := tool.ConvCallbackOutput(c); o != nil {
					text.WriteString(o.Response)
				}
			}
		}
		if info.Component == components.ComponentOfTool {
			rn.OnEnd(ctx, info, &tool.CallbackOutput{Response: text.String()})
			return
		}
		out := &model.CallbackOutput{}
		if last != nil {
			*out = *last
		}
		if len(msgs) > 0 {
			if m, err := schema.ConcatMessages(msgs); err == nil {
				out.Message = m
			}
		}
		rn.modelCall(ctx, info, out, nil)
	})
	return ctx
}

// modelCall records one model call (x.clutch.model_call): out when it
// ended, err when it failed.
func (rn *run) modelCall(ctx context.Context, info *callbacks.RunInfo, out *model.CallbackOutput, err error) {
	mc := router.ModelCall{Model: rn.modelName(info, out), Provider: strings.ToLower(info.Type)}
	if mc.Provider == strings.ToLower(mc.Model) {
		mc.Provider = ""
	}
	if start, ok := ctx.Value(modelKey{}).(time.Time); ok {
		mc.DurationMS = time.Since(start).Milliseconds()
	}
	if err != nil {
		ep := protocol.NewErrorPayload(err)
		if ep.Code == protocol.CodeInternal { // the model's own failure, not a cancel
			ep = protocol.ErrorPayload{Code: protocol.CodeDependency, Message: ep.Message, Retryable: protocol.CodeDependency.Retryable()}
		}
		mc.Error = &ep
	}
	if out != nil {
		usage := out.TokenUsage
		if m := out.Message; m != nil {
			mc.ToolCalls = len(m.ToolCalls)
			if rm := m.ResponseMeta; rm != nil {
				mc.FinishReason = rm.FinishReason
				if usage == nil && rm.Usage != nil {
					usage = &model.TokenUsage{PromptTokens: rm.Usage.PromptTokens, CompletionTokens: rm.Usage.CompletionTokens, TotalTokens: rm.Usage.TotalTokens}
				}
			}
		}
		if usage != nil {
			mc.InputTokens, mc.OutputTokens, mc.TotalTokens = usage.PromptTokens, usage.CompletionTokens, usage.TotalTokens
		}
	}
	_, _ = rn.t.RecordModelCall(context.WithoutCancel(ctx), mc) // an ended task records nothing more
}

// modelName is the model's name: the one its config states, else
// Options.Model, the node's name, its type, "chat_model".
func (rn *run) modelName(info *callbacks.RunInfo, out *model.CallbackOutput) string {
	if out != nil && out.Config != nil && out.Config.Model != "" {
		return out.Config.Model
	}
	for _, s := range []string{rn.model, info.Name, info.Type} {
		if s != "" {
			return s
		}
	}
	return "chat_model"
}

// toolName is the tool's name as the model called it.
func toolName(info *callbacks.RunInfo) string {
	if info.Name != "" {
		return info.Name
	}
	if info.Type != "" {
		return info.Type
	}
	return "tool"
}

// toolContent is what a tool returned, as a tool.result's content.
func toolContent(o *tool.CallbackOutput) any {
	if o == nil {
		return nil
	}
	if o.ToolOutput != nil {
		return o.ToolOutput
	}
	return o.Response
}

// toolCause is the error a tool's function returned, without the words
// eino's function tools (components/tool/utils) wrap it in.
func toolCause(err error) error {
	if u := errors.Unwrap(err); u != nil && strings.HasPrefix(err.Error(), "[LocalFunc] failed to invoke tool") {
		return u
	}
	return err
}

// isInterrupt reports whether err is an eino interrupt, not a failure.
func isInterrupt(err error) bool {
	if _, ok := compose.IsInterruptRerunError(err); ok {
		return true
	}
	_, ok := compose.ExtractInterruptInfo(err)
	return ok
}
