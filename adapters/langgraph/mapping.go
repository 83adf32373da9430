package langgraph

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/clutchprotocol/clutch/protocol"
)

// frame maps one Agent Server frame by its stream mode (package doc table).
func (s *Stream) frame(_ context.Context, event string, data any) error {
	if obj, ok := data.(map[string]any); ok && obj["type"] == "event" {
		if method, ok := obj["method"].(string); ok {
			return s.protocolEvent(method, obj)
		}
	}
	mode, _, _ := strings.Cut(event, "|")
	obj, _ := data.(map[string]any)
	switch mode {
	case "metadata":
		if obj != nil {
			s.learn(str(obj, "run_id"), str(obj, "thread_id"))
		}
		s.emit(protocol.TypeTaskAccept, "", "", "", data, nil)
	case "values":
		s.lastValues = data
		s.emit(protocol.TypeTaskProgress, "", "", PayloadValues, data, nil)
		if obj != nil {
			s.interrupt(obj["__interrupt__"])
		}
	case "updates":
		s.emit(protocol.TypeTaskProgress, "", "", PayloadUpdates, data, nil)
		for node, upd := range sorted(obj) {
			if node == "__interrupt__" {
				s.interrupt(upd)
				continue
			}
			if u, ok := upd.(map[string]any); ok {
				if msgs, ok := u["messages"].([]any); ok {
					for _, m := range msgs {
						if mo, ok := m.(map[string]any); ok && isMessage(mo) {
							s.messageTools(mo, node)
						}
					}
				}
			}
		}
	case "messages":
		// messages-tuple: [chunk, metadata]
		arr, ok := data.([]any)
		if !ok || len(arr) != 2 {
			s.unknown("messages", data)
			return nil
		}
		chunk, _ := arr[0].(map[string]any)
		md, _ := arr[1].(map[string]any)
		if chunk == nil || !isMessage(chunk) {
			s.unknown("messages", data)
			return nil
		}
		if md != nil {
			s.learn(str(md, "run_id"), str(md, "thread_id"))
		}
		return s.message(chunk, str(md, "langgraph_node"), md, true)
	case "messages/metadata":
		for id, m := range sorted(obj) {
			if mo, ok := m.(map[string]any); ok {
				md, _ := mo["metadata"].(map[string]any)
				s.msgMeta[id] = md
				if md != nil {
					s.learn(str(md, "run_id"), str(md, "thread_id"))
				}
			}
		}
		s.emit(protocol.TypeTaskProgress, "", "", PayloadMetadata, data, nil)
	case "messages/partial", "messages/complete":
		arr, ok := data.([]any)
		if !ok {
			s.unknown(mode, data)
			return nil
		}
		for _, m := range arr {
			mo, ok := m.(map[string]any)
			if !ok || !isMessage(mo) {
				s.unknown(mode, m)
				continue
			}
			md := s.msgMeta[str(mo, "id")]
			if err := s.message(mo, str(md, "langgraph_node"), md, mode == "messages/partial"); err != nil {
				return err
			}
		}
		if len(arr) == 0 {
			s.unknown(mode, data)
		}
	case "tasks":
		s.task1(obj, data)
	case "checkpoints":
		s.checkpoint(obj, data)
	case "debug":
		if obj == nil {
			s.unknown(mode, data)
			return nil
		}
		s.setTime(obj["timestamp"])
		p, _ := obj["payload"].(map[string]any)
		switch str(obj, "type") {
		case "checkpoint":
			s.checkpoint(p, data)
		case "task", "task_result":
			s.task1(p, data)
		default:
			s.unknown("debug", data)
		}
	case "custom":
		s.emit(protocol.TypeTaskProgress, "", "", PayloadCustom, data, nil)
	case "events":
		if obj == nil {
			s.unknown(mode, data)
			return nil
		}
		return s.streamEvent(obj)
	case "error":
		ep := protocol.ErrorPayload{Code: protocol.CodeToolFailed, Message: "LangGraph run failed", Details: map[string]any{"langgraph": data}}
		switch d := data.(type) {
		case string:
			ep.Message = d
			if d == "Run not found" {
				ep.Code = protocol.CodeNotFound
			}
		case map[string]any:
			if e := str(d, "error"); e != "" {
				ep.Details["error"] = e
				ep.Message = e
			}
			if m := str(d, "message"); m != "" {
				ep.Message = m
			}
		}
		s.emit(protocol.TypeTaskError, "", "", "", ep, nil)
	case "end":
		if s.waiting {
			// An interrupt in a subgraph's task: the run waits as well.
			if !s.ended[s.task] {
				s.askRun()
			}
			s.emit(protocol.Type("x.langgraph.end"), "", "", "", data, nil)
			s.t.unknown.Add(-1) // a known kind
			return nil
		}
		s.emit(protocol.TypeTaskResult, "", "", "", map[string]any{"values": s.lastValues}, nil)
	default:
		s.unknown(mode, data)
	}
	return nil
}

