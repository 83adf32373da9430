package router

import (
	"context"

	"github.com/clutchprotocol/clutch/protocol"
)

// Outcome is how a task ended: its terminal event (task.result,
// task.error, task.cancel or task.timeout) and, unless it succeeded, the
// wire error (docs/protocol.md §5.4) — or, for a task that stopped to ask
// (Task.Ask), its question: Type task.question, Question set, and Err of
// code INPUT_REQUIRED. Such a task has not ended: Router.Answer runs it on
// and returns the handle of what follows.
type Outcome struct {
	TaskID   string
	Type     protocol.Type
	Message  *protocol.Message      // the terminal event, or the task.question
	Err      *protocol.ErrorPayload // nil for task.result
	Question *protocol.Question     // the question the task waits on, nil when it ended
}

// OK reports whether the task succeeded.
func (o *Outcome) OK() bool { return o.Type == protocol.TypeTaskResult && o.Err == nil }

// ResultAs decodes the result payload of a successful outcome into a T.
func ResultAs[T any](o *Outcome) (T, error) {
	if !o.OK() {
		var zero T
		if o.Err != nil {
			return zero, o.Err
		}
		return zero, &protocol.ErrorPayload{Code: protocol.CodeInternal, Message: "task ended with " + string(o.Type)}
	}
	return protocol.DecodePayload[T](o.Message)
}

// Handle follows one submitted task.
type Handle struct {
	r  *Router
	ts *taskState
}

// TaskID returns the id of the task.
func (h *Handle) TaskID() string { return h.ts.req.TaskID }

// Request returns the task.request. Do not modify it.
func (h *Handle) Request() *protocol.Message { return h.ts.req }

// Done is closed when the task has ended and its terminal event is
// stored, or when it waits for an answer (Outcome.Question).
func (h *Handle) Done() <-chan struct{} { return h.ts.done }

// Wait blocks until the task ends, or stops to wait for an answer
// (Outcome.Question, error INPUT_REQUIRED), or ctx is done. It returns the outcome
// and, when the task did not succeed, its wire error (a
// *protocol.ErrorPayload, matched with errors.Is against a protocol.Code).
// If ctx ends first it returns ctx's error and a nil outcome; the task goes
// on.
func (h *Handle) Wait(ctx context.Context) (*Outcome, error) {
	if d := ctx.Done(); d == nil {
		<-h.ts.done // a context that never ends: no select
	} else {
		select {
		case <-h.ts.done:
		case <-d:
			return nil, ctx.Err()
		}
	}
	out := h.ts.outcome
	if out.Err != nil {
		return out, out.Err
	}
	return out, nil
}

// Cancel cancels the task and every subtask under it (docs/protocol.md §1.3): each
// gets a task.cancel event with the reason. It returns at once; Wait for
// the outcome. Cancelling an ended task does nothing. A task that waits
// for an answer (its outcome has a Question) is ended with its
// task.cancel before Cancel returns; Router.Cancel returns the handle of
// that end.
func (h *Handle) Cancel(reason string) {
	if reason == "" {
		reason = "cancelled by the caller"
	}
	if h.ts.parked() {
		_, _ = h.r.cancelWaiting(context.Background(), h.ts.req.TaskID, reason) // answered or ended meanwhile: nothing to do
		return
	}
	if h.ts.cancel != nil {
		h.ts.cancel(&cancelCause{reason})
		h.r.cancelled(h.ts)
	}
}
