package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The tool names of the server surface.
const (
	ToolListAgents       = "list_agents"
	ToolListPayloadTypes = "list_payload_types"
	ToolSubmitTask       = "submit_task"
	ToolWaitTask         = "wait_task"
	ToolCancelTask       = "cancel_task"
	ToolGetRunEvents     = "get_run_events"
	ToolGetTaskTree      = "get_task_tree"
	ToolAnswerQuestion   = "answer_question"
)

type listAgentsIn struct {
	Capability string `json:"capability,omitempty" jsonschema:"only agents with this capability id (e.g. skill:research)"`
}

// AgentView is one agent in list_agents.
type AgentView struct {
	AgentID      string                 `json:"agent_id"`
	Display      *protocol.Display      `json:"display,omitempty"`
	Capabilities []protocol.Capability  `json:"capabilities"`
	Limits       *protocol.Limits       `json:"limits,omitempty"`
	Security     *protocol.CardSecurity `json:"security,omitempty"`
	Online       bool                   `json:"online"`
	InFlight     int                    `json:"in_flight"`
}

type listTypesIn struct {
	Prefix string `json:"prefix,omitempty" jsonschema:"only payload types starting with this (e.g. research.)"`
}

// PayloadTypeView is one payload type in list_payload_types.
type PayloadTypeView struct {
	PayloadType string          `json:"payload_type"`
	SchemaRef   string          `json:"schema_ref"`
	Schema      json.RawMessage `json:"schema"`
}

type submitIn struct {
	PayloadType    string         `json:"payload_type" jsonschema:"the payload's contract, e.g. research.query.v1 (see list_payload_types)"`
	Payload        map[string]any `json:"payload" jsonschema:"the task's input, valid against the payload type's schema"`
	Requires       []string       `json:"requires,omitempty" jsonschema:"capability ids the agent must have, all of them (e.g. skill:research)"`
	Prefers        []string       `json:"prefers,omitempty" jsonschema:"preferences that raise an agent's score (tag:x, domain:x, mcp:x, skill:x)"`
	Domain         string         `json:"domain,omitempty" jsonschema:"the problem space, e.g. research"`
	To             []string       `json:"to,omitempty" jsonschema:"agent ids to send the task to directly, skipping scoring"`
	ToolAllowlist  []string       `json:"tool_allowlist,omitempty" jsonschema:"the only tool servers the task may use (e.g. mcp:browser)"`
	IdempotencyKey string         `json:"idempotency_key,omitempty" jsonschema:"retrying with the same key never runs the task twice"`
	WaitSec        *float64       `json:"wait_sec,omitempty" jsonschema:"seconds to wait for the outcome; 0 returns at once; default 60"`
}

type waitIn struct {
	TaskID  string   `json:"task_id" jsonschema:"the task to wait for"`
	WaitSec *float64 `json:"wait_sec,omitempty" jsonschema:"seconds to wait; default 60"`
}

type answerIn struct {
	QuestionID string   `json:"question_id" jsonschema:"the question the task waits on (TaskView.question.question_id)"`
	Value      any      `json:"value" jsonschema:"the answer: one of the choices, a value of the question's schema, or for an approval {decision: approve|reject|edit, reason?, arguments?}"`
	WaitSec    *float64 `json:"wait_sec,omitempty" jsonschema:"seconds to wait for the outcome after answering; default 60"`
}

type cancelIn struct {
	TaskID string `json:"task_id" jsonschema:"the task to cancel, with its subtasks"`
	Reason string `json:"reason,omitempty" jsonschema:"why, recorded in the task.cancel event"`
}

type runEventsIn struct {
	RunID      string `json:"run_id" jsonschema:"the run to read"`
	TaskID     string `json:"task_id,omitempty" jsonschema:"only this task's events"`
	TypePrefix string `json:"type_prefix,omitempty" jsonschema:"only types starting with this, e.g. task. or tool."`
	AfterSeq   uint64 `json:"after_seq,omitempty" jsonschema:"only events after this seq (resume with next_after_seq)"`
	Limit      int    `json:"limit,omitempty" jsonschema:"at most this many events (default 100, at most 1000)"`
}

type treeIn struct {
	RunID string `json:"run_id" jsonschema:"the run whose task tree to rebuild"`
}

