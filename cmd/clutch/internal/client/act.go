package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/clutchprotocol/clutch/gateway"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// Event returns one event (GET /v1/events/{ref}): ref is its message id
// or, a decimal number, its seq. An event the caller may not see is a 404,
// as one that does not exist.
func (c *Client) Event(ctx context.Context, ref string) (Event, error) {
	var ev Event
	err := c.get(ctx, "/v1/events/"+url.PathEscape(ref), nil, &ev)
	return ev, err
}

// Submit posts a task request, a chat message or a task cancel (POST
// /v1/messages), sent as the key's caller.
func (c *Client) Submit(ctx context.Context, s *gateway.Submission) (*gateway.Accepted, error) {
	var out gateway.Accepted
	if err := c.send(ctx, http.MethodPost, "/v1/messages", nil, s, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Cancel cancels a running task and its subtree (POST
// /v1/tasks/{id}/cancel); reason, when not "", goes into the task.cancel's
// message after "cancelled by <caller>". The answer names the task's
// terminal event (ID "" when it did not come in the gateway's time). A
// task that has ended is a CONFLICT.
func (c *Client) Cancel(ctx context.Context, taskID, reason string) (*gateway.Accepted, error) {
	var in any
	if reason != "" {
		in = struct {
			Reason string `json:"reason"`
		}{reason}
	}
	var out gateway.Accepted
	if err := c.send(ctx, http.MethodPost, "/v1/tasks/"+url.PathEscape(taskID)+"/cancel", nil, in, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Retry runs a task that failed or timed out again, as a new attempt
// (POST /v1/tasks/{id}/retry). A task that runs, completed or was
// cancelled is a CONFLICT.
func (c *Client) Retry(ctx context.Context, taskID string) (*gateway.Accepted, error) {
	var out gateway.Accepted
	if err := c.send(ctx, http.MethodPost, "/v1/tasks/"+url.PathEscape(taskID)+"/retry", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Outcome is how a task Wait followed ended, or the question it waits on.
type Outcome struct {
	// Type is the type of Event: task.result, task.error, task.cancel,
	// task.timeout, or task.question when the task waits on a question.
	Type protocol.Type
	// Event is the terminal event, or the task.question.
	Event Event
	// Payload is the payload of Event's message: the result of a
	// task.result.
	Payload []byte
	// Err is the error of a task.error, task.cancel or task.timeout, nil
	// for a task.result and a question.
	Err *protocol.ErrorPayload
	// Question is the question the task waits on, nil when it ended.
	Question *protocol.Question
}

// OK reports whether the task completed.
func (o *Outcome) OK() bool { return o.Type == protocol.TypeTaskResult }

var errBadEvent error = coded.New("client: the gateway sent an event that does not decode", protocol.CodeInvalidJSON)

// Wait follows a task on the live stream, from after its events after
// seq after, until it ends (its terminal event: a task.error that
// announces a retry is not one) or waits on a question nobody has
// answered yet, and returns how. It returns ctx's error when ctx ends
// first. A task that has ended already is answered at once.
func (c *Client) Wait(ctx context.Context, taskID string, after uint64) (*Outcome, error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for ev, err := range c.Stream(sctx, StreamQuery{Task: taskID, After: after}) {
		if err != nil {
			return nil, err
		}
		m, err := protocol.Decode(ev.Message)
		if err != nil {
			return nil, coded.Wrap(errBadEvent, "seq "+strconv.FormatUint(ev.Seq, 10), err)
		}
		out := &Outcome{Type: m.Type, Event: ev, Payload: m.Payload}
		switch {
		case m.Type == protocol.TypeTaskQuestion:
			// It waits unless something happened to the task since.
			later, _, err := c.Events(ctx, TaskScope, taskID, ev.Seq, 1, "")
			if err != nil {
				return nil, err
			}
			if len(later) > 0 {
				continue
			}
			q, err := protocol.DecodePayload[protocol.Question](m)
			if err != nil {
				return nil, coded.Wrap(errBadEvent, "the question at seq "+strconv.FormatUint(ev.Seq, 10), err)
			}
			out.Question = &q
			return out, nil
		case !protocol.EndsTask(m):
			continue
		case m.Type == protocol.TypeTaskResult:
			return out, nil
		}
		ep, err := protocol.DecodePayload[protocol.ErrorPayload](m)
		if err != nil || ep.Code == "" {
			ep = protocol.ErrorPayload{Code: protocol.CodeInternal, Message: "the task ended with " + string(m.Type)}
		}
		out.Err = &ep
		return out, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return nil, errStreamClosed
}
