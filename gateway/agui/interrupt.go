package agui

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
)

// Interrupt is an AG-UI interrupt: what RUN_FINISHED's interrupt outcome
// carries for a question a Clutch task asks (docs/protocol.md §2.7).
type Interrupt struct {
	// ID is the question id; a resume entry answers it by this id.
	ID string `json:"id"`
	// Reason is the question's kind: "question" or "approval".
	Reason string `json:"reason"`
	// Message is the question's text.
	Message string `json:"message,omitempty"`
	// ResponseSchema is the JSON Schema of the answer: the question's
	// schema, an enum of its choices, or an approval's decision object;
	// absent when any JSON value answers.
	ResponseSchema json.RawMessage `json:"responseSchema,omitempty"`
	// ExpiresAt is the question's deadline (RFC 3339), when it has one.
	ExpiresAt string `json:"expiresAt,omitempty"`
	// Metadata holds, under "clutch", the question as stored.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// approvalSchema is the response schema of an approval: a
// protocol.Approval.
var approvalSchema = json.RawMessage(`{"type":"object","required":["decision"],"properties":{` +
	`"decision":{"type":"string","enum":["approve","reject","edit"]},` +
	`"reason":{"type":"string"},"arguments":{"description":"the edited arguments (decision edit)"}}}`)

// InterruptOf is the AG-UI interrupt of a question.
func InterruptOf(q *protocol.Question) Interrupt {
	in := Interrupt{ID: q.ID, Reason: q.Kind, Message: q.Text, Metadata: map[string]any{"clutch": q}}
	if in.Reason == "" {
		in.Reason = protocol.QuestionAsk
	}
	switch {
	case q.Kind == protocol.QuestionApproval:
		in.ResponseSchema = approvalSchema
	case len(q.Choices) > 0:
		in.ResponseSchema, _ = json.Marshal(map[string]any{"type": "string", "enum": q.Choices})
	case len(q.Schema) > 0:
		in.ResponseSchema = q.Schema
	}
	if !q.Deadline.IsZero() {
		in.ExpiresAt = q.Deadline.UTC().Format(time.RFC3339Nano)
	}
	return in
}

// ResumeEntry is one entry of a RunAgentInput's resume: the answer to an
// interrupt of the run before.
type ResumeEntry struct {
	InterruptID string `json:"interruptId"`
	// Status is "resolved" (Payload answers the question) or "cancelled"
	// (the person abandons it: the task is cancelled).
	Status  string          `json:"status"`
	Payload json.RawMessage `json:"payload,omitzero"`
}

// resume answers the interrupts of the thread's waiting task from the
// resume entries of a RunAgentInput, as the caller, and streams the Clutch
// run on from the answer: a new AG-UI run of the same Clutch run. A
// question that is not of a task of the caller's thread is answered 404 as
// one that does not exist.
func (h *Handler) resume(w http.ResponseWriter, r *http.Request, c *auth.Caller, in *Input) {
	ctx := r.Context()
	if len(in.Resume) != 1 {
		writeError(w, http.StatusBadRequest, protocol.CodeInvalidField, "resume must answer the one interrupt the run ended with")
		return
	}
	e := in.Resume[0]
	thread, err := h.ThreadID(ctx, c, in.ThreadID)
	if err != nil {
		h.opts.Logger.ErrorContext(ctx, "agui: deriving the thread id", "err", err)
		writeError(w, http.StatusInternalServerError, protocol.CodeInternal, "the run could not be resumed")
		return
	}
	taskID, _, ok := protocol.ParseQuestionID(e.InterruptID)
	var wt *router.Waiter
	if ok {
		if wt, err = h.r.Waiter(ctx, taskID); err != nil {
			h.opts.Logger.ErrorContext(ctx, "agui: reading a question", "err", err)
			writeError(w, http.StatusInternalServerError, protocol.CodeInternal, "the run could not be resumed")
			return
		}
	}
	if wt == nil || wt.Question.ID != e.InterruptID || wt.Request.ThreadID != thread {
		writeError(w, http.StatusNotFound, protocol.CodeNotFound, "no such interrupt waits in this thread")
		return
	}
	req := wt.Request
	asked, err := h.st.Get(ctx, wt.Asked.ID) // the resumed AG-UI run starts after it
	seq := asked.Seq
	if err != nil {
		h.opts.Logger.ErrorContext(ctx, "agui: reading a question", "err", err)
		writeError(w, http.StatusInternalServerError, protocol.CodeInternal, "the run could not be resumed")
		return
	}
	switch e.Status {
	case "resolved":
		if len(e.Payload) == 0 {
			writeError(w, http.StatusBadRequest, protocol.CodeMissingField, "a resolved resume entry needs a payload: the answer")
			return
		}
		_, err = h.r.Answer(ctx, e.InterruptID, router.Answerer{AgentID: c.AgentID, Scopes: c.Scopes}, json.RawMessage(e.Payload))
	case "cancelled":
		if !c.Owns(req.From.AgentID) {
			err = router.ErrUnauthorized
			break
		}
		_, err = h.r.Cancel(req.TaskID, "the person cancelled "+e.InterruptID)
	default:
		writeError(w, http.StatusBadRequest, protocol.CodeInvalidField, `a resume entry's status is "resolved" or "cancelled"`)
		return
	}
	if err != nil {
		status, code := resumeStatus(err)
		writeError(w, status, code, err.Error())
		return
	}
	w.Header().Set(HeaderRunID, req.RunID)
	h.stream(w, r, req.RunID, NewTranslator(in.ThreadID, in.RunID, &TranslatorOptions{Text: h.opts.Text, Resumed: seq}), seq)
}

// resumeStatus is the HTTP status and code of a refused resume entry.
func resumeStatus(err error) (int, protocol.Code) {
	switch {
	case errors.Is(err, router.ErrUnauthorized):
		return http.StatusForbidden, protocol.CodePolicyDenied
	case errors.Is(err, router.ErrAnswered), errors.Is(err, router.ErrTaskEnded), errors.Is(err, router.ErrNotWaiting):
		return http.StatusConflict, protocol.CodeConflict
	}
	return auth.Status(err), protocol.CodeOf(err)
}