// interrupt reports interrupts (a values or updates __interrupt__ list):
// the task waits for input, as task.error INPUT_REQUIRED (package doc).
func (s *Stream) interrupt(v any) {
	list, ok := v.([]any)
	if !ok {
		if v != nil {
			list = []any{v}
		} else {
			return
		}
	}
	if len(list) == 0 {
		// A static interrupt (interruptBefore/After) names no interrupt:
		// the run stops before or after a node and waits all the same.
		if s.waiting {
			return
		}
		s.waiting = true
		s.emit(protocol.TypeTaskError, "", "", "", protocol.ErrorPayload{Code: protocol.CodeInputRequired,
			Message: "LangGraph run paused at a breakpoint (static interrupt): answer to continue",
			Details: map[string]any{"interrupts": []any{}, "static": true}}, nil)
		return
	}
	var ids []any
	fresh := false
	for _, in := range list {
		io, _ := in.(map[string]any)
		id := str(io, "id")
		if id == "" || !s.asked[id] {
			fresh = true
		}
	}
	if !fresh {
		return // already reported (the server sends it in updates and values)
	}
	s.interrupts = list
	s.waiting = true
	msg := "LangGraph run interrupted for human input"
	for _, in := range list {
		if io, ok := in.(map[string]any); ok {
			if id := str(io, "id"); id != "" {
				ids = append(ids, id)
				s.asked[id] = true
			}
			if q, ok := io["value"].(string); ok && q != "" {
				msg = q
			}
		}
	}
	ep := protocol.ErrorPayload{Code: protocol.CodeInputRequired, Message: msg, Retryable: false,
		Details: map[string]any{"interrupts": list}}
	var meta map[string]any
	if len(ids) > 0 {
		meta = map[string]any{MetaInterrupts: ids}
	}
	s.emit(protocol.TypeTaskError, "", "", "", ep, meta)
}

// askRun reports that the run (the root task) waits for input, after an
// interrupt was reported in a subgraph's task.
func (s *Stream) askRun() {
	msg := "LangGraph run interrupted for human input"
	var ids []any
	for _, in := range s.interrupts {
		if io, ok := in.(map[string]any); ok {
			if q, ok := io["value"].(string); ok && q != "" {
				msg = q
			}
			if id := str(io, "id"); id != "" {
				ids = append(ids, id)
			}
		}
	}
	var meta map[string]any
	if len(ids) > 0 {
		meta = map[string]any{MetaInterrupts: ids}
	}
	list := s.interrupts
	if list == nil {
		list = []any{}
	}
	s.emit(protocol.TypeTaskError, s.task, "", "", protocol.ErrorPayload{Code: protocol.CodeInputRequired, Message: msg,
		Details: map[string]any{"interrupts": list}}, meta)
}

