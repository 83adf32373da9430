package mcp

import (
	"context"
	"encoding/json"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/protocol"
)

// inputNeeded is a tool's answer that asks the host's person first: the
// SDK sends it as input requests (multi round-trip requests) or, to an
// older client, as elicitation/create requests, and the client calls the
// tool again with the person's responses and the request state.
type inputNeeded struct {
	requests sdk.InputRequestMap
	state    string
}

// stateOf is the request state of a call that waits on the task taskID.
func stateOf(taskID string) string { return "clutch-task:" + taskID }

// elicitable returns the input request that asks q of the host's person,
// when the host declared elicitation, c may answer q and q fits a form;
// nil otherwise (answer_question takes it).
func elicitable(req *sdk.CallToolRequest, c *auth.Caller, r *protocol.Message, q *protocol.Question) *inputNeeded {
	if req.Session == nil || !q.MayAnswer(c.AgentID, r.From.AgentID, c.Scopes) {
		return nil
	}
	if p := req.Session.InitializeParams(); p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return nil
	}
	form, _ := formOf(q)
	if form == nil {
		return nil
	}
	return &inputNeeded{requests: sdk.InputRequestMap{q.ID: &sdk.ElicitParams{Message: q.Text, RequestedSchema: form}}, state: stateOf(r.TaskID)}
}

// resumeCall handles a tool call that brings the person's responses to
// the input requests of an earlier call (its request state names the
// task): each accepted response answers its question as the caller. It
// returns the task's request to wait on, or nil when the call is not such
// a call; a declined response leaves the question to answer_question
// (info.declined).
func (s *Server) resumeCall(ctx context.Context, req *sdk.CallToolRequest, info *callInfo) (*protocol.Message, *toolErr) {
	c := info.caller
	taskID, ok := strings.CutPrefix(req.Params.RequestState, "clutch-task:")
	if !ok {
		return nil, nil
	}
	r, terr := s.request(ctx, c, taskID)
	if terr != nil {
		return nil, terr
	}
	for qid, resp := range req.Params.InputResponses {
		res, ok := resp.(*sdk.ElicitResult)
		if !ok || res.Action != "accept" {
			if info.declined == nil {
				info.declined = map[string]bool{}
			}
			info.declined[qid] = true // not asked again in this call
			continue
		}
		if of, _, ok := protocol.ParseQuestionID(qid); !ok || of != taskID {
			return nil, newToolErr(protocol.CodeInvalidField, ActionFixArguments, "input response %q is not a question of task %s", qid, taskID)
		}
		w, err := s.r.Waiter(ctx, taskID)
		if err != nil {
			return nil, newToolErr(protocol.CodeInternal, ActionRetry, "reading the question: %v", err)
		}
		if w == nil || w.Question.ID != qid {
			continue // answered meanwhile
		}
		_, value := formOf(w.Question)
		if value == nil {
			continue
		}
		v, err := value(res.Content)
		if err != nil {
			continue
		}
		if terr := s.answer(ctx, c, qid, v); terr != nil {
			return nil, terr
		}
	}
	return r, nil
}

// formOf is the elicitation form of a question and how its content
// becomes the answer's value; a nil form when the question does not fit
// one (a schema with nested values: answer_question takes it).
func formOf(q *protocol.Question) (form map[string]any, value func(map[string]any) (json.RawMessage, error)) {
	field := func(content map[string]any) (json.RawMessage, error) { return json.Marshal(content["answer"]) }
	switch {
	case q.Kind == protocol.QuestionApproval:
		return map[string]any{"type": "object", "required": []string{"decision"}, "properties": map[string]any{
				"decision": map[string]any{"type": "string", "enum": []string{protocol.Approve, protocol.Reject}},
				"reason":   map[string]any{"type": "string", "description": "why, when rejecting"},
			}}, func(content map[string]any) (json.RawMessage, error) {
				d, _ := content["decision"].(string)
				r, _ := content["reason"].(string)
				return json.Marshal(protocol.Approval{Decision: d, Reason: r})
			}
	case len(q.Choices) > 0:
		return map[string]any{"type": "object", "required": []string{"answer"}, "properties": map[string]any{
			"answer": map[string]any{"type": "string", "enum": q.Choices},
		}}, field
	case len(q.Schema) == 0:
		return map[string]any{"type": "object", "required": []string{"answer"}, "properties": map[string]any{
			"answer": map[string]any{"type": "string"},
		}}, field
	}
	var sch struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(q.Schema, &sch) != nil || sch.Type != "object" {
		return nil, nil
	}
	for _, p := range sch.Properties {
		var prop struct {
			Type string `json:"type"`
		}
		if json.Unmarshal(p, &prop) != nil {
			return nil, nil
		}
		switch prop.Type {
		case "string", "number", "integer", "boolean":
		default:
			return nil, nil // nested: not a form
		}
	}
	var whole map[string]any
	if json.Unmarshal(q.Schema, &whole) != nil {
		return nil, nil
	}
	return whole, func(content map[string]any) (json.RawMessage, error) { return json.Marshal(content) }
}
