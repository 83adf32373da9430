package router

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"

	"github.com/clutchprotocol/clutch/protocol"
)

// CallTool runs fn as one call of a tool by the task's agent and records
// the call and its outcome under one call id (docs/protocol.md §2.3,
// §2.3.1):
//
//  1. a tool.call {call_id, tool, name, args}, whose call_id is the
//     event's own id;
//  2. fn(ctx);
//  3. a tool.result {call_id, tool, name, content}, content being what fn
//     returned; or, when fn fails, a tool.error holding the wire error of
//     fn's error (protocol.NewErrorPayload: a Fail keeps its code,
//     retryability and details; a context error is CANCELLED or TIMEOUT),
//     with call_id, tool and name set in its details.
//
// tool names where the tool lives, as the payloads of §2.3 do
// ("mcp:browser"; "" leaves it out); name is the tool itself and must not
// be empty; args is anything that encodes as JSON (nil leaves it out).
// CallTool returns what fn returned, and fn's error as it is, so a
// handler can return it.
//
// fn does not run when ctx has ended already (the error is ctx's) or when
// the tool.call cannot be stored (the task has ended: ErrTaskEnded); then
// nothing is recorded. The outcome is stored even when ctx ends during the
// call. When it cannot be stored (the task ended meanwhile, or the store
// refused a result, too large say), fn's error is returned unchanged, or,
// after a success, fn's result with the store's error; a refused result
// is recorded as a tool.error with the store's error instead, so the call
// still has an outcome. A panic in fn is recorded as a tool.error INTERNAL
// and goes on up (the router ends the attempt with INTERNAL).
//
// The Observer sees the tool.call and its outcome as it sees any event of
// the task (package telemetry makes an execute_tool span of the pair).
func CallTool[T any](ctx context.Context, t *Task, tool, name string, args any, fn func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	if t == nil || fn == nil || name == "" {
		return zero, wrap(ErrInvalidRequest, "CallTool needs a task, a tool name and a func", nil)
	}
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	call, err := t.StartTool(ctx, tool, name, args)
	if err != nil {
		return zero, err
	}
	// The outcome is the call's even when ctx ended: it is stored anyway.
	rctx := context.WithoutCancel(ctx)
	defer func() {
		if p := recover(); p != nil {
			call.failPayload(rctx, &protocol.ErrorPayload{Code: protocol.CodeInternal, Message: fmt.Sprintf("the tool panicked: %v", p), Retryable: protocol.CodeInternal.Retryable()})
			panic(p)
		}
	}()
	out, err := fn(ctx)
	if err != nil {
		call.Fail(rctx, err)
		return out, err
	}
	if rerr := call.Done(rctx, out); rerr != nil {
		return out, fmt.Errorf("router: recording the tool.result: %w", rerr)
	}
	return out, nil
}

// ToolCall is a tool call whose tool.call is stored and whose outcome is
// not yet: [Task.StartTool] returns it, and [ToolCall.Done] or
// [ToolCall.Fail] records its outcome, once.
type ToolCall struct {
	t              *Task
	id, tool, name string
	ended          atomic.Bool
}

// The payloads CallTool writes (docs/protocol.md §2.3, §2.3.1).
type (
	toolCallPayload struct {
		CallID string `json:"call_id"`
		Tool   string `json:"tool,omitempty"`
		Name   string `json:"name"`
		Args   any    `json:"args,omitzero"`
	}
	toolResultPayload struct {
		CallID  string `json:"call_id"`
		Tool    string `json:"tool,omitempty"`
		Name    string `json:"name"`
		Content any    `json:"content"`
	}
)

