package crewai

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/internal/rawjson"
	"github.com/clutchprotocol/clutch/protocol"
)

// Kinds of the AMP and tracing bodies that are not events (meta.crewai_type).
const (
	KindKickoff         = "amp_kickoff"          // POST /kickoff request
	KindKickoffAccepted = "amp_kickoff_response" // its {kickoff_id} answer
	KindStatus          = "amp_status"           // GET /status/{kickoff_id} answer
	KindResume          = "amp_resume"           // POST /resume request
	KindResumeAnswer    = "amp_resume_response"  // its {status, message} answer
	KindTraceStarted    = "trace_batch_started"  // POST /tracing/batches
	KindTraceFinalized  = "trace_batch_finalized"
	KindStreamChunk     = "stream_chunk" // a StreamChunk of Crew(stream=True)
	KindError           = "amp_error"    // AMP's {error, message} answer about a kickoff
)

// CallerAgent is the sender of translated kickoff and resume requests:
// crewAI bodies do not name their caller.
const CallerAgent = "agent:crewai:caller"

// body is a non-event body being translated.
type body struct {
	c    *conv
	kind string
	id   string
	top  map[string]jsonValue
	meta map[string]any
}

func (a *Adapter) newBody(ctx context.Context, exec, kind, id string, top map[string]jsonValue) *body {
	return &body{c: a.newConv(ctx, exec), kind: kind, id: id, top: top, meta: map[string]any{}}
}

func (b *body) emit(typ protocol.Type, task, parent string, from protocol.Participant, to []protocol.Participant, payload any) ([]*protocol.Message, error) {
	e := &event{id: b.id, typ: b.kind, ts: protocol.Timestamp(b.c.a.opts.Now())}
	if len(b.top) > 0 {
		extra := map[string]any{}
		for k, v := range b.top {
			extra[k] = rawjson.ToAny(v)
		}
		b.meta[MetaExtra] = extra
	}
	if err := b.c.emit(e, "", typ, task, parent, from, to, payload, b.meta); err != nil {
		return nil, err
	}
	return b.c.out, nil
}

func (a *Adapter) kickoffRequest(ctx context.Context, raw []byte, top map[string]jsonValue) ([]*protocol.Message, error) {
	inputs := top["inputs"]
	if k := rawjson.Kind(inputs); k != '{' {
		return nil, inErr(protocol.CodeWrongType, "/inputs", "want an object, got "+rawjson.KindName(inputs), nil)
	}
	kid, err := optID(top, "kickoff_id", "")
	if err != nil {
		return nil, err
	}
	meta := map[string]any{}
	if kid == "" {
		kid = derivedID("crewai-kickoff-", raw)
		meta[MetaIDDerived] = true
	}
	delete(top, "inputs")
	delete(top, "kickoff_id")
	if m, ok := top["meta"]; ok {
		if rawjson.Kind(m) != '{' && rawjson.Kind(m) != 'n' {
			return nil, inErr(protocol.CodeWrongType, "/meta", "want an object, got "+rawjson.KindName(m), nil)
		}
		meta[MetaMeta] = rawjson.ToAny(m)
		delete(top, "meta")
	}
	b := a.newBody(ctx, kid, KindKickoff, kid, top)
	b.meta = meta
	to := []protocol.Participant{{AgentID: crewAgent(""), Role: "crew"}}
	return b.emit(protocol.TypeTaskRequest, rootTask(kid), "", protocol.Participant{AgentID: CallerAgent}, to, inputs)
}

func (a *Adapter) kickoffResponse(ctx context.Context, _ []byte, top map[string]jsonValue) ([]*protocol.Message, error) {
	kid, err := reqID(top, "kickoff_id", "")
	if err != nil {
		return nil, err
	}
	delete(top, "kickoff_id")
	b := a.newBody(ctx, kid, KindKickoffAccepted, kid+"/accepted", top)
	return b.emit(protocol.TypeTaskAccept, rootTask(kid), "", protocol.Participant{AgentID: crewAgent(""), Role: "crew"}, nil, nil)
}

