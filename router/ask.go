package router

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
)

// ValueValidator is what a Validator also implements to check an answer
// against the JSON Schema of its question (*schema.Registry does). A
// question with a schema is refused by Task.Ask when the router's
// Validator cannot check it, so no answer is ever taken unchecked.
type ValueValidator interface {
	ValidateValue(schema, value json.RawMessage) error
}

// Answerer is who answers a question (Router.Answer): an agent id —
// people are agents too, "agent:alice" — and the scopes its
// authentication gave it (package auth), which a question may name.
type Answerer struct {
	AgentID string
	Scopes  []string
}

// waitingTask is a task that asked and waits for an answer: it holds no
// goroutine and no slot of Options.MaxInFlight, only this entry, whose
// timer is the question's deadline (nil without one).
type waitingTask struct {
	qid   string // the question it waits on
	timer *time.Timer
}

// Ask asks a question and returns its answer's value (docs/protocol.md
// §2.7). The first time a task reaches an Ask, Ask stores a task.question
// and returns an error that matches ErrWaiting: the handler returns it
// (return nil, err) and the task waits, holding no goroutine and no
// capacity, until Router.Answer records an answer. The router then runs
// the handler again, from the start, as a new attempt on the same agent;
// this time Ask returns the recorded answer, and the handler goes on to
// its next question or its result. Ask returns the recorded answers of
// the task in the order they were asked, so a handler must ask the same
// questions in the same order each time it runs, and must not repeat side
// effects it took before an Ask (do them after the answers, or make them
// idempotent) — LangGraph's interrupt() has the same contract.
//
// q.Text is required; q.ID and q.Index are set by Ask. A question with a
// Schema needs a router Validator that implements ValueValidator.
// Ask is for root tasks: a subtask's question has nobody to wait for it
// (its parent holds a goroutine while it delegates), so Ask in a subtask
// fails with ErrInvalidRequest; ask in the task that delegated instead.
func (t *Task) Ask(ctx context.Context, q protocol.Question) (json.RawMessage, error) {
	switch {
	case t.ts.finished.Load():
		return nil, ErrTaskEnded
	case t.ts.parent != nil || t.ts.req.ParentTaskID != "":
		return nil, wrap(ErrInvalidRequest, "a subtask cannot ask: ask in the task that delegated it", nil)
	case t.pending != nil:
		return nil, wrap(ErrInvalidRequest, "the task waits for an answer to "+t.pending.ID+" already: return the error Ask gave", nil)
	}
	if t.answers == nil {
		answers, err := t.r.answers(ctx, t.ID())
		if err != nil {
			return nil, err
		}
		t.answers = answers
	}
	i := t.asked
	t.asked++
	if i < len(t.answers) {
		return t.answers[i], nil
	}
	q.ID, q.Index = protocol.QuestionID(t.ID(), i), i
	if err := q.Validate(); err != nil {
		return nil, wrap(ErrInvalidRequest, "", err)
	}
	if len(q.Schema) > 0 {
		if _, ok := t.r.opts.Validator.(ValueValidator); !ok {
			return nil, wrap(ErrInvalidRequest, "a question with a schema needs a router Validator that checks values (ValueValidator, as *schema.Registry)", nil)
		}
	}
	m := t.r.event(t.ts, protocol.TypeTaskQuestion, t.agent.ID(), nil)
	m.Attempt = t.attempt
	m.IdempotencyKey = "clutch.ask/" + q.ID // asked again by a re-run: stored once
	if err := m.SetPayload(&q); err != nil {
		return nil, wrap(ErrInvalidRequest, "question details are not JSON", err)
	}
	t.r.observe(t.ts, Step{Kind: StepEvent, Event: m})
	// Waiting from before the question is stored: once it is in the log it
	// is listed (Router.Questions), and an answer that comes before the
	// handler returns waits for it (claimSettled).
	t.r.await(t.ID(), &q)
	if err := t.r.appendLive(ctx, t.ts, m); err != nil {
		t.r.unawait(t.ID())
		return nil, err
	}
	t.pending, t.pendingEv = &q, m
	return nil, wrap(ErrWaiting, q.ID, nil)
}

// AskAs is Task.Ask with the answer's value decoded into a T: a string
// for a question with choices, a protocol.Approval for an approval, the
// Go type of a question's schema. A value that does not decode is an
// error of code VALIDATION (the answer was checked against the question,
// so this means T does not fit the question).
func AskAs[T any](ctx context.Context, t *Task, q protocol.Question) (T, error) {
	var v T
	raw, err := t.Ask(ctx, q)
	if err != nil {
		return v, err
	}
	if err := json.Unmarshal(raw, &v); err != nil {
		return v, &protocol.ErrorPayload{Code: protocol.CodeValidation, Message: "the answer to " + protocol.QuestionID(t.ID(), t.asked-1) + " does not decode: " + err.Error()}
	}
	return v, nil
}