// StartTool records a tool.call of the task's agent (docs/protocol.md
// §2.3) and returns the call, whose outcome the caller records with
// [ToolCall.Done] or [ToolCall.Fail] under the same call id. It is for
// code that learns of a call's start and its end at two moments — the
// callbacks of an agent framework; code that runs the tool itself uses
// [CallTool], which records both. tool, name and args are as CallTool's.
// Nothing is stored when ctx has ended or the task has ended
// (ErrTaskEnded).
func (t *Task) StartTool(ctx context.Context, tool, name string, args any) (*ToolCall, error) {
	if t == nil || name == "" {
		return nil, wrap(ErrInvalidRequest, "StartTool needs a task and a tool name", nil)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m, err := t.newEvent(protocol.TypeToolCall, "")
	if err != nil {
		return nil, err
	}
	if err := m.SetPayload(toolCallPayload{CallID: m.ID, Tool: tool, Name: name, Args: args}); err != nil {
		return nil, err
	}
	if err := t.store(ctx, m); err != nil {
		return nil, err
	}
	return &ToolCall{t: t, id: m.ID, tool: tool, name: name}, nil
}

// ID returns the call id: the id of the call's tool.call event.
func (c *ToolCall) ID() string { return c.id }

// Done records the call's tool.result {call_id, tool, name, content}.
// When the store refuses it (too large, say), a tool.error with the
// store's error takes its place and that error is returned; ErrTaskEnded
// when the task ended meanwhile. A call has one outcome: Done or Fail
// after the first gives ErrInvalidRequest and stores nothing.
func (c *ToolCall) Done(ctx context.Context, content any) error {
	if !c.ended.CompareAndSwap(false, true) {
		return wrap(ErrInvalidRequest, "tool call "+c.id+" has its outcome already", nil)
	}
	err := c.record(ctx, protocol.TypeToolResult, toolResultPayload{CallID: c.id, Tool: c.tool, Name: c.name, Content: content})
	if err != nil && !errors.Is(err, ErrTaskEnded) {
		ep := protocol.NewErrorPayload(err)
		c.store(ctx, &ep)
	}
	return err
}

// Fail records the call's tool.error: the wire error of err
// (protocol.NewErrorPayload: a Fail keeps its code, retryability and
// details; a context error is CANCELLED or TIMEOUT) with call_id, tool and
// name in its details. A tool.error that cannot be stored is dropped, and
// a call that has its outcome already records nothing: the caller returns
// the tool's own error either way.
func (c *ToolCall) Fail(ctx context.Context, err error) {
	ep := protocol.NewErrorPayload(err)
	c.failPayload(ctx, &ep)
}

func (c *ToolCall) failPayload(ctx context.Context, ep *protocol.ErrorPayload) {
	if c.ended.CompareAndSwap(false, true) {
		c.store(ctx, ep)
	}
}

// store stores ep as the call's tool.error.
func (c *ToolCall) store(ctx context.Context, ep *protocol.ErrorPayload) {
	details := make(map[string]any, len(ep.Details)+3)
	maps.Copy(details, ep.Details)
	details["call_id"], details["name"] = c.id, c.name
	if c.tool != "" {
		details["tool"] = c.tool
	}
	p := *ep
	p.Details = details
	_ = c.record(ctx, protocol.TypeToolError, &p)
}

func (c *ToolCall) record(ctx context.Context, typ protocol.Type, payload any) error {
	m, err := c.t.newEvent(typ, "")
	if err != nil {
		return err
	}
	if err := m.SetPayload(payload); err != nil {
		return err
	}
	return c.t.store(ctx, m)
}

// stampCallID holds a tool event Emit is given to docs/protocol.md §2.3.1
// (see Emit).
func stampCallID(m *protocol.Message) error {
	err := protocol.CheckToolCallID(m)
	if err == nil {
		return nil
	}
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		return err
	}
	switch {
	case pe.Code == protocol.CodeMissingField && m.Type == protocol.TypeToolCall:
		return m.SetPayload(json.RawMessage(withCallID(m.Payload, m.ID)))
	case pe.Code == protocol.CodeMissingField, pe.Path == "/payload", pe.Path == "/payload/details":
		return nil // states no call id: an event of the old shape
	}
	return err
}

// withCallID returns the JSON object p with the member call_id: id first.
func withCallID(p []byte, id string) []byte {
	i := bytes.IndexByte(p, '{') + 1 // p is an object: '{' is its first byte but spaces
	q, _ := json.Marshal(id)
	b := make([]byte, 0, len(p)+len(q)+12)
	b = append(append(b, `{"call_id":`...), q...)
	if rest := bytes.TrimLeft(p[i:], " \t\r\n"); len(rest) > 0 && rest[0] != '}' {
		b = append(b, ',')
	}
	return append(b, p[i:]...)
}
