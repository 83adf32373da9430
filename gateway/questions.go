package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/internal/httpjson"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
)

// WaitingQuestion is one entry of GET /v1/questions: a question a task
// waits on (docs/protocol.md §2.7), with its task and whether the caller
// may answer it.
type WaitingQuestion struct {
	Question  *protocol.Question `json:"question"`
	TaskID    string             `json:"task_id"`
	RunID     string             `json:"run_id"`
	ThreadID  string             `json:"thread_id"`
	AskedBy   string             `json:"asked_by"`
	AskedAt   time.Time          `json:"asked_at"`
	Requester string             `json:"requester"`
	MayAnswer bool               `json:"may_answer"`
}

// QuestionList is the body of GET /v1/questions.
type QuestionList struct {
	Questions []WaitingQuestion `json:"questions"`
}

// Answered is the body of a POST /v1/questions/{id}/answer that was taken:
// the task runs on.
type Answered struct {
	QuestionID string `json:"question_id"`
	TaskID     string `json:"task_id"`
	RunID      string `json:"run_id"`
}

// answerBody is what POST /v1/questions/{id}/answer takes.
type answerBody struct {
	Value json.RawMessage `json:"value"`
}

// serveQuestions serves GET /v1/questions: the questions of this
// gateway's router that wait for an answer and that the caller may see —
// those of tasks it may read, and those it may answer (a question may name
// other agents or scopes). ?mine=1 keeps those it may answer.
func (g *Gateway) serveQuestions(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c := caller(ctx)
	ws, err := g.r.Questions(ctx)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	mine := r.URL.Query().Get("mine") == "1"
	list := QuestionList{Questions: []WaitingQuestion{}}
	for _, wt := range ws {
		may := wt.Question.MayAnswer(c.AgentID, wt.Request.From.AgentID, c.Scopes)
		if !may {
			if mine {
				continue
			}
			if ok, err := auth.MayRead(ctx, g.st, c, auth.KindTask, wt.Request.TaskID); err != nil {
				g.writeError(w, r, err)
				return
			} else if !ok {
				continue
			}
		}
		at, _ := time.Parse(time.RFC3339Nano, wt.Asked.TS)
		list.Questions = append(list.Questions, WaitingQuestion{
			Question: wt.Question, TaskID: wt.Request.TaskID, RunID: wt.Request.RunID, ThreadID: wt.Request.ThreadID,
			AskedBy: wt.Asked.From.AgentID, AskedAt: at, Requester: wt.Request.From.AgentID, MayAnswer: may,
		})
	}
	httpjson.Write(w, http.StatusOK, list)
}

// serveAnswer serves POST /v1/questions/{id}/answer {"value": …}: the
// caller answers, as itself (docs/protocol.md §2.7). A question the caller
// may neither answer nor see is answered 404, as one that does not exist;
// one it sees but may not answer, 403.
func (g *Gateway) serveAnswer(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c := caller(ctx)
	id := r.PathValue("id")
	shape := `{"value": <the answer, JSON>}`
	var in answerBody
	if err := decodeBody(r, &in, shape); err != nil {
		g.writeError(w, r, err)
		return
	}
	if len(in.Value) == 0 {
		g.writeError(w, r, coded.Wrap(ErrBadRequest, "the body must be "+shape, nil))
		return
	}
	h, err := g.r.Answer(ctx, id, router.Answerer{AgentID: c.AgentID, Scopes: c.Scopes}, in.Value)
	if err != nil {
		g.writeError(w, r, g.answerError(ctx, c, id, err))
		return
	}
	req := h.Request()
	httpjson.Write(w, http.StatusOK, Answered{QuestionID: id, TaskID: req.TaskID, RunID: req.RunID})
}

// answerError is the answer's refusal as the caller may see it: nothing
// about a task it may not read, unless the question lets it answer.
func (g *Gateway) answerError(ctx context.Context, c *auth.Caller, questionID string, err error) error {
	if errors.Is(err, router.ErrInvalidRequest) || errors.Is(err, router.ErrInvalidPayload) {
		return err // the caller's own value, or a malformed id
	}
	notFound := coded.Wrap(ErrNotFound, "no question "+clip(questionID)+" waits", nil)
	taskID, _, _ := protocol.ParseQuestionID(questionID)
	visible, verr := g.visible(ctx, c, auth.KindTask, taskID)
	if verr != nil {
		return verr
	}
	switch {
	case errors.Is(err, router.ErrUnauthorized) && visible:
		return coded.Wrap(auth.ErrForbidden, c.AgentID+" may not answer "+clip(questionID), nil)
	case errors.Is(err, router.ErrUnauthorized) || errors.Is(err, router.ErrUnknownTask) || errors.Is(err, router.ErrNotWaiting):
		return notFound // the same whether it exists or not
	case !visible:
		return notFound
	case errors.Is(err, router.ErrAnswered):
		return coded.Wrap(errConflict, clip(questionID)+" has been answered", nil)
	case errors.Is(err, router.ErrTaskEnded):
		return coded.Wrap(errConflict, "task "+clip(taskID)+" has ended", nil)
	}
	return err
}