// ampError reads AMP's error answer {error, message} to a call about a
// kickoff (a status poll answered 404: "Execution not found"), with the
// kickoff_id the host adds: the execution cannot go on, so it is the
// task.error of the run's root task — NOT_FOUND when the text says "not
// found", else as ErrorCode reads it.
func (a *Adapter) ampError(ctx context.Context, raw []byte, top map[string]jsonValue) ([]*protocol.Message, error) {
	kid, err := reqID(top, "kickoff_id", "")
	if err != nil {
		return nil, err
	}
	title, err := optStr(top, "error", "")
	if err != nil {
		return nil, err
	}
	text, err := optStr(top, "message", "")
	if err != nil {
		return nil, err
	}
	for _, k := range []string{"kickoff_id", "error", "message"} {
		delete(top, k)
	}
	msg := title
	if text != "" {
		msg = strings.TrimPrefix(title+": "+text, ": ")
	}
	if msg == "" {
		msg = "AMP refused the call"
	}
	code := ErrorCode(msg, protocol.CodeToolFailed)
	if strings.Contains(strings.ToLower(title+" "+text), "not found") && code == protocol.CodeToolFailed {
		code = protocol.CodeNotFound
	}
	b := a.newBody(ctx, kid, KindError, derivedID("crewai-error-", raw), top)
	crew := protocol.Participant{AgentID: crewAgent(""), Role: "crew"}
	return b.emit(protocol.TypeTaskError, rootTask(kid), "", crew, nil, &protocol.ErrorPayload{Code: code, Message: msg, Retryable: code.Retryable(), Details: map[string]any{"kickoff_id": kid}})
}

// statusBody reads a status answer (running, completed, error, or a state
// the API does not document) or a resume answer (resumed, retrying). The
// kickoff id is in the status URL, not the body: the host adds it as
// kickoff_id (the Crew bridge does).
func (a *Adapter) statusBody(ctx context.Context, raw []byte, top map[string]jsonValue) ([]*protocol.Message, error) {
	status, err := reqStr(top, "status", "")
	if err != nil {
		return nil, err
	}
	kid, err := reqID(top, "kickoff_id", "")
	if err != nil {
		return nil, err
	}
	delete(top, "kickoff_id")
	kind := KindStatus
	if status == "resumed" || status == "retrying" || (has(top, "message") && !has(top, "result")) {
		kind = KindResumeAnswer
	}
	// A poll that sees the same state again gives the same id (deduplicated).
	b := a.newBody(ctx, kid, kind, derivedID("crewai-status-", raw), top)
	crew := protocol.Participant{AgentID: crewAgent(""), Role: "crew"}
	root := rootTask(kid)
	st := Status{}
	if err := jsonv2.Unmarshal(raw, &st); err != nil {
		return nil, inErrJSON(err)
	}
	delete(top, "status")
	switch {
	case status == "completed" && kind == KindStatus:
		var out any = nil
		if st.Result != nil {
			out = st.Result.Output
			if len(st.Result.Tasks) > 0 {
				b.meta["crewai_tasks"] = rawjson.ToAny(mustJSON(st.Result.Tasks))
			}
			delete(top, "result")
		}
		if st.ExecutionTime != nil {
			b.meta["crewai_execution_time"] = *st.ExecutionTime
			delete(top, "execution_time")
		}
		return b.emit(protocol.TypeTaskResult, root, "", crew, nil, out)
	case status == "error":
		msg := st.Error
		if msg == "" {
			msg = "the crew failed"
		}
		delete(top, "error")
		code := ErrorCode(msg, protocol.CodeToolFailed)
		return b.emit(protocol.TypeTaskError, root, "", crew, nil, &protocol.ErrorPayload{Code: code, Message: msg, Retryable: code.Retryable(), Details: map[string]any{"kickoff_id": kid}})
	}
	p := map[string]any{"status": status}
	for _, k := range []string{"current_task", "progress", "message", "execution_time"} {
		if v, ok := top[k]; ok {
			p[k] = rawjson.ToAny(v)
			delete(top, k)
		}
	}
	if AwaitingInput(status) {
		p["awaiting_input"] = true
	}
	return b.emit(protocol.TypeTaskProgress, root, "", crew, nil, p)
}

