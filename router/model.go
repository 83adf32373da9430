package router

import (
	"context"

	"github.com/clutchprotocol/clutch/protocol"
)

// taskKey is the context key under which a handler's context carries its
// Task (see TaskFrom).
type taskKey struct{}

// TaskFrom returns the task whose handler was given ctx, or a context
// derived from it, and nil for any other context. It lets code a handler
// calls without passing the Task along — an agent framework's tool, its
// callbacks — record events of the task and delegate subtasks from it.
func TaskFrom(ctx context.Context) *Task {
	t, _ := ctx.Value(taskKey{}).(*Task)
	return t
}

// TypeModelCall is the extension event that records one call of a
// language model by a task's agent (docs/protocol.md §2.3.2): payload a
// [ModelCall], stored when the call has ended.
const TypeModelCall protocol.Type = "x.clutch.model_call"

// ModelCall is the payload of a TypeModelCall event: which model was
// called, what it used and how the call ended. Every member but Model may
// be left zero when the model does not say.
type ModelCall struct {
	// Model names the model ("gpt-4o", "gemini-2.5-flash", a fake's name).
	Model string `json:"model"`
	// Provider names who serves it ("openai", "googleai", "fake"); "" when
	// not known.
	Provider string `json:"provider,omitempty"`
	// InputTokens, OutputTokens and TotalTokens are the usage the model
	// reported.
	InputTokens  int `json:"input_tokens,omitzero"`
	OutputTokens int `json:"output_tokens,omitzero"`
	TotalTokens  int `json:"total_tokens,omitzero"`
	// FinishReason is why the model stopped ("stop", "tool_calls",
	// "length"), as the model said it.
	FinishReason string `json:"finish_reason,omitempty"`
	// ToolCalls counts the tool calls the model asked for.
	ToolCalls int `json:"tool_calls,omitzero"`
	// DurationMS is how long the call took, in milliseconds.
	DurationMS int64 `json:"duration_ms,omitzero"`
	// Error is how the call failed (docs/protocol.md §5.4); nil when it
	// did not.
	Error *protocol.ErrorPayload `json:"error,omitempty"`
}

// RecordModelCall stores mc as a TypeModelCall event of the task, from its
// agent, and returns it. Model must not be empty.
func (t *Task) RecordModelCall(ctx context.Context, mc ModelCall) (*protocol.Message, error) {
	if mc.Model == "" {
		return nil, wrap(ErrInvalidRequest, "a model call needs the model's name", nil)
	}
	return t.Emit(ctx, TypeModelCall, "", mc)
}
