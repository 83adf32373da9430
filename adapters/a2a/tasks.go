package a2a

import (
	"encoding/json"
	"fmt"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/clutchprotocol/clutch/protocol"
)

// taskView folds the events of one Clutch task into an A2A Task, and
// turns each event into the A2A stream events it stands for. It is the
// only place where the Clutch lifecycle meets A2A task states (see the
// table in the package doc).
type taskView struct {
	task     *a2a.Task
	req      *protocol.Message
	terminal bool
	// question is what the task waits on (a task.question not yet
	// answered): its state is INPUT_REQUIRED and the caller's next message
	// on the task answers it.
	question *protocol.Question
}

// apply folds m into the view and returns the A2A events it becomes on a
// stream: the Task itself for the task.request, status and artifact
// updates after it.
func (v *taskView) apply(m *protocol.Message) []a2a.Event {
	if v.task == nil {
		if m.Type != protocol.TypeTaskRequest {
			return nil // not a task this view can show
		}
		v.req = m
		v.task = &a2a.Task{
			ID:        a2a.TaskID(m.TaskID),
			ContextID: contextOf(m),
			Status:    a2a.TaskStatus{State: a2a.TaskStateSubmitted, Timestamp: eventTime(m)},
			History:   []*a2a.Message{requestMessage(m)},
			Metadata:  map[string]any{MetaRunID: m.RunID},
		}
		return []a2a.Event{v.snapshot(-1)}
	}
	switch m.Type {
	case protocol.TypeTaskRequest:
		return nil // a redelivery of the same request
	case protocol.TypeRoutingDecision:
		if len(m.To) > 0 {
			v.task.Metadata[MetaAgentID] = m.To[0].AgentID
		}
		// A new attempt (a Retry of an ended task) reopens it.
		v.terminal = false
		return nil
	case protocol.TypeTaskAccept:
		v.task.Metadata[MetaAgentID] = m.From.AgentID
		return v.status(m, a2a.TaskStateWorking, nil)
	case protocol.TypeTaskProgress:
		return v.status(m, a2a.TaskStateWorking, v.agentMessage(m, payloadParts("", m.Payload, kindProgress, true)))
	case protocol.TypeTaskError, protocol.TypeTaskTimeout, protocol.TypeTaskCancel:
		ep := errorOf(m)
		if ep.Code == protocol.CodeInternal {
			// A panic's value or a store failure is for the log, not for
			// the client.
			ep = protocol.ErrorPayload{Code: ep.Code, Message: "internal error", Retryable: ep.Retryable}
		}
		msg := v.agentMessage(m, errorParts(ep))
		switch {
		case m.Type == protocol.TypeTaskCancel:
			v.terminal = true
			return v.status(m, a2a.TaskStateCanceled, msg)
		case ep.Details["will_retry"] == true:
			return v.status(m, a2a.TaskStateWorking, msg)
		default:
			v.terminal = true
			return v.status(m, a2a.TaskStateFailed, msg)
		}
	case protocol.TypeTaskQuestion:
		q, err := protocol.DecodePayload[protocol.Question](m)
		if err != nil {
			return nil // not a question this adapter can show
		}
		v.question = &q
		b, _ := json.Marshal(&q) // decoded from JSON: encodes
		return v.status(m, a2a.TaskStateInputRequired, v.agentMessage(m,
			[]*a2a.Part{a2a.NewTextPart(q.Text), dataPart(b, map[string]any{MetaKind: kindQuestion})}))
	case protocol.TypeTaskAnswer:
		v.question = nil
		v.task.History = append(v.task.History, answerMessage(m, v.task))
		return v.status(m, a2a.TaskStateWorking, nil)
	case protocol.TypeTaskResult:
		parts := payloadParts(m.PayloadType, m.Payload, "", true)
		for _, at := range m.Attachments {
			parts = append(parts, &a2a.Part{Content: a2a.URL(at.Ref), MediaType: at.MediaType, Filename: at.Name})
		}
		art := &a2a.Artifact{ID: a2a.ArtifactID(m.ID), Name: "result", Parts: parts}
		v.task.Artifacts = append(v.task.Artifacts, art)
		v.terminal = true
		ev := &a2a.TaskArtifactUpdateEvent{TaskID: v.task.ID, ContextID: v.task.ContextID, Artifact: art, LastChunk: true}
		return append([]a2a.Event{ev}, v.status(m, a2a.TaskStateCompleted, nil)...)
	}
	return nil
}