// task1 maps a tasks-mode payload (or a debug task / task_result payload):
// a start (input, triggers) starts a child task; a result ends it.
func (s *Stream) task1(p map[string]any, data any) {
	id := str(p, "id")
	if p == nil || id == "" {
		s.unknown("tasks", data)
		return
	}
	task := protocol.PrefixTask + id
	parent := s.nsTask(s.ns)
	meta := map[string]any{MetaTaskID: id, MetaNode: str(p, "name")}
	_, isResult := p["result"]
	_, hasErr := p["error"]
	if !isResult && !hasErr {
		s.emit(protocol.TypeTaskRequest, task, parent, PayloadTask, data, meta)
		return
	}
	if e := p["error"]; e != nil {
		msg, _ := e.(string)
		if eo, ok := e.(map[string]any); ok {
			msg = str(eo, "message") // the JS server: {message, name}
		}
		if msg == "" {
			msg = "LangGraph task " + str(p, "name") + " failed"
		}
		s.emit(protocol.TypeTaskError, task, parent, "", protocol.ErrorPayload{Code: protocol.CodeToolFailed, Message: msg, Details: map[string]any{"langgraph": data}}, meta)
		return
	}
	if in, ok := p["interrupts"].([]any); ok && len(in) > 0 {
		s.emit(protocol.TypeTaskProgress, task, parent, PayloadTask, data, meta)
		s.interrupt(in)
		return
	}
	s.emit(protocol.TypeTaskResult, task, parent, PayloadTask, data, meta)
}

// checkpoint maps a checkpoints payload: task.progress keyed by the
// checkpoint id (its idempotency key).
func (s *Stream) checkpoint(p map[string]any, data any) {
	var cp string
	if cfg, ok := p["config"].(map[string]any); ok {
		if c, ok := cfg["configurable"].(map[string]any); ok {
			cp = str(c, "checkpoint_id")
			s.learn(str(c, "run_id"), str(c, "thread_id"))
		}
	}
	if cp == "" {
		cp = str(p, "id") // protocol v2 checkpoints event
	}
	key := ""
	if cp != "" {
		key = "lg-checkpoint:" + cp
	}
	if len(key) > protocol.MaxIDLength {
		// Refused, not hashed: a hashed key would still dedup, but the
		// checkpoint id the reader looks for would not be the key.
		if s.err == nil {
			s.err = inErr(protocol.CodeInvalidField, "/config/configurable/checkpoint_id", "the checkpoint id is over "+itoa(protocol.MaxIDLength-len("lg-checkpoint:"))+" bytes (the idempotency key's limit)", ErrNotLangGraph)
		}
		return
	}
	s.emit(protocol.TypeTaskProgress, "", "", PayloadCheckpoint, data, map[string]any{MetaCheckpoint: cp})
	if key != "" && len(s.out) > 0 {
		s.out[len(s.out)-1].IdempotencyKey = key
	}
}

// isMessage reports whether o looks like a serialized LangChain message.
func isMessage(o map[string]any) bool {
	if _, ok := o["content"]; !ok {
		return false
	}
	return role(o) != ""
}

// role maps a LangChain message type (or OpenAI-style role) to a chat role.
func role(o map[string]any) string {
	t := str(o, "type")
	if t == "" {
		t = str(o, "role")
	}
	return roleOf(t)
}

// roleOf maps a LangChain message type or a role to a chat role, "" when
// it is neither.
func roleOf(t string) string {
	switch t {
	case "human", "HumanMessage", "HumanMessageChunk", "user":
		return "user"
	case "ai", "AIMessage", "AIMessageChunk", "assistant":
		return "assistant"
	case "tool", "ToolMessage", "ToolMessageChunk":
		return "tool"
	case "system", "SystemMessage", "SystemMessageChunk", "developer":
		return "system"
	case "function", "FunctionMessage", "chat", "ChatMessage", "remove", "RemoveMessage":
		return strings.ToLower(strings.TrimSuffix(t, "Message"))
	}
	return ""
}

