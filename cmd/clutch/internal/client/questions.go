package client

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/clutchprotocol/clutch/gateway"
)

// Questions lists the questions that wait for an answer and that the
// caller may see (GET /v1/questions); mine keeps those it may answer.
func (c *Client) Questions(ctx context.Context, mine bool) ([]gateway.WaitingQuestion, error) {
	var q url.Values
	if mine {
		q = url.Values{"mine": {"1"}}
	}
	var list gateway.QuestionList
	if err := c.send(ctx, http.MethodGet, "/v1/questions", q, nil, &list); err != nil {
		return nil, err
	}
	return list.Questions, nil
}

// Answer answers a question as the caller (POST
// /v1/questions/{id}/answer); the task runs on.
func (c *Client) Answer(ctx context.Context, questionID string, value json.RawMessage) (gateway.Answered, error) {
	var out gateway.Answered
	err := c.send(ctx, http.MethodPost, "/v1/questions/"+url.PathEscape(questionID)+"/answer", nil,
		struct {
			Value json.RawMessage `json:"value"`
		}{value}, &out)
	return out, err
}