// TaskView is the state of a task in the results of submit_task,
// wait_task and cancel_task.
type TaskView struct {
	TaskID   string `json:"task_id"`
	RunID    string `json:"run_id"`
	ThreadID string `json:"thread_id"`
	// Status is "running", "question" while the task waits for an answer
	// (Question), or the type of the terminal event without its "task."
	// prefix: "result", "error", "cancel", "timeout".
	Status string `json:"status"`
	// Question is what the task waits on (docs/protocol.md §2.7): answer it
	// with answer_question.
	Question    *protocol.Question     `json:"question,omitempty"`
	Agent       string                 `json:"agent,omitempty"`
	PayloadType string                 `json:"payload_type,omitempty"`
	Result      json.RawMessage        `json:"result,omitempty"`
	Error       *protocol.ErrorPayload `json:"error,omitempty"`
	// Next says what to do while the task runs: "call_wait_task", or
	// "call_answer_question" while it waits for an answer.
	Next string `json:"next,omitempty"`
}

// EventView is one event in get_run_events.
type EventView struct {
	Seq     uint64          `json:"seq"`
	Message json.RawMessage `json:"message"`
}

// TaskTreeNode is one task in get_task_tree.
type TaskTreeNode struct {
	TaskID      string                 `json:"task_id"`
	Agent       string                 `json:"agent,omitempty"`
	State       protocol.Type          `json:"state"`
	Attempts    int                    `json:"attempts"`
	PayloadType string                 `json:"payload_type,omitempty"`
	Reason      string                 `json:"reason,omitempty"` // the last routing decision's reason
	Error       *protocol.ErrorPayload `json:"error,omitempty"`
	Children    []*TaskTreeNode        `json:"children,omitempty"`
}

func (s *Server) addTools() error {
	return errors.Join(
		addTool(s, ToolListAgents, "List agents", "Lists the team's agents with their capabilities, limits, liveness and load.", nil, s.listAgents),
		addTool(s, ToolListPayloadTypes, "List payload types", "Lists the payload types (structured contracts) with their JSON Schemas.", nil, s.listPayloadTypes),
		addTool(s, ToolSubmitTask, "Submit a task", "Submits a task to the team and waits for its outcome (progress notifications while it runs). The router picks the agent.", nil, s.submitTask),
		addTool(s, ToolWaitTask, "Wait for a task", "Waits for a task's outcome (progress notifications while it runs).", nil, s.waitTask),
		addTool(s, ToolCancelTask, "Cancel a task", "Cancels a task submitted through this server, with its subtasks.", nil, s.cancelTask),
		addTool(s, ToolGetRunEvents, "Read a run's events", "Reads a run's events in order (task lifecycle, routing decisions, tool calls), paged by seq.", nil, s.getRunEvents),
		addTool(s, ToolGetTaskTree, "Get a run's task tree", "Rebuilds a run's task tree: tasks, subtasks, agents, states, outcomes.", nil, s.getTaskTree),
		addTool(s, ToolAnswerQuestion, "Answer a task's question", "Answers the question a task waits on (status \"question\"), as the caller, and waits for what follows.", nil, s.answerQuestion),
	)
}

func (s *Server) listAgents(_ context.Context, _ *sdk.CallToolRequest, in listAgentsIn, info *callInfo) (any, *toolErr) {
	if !info.caller.Has(auth.ScopeAgents) {
		return nil, forbidden("list agents")
	}
	reg := s.reg
	agents := []AgentView{}
	for _, id := range s.opts.Expose {
		a, ok := reg.Get(id)
		if !ok {
			continue
		}
		card := a.Card()
		if in.Capability != "" {
			if _, ok := card.Capability(in.Capability); !ok {
				continue
			}
		}
		agents = append(agents, AgentView{AgentID: card.AgentID, Display: card.Display, Capabilities: card.Capabilities,
			Limits: card.Limits, Security: card.Security, Online: reg.Online(a), InFlight: a.InFlight()})
	}
	return map[string]any{"agents": agents}, nil
}