// message maps a serialized LangChain message: chat.message (partial when
// streamed), and its tool calls and tool results (messageTools).
func (s *Stream) message(o map[string]any, node string, md map[string]any, partial bool) error {
	id := str(o, "id")
	r := role(o)
	if node == "" {
		node = str(md, "langgraph_node")
	}
	meta := map[string]any{MetaMessageID: id, MetaNode: node}
	if md != nil {
		meta["lg_metadata"] = md
	}
	content := o["content"]
	if partial {
		meta[MetaPartial] = true
		// messages/partial is cumulative: report the new text only.
		if txt, ok := content.(string); ok && id != "" && s.event != "" && strings.HasPrefix(s.event, "messages/partial") {
			seen := s.partial[id]
			if seen <= len(txt) {
				s.partial[id] = len(txt)
				content = txt[seen:]
			}
		}
	}
	// A streamed tool message carries no status (the JS server leaves it
	// out of messages-tuple chunks), so it cannot tell a result from an
	// error: it is kept as a chat message and the tool.result or
	// tool.error comes from the updates or the finished message.
	streamedTool := r == "tool" && partial && o["status"] == nil
	if r != "tool" || streamedTool {
		pl := map[string]any{"role": r, "content": content, "message_id": id}
		if c := str(o, "tool_call_id"); c != "" {
			pl["call_id"] = c
			meta[MetaToolCallID] = c
		}
		if n := str(o, "name"); n != "" {
			pl["name"] = n
		}
		if tc, ok := o["tool_call_chunks"].([]any); ok && len(tc) > 0 {
			pl["tool_call_chunks"] = tc
		}
		if u := o["usage_metadata"]; u != nil {
			pl["usage"] = u
		}
		if rm, ok := o["response_metadata"].(map[string]any); ok && len(rm) > 0 {
			pl["response_metadata"] = rm
		}
		s.emit(protocol.TypeChatMessage, "", "", "", pl, meta)
		if streamedTool {
			return nil
		}
	}
	// Tool calls of a streamed message count once they are whole: in a
	// messages/partial with a stop reason, or a finished message.
	if partial {
		rm, _ := o["response_metadata"].(map[string]any)
		if rm == nil || (rm["stop_reason"] == nil && rm["finish_reason"] == nil) {
			if r != "tool" {
				return nil
			}
		}
	}
	s.messageTools(o, node)
	return nil
}

// messageTools reports the tool calls of an AI message (tool.call each,
// and routing.decision for a handoff tool) and a tool message's result
// (tool.result, or tool.error when its status is "error"), once per call id.
func (s *Stream) messageTools(o map[string]any, node string) {
	switch role(o) {
	case "assistant":
		calls, _ := o["tool_calls"].([]any)
		for _, c := range calls {
			co, ok := c.(map[string]any)
			if !ok {
				continue
			}
			id := str(co, "id")
			if id != "" && s.calls[id] {
				continue
			}
			if id != "" {
				s.calls[id] = true
			}
			name := str(co, "name")
			s.emit(protocol.TypeToolCall, "", "", "", map[string]any{"tool": "langgraph:" + toolOwner(node), "name": name, "args": co["args"], "call_id": s.callID(id, name)},
				map[string]any{MetaToolCallID: id, MetaNode: node, MetaMessageID: str(o, "id")})
		}
	case "tool":
		id := str(o, "tool_call_id")
		if id != "" && s.results[id] {
			return
		}
		if id != "" {
			s.results[id] = true
		}
		name := str(o, "name")
		meta := map[string]any{MetaToolCallID: id, MetaNode: node, MetaMessageID: str(o, "id")}
		if s.answered(id) {
			// Answered in an earlier Stream (frames translated one per
			// call): one outcome a call, the repeat kept as progress.
			s.emit(protocol.TypeTaskProgress, "", "", PayloadMessage, o, meta)
			return
		}
		callID := s.outcomeID(id, name)
		if str(o, "status") == "error" {
			msg, _ := o["content"].(string)
			if msg == "" {
				msg = "tool " + name + " failed"
			}
			s.emit(protocol.TypeToolError, "", "", "", protocol.ErrorPayload{Code: protocol.CodeToolFailed, Message: msg,
				Details: map[string]any{"tool": "langgraph:" + toolOwner(node), "name": name, "call_id": callID}}, meta)
			return
		}
		pl := map[string]any{"tool": "langgraph:" + toolOwner(node), "name": name, "call_id": callID, "content": o["content"]}
		if a := o["artifact"]; a != nil {
			pl["structuredContent"] = a
		}
		s.emit(protocol.TypeToolResult, "", "", "", pl, meta)
		// A handoff (langgraph-supervisor/swarm): the tool message names
		// its destination.
		if rm, ok := o["response_metadata"].(map[string]any); ok {
			if dest := str(rm, "__handoff_destination"); dest != "" {
				s.emit(protocol.TypeRoutingDecision, "", "", "", map[string]any{"selected": dest, "reason": "LangGraph handoff by tool " + name, "candidates": []any{}},
					map[string]any{MetaToolCallID: id, MetaNode: node, "lg_handoff": dest})
			}
		}
	}
}