func (v *taskView) status(m *protocol.Message, state a2a.TaskState, msg *a2a.Message) []a2a.Event {
	st := a2a.TaskStatus{State: state, Message: msg, Timestamp: eventTime(m)}
	v.task.Status = st
	return []a2a.Event{&a2a.TaskStatusUpdateEvent{TaskID: v.task.ID, ContextID: v.task.ContextID, Status: st}}
}

func (v *taskView) agentMessage(m *protocol.Message, parts []*a2a.Part) *a2a.Message {
	return &a2a.Message{ID: m.ID, ContextID: v.task.ContextID, TaskID: v.task.ID, Role: a2a.MessageRoleAgent, Parts: parts}
}

// snapshot returns a copy of the task with at most historyLength history
// messages (-1: all), safe to hand out while the view goes on.
func (v *taskView) snapshot(historyLength int) *a2a.Task {
	t := *v.task
	t.Artifacts = append([]*a2a.Artifact(nil), v.task.Artifacts...)
	t.Metadata = make(map[string]any, len(v.task.Metadata))
	for k, val := range v.task.Metadata {
		t.Metadata[k] = val
	}
	h := v.task.History
	if historyLength >= 0 && len(h) > historyLength {
		h = h[len(h)-historyLength:]
	}
	t.History = append([]*a2a.Message(nil), h...)
	if len(t.History) == 0 {
		t.History = nil
	}
	return &t
}

// requestMessage maps a task.request back to the A2A user message it came
// from (or stands for): its payload's parts, its attachments as URL parts.
func requestMessage(m *protocol.Message) *a2a.Message {
	id, _ := m.Meta[metaMessageID].(string)
	if id == "" {
		id = m.ID
	}
	parts := payloadParts(m.PayloadType, m.Payload, "", false)
	for _, at := range m.Attachments {
		parts = append(parts, &a2a.Part{Content: a2a.URL(at.Ref), MediaType: at.MediaType, Filename: at.Name})
	}
	return &a2a.Message{ID: id, ContextID: contextOf(m), TaskID: a2a.TaskID(m.TaskID), Role: a2a.MessageRoleUser, Parts: parts}
}

// answerMessage is the user message a task.answer stands for: the value,
// a text part when it is a JSON string, else a data part.
func answerMessage(m *protocol.Message, t *a2a.Task) *a2a.Message {
	a, _ := protocol.DecodePayload[protocol.Answer](m)
	var text string
	part := dataPart(a.Value, nil)
	if json.Unmarshal(a.Value, &text) == nil {
		part = a2a.NewTextPart(text)
	}
	return &a2a.Message{ID: m.ID, ContextID: t.ContextID, TaskID: t.ID, Role: a2a.MessageRoleUser, Parts: []*a2a.Part{part}}
}

// errorOf decodes the §5.4 error of a task.error, task.cancel or
// task.timeout.
func errorOf(m *protocol.Message) protocol.ErrorPayload {
	ep, err := protocol.DecodePayload[protocol.ErrorPayload](m)
	if err != nil || ep.Code == "" {
		// A foreign writer put something else there: keep what can be kept.
		var loose struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		}
		_ = json.Unmarshal(m.Payload, &loose)
		ep = protocol.ErrorPayload{Code: protocol.Code(loose.Code), Message: loose.Message}
		if ep.Code == "" {
			ep.Code = protocol.CodeInternal
		}
	}
	if ep.Message == "" {
		ep.Message = fmt.Sprintf("%s (%s)", ep.Code, m.Type)
	}
	return ep
}

// errorParts are the parts of the status message of a failed, cancelled or
// interrupted task: the error's message as text and the §5.4 error as data.
func errorParts(ep protocol.ErrorPayload) []*a2a.Part {
	b, err := json.Marshal(ep)
	if err != nil {
		b, _ = json.Marshal(protocol.ErrorPayload{Code: ep.Code, Message: ep.Message, Retryable: ep.Retryable})
	}
	return []*a2a.Part{a2a.NewTextPart(ep.Message), dataPart(b, map[string]any{MetaKind: kindError})}
}