func (s *Server) listPayloadTypes(_ context.Context, _ *sdk.CallToolRequest, in listTypesIn, _ *callInfo) (any, *toolErr) {
	out := []PayloadTypeView{}
	var list []*schema.Schema
	if s.schemas != nil {
		list = s.schemas.List()
	}
	for _, sc := range list {
		if !strings.HasPrefix(sc.PayloadType(), in.Prefix) {
			continue
		}
		out = append(out, PayloadTypeView{PayloadType: sc.PayloadType(), SchemaRef: sc.Ref(), Schema: sc.JSON()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PayloadType < out[j].PayloadType })
	return map[string]any{"payload_types": out}, nil
}

func (s *Server) waitFor(sec *float64) time.Duration {
	if sec == nil {
		return s.opts.DefaultWait
	}
	return min(s.opts.MaxWait, max(0, time.Duration(*sec*float64(time.Second))))
}

// forbidden is the error of a call the caller's scopes do not allow.
func forbidden(what string) *toolErr {
	return newToolErr(protocol.CodePolicyDenied, ActionNone, "the caller may not %s", what)
}

// controlFree reports whether s has no control characters.
func controlFree(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) })
}

func (s *Server) submitTask(ctx context.Context, req *sdk.CallToolRequest, in submitIn, info *callInfo) (any, *toolErr) {
	c := info.caller
	if r, terr := s.resumeCall(ctx, req, info); terr != nil || r != nil {
		if terr != nil {
			return nil, terr
		}
		// The same call again, with the person's answers: the task it
		// submitted goes on.
		info.taskID, info.runID = r.TaskID, r.RunID
		start, _ := s.st.LastSeq(ctx)
		return s.await(ctx, req, info, r, start, s.waitFor(in.WaitSec))
	}
	if !c.Has(auth.ScopeSubmit) {
		return nil, forbidden("submit tasks")
	}
	if in.PayloadType != "" && !protocol.ValidPayloadType(in.PayloadType) {
		return nil, newToolErr(protocol.CodeInvalidField, ActionFixPayloadType, "payload_type %q is not of the form <domain>.<name>.v<N>", in.PayloadType)
	}
	if !controlFree(in.IdempotencyKey) {
		return nil, newToolErr(protocol.CodeInvalidField, ActionFixArguments, "idempotency_key must not hold control characters")
	}
	for _, a := range in.To {
		if _, ok := slices.BinarySearch(s.opts.Expose, a); !ok {
			return nil, newToolErr(protocol.CodeNotFound, ActionListAgents, "no agent %s on this server", a)
		}
	}
	m, err := s.r.NewRequest(c.AgentID, in.PayloadType, in.Payload)
	if err != nil {
		return nil, newToolErr(protocol.CodeInvalidField, ActionFixArguments, "building the request: %v", err)
	}
	m.Requires, m.Prefers, m.Domain, m.IdempotencyKey = in.Requires, in.Prefers, in.Domain, in.IdempotencyKey
	m.Trace = callerTrace(req) // trace.go
	if in.IdempotencyKey != "" {
		// The key is scoped to the caller: the same key again is the same
		// run and task (docs/protocol.md §5.2), another caller's is its own.
		if m.RunID, err = s.derive.RunID(ctx, c, "mcp", in.IdempotencyKey); err != nil {
			return nil, newToolErr(protocol.CodeInternal, ActionRetryLater, "deriving the run: %v", err)
		}
	}
	to := in.To
	if len(to) == 0 {
		to = s.opts.Expose // routed among the exposed agents only
	}
	m.To = m.To[:0]
	for _, a := range to {
		m.To = append(m.To, protocol.Participant{AgentID: a})
	}
	s.mu.Lock()
	for id, old := range s.handles { // forget ended tasks
		select {
		case <-old.Done():
			delete(s.handles, id)
		default:
		}
	}
	full := len(s.handles) >= s.opts.MaxTracked
	s.mu.Unlock()
	if full {
		return nil, newToolErr(protocol.CodeCapacity, ActionRetryLater, "at capacity: %d tasks of this server are running", s.opts.MaxTracked)
	}
	if len(in.ToolAllowlist) > 0 {
		m.Security = &protocol.Security{Policy: &protocol.Policy{ToolAllowlist: in.ToolAllowlist}}
	}
	if err := m.Validate(); err != nil {
		return nil, newToolErr(protocol.CodeOf(err), ActionFixArguments, "invalid task request: %v", err)
	}
	// Every id here is random or derived: nothing to claim (docs/protocol.md §6.7).
	if err := auth.CheckWrite(ctx, s.st, c, m, auth.KindRun, auth.KindThread, auth.KindTask); err != nil {
		return nil, newToolErr(protocol.CodeOf(err), ActionFixArguments, "%v", err)
	}
	start, _ := s.st.LastSeq(ctx)
	h, err := s.r.Submit(ctx, m) // validates the payload against its type
	if errors.Is(err, router.ErrInvalidPayload) {
		te := newToolErr(protocol.CodeValidation, ActionListTypes, "%s", coded.Public(err))
		var ve *schema.ValidationError
		if errors.As(err, &ve) {
			// schema.Violation's JSON: {"path", "keyword", "message"}.
			te.Details = map[string]any{"violations": ve.Violations}
		}
		return nil, te
	}
	if err != nil {
		code := protocol.CodeOf(err)
		return nil, newToolErr(code, map[bool]string{true: ActionRetryLater, false: ActionFixArguments}[code.Retryable()], "submitting the task: %v", err)
	}
	req0 := h.Request() // the stored request (an earlier one for a duplicate)
	info.taskID, info.runID = req0.TaskID, req0.RunID
	s.mu.Lock()
	if _, ok := s.handles[req0.TaskID]; !ok {
		s.handles[req0.TaskID] = h
	}
	s.mu.Unlock()
	return s.await(ctx, req, info, req0, start, s.waitFor(in.WaitSec))
}