func toolOwner(node string) string {
	if node == "" {
		return "graph"
	}
	return node
}

// streamEvent maps an astream_events v2 record.
func (s *Stream) streamEvent(o map[string]any) error {
	ev := str(o, "event")
	runID := str(o, "run_id")
	name := str(o, "name")
	data, _ := o["data"].(map[string]any)
	md, _ := o["metadata"].(map[string]any)
	parents, _ := o["parent_ids"].([]any)
	node := str(md, "langgraph_node")
	meta := map[string]any{"lg_event_name": name, "lg_event_run_id": runID, MetaNode: node}
	if md != nil {
		s.learn(str(md, "run_id"), str(md, "thread_id"))
	}
	if len(parents) == 0 && runID != "" && strings.HasPrefix(ev, "on_chain_") {
		s.learn(runID, "")
	}
	switch ev {
	case "on_tool_start":
		s.emit(protocol.TypeToolCall, "", "", "", map[string]any{"tool": "langgraph:" + toolOwner(node), "name": name, "args": data["input"], "call_id": s.callID(runID, name)}, mergeMeta(meta, MetaToolCallID, runID))
	case "on_tool_end":
		out := data["output"]
		if om, ok := out.(map[string]any); ok && isMessage(om) && role(om) == "tool" {
			s.messageTools(om, node)
			return nil
		}
		s.emit(protocol.TypeToolResult, "", "", "", map[string]any{"tool": "langgraph:" + toolOwner(node), "name": name, "call_id": s.outcomeID(runID, name), "content": out}, mergeMeta(meta, MetaToolCallID, runID))
	case "on_tool_error":
		msg := "tool " + name + " failed"
		if e, ok := data["error"].(string); ok && e != "" {
			msg = e
		}
		s.emit(protocol.TypeToolError, "", "", "", protocol.ErrorPayload{Code: protocol.CodeToolFailed, Message: msg,
			Details: map[string]any{"tool": "langgraph:" + toolOwner(node), "name": name, "call_id": s.outcomeID(runID, name), "error": data["error"]}}, mergeMeta(meta, MetaToolCallID, runID))
	case "on_chat_model_stream", "on_llm_stream":
		if ch, ok := data["chunk"].(map[string]any); ok && isMessage(ch) {
			return s.message(ch, node, md, true)
		}
		s.emit(protocol.TypeChatMessage, "", "", "", map[string]any{"role": "assistant", "content": data["chunk"]}, mergeMeta(meta, MetaPartial, true))
	case "on_chat_model_end":
		if out, ok := data["output"].(map[string]any); ok && isMessage(out) {
			return s.message(out, node, md, false)
		}
		s.emit(protocol.TypeTaskProgress, "", "", PayloadEvent, o, meta)
	case "on_custom_event":
		s.emit(protocol.TypeTaskProgress, "", "", PayloadCustom, o, meta)
	default:
		if !strings.HasPrefix(ev, "on_") {
			s.unknown("event", o)
			return nil
		}
		if e, ok := data["error"]; ok && e != nil && len(parents) == 0 {
			msg, _ := e.(string)
			if msg == "" {
				msg = name + " failed"
			}
			s.emit(protocol.TypeTaskError, "", "", "", protocol.ErrorPayload{Code: protocol.CodeToolFailed, Message: msg, Details: map[string]any{"langgraph": o}}, meta)
			return nil
		}
		s.emit(protocol.TypeTaskProgress, "", "", PayloadEvent, o, meta)
	}
	return nil
}

