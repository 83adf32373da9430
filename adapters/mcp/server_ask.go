package mcp

import (
	"context"
	"encoding/json"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// waiting decodes the task.question m and reports whether its task still
// waits on it (no answer stored).
func (s *Server) waiting(ctx context.Context, m *protocol.Message) (*protocol.Question, bool, error) {
	q, err := protocol.DecodePayload[protocol.Question](m)
	if err != nil {
		return nil, false, nil // not a question this server can show
	}
	for ev, err := range s.st.Read(ctx, store.Query{TaskID: m.TaskID, TypePrefix: string(protocol.TypeTaskAnswer)}) {
		if err != nil {
			return nil, false, err
		}
		a, err := ev.Message()
		if err != nil {
			return nil, false, err
		}
		if ans, err := protocol.DecodePayload[protocol.Answer](a); err == nil && ans.QuestionID == q.ID {
			return &q, false, nil
		}
	}
	return &q, true, nil
}

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
		i := strings.LastIndex(qid, ".q")
		if i <= 0 || qid[:i] != taskID {
			return nil, newToolErr(protocol.CodeInvalidField, ActionFixArguments, "input response %q is not a question of task %s", qid, taskID)
		}
		q, waits, err := s.question(ctx, qid)
		if err != nil {
			return nil, newToolErr(protocol.CodeInternal, ActionRetry, "reading the question: %v", err)
		}
		if !waits {
			continue // answered meanwhile
		}
		_, value := formOf(q)
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

// question returns the question qid and whether its task still waits on it.
func (s *Server) question(ctx context.Context, qid string) (*protocol.Question, bool, error) {
	taskID := qid[:strings.LastIndex(qid, ".q")]
	var last *protocol.Message
	for ev, err := range s.st.Read(ctx, store.Query{TaskID: taskID, TypePrefix: string(protocol.TypeTaskQuestion)}) {
		if err != nil {
			return nil, false, err
		}
		m, err := ev.Message()
		if err != nil {
			return nil, false, err
		}
		if q, err := protocol.DecodePayload[protocol.Question](m); err == nil && q.ID == qid {
			last = m
		}
	}
	if last == nil {
		return nil, false, nil
	}
	return s.waiting(ctx, last)
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