func (s *Server) waitTask(ctx context.Context, req *sdk.CallToolRequest, in waitIn, info *callInfo) (any, *toolErr) {
	if _, terr := s.resumeCall(ctx, req, info); terr != nil {
		return nil, terr
	}
	r, terr := s.request(ctx, info.caller, in.TaskID)
	if terr != nil {
		return nil, terr
	}
	info.taskID, info.runID = r.TaskID, r.RunID
	start, _ := s.st.LastSeq(ctx)
	return s.await(ctx, req, info, r, start, s.waitFor(in.WaitSec))
}

func (s *Server) answerQuestion(ctx context.Context, req *sdk.CallToolRequest, in answerIn, info *callInfo) (any, *toolErr) {
	taskID, _, ok := protocol.ParseQuestionID(in.QuestionID)
	if !ok {
		return nil, newToolErr(protocol.CodeInvalidField, ActionFixArguments, "question_id %q is not a question id (<task_id>.q<n>)", in.QuestionID)
	}
	r, terr := s.request(ctx, info.caller, taskID)
	if terr != nil {
		return nil, terr
	}
	info.taskID, info.runID = r.TaskID, r.RunID
	resumed, terr := s.resumeCall(ctx, req, info)
	if terr != nil {
		return nil, terr
	}
	start, _ := s.st.LastSeq(ctx)
	value, err := json.Marshal(in.Value)
	if err != nil || in.Value == nil {
		return nil, newToolErr(protocol.CodeMissingField, ActionFixArguments, "value is required: the answer, JSON")
	}
	// A resumed call is this call again, with the person's responses to
	// the question that came after this answer: the first round stored
	// the answer, and storing it again would fail the call with CONFLICT.
	if resumed == nil {
		if terr := s.answer(ctx, info.caller, in.QuestionID, value); terr != nil {
			return nil, terr
		}
	}
	return s.await(ctx, req, info, r, start, s.waitFor(in.WaitSec))
}

// answer answers a question as c (Router.Answer), the refusal as a tool
// error.
func (s *Server) answer(ctx context.Context, c *auth.Caller, questionID string, value json.RawMessage) *toolErr {
	h, err := s.r.Answer(ctx, questionID, router.Answerer{AgentID: c.AgentID, Scopes: c.Scopes}, value)
	switch {
	case errors.Is(err, router.ErrInvalidRequest) || errors.Is(err, router.ErrInvalidPayload):
		return newToolErr(protocol.CodeOf(err), ActionFixArguments, "the answer does not fit the question: %v", err)
	case errors.Is(err, router.ErrUnauthorized):
		return newToolErr(protocol.CodePolicyDenied, ActionNone, "the caller may not answer %s", questionID)
	case errors.Is(err, router.ErrAnswered) || errors.Is(err, router.ErrTaskEnded) || errors.Is(err, router.ErrNotWaiting) || errors.Is(err, router.ErrUnknownTask):
		return newToolErr(protocol.CodeConflict, ActionWaitTask, "%v", err)
	case err != nil:
		return newToolErr(protocol.CodeOf(err), ActionRetryLater, "answering: %v", err)
	}
	s.mu.Lock()
	s.handles[h.TaskID()] = h
	s.mu.Unlock()
	return nil
}

