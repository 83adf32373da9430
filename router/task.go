package router

import (
	"context"
	"encoding/json"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
)

// Task is a handler's view of the task it runs.
type Task struct {
	r       *Router
	ts      *taskState
	agent   *registry.Agent
	attempt int

	// Asking (ask.go).
	asked     int                // questions Ask was called for in this run of the handler
	answers   []json.RawMessage  // the recorded answers, read on the first Ask
	pending   *protocol.Question // the question this run stored; the task waits for it
	pendingEv *protocol.Message  // its task.question
	edited    json.RawMessage    // the input as a person edited it (RequireApproval), nil when not
}

// Request returns the task.request. Do not modify it.
func (t *Task) Request() *protocol.Message { return t.ts.req }

// ID returns the task id.
func (t *Task) ID() string { return t.ts.req.TaskID }

// RunID returns the run id.
func (t *Task) RunID() string { return t.ts.req.RunID }

// Agent returns the id of the agent running the task.
func (t *Task) Agent() string { return t.agent.ID() }

// Card returns the AgentCard of the agent running the task. Do not modify
// it.
func (t *Task) Card() *protocol.AgentCard { return t.agent.Card() }

// Attempt returns the attempt number, 1 for the first (docs/protocol.md §5.3).
func (t *Task) Attempt() int { return t.attempt }

// Input decodes the request's payload into a T, strictly (see
// protocol.DecodePayload).
func Input[T any](t *Task) (T, error) {
	if t.edited != nil {
		// A person edited the input before approving (RequireApproval).
		return protocol.DecodePayload[T](&protocol.Message{Payload: t.edited})
	}
	return protocol.DecodePayload[T](t.ts.req)
}

// Progress stores a task.progress event with payload (docs/protocol.md §2.1).
func (t *Task) Progress(ctx context.Context, payload any) error {
	if t.ts.finished.Load() {
		return ErrTaskEnded
	}
	m := t.r.event(t.ts, protocol.TypeTaskProgress, t.agent.ID(), nil)
	m.Attempt = t.attempt
	if err := m.SetPayload(payload); err != nil {
		return err
	}
	t.r.observe(t.ts, Step{Kind: StepEvent, Event: m})
	return t.r.appendLive(ctx, t.ts, m)
}

// Emit stores another event of the task from the running agent, such as a
// tool.call or tool.result (docs/protocol.md §2.3). Its thread, run, task, sender
// and attempt are set by the router; the type, payload and contract are
// the caller's. It is addressed to the requester, except tool.* events,
// which have no recipient agent (the tool server is named in the payload).
//
// A call and its outcome are best recorded with [CallTool], which gives
// both one call id. Emit holds tool events to docs/protocol.md §2.3.1 as
// far as it can: a tool.call whose payload object states no call_id gets
// its own event id as call_id (the id its outcome must state); a call id
// that is stated but is not a string of 1 to protocol.MaxIDLength bytes is
// refused (see protocol.CheckToolCallID); a tool.result or tool.error that
// states none is stored as it is, the shape of events written before the
// rule.
func (t *Task) Emit(ctx context.Context, typ protocol.Type, payloadType string, payload any) (*protocol.Message, error) {
	m, err := t.newEvent(typ, payloadType)
	if err != nil {
		return nil, err
	}
	if err := m.SetPayload(payload); err != nil {
		return nil, err
	}
	if err := stampCallID(m); err != nil {
		return nil, err
	}
	if err := t.store(ctx, m); err != nil {
		return nil, err
	}
	return m, nil
}

// newEvent starts an event of the task from the running agent (see Emit).
func (t *Task) newEvent(typ protocol.Type, payloadType string) (*protocol.Message, error) {
	if t.ts.finished.Load() {
		return nil, ErrTaskEnded
	}
	m := t.r.event(t.ts, typ, t.agent.ID(), nil)
	if typ.Family() == "tool" {
		// A tool server is not an agent: it is named in the payload.
		m.To = []protocol.Participant{}
	}
	m.Attempt = t.attempt
	m.PayloadType = payloadType
	m.SchemaRef = protocol.SchemaRefFor(payloadType)
	return m, nil
}

// store shows m to the Observer (which may stamp its trace), encodes it
// and appends it.
func (t *Task) store(ctx context.Context, m *protocol.Message) error {
	t.r.observe(t.ts, Step{Kind: StepEvent, Event: m})
	if _, err := protocol.Encode(m); err != nil {
		return err
	}
	return t.r.appendLive(ctx, t.ts, m)
}

// NewSubtask returns a task.request for a subtask of t: a new task id,
// parent_task_id set to t's, the same run and thread, from t's agent,
// addressed to the router. Set Requires, Prefers or To, then Delegate it.
func (t *Task) NewSubtask(payloadType string, payload any) (*protocol.Message, error) {
	if err := checkPayloadType(payloadType); err != nil {
		return nil, err
	}
	req := t.ts.req
	m := t.r.ids.NewMessage(protocol.TypeTaskRequest, t.agent.ID())
	m.ThreadID, m.RunID, m.ParentTaskID, m.Domain = req.ThreadID, req.RunID, req.TaskID, req.Domain
	if tr := t.Trace(); tr != nil { // the delegating attempt's span is the subtask's parent
		c := *tr
		m.Trace = &c
	}
	m.To = []protocol.Participant{{AgentID: t.r.opts.AgentID}}
	m.PayloadType = payloadType
	m.SchemaRef = protocol.SchemaRefFor(payloadType)
	if err := m.SetPayload(payload); err != nil {
		return nil, err
	}
	return m, nil
}

// Delegate submits sub as a subtask of t and blocks until it ends (docs/protocol.md
// §1.3). sub must be a task.request of t's run whose parent_task_id is t
// (NewSubtask makes one). The subtask is cancelled with t. A subtask routed
// back to an agent already on t's delegation chain is refused with CYCLE
// (CLowl E015). The error is ctx's, ErrCapacity when the router holds
// Options.MaxInFlight tasks, or the subtask's failure as a
// *protocol.ErrorPayload.
func (t *Task) Delegate(ctx context.Context, sub *protocol.Message) (*Outcome, error) {
	if sub == nil || sub.ParentTaskID != t.ID() || sub.RunID != t.RunID() {
		return nil, wrap(ErrInvalidRequest, "a subtask needs parent_task_id "+t.ID()+" and run_id "+t.RunID(), nil)
	}
	h, err := t.r.submit(ctx, sub, t.ts)
	if err != nil {
		return nil, err
	}
	return h.Wait(ctx)
}

// PutArtifact stores data in the artifact store and returns its ref, for a
// Result's attachments (docs/protocol.md §8.2).
func (t *Task) PutArtifact(ctx context.Context, mediaType string, data []byte) (string, error) {
	return t.r.st.PutArtifact(ctx, mediaType, data)
}