func inErrJSON(err error) error {
	return inErr(protocol.CodeWrongType, "", "status body", err)
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// AwaitingInput reports whether an AMP status value says the execution
// waits for human feedback. The API documents running, completed and error
// only, and says a human_input task "pauses" the execution ("not in pending
// human input state"); any status naming pending, human, input or paused
// is taken as that pause.
func AwaitingInput(status string) bool {
	l := strings.ToLower(status)
	return strings.Contains(l, "human") || strings.Contains(l, "input") || strings.Contains(l, "pending") || strings.Contains(l, "paused")
}

func (a *Adapter) resumeRequest(ctx context.Context, raw []byte, top map[string]jsonValue) ([]*protocol.Message, error) {
	exec, err := reqID(top, "execution_id", "")
	if err != nil {
		return nil, err
	}
	task, err := reqID(top, "task_id", "")
	if err != nil {
		return nil, err
	}
	var r Resume
	if err := jsonv2.Unmarshal(raw, &r); err != nil {
		return nil, inErr(protocol.CodeWrongType, "", "resume body", err)
	}
	if !has(top, "is_approve") || rawjson.Kind(top["is_approve"]) == 'n' {
		return nil, inErr(protocol.CodeMissingField, "/is_approve", "is_approve is required", nil)
	}
	for _, k := range []string{"execution_id", "task_id", "human_feedback", "is_approve"} {
		delete(top, k)
	}
	id := derivedID("crewai-resume-", raw)
	b := a.newBody(ctx, exec, KindResume, id, top)
	b.meta[MetaTaskID] = task
	b.meta[MetaIDDerived] = true
	to := []protocol.Participant{{AgentID: crewAgent(""), Role: "crew"}}
	payload := map[string]any{"human_feedback": r.HumanFeedback, "is_approve": r.IsApprove}
	return b.emit(protocol.TypeTaskRequest, protocol.PrefixTask+id, rootTask(exec), protocol.Participant{AgentID: CallerAgent}, to, payload)
}

// traceLifecycle reads the tracing batch's opening (trace_id,
// execution_type, execution_context, ...) and closing ({status,
// duration_ms, final_event_count}, to which the host adds the trace_id of
// the URL) bodies as extension events of the run.
func (a *Adapter) traceLifecycle(ctx context.Context, raw []byte, top map[string]jsonValue) ([]*protocol.Message, error) {
	trace, err := reqID(top, "trace_id", "")
	if err != nil {
		return nil, err
	}
	kind := KindTraceStarted
	if has(top, "final_event_count") {
		kind = KindTraceFinalized
	}
	crewName := ""
	if ctxObj, err := object(top["execution_context"], "/execution_context"); err != nil {
		return nil, err
	} else if ctxObj != nil {
		crewName, _ = rawjson.Str(ctxObj["crew_name"])
	}
	payload := map[string]jsonValue{}
	for k, v := range top {
		payload[k] = v
	}
	b := a.newBody(ctx, trace, kind, derivedID("crewai-trace-", raw), nil)
	return b.emit(protocol.Type("x.crewai."+kind), rootTask(trace), "", protocol.Participant{AgentID: crewAgent(crewName), Role: "crew"}, nil, payload)
}

// chunk reads one StreamChunk. Chunks carry no id and may repeat, so each
// gets a new one; their run is the one their task_id landed in (else
// "run:crewai-stream").
func (a *Adapter) chunk(ctx context.Context, _ []byte, top map[string]jsonValue) ([]*protocol.Message, error) {
	var ch StreamChunk
	if err := jsonv2.Unmarshal(mustCompact(top), &ch); err != nil {
		return nil, inErr(protocol.CodeWrongType, "", "stream chunk", err)
	}
	if len(ch.TaskID) > maxOutsideID {
		return nil, inErr(protocol.CodeInvalidField, "/task_id", "task_id is too long", nil)
	}
	exec := "crewai-stream"
	if ch.TaskID != "" {
		if l, ok := a.links.Lookup(ctx, keyTask+ch.TaskID); ok && l.RunID != "" {
			exec = strings.TrimPrefix(l.RunID, "run:")
		}
	}
	for _, k := range []string{"content", "chunk_type", "task_index", "task_name", "task_id", "agent_role", "agent_id", "tool_call"} {
		delete(top, k)
	}
	b := a.newBody(ctx, exec, KindStreamChunk, protocol.NewID("msg_"), top)
	task, parent := b.c.taskOf(ch.TaskID)
	if ch.TaskID != "" {
		b.meta[MetaTaskID] = ch.TaskID
	}
	if ch.TaskName != "" {
		b.meta[MetaTaskName] = ch.TaskName
	}
	if ch.AgentID != "" {
		b.meta[MetaAgentID] = ch.AgentID
	}
	b.meta["crewai_task_index"] = ch.TaskIndex
	from := protocol.Participant{AgentID: agentOf(ch.AgentRole), Role: ch.AgentRole}
	if ch.ChunkType == "tool_call" && ch.ToolCall != nil {
		args := toolArgs(jsontextString(ch.ToolCall.Arguments))
		// The pieces of one call share its call id (docs/protocol.md
		// §2.3.1): tool_id, else one derived from the run, the task and
		// the call's index, which every piece of it carries.
		callID := adapters.CallID(ch.ToolCall.ToolID, exec, ch.TaskID, strconv.Itoa(ch.ToolCall.Index))
		p := map[string]any{"tool": "crewai", "name": ch.ToolCall.ToolName, "args": json.RawMessage(args), "call_id": callID, "index": ch.ToolCall.Index, "partial": true}
		return b.emit(protocol.TypeToolCall, task, parent, from, nil, p)
	}
	if ch.ChunkType != "text" && ch.ChunkType != "" {
		b.meta["crewai_chunk_type"] = ch.ChunkType
	}
	return b.emit(protocol.TypeChatMessage, task, parent, from, nil, map[string]any{"text": ch.Content, "partial": true})
}

func mustCompact(top map[string]jsonValue) []byte {
	b, _ := jsonv2.Marshal(top)
	return b
}