// request returns the stored task.request of a task the caller c may see
// (its own, any with auth.ScopeReadAll); another's is NOT_FOUND.
func (s *Server) request(ctx context.Context, c *auth.Caller, taskID string) (*protocol.Message, *toolErr) {
	if taskID == "" {
		return nil, newToolErr(protocol.CodeMissingField, ActionFixArguments, "task_id is required")
	}
	for ev, err := range s.st.Read(ctx, store.Query{TaskID: taskID, TypePrefix: string(protocol.TypeTaskRequest), Limit: 1}) {
		if err != nil {
			return nil, newToolErr(protocol.CodeInternal, ActionRetry, "reading the task: %v", err)
		}
		m, err := ev.Message()
		if err != nil {
			return nil, newToolErr(protocol.CodeInternal, ActionRetry, "reading the task: %v", err)
		}
		if !c.Owns(m.From.AgentID) {
			break
		}
		return m, nil
	}
	return nil, newToolErr(protocol.CodeNotFound, ActionCheckID, "no task %s", taskID)
}

// mayReadRun checks that the caller may read a run: one whose first
// task.request it submitted, or any with auth.ScopeReadAll. A reserved run
// (the server's host-call run among them, docs/protocol.md §6.7) needs
// auth.ScopeAdmin. Another's run is NOT_FOUND.
func (s *Server) mayReadRun(ctx context.Context, c *auth.Caller, runID string) *toolErr {
	if protocol.Reserved(runID) {
		if c.Has(auth.ScopeAdmin) {
			return nil
		}
		return newToolErr(protocol.CodeNotFound, ActionCheckID, "no run %s", runID)
	}
	if c.Has(auth.ScopeReadAll) {
		return nil
	}
	if runID != s.runID {
		for ev, err := range s.st.Read(ctx, store.Query{RunID: runID, TypePrefix: string(protocol.TypeTaskRequest), Limit: 1}) {
			if err != nil {
				return newToolErr(protocol.CodeInternal, ActionRetry, "reading the run: %v", err)
			}
			m, err := ev.Message()
			if err != nil {
				return newToolErr(protocol.CodeInternal, ActionRetry, "reading the run: %v", err)
			}
			if c.Owns(m.From.AgentID) {
				return nil
			}
		}
	}
	return newToolErr(protocol.CodeNotFound, ActionCheckID, "no run %s", runID)
}

// await waits up to d for the task's terminal event, sending a progress
// notification for each event of its run appended after seq start when
// the host asked for progress.
//
// When the task stops to ask (docs/protocol.md §2.7) and c may answer, a
// host that declared elicitation is asked through it and its answer
// given as c's; otherwise, or when the person declines, the view returns
// with status "question" for answer_question.
func (s *Server) await(ctx context.Context, req *sdk.CallToolRequest, info *callInfo, r *protocol.Message, start uint64, d time.Duration) (any, *toolErr) {
	view := TaskView{TaskID: r.TaskID, RunID: r.RunID, ThreadID: r.ThreadID, Status: "running", Next: ActionWaitTask}
	wctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	token := req.Params.GetProgressToken()
	n := 0
	var terminal *protocol.Message
	var ask *inputNeeded // for a client before multi round-trip requests
	for ev, err := range s.st.Follow(wctx, store.Query{RunID: r.RunID}) {
		if err != nil {
			return nil, newToolErr(protocol.CodeInternal, ActionRetry, "following the task: %v", err)
		}
		m, err := ev.Message()
		if err != nil {
			continue
		}
		if m.TaskID == r.TaskID {
			if m.Type == protocol.TypeRoutingDecision || m.Type == protocol.TypeTaskAccept {
				view.Agent = m.From.AgentID
				if m.Type == protocol.TypeRoutingDecision {
					if dec, err := protocol.DecodePayload[protocol.RoutingDecision](m); err == nil {
						view.Agent = dec.Selected
					}
				}
			}
			if m.Type.Terminal() {
				terminal = m
				break
			}
			if m.Type == protocol.TypeTaskQuestion {
				w, err := s.r.Waiter(ctx, r.TaskID)
				if err != nil {
					return nil, newToolErr(protocol.CodeInternal, ActionRetry, "reading the task's question: %v", err)
				}
				if w != nil && w.Asked.ID == m.ID { // still waits on this one
					q := w.Question
					if in := elicitable(req, info.caller, r, q); in != nil && !info.declined[q.ID] {
						if in.direct {
							ask = in // asked once the follow has stopped (askNow)
							break
						}
						return in, nil // the SDK asks the person; the call comes back (resumeCall)
					}
					view.Status, view.Question, view.Next = "question", q, ActionAnswer
					return view, nil
				}
			}
		}
		if token != nil && ev.Seq > start && req.Session != nil {
			n++
			_ = req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: float64(n), Message: describe(m)})
		}
	}
	if ask != nil {
		return s.askNow(ctx, req, info, r, ask, d)
	}
	if terminal == nil {
		if ctx.Err() != nil {
			return nil, newToolErr(protocol.CodeCancelled, ActionWaitTask, "the wait was cancelled; the task goes on (task_id %s)", r.TaskID)
		}
		return view, nil // still running
	}
	return outcomeView(view, terminal)
}