func mergeMeta(m map[string]any, k string, v any) map[string]any {
	m[k] = v
	return m
}

// runObject maps a Run (or a run webhook payload) by its status.
func (s *Stream) runObject(o map[string]any) error {
	s.learn(str(o, "run_id"), str(o, "thread_id"))
	s.setTime(o["updated_at"])
	meta := map[string]any{"lg_assistant_id": str(o, "assistant_id"), "lg_status": str(o, "status")}
	vals, hasVals := o["values"]
	if hasVals {
		s.lastValues = vals
	}
	switch st := str(o, "status"); st {
	case "pending":
		s.emit(protocol.TypeTaskRequest, "", "", PayloadRun, o, meta)
	case "running":
		s.emit(protocol.TypeTaskAccept, "", "", "", o, meta)
	case "success":
		if hasVals {
			s.emit(protocol.TypeTaskResult, "", "", "", map[string]any{"values": vals}, meta)
		} else {
			s.emit(protocol.TypeTaskResult, "", "", "", map[string]any{"run": o}, meta)
		}
	case "error":
		msg := "LangGraph run failed"
		if e, ok := o["error"].(string); ok && e != "" {
			msg = e
		}
		s.emit(protocol.TypeTaskError, "", "", "", protocol.ErrorPayload{Code: protocol.CodeToolFailed, Message: msg, Details: map[string]any{"langgraph": o}}, meta)
	case "timeout":
		s.emit(protocol.TypeTaskTimeout, "", "", "", map[string]any{"message": "LangGraph run timed out", "run": o}, meta)
	case "interrupted":
		if vm, ok := vals.(map[string]any); ok && vm["__interrupt__"] != nil {
			s.interrupt(vm["__interrupt__"])
			return nil
		}
		s.emit(protocol.TypeTaskCancel, "", "", "", map[string]any{"message": "LangGraph run interrupted", "run": o}, meta)
	default:
		s.unknown("run_"+st, o)
	}
	return nil
}

// threadObject maps a Thread: a thread waiting for input reports its
// interrupts; any other is kept as x.langgraph.thread.
func (s *Stream) threadObject(o map[string]any) error {
	s.learn("", str(o, "thread_id"))
	if s.run == "" && s.lgRun == "" {
		s.run = protocol.PrefixRun + "thread-" + str(o, "thread_id")
	}
	s.setTime(o["updated_at"])
	if in, ok := o["interrupts"].(map[string]any); ok && len(in) > 0 {
		for tid, list := range sorted(in) {
			s.emit(protocol.TypeTaskProgress, protocol.PrefixTask+tid, "", PayloadTask, map[string]any{"thread": o}, map[string]any{MetaTaskID: tid})
			s.interrupt(list)
		}
		return nil
	}
	s.emit(protocol.Type("x.langgraph.thread"), "", "", "", o, map[string]any{"lg_status": str(o, "status")})
	s.t.unknown.Add(-1) // a known kind, kept as an extension
	return nil
}