// Resumed is for a handler whose state lives outside the task — a
// bridge to a LangGraph thread, a remote A2A task, a paused crew — and
// that goes on where the outside system stopped rather than replaying its
// questions. It returns the last question the task asked that has an
// answer, and that answer's value; nil, nil when no question of the task
// has one yet (a first attempt). After Resumed, the next Ask of this run
// of the handler asks a new question: the recorded answers are not
// returned again. The question's Details are what the handler stored
// when it asked (a thread id, a remote task id), so a handler can find
// its outside state again after a restart.
func (t *Task) Resumed(ctx context.Context) (*protocol.Question, json.RawMessage, error) {
	l, err := t.r.readTask(ctx, t.ID())
	if err != nil {
		return nil, nil, err
	}
	t.answers = l.values
	t.asked = max(t.asked, len(l.values))
	if l.answeredQ == nil {
		return nil, nil, nil
	}
	return l.answeredQ, l.values[len(l.values)-1], nil
}

// answers returns the values of the task's answered questions, in the
// order they were asked.
func (r *Router) answers(ctx context.Context, taskID string) ([]json.RawMessage, error) {
	l, err := r.readTask(ctx, taskID)
	if err != nil {
		return nil, err
	}
	return l.values, nil
}

// park makes the task ts, whose handler returned after t asked, wait for
// the answer: its handle resolves with the question (Outcome.Question,
// code INPUT_REQUIRED) and the task leaves the router's running tasks,
// keeping only the waitingTask Ask registered. It reports false when the
// task ended first (a cancel won).
func (r *Router) park(ts *taskState, t *Task) bool {
	q := t.pending
	ts.emu.Lock()
	if !ts.finished.CompareAndSwap(false, true) {
		ts.emu.Unlock()
		r.unawait(ts.req.TaskID) // a cancel or timeout ended it first
		return false
	}
	ts.out = questionOutcome(t.pendingEv, q)
	ts.outcome = &ts.out
	close(ts.done)
	ts.emu.Unlock()
	return true
}

// parked reports whether ts is the run of a task that stopped to ask (its
// handle resolved with the question; the task itself goes on waiting).
func (ts *taskState) parked() bool {
	select {
	case <-ts.done: // closed after the outcome is set
		return ts.outcome.Question != nil
	default:
		return false
	}
}

// questionOutcome is the outcome of a task that waits for an answer to
// q, asked by the task.question m.
func questionOutcome(m *protocol.Message, q *protocol.Question) Outcome {
	return Outcome{TaskID: m.TaskID, Type: protocol.TypeTaskQuestion, Message: m, Question: q,
		Err: &protocol.ErrorPayload{Code: protocol.CodeInputRequired, Message: q.Text,
			Details: map[string]any{"question_id": q.ID}}}
}

// await registers a waiting task and arms its deadline.
func (r *Router) await(taskID string, q *protocol.Question) {
	w := &waitingTask{qid: q.ID}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return // a restart's Recover arms it again
	}
	if old := r.asking[taskID]; old != nil && old.timer != nil {
		old.timer.Stop()
	}
	if !q.Deadline.IsZero() {
		w.timer = time.AfterFunc(max(q.Deadline.Sub(r.now()), 0), func() { r.expire(taskID, q) })
	}
	r.asking[taskID] = w
}

// unawait forgets a waiting task and stops its deadline.
func (r *Router) unawait(taskID string) { r.unawaitQuestion(taskID, "") }

// unawaitQuestion forgets a task that waits on the question qid (on any
// question when qid is "") and stops its deadline.
func (r *Router) unawaitQuestion(taskID, qid string) {
	r.mu.Lock()
	if w := r.asking[taskID]; w != nil && (qid == "" || w.qid == qid) {
		if w.timer != nil {
			w.timer.Stop()
		}
		delete(r.asking, taskID)
	}
	r.mu.Unlock()
}

// Waiting reports how many tasks of this router wait for an answer.
func (r *Router) Waiting() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.asking)
}

// Waiter is a task that waits for an answer: its request, the
// task.question it stopped on, and the question.
type Waiter struct {
	Request  *protocol.Message
	Asked    *protocol.Message
	Question *protocol.Question
}