// outcomeView completes view with the task's terminal event: the result,
// or a structured error whose code and retryability are the task's.
func outcomeView(view TaskView, terminal *protocol.Message) (any, *toolErr) {
	view.Next = ""
	view.Status = strings.TrimPrefix(string(terminal.Type), "task.")
	if terminal.Type == protocol.TypeTaskResult {
		view.PayloadType = terminal.PayloadType
		view.Result = terminal.Payload
		return view, nil
	}
	ep, err := protocol.DecodePayload[protocol.ErrorPayload](terminal)
	if err != nil {
		ep = protocol.ErrorPayload{Code: protocol.CodeInternal, Message: "unreadable error payload"}
	}
	view.Error = &ep
	te := &toolErr{Error: fmt.Sprintf("task %s ended with %s: %s", view.TaskID, terminal.Type, ep.Message), Code: ep.Code, Retryable: ep.Retryable,
		Details: map[string]any{"task": view}}
	switch {
	case ep.Code == protocol.CodeNoMatch || ep.Code == protocol.CodeCapacity && !ep.Retryable:
		te.RetryAction = ActionListAgents
	case ep.Code == protocol.CodeValidation:
		te.RetryAction = ActionListTypes
	case ep.Retryable:
		te.RetryAction = ActionSubmitNewTask
	default:
		te.RetryAction = ActionNone
	}
	return nil, te
}

// storedTerminal returns the task's terminal event, nil while it runs.
func (s *Server) storedTerminal(ctx context.Context, taskID string) (*protocol.Message, error) {
	var last *protocol.Message
	for ev, err := range s.st.Read(ctx, store.Query{TaskID: taskID, TypePrefix: "task."}) {
		if err != nil {
			return nil, err
		}
		m, err := ev.Message()
		if err != nil {
			return nil, err
		}
		if m.Type.Terminal() {
			last = m
		}
	}
	return last, nil
}

// describe is the progress message for an event.
func describe(m *protocol.Message) string {
	s := string(m.Type) + " " + m.TaskID + " from " + m.From.AgentID
	switch m.Type {
	case protocol.TypeRoutingDecision:
		if d, err := protocol.DecodePayload[protocol.RoutingDecision](m); err == nil {
			s += ": selected " + d.Selected + " (" + d.Reason + ")"
		}
	case protocol.TypeTaskRequest, protocol.TypeTaskAccept:
	default:
		p := string(m.Payload)
		if len(p) > 200 {
			p = p[:200] + "…"
		}
		s += ": " + p
	}
	return s
}

