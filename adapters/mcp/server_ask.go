package mcp

import (
	"context"
	"encoding/json"
	"strings"
	"time"

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
	// direct: the client speaks a protocol before multi round-trip
	// requests, and the Server sends the elicitation/create itself
	// (askNow).
	direct bool
}

// multiRoundTrip is the first MCP revision with multi round-trip requests
// (input requests in a result); the go-sdk compares revisions as strings
// too.
const multiRoundTrip = "2026-07-28"

// stateOf is the request state of a call that waits on the task taskID.
func stateOf(taskID string) string { return "clutch-task:" + taskID }

// elicitable returns the input request that asks q of the host's person,
// when the host declared elicitation, c may answer q and q fits a form;
// nil otherwise (answer_question takes it).
func elicitable(req *sdk.CallToolRequest, c *auth.Caller, r *protocol.Message, q *protocol.Question) *inputNeeded {
	if req.Session == nil || !q.MayAnswer(c.AgentID, r.From.AgentID, c.Scopes) {
		return nil
	}
	p := req.Session.InitializeParams()
	if p == nil || p.Capabilities == nil || p.Capabilities.Elicitation == nil {
		return nil
	}
	form, _ := formOf(q)
	if form == nil {
		return nil
	}
	return &inputNeeded{requests: sdk.InputRequestMap{q.ID: &sdk.ElicitParams{Message: q.Text, RequestedSchema: form}}, state: stateOf(r.TaskID),
		direct: p.ProtocolVersion < multiRoundTrip}
}

// askNow puts the questions of in to the person of a client that predates
// multi round-trip requests, one elicitation/create each, takes their
// responses as resumeCall does, and waits on the task r again for d.
//
// The go-sdk would send such a client the elicitation/create requests of
// a result's input requests itself, but only for one round: it calls the
// tool again once, and a second question of the task came back to the
// client as a result with input requests it cannot read — an empty
// result, the task left waiting (the TypeScript SDK v1 host of
// TestPeerElicitation). So the Server asks such a client itself, for as
// many questions as the task asks in the call, each at most once.
func (s *Server) askNow(ctx context.Context, req *sdk.CallToolRequest, info *callInfo, r *protocol.Message, in *inputNeeded, d time.Duration) (any, *toolErr) {
	for qid, ir := range in.requests {
		res, err := req.Session.Elicit(ctx, ir.(*sdk.ElicitParams))
		if err != nil {
			s.opts.Logger.Debug("mcp: eliciting an answer", "question", qid, "err", err)
			res = nil // as declined: answer_question takes it
		}
		if terr := s.respond(ctx, info, r.TaskID, qid, res); terr != nil {
			return nil, terr
		}
		info.asked(qid) // answered or not, not asked again in this call
	}
	start, _ := s.st.LastSeq(ctx)
	return s.await(ctx, req, info, r, start, d)
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
		res, _ := resp.(*sdk.ElicitResult)
		if terr := s.respond(ctx, info, taskID, qid, res); terr != nil {
			return nil, terr
		}
	}
	return r, nil
}

// respond takes the person's response res (nil when there is none) to the
// question qid of the task taskID: accepted, it answers the question as
// the caller; otherwise the question is left to answer_question
// (info.declined).
func (s *Server) respond(ctx context.Context, info *callInfo, taskID, qid string, res *sdk.ElicitResult) *toolErr {
	if res == nil || res.Action != "accept" {
		info.asked(qid)
		return nil
	}
	if of, _, ok := protocol.ParseQuestionID(qid); !ok || of != taskID {
		return newToolErr(protocol.CodeInvalidField, ActionFixArguments, "input response %q is not a question of task %s", qid, taskID)
	}
	w, err := s.r.Waiter(ctx, taskID)
	if err != nil {
		return newToolErr(protocol.CodeInternal, ActionRetry, "reading the question: %v", err)
	}
	if w == nil || w.Question.ID != qid {
		return nil // answered meanwhile
	}
	_, value := formOf(w.Question)
	if value == nil {
		return nil
	}
	v, err := value(res.Content)
	if err != nil {
		return nil
	}
	return s.answer(ctx, info.caller, qid, v)
}

// asked marks the question qid as put to the host's person in this call:
// it is not asked again (declined, or not answered by the response).
func (info *callInfo) asked(qid string) {
	if info.declined == nil {
		info.declined = map[string]bool{}
	}
	info.declined[qid] = true
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