// protocolEvent maps a protocol-v2 event {type:"event", method, params:
// {namespace, timestamp, data}}.
func (s *Stream) protocolEvent(method string, o map[string]any) error {
	p, _ := o["params"].(map[string]any)
	if p == nil {
		s.unknown(method, o)
		return nil
	}
	if seq, ok := o["seq"].(json.Number); ok && s.seq == "" {
		s.seq = seq.String()
	}
	s.setTime(p["timestamp"])
	if nsl, ok := p["namespace"].([]any); ok {
		s.ns = nil
		for _, e := range nsl {
			if es, ok := e.(string); ok {
				s.ns = append(s.ns, es)
			}
		}
	}
	data := p["data"]
	d, _ := data.(map[string]any)
	if d != nil {
		s.learn(str(d, "run_id"), "")
	}
	switch method {
	case "lifecycle":
		ev := str(d, "event")
		child := len(s.ns) > 0
		switch {
		case ev == "running" && !child:
			s.emit(protocol.TypeTaskAccept, "", "", "", data, nil)
		case ev == "started" && child:
			s.emit(protocol.TypeTaskRequest, "", "", PayloadTask, data, map[string]any{MetaNode: str(d, "graph_name")})
		case ev == "completed" && child:
			s.emit(protocol.TypeTaskResult, "", "", PayloadTask, data, nil)
		case ev == "failed":
			msg := "LangGraph run failed"
			if e, ok := d["error"].(string); ok && e != "" {
				msg = e
			}
			s.emit(protocol.TypeTaskError, "", "", "", protocol.ErrorPayload{Code: protocol.CodeToolFailed, Message: msg, Details: map[string]any{"langgraph": data}}, nil)
		default:
			s.emit(protocol.TypeTaskProgress, "", "", PayloadEvent, data, nil)
		}
	case "tools":
		id := str(d, "tool_call_id")
		meta := map[string]any{MetaToolCallID: id}
		switch str(d, "event") {
		case "tool-started":
			s.emit(protocol.TypeToolCall, "", "", "", map[string]any{"tool": "langgraph:graph", "name": str(d, "tool_name"), "args": d["input"], "call_id": s.callID(id, str(d, "tool_name"))}, meta)
		case "tool-finished":
			if om, ok := d["output"].(map[string]any); ok && isMessage(om) {
				s.messageTools(om, "")
				if len(s.out) > 0 {
					return nil
				}
			}
			s.emit(protocol.TypeToolResult, "", "", "", map[string]any{"tool": "langgraph:graph", "call_id": s.outcomeID(id, ""), "content": d["output"]}, meta)
		case "tool-error":
			msg := str(d, "message")
			if msg == "" {
				msg = "tool failed"
			}
			s.emit(protocol.TypeToolError, "", "", "", protocol.ErrorPayload{Code: protocol.CodeToolFailed, Message: msg, Details: map[string]any{"call_id": s.outcomeID(id, "")}}, meta)
		default:
			s.emit(protocol.TypeTaskProgress, "", "", PayloadEvent, data, meta)
		}
	case "messages":
		if str(d, "event") == "content-block-delta" {
			s.emit(protocol.TypeChatMessage, "", "", "", map[string]any{"role": "assistant", "delta": d["delta"], "index": d["index"]}, map[string]any{MetaPartial: true, MetaMessageID: str(d, "id")})
			return nil
		}
		s.emit(protocol.TypeTaskProgress, "", "", PayloadMessage, data, map[string]any{MetaMessageID: str(d, "id")})
	case "input.requested":
		s.interrupt([]any{map[string]any{"id": str(d, "interrupt_id"), "value": d["payload"]}})
	case "values", "updates", "custom", "tasks":
		ev := method
		for _, n := range s.ns {
			ev += "|" + n
		}
		return s.frame(context.Background(), ev, data)
	case "checkpoints":
		s.checkpoint(d, data)
	default:
		s.unknown(method, data)
	}
	return nil
}

// sorted ranges over a map in key order, so that translation is
// deterministic.
func sorted(m map[string]any) func(func(string, any) bool) {
	return func(yield func(string, any) bool) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sortStrings(keys)
		for _, k := range keys {
			if !yield(k, m[k]) {
				return
			}
		}
	}
}