func (s *Server) cancelTask(ctx context.Context, _ *sdk.CallToolRequest, in cancelIn, info *callInfo) (any, *toolErr) {
	r, terr := s.request(ctx, info.caller, in.TaskID)
	if terr != nil {
		return nil, terr
	}
	info.taskID, info.runID = r.TaskID, r.RunID
	s.mu.Lock()
	h := s.handles[r.TaskID]
	s.mu.Unlock()
	if h == nil {
		// Not submitted here: report an ended task, refuse a running one.
		terminal, err := s.storedTerminal(ctx, r.TaskID)
		if err != nil {
			return nil, newToolErr(protocol.CodeInternal, ActionRetry, "reading the task: %v", err)
		}
		if terminal == nil {
			return nil, newToolErr(protocol.CodePolicyDenied, ActionSubmitHere, "task %s was not submitted through this MCP server; only those can be cancelled here", r.TaskID)
		}
		v, terr := outcomeView(TaskView{TaskID: r.TaskID, RunID: r.RunID, ThreadID: r.ThreadID}, terminal)
		if terr != nil {
			terr.Code, terr.Retryable, terr.RetryAction = protocol.CodeConflict, false, ActionNone
			terr.Error = "task " + r.TaskID + " has already ended: " + terr.Error
			return nil, terr
		}
		return v, nil
	}
	reason := in.Reason
	if reason == "" {
		reason = "cancelled by " + info.caller.AgentID
	}
	if nh, err := s.r.Cancel(r.TaskID, reason); err == nil {
		h = nh // running here, or waiting for an answer: the handle of its end
	} else {
		h.Cancel(reason)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, _ := h.Wait(wctx)
	view := TaskView{TaskID: r.TaskID, RunID: r.RunID, ThreadID: r.ThreadID, Status: "running", Next: ActionWaitTask}
	if out != nil {
		view.Next = ""
		view.Status = strings.TrimPrefix(string(out.Type), "task.")
		view.Error = out.Err
		if out.OK() {
			view.Result = out.Message.Payload
			view.PayloadType = out.Message.PayloadType
		}
	}
	return view, nil
}

func (s *Server) getRunEvents(ctx context.Context, _ *sdk.CallToolRequest, in runEventsIn, info *callInfo) (any, *toolErr) {
	if in.RunID == "" {
		return nil, newToolErr(protocol.CodeMissingField, ActionFixArguments, "run_id is required")
	}
	if terr := s.mayReadRun(ctx, info.caller, in.RunID); terr != nil {
		return nil, terr
	}
	info.runID = in.RunID
	limit := in.Limit
	if limit <= 0 {
		limit = DefaultEventsLimit
	}
	limit = min(limit, maxEventsLimit)
	events := []EventView{}
	bytes, more, next := 0, false, in.AfterSeq
	for ev, err := range s.st.Read(ctx, store.Query{RunID: in.RunID, TaskID: in.TaskID, TypePrefix: in.TypePrefix, AfterSeq: in.AfterSeq, Limit: limit + 1}) {
		if err != nil {
			return nil, newToolErr(protocol.CodeInternal, ActionRetry, "reading the run: %v", err)
		}
		if len(events) == limit || (len(events) > 0 && bytes+len(ev.Raw) > maxEventsBytes) {
			more = true
			break
		}
		bytes += len(ev.Raw)
		events = append(events, EventView{Seq: ev.Seq, Message: ev.Raw})
		next = ev.Seq
	}
	if len(events) == 0 && in.AfterSeq == 0 && in.TaskID == "" && in.TypePrefix == "" {
		return nil, newToolErr(protocol.CodeNotFound, ActionCheckID, "no run %s", in.RunID)
	}
	return map[string]any{"run_id": in.RunID, "events": events, "more": more, "next_after_seq": next}, nil
}

func (s *Server) getTaskTree(ctx context.Context, _ *sdk.CallToolRequest, in treeIn, info *callInfo) (any, *toolErr) {
	if in.RunID == "" {
		return nil, newToolErr(protocol.CodeMissingField, ActionFixArguments, "run_id is required")
	}
	if terr := s.mayReadRun(ctx, info.caller, in.RunID); terr != nil {
		return nil, terr
	}
	info.runID = in.RunID
	tree, err := router.Replay(ctx, s.st, in.RunID)
	if err != nil {
		return nil, newToolErr(protocol.CodeInternal, ActionRetry, "replaying the run: %v", err)
	}
	if len(tree.Roots) == 0 {
		return nil, newToolErr(protocol.CodeNotFound, ActionCheckID, "no run %s", in.RunID)
	}
	var conv func(n *router.TaskNode) *TaskTreeNode
	conv = func(n *router.TaskNode) *TaskTreeNode {
		out := &TaskTreeNode{TaskID: n.TaskID, Agent: n.Agent, State: n.State, Attempts: n.Attempts}
		if n.Request != nil {
			out.PayloadType = n.Request.PayloadType
		}
		if len(n.Decisions) > 0 {
			out.Reason = n.Decisions[len(n.Decisions)-1].Reason
		}
		if n.Outcome != nil {
			out.Error = n.Outcome.Err
		}
		for _, c := range n.Children {
			out.Children = append(out.Children, conv(c))
		}
		return out
	}
	roots := make([]*TaskTreeNode, len(tree.Roots))
	for i, n := range tree.Roots {
		roots[i] = conv(n)
	}
	return map[string]any{"run_id": in.RunID, "roots": roots, "text": tree.String()}, nil
}
