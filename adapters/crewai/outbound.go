package crewai

import (
	"bytes"
	"context"
	"encoding/json"

	"github.com/clutchprotocol/clutch/adapters/internal/rawjson"
	"github.com/clutchprotocol/clutch/protocol"
)

// Outbound translates a task.request into the AMP body that asks a
// deployed crew for it: a follow-up (meta.crewai_type "amp_resume", or
// meta.crewai_execution_id and meta.crewai_task_id naming the paused
// task) into a POST /resume body, any other into a POST /kickoff body
// whose inputs are KickoffInputs of the request. Other types have no
// crewAI form (ErrNotMappable).
func (a *Adapter) Outbound(_ context.Context, m *protocol.Message) ([]byte, error) {
	if m == nil || m.Type != protocol.TypeTaskRequest {
		t := "nil"
		if m != nil {
			t = string(m.Type)
		}
		return nil, outErr(protocol.CodeUnsupportedTask, "/type", "no crewAI form for "+t, ErrNotMappable)
	}
	exec := rawjson.MetaString(m, MetaExecutionID)
	task := rawjson.MetaString(m, MetaTaskID)
	if rawjson.MetaString(m, MetaType) == KindResume || (exec != "" && task != "" && rawjson.MetaString(m, MetaType) == "") {
		r, err := ResumeOf(m, exec, task)
		if err != nil {
			return nil, err
		}
		return marshal(r)
	}
	inputs, err := KickoffInputs(m)
	if err != nil {
		return nil, err
	}
	k := Kickoff{Inputs: inputs}
	if mm, ok := m.Meta[MetaMeta].(map[string]any); ok {
		k.Meta = mm
	}
	return marshal(k)
}

func marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, outErr(protocol.CodeInvalidField, "", "encoding", err)
	}
	return b, nil
}

// KickoffInputs maps a task.request payload to a crew's inputs: an object
// is the inputs as it is; a string s is {"input": s}; null is {}; any
// other value is {"input": <its JSON text>}. crewAI interpolates inputs
// into task descriptions as text, so nested values travel as JSON.
func KickoffInputs(m *protocol.Message) (map[string]any, error) {
	raw := m.Payload
	switch rawjson.Kind(raw) {
	case 0, 'n':
		return map[string]any{}, nil
	case '{':
		v, ok := rawjson.ToAny(raw).(map[string]any)
		if !ok {
			return nil, outErr(protocol.CodeInvalidJSON, "/payload", "payload does not decode", nil)
		}
		return v, nil
	case '"':
		s, _ := rawjson.Str(raw)
		return map[string]any{"input": s}, nil
	}
	return map[string]any{"input": string(rawjson.Compact(raw))}, nil
}

// ResumeOf maps a follow-up task.request to the POST /resume body for the
// paused task task of execution exec: payload {human_feedback, is_approve}
// as the translator writes it, or a string (the feedback, approving), or
// {text} / {feedback} with an optional approve / is_approve (default
// true); any other payload's JSON text is the feedback.
func ResumeOf(m *protocol.Message, exec, task string) (*Resume, error) {
	if exec == "" || task == "" {
		return nil, outErr(protocol.CodeMissingField, "/meta", "a resume needs the execution and task ids", nil)
	}
	r := &Resume{ExecutionID: exec, TaskID: task, IsApprove: true}
	switch rawjson.Kind(m.Payload) {
	case '"':
		r.HumanFeedback, _ = rawjson.Str(m.Payload)
	case '{':
		p, _ := rawjson.ToAny(m.Payload).(map[string]any)
		found := false
		for _, k := range []string{"human_feedback", "feedback", "text"} {
			if s, ok := p[k].(string); ok {
				r.HumanFeedback, found = s, true
				break
			}
		}
		if !found { // AMP requires feedback: the object's JSON text is it
			r.HumanFeedback = string(rawjson.Compact(m.Payload))
		}
		for _, k := range []string{"is_approve", "approve", "approved"} {
			if b, ok := p[k].(bool); ok {
				r.IsApprove = b
				break
			}
		}
	case 0, 'n':
	default:
		r.HumanFeedback = string(rawjson.Compact(m.Payload))
	}
	return r, nil
}

// ResumeOfApproval maps the answer to a Crew's question — the value of a
// protocol.Approval — to the POST /resume body for the paused task task
// of execution exec: approve resumes with is_approve true and the reason
// as human_feedback; reject with is_approve false (AMP retries the task
// with the reason as its feedback); edit with is_approve false and the
// edited arguments as the feedback (a JSON string's text, else the JSON
// text), after the reason when there is one. A JSON string value is
// feedback that approves. Any other value is INVALID_FIELD.
func ResumeOfApproval(exec, task string, value json.RawMessage) (*Resume, error) {
	if exec == "" || task == "" {
		return nil, outErr(protocol.CodeMissingField, "/details", "a resume needs the execution and task ids", nil)
	}
	r := &Resume{ExecutionID: exec, TaskID: task}
	if rawjson.Kind(value) == '"' {
		r.HumanFeedback, _ = rawjson.Str(value)
		r.IsApprove = true
		return r, nil
	}
	var a protocol.Approval
	d := json.NewDecoder(bytes.NewReader(value))
	d.DisallowUnknownFields()
	if err := d.Decode(&a); err != nil {
		return nil, outErr(protocol.CodeInvalidField, "/value", "the answer is not an approval {decision, reason?, arguments?}", err)
	}
	r.HumanFeedback = a.Reason
	switch a.Decision {
	case protocol.Approve:
		r.IsApprove = true
	case protocol.Reject:
	case protocol.Edit:
		edited := string(rawjson.Compact(a.Arguments))
		if rawjson.Kind(a.Arguments) == '"' {
			edited, _ = rawjson.Str(a.Arguments)
		}
		if r.HumanFeedback != "" {
			edited = r.HumanFeedback + "\n\n" + edited
		}
		r.HumanFeedback = edited
	default:
		return nil, outErr(protocol.CodeInvalidField, "/value/decision", "the decision is not approve, reject or edit", nil)
	}
	return r, nil
}