// Questions returns the tasks of this router that wait for an answer
// (after a restart, those Recover found), oldest question first. It
// reads each one's events: it is for a person's list of what waits, not
// for a hot path.
func (r *Router) Questions(ctx context.Context) ([]Waiter, error) {
	r.mu.Lock()
	ids := make([]string, 0, len(r.asking))
	for id := range r.asking {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	out := make([]Waiter, 0, len(ids))
	for _, id := range ids {
		w, err := r.Waiter(ctx, id)
		if err != nil {
			return nil, err
		}
		if w != nil {
			out = append(out, *w)
		}
	}
	slices.SortFunc(out, func(a, b Waiter) int { return strings.Compare(a.Asked.ID, b.Asked.ID) })
	return out, nil
}

// Waiter returns what the task taskID waits for, read from the store (so
// it answers for a task of any process on it), nil when it waits for no
// answer or is unknown.
func (r *Router) Waiter(ctx context.Context, taskID string) (*Waiter, error) {
	l, err := r.readTask(ctx, taskID)
	if errors.Is(err, ErrUnknownTask) {
		return nil, nil
	}
	if err != nil || l.pending == nil {
		return nil, err
	}
	return &Waiter{Request: l.req, Asked: l.pending, Question: l.pendingQ}, nil
}

// expire ends a task whose question q passed its deadline unanswered,
// with a task.error TIMEOUT naming the question.
func (r *Router) expire(taskID string, q *protocol.Question) {
	ep := &protocol.ErrorPayload{Code: protocol.CodeTimeout,
		Message: "no answer to " + q.ID + " by its deadline " + q.Deadline.UTC().Format(time.RFC3339),
		Details: map[string]any{"question_id": q.ID, "deadline": q.Deadline.UTC().Format(time.RFC3339Nano)}}
	if _, err := r.endWaiting(context.Background(), taskID, q.ID, func(ts *taskState) *protocol.Message {
		return r.errorEvent(ts, r.opts.AgentID, ep)
	}, Outcome{Err: ep}); err != nil && !errors.Is(err, ErrTaskEnded) && !errors.Is(err, ErrAnswered) && !errors.Is(err, ErrClosed) {
		r.opts.Logger.Error("router: ending a task past its question's deadline", "task", taskID, "err", err)
	}
}

// cancelWaiting ends a waiting task with a task.cancel.
func (r *Router) cancelWaiting(ctx context.Context, taskID, reason string) (*Handle, error) {
	ep := &protocol.ErrorPayload{Code: protocol.CodeCancelled, Message: reason}
	return r.endWaiting(ctx, taskID, "", func(ts *taskState) *protocol.Message {
		m := r.event(ts, protocol.TypeTaskCancel, r.opts.AgentID, nil)
		r.setPayload(m, ep)
		return m
	}, Outcome{Err: ep})
}

// endWaiting stores the terminal event made by ev for a task that waits
// for an answer — to question qid, when not "" — holding the task's
// claim, so that an answer, a cancel and a deadline that race end or
// resume it once. It fails with ErrAnswered when the question has been
// answered, ErrTaskEnded when the task has ended, ErrNotWaiting when it
// waits for nothing.
func (r *Router) endWaiting(ctx context.Context, taskID, qid string, ev func(*taskState) *protocol.Message, out Outcome) (*Handle, error) {
	l, err := r.readTask(ctx, taskID)
	if err != nil {
		return nil, err
	}
	ts, l, err := r.claimWaiting(ctx, l.req, qid, claimEnd)
	if err != nil {
		return nil, err
	}
	r.unawait(taskID)
	ts.attempt.Store(int32(max(l.attempt, 1)))
	r.end(ts, out, ev(ts))
	r.unclaim(ts, claimTask)
	return &ts.handle, nil
}

// claimWaiting claims req's task (claimSettled) and reads its log under
// the claim; it keeps the claim only when the task waits for qid (any
// question when "").
func (r *Router) claimWaiting(ctx context.Context, req *protocol.Message, qid string, mode claimMode) (*taskState, *taskLog, error) {
	ts, err := r.claimSettled(ctx, req, mode)
	if err != nil {
		return nil, nil, err
	}
	l, err := r.readTask(ctx, req.TaskID)
	if err == nil {
		err = l.waitingFor(req.TaskID, qid)
	}
	if err != nil {
		r.unclaim(ts, claimDropped)
		return nil, nil, err
	}
	return ts, l, nil
}

// claimSettled claims req's task, waiting while it runs: a handler that
// asked and has not returned yet, or a run after somebody else's answer,
// ends or waits again before the log says what the task does.
func (r *Router) claimSettled(ctx context.Context, req *protocol.Message, mode claimMode) (*taskState, error) {
	for {
		ts, old, err := r.claim(ctx, req, nil, mode)
		if err != nil || old == nil {
			return ts, err
		}
		if old.claim.Load() == claimPending {
			// Another claim (an answer, a cancel) is reading the log.
			if _, err := r.follow(ctx, old); err != nil {
				return nil, err
			}
			continue
		}
		select {
		case <-old.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// waitingFor returns nil when the task waits for an answer to qid (any
// question when qid is ""), else why not.
func (l *taskLog) waitingFor(taskID, qid string) error {
	switch {
	case qid != "" && l.answeredIDs[qid]:
		return wrap(ErrAnswered, qid, nil)
	case l.terminal != nil:
		return wrap(ErrTaskEnded, "task "+taskID+" ended with "+string(l.terminal.Type), nil)
	case l.pending == nil:
		return wrap(ErrNotWaiting, "task "+taskID+" waits for no answer", nil)
	case qid != "" && l.pendingQ.ID != qid:
		return wrap(ErrNotWaiting, "task "+taskID+" waits for "+l.pendingQ.ID+", not "+qid, nil)
	}
	return nil
}

// Answer records by's answer to the question questionID and runs its task
// on (docs/protocol.md §2.7): a task.answer from by.AgentID is stored, and
// the handler runs again as a new attempt on the agent that asked, with
// Task.Ask returning the answers in order. It returns the handle of the
// resumed task.
//
// The answer is refused, with nothing stored, when by may not answer the
// question (ErrUnauthorized: see protocol.Question.MayAnswer), when the
// value does not fit it (ErrInvalidRequest, INVALID_FIELD; a schema's
// violations: ErrInvalidPayload, VALIDATION), when the question has been
// answered already (ErrAnswered: of two answers that race, one wins, in
// one process or many on one store), when the task has ended
// (ErrTaskEnded), and when the task waits for another question or none
// (ErrNotWaiting). The caller — a surface — checks first that by may see
// the task at all (package auth).
func (r *Router) Answer(ctx context.Context, questionID string, by Answerer, value json.RawMessage) (*Handle, error) {
	taskID, _, ok := protocol.ParseQuestionID(questionID)
	if !ok {
		return nil, wrap(ErrInvalidRequest, "question id "+strconv.Quote(questionID)+" is not of the form <task_id>.q<n>", nil)
	}
	l, err := r.readTask(ctx, taskID)
	if err != nil {
		return nil, err
	}
	if err := l.waitingFor(taskID, questionID); err != nil {
		return nil, err
	}
	q := l.pendingQ
	if !q.MayAnswer(by.AgentID, l.req.From.AgentID, by.Scopes) {
		return nil, wrap(ErrUnauthorized, by.AgentID+" may not answer "+questionID, nil)
	}
	if err := q.CheckValue(value); err != nil {
		return nil, wrap(ErrInvalidRequest, "", err)
	}
	if len(q.Schema) > 0 {
		vv, ok := r.opts.Validator.(ValueValidator)
		if !ok {
			return nil, wrap(ErrInvalidRequest, "the router's Validator cannot check the answer against the question's schema", nil)
		}
		if err := vv.ValidateValue(q.Schema, value); err != nil {
			return nil, wrap(ErrInvalidPayload, "the answer does not meet the question's schema", err)
		}
	}
	ts, l, err := r.claimWaiting(ctx, l.req, questionID, claimRetry)
	if err != nil {
		return nil, err
	}
	asked := l.pending
	m := r.ids.Reply(asked, protocol.TypeTaskAnswer, by.AgentID) // to the agent that asked
	m.Attempt = asked.Attempt
	m.IdempotencyKey = "clutch.answer/" + questionID // one answer per question, whoever stores it
	if err := m.SetPayload(protocol.Answer{QuestionID: questionID, Value: value}); err != nil {
		r.unclaim(ts, claimDropped)
		return nil, wrap(ErrInvalidRequest, "", err)
	}
	res, err := r.st.Append(ctx, m)
	if err != nil {
		r.unclaim(ts, claimDropped)
		return nil, err
	}
	if res[0].Duplicate {
		r.unclaim(ts, claimDropped)
		return nil, wrap(ErrAnswered, questionID, nil)
	}
	r.unawait(taskID)
	l.add(m)                                    // the log as stored now: the question answered
	if err := r.ownRetry(ctx, ts); err != nil { // in a team: this process routes it on (team.go)
		r.opts.Logger.Warn("router: recording the process that resumes an answered task", "task", taskID, "err", err)
	}
	return r.resume(ts, l), nil
}

// resume starts the claimed task ts, whose log l ends with an answer, as
// a new attempt routed to the agent that asked.
func (r *Router) resume(ts *taskState, l *taskLog) *Handle {
	pinned := *ts.req
	pinned.To = []protocol.Participant{{AgentID: l.lastQ.From.AgentID}}
	ts.routeAs = &pinned
	ts.resumes = l.answered // one resumed attempt per answer
	return r.start(ts, max(l.attempt, l.req.Attempt)+1)
}
