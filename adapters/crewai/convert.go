package crewai

import (
	"context"
	"encoding/json"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/internal/bound"
	"github.com/clutchprotocol/clutch/adapters/internal/rawjson"
	"github.com/clutchprotocol/clutch/adapters/internal/redact"
	"github.com/clutchprotocol/clutch/protocol"
)

// conv translates the events of one crewAI run, keeping where each crewAI
// task, tool call and delegation landed.
type conv struct {
	a      *Adapter
	ctx    context.Context
	exec   string
	run    string
	thread string
	root   string
	crew   string // the crew's agent id

	cur    string              // the Clutch task of the crewAI task running now
	tasks  map[string]taskLink // crewAI task id -> Clutch task
	calls  []call              // tool calls not finished yet
	deleg  []delegation        // delegations not answered yet
	fresh  map[string]taskLink // links to remember when the batch is done
	fcalls map[string]call
	out    []*protocol.Message

	hadOpen bool            // the Index held an open state for the run
	ended   map[string]bool // tasks that ended (true: in this batch, to remember)
}

type taskLink struct{ task, parent string }

type call struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Task  string `json:"task"`
	Agent string `json:"agent"`
}

type delegation struct {
	Call      string `json:"call"`     // the tool call's event id
	Sub       string `json:"sub"`      // the subtask
	Parent    string `json:"parent"`   // the delegating task
	Owner     string `json:"owner"`    // the crewAI task id of the delegating task
	Coworker  string `json:"coworker"` // the coworker's agent id
	AgentRole string `json:"role"`
}

// openState is what a run has open at the end of a batch: the next batch
// of the run goes on from it (kept in the Index).
type openState struct {
	Cur   string       `json:"cur,omitempty"`
	Calls []call       `json:"calls,omitempty"`
	Deleg []delegation `json:"deleg,omitempty"`
}

func (a *Adapter) newConv(ctx context.Context, exec string) *conv {
	c := &conv{a: a, ctx: ctx, exec: exec, run: runID(exec), thread: threadID(exec), root: rootTask(exec),
		crew: crewAgent(""), tasks: map[string]taskLink{}, fresh: map[string]taskLink{}, fcalls: map[string]call{}, ended: map[string]bool{}}
	if l, ok := a.links.Lookup(ctx, keyOpen+exec); ok && l.Kind != "" {
		var st openState
		if json.Unmarshal([]byte(l.Kind), &st) == nil {
			c.cur, c.calls, c.deleg, c.hadOpen = st.Cur, st.Calls, st.Deleg, true
		}
	}
	return c
}

// remember records the crewAI ids of the batch, and what the run has
// open, in the Index.
func (c *conv) remember() {
	if c.cur != "" || len(c.calls) > 0 || len(c.deleg) > 0 || c.hadOpen {
		var b []byte
		if c.cur != "" || len(c.calls) > 0 || len(c.deleg) > 0 {
			b, _ = json.Marshal(openState{Cur: c.cur, Calls: c.calls, Deleg: c.deleg})
		}
		c.a.links.Remember(c.ctx, &protocol.Message{ID: keyOpen + c.exec, RunID: c.run, ThreadID: c.thread}, string(b))
	}
	for id, l := range c.fresh {
		c.a.links.Remember(c.ctx, &protocol.Message{ID: keyTask + id, RunID: c.run, ThreadID: c.thread, TaskID: l.task}, l.parent)
	}
	for task, fresh := range c.ended {
		if fresh {
			c.a.links.Remember(c.ctx, &protocol.Message{ID: keyEnd + task, RunID: c.run, ThreadID: c.thread, TaskID: task}, "ended")
		}
	}
	for id, k := range c.fcalls {
		c.a.links.Remember(c.ctx, &protocol.Message{ID: keyCall + id, RunID: c.run, ThreadID: c.thread, TaskID: k.Task}, k.Name)
	}
}

// end records that task ends now; it reports false when the task has
// ended already, in this batch or an earlier one of the run (the Index).
func (c *conv) end(task string) bool {
	if _, done := c.ended[task]; done {
		return false
	}
	if l, ok := c.a.links.Lookup(c.ctx, keyEnd+task); ok && l.RunID == c.run {
		c.ended[task] = false
		return false
	}
	c.ended[task] = true
	return true
}

// current is the task an event without a crewAI task id belongs to.
func (c *conv) current() (task, parent string) {
	if n := len(c.deleg); n > 0 {
		return c.deleg[n-1].Sub, c.deleg[n-1].Parent
	}
	if c.cur != "" {
		return c.cur, c.parentOf(c.cur)
	}
	return c.root, ""
}

func (c *conv) parentOf(task string) string {
	if task == c.root {
		return ""
	}
	for _, l := range c.tasks {
		if l.task == task {
			return l.parent
		}
	}
	return c.root
}

// taskOf is the Clutch task of a crewAI task id: known; else, inside a
// delegation, the internal task crewAI made for the coworker; else the
// Index's answer; else a new task under the crew's.
func (c *conv) taskOf(crewTask string) (task, parent string) {
	if crewTask == "" {
		return c.current()
	}
	if l, ok := c.tasks[crewTask]; ok {
		return l.task, l.parent
	}
	l := taskLink{task: protocol.PrefixTask + crewTask, parent: c.root}
	if n := len(c.deleg); n > 0 && c.deleg[n-1].Owner != crewTask {
		l = taskLink{task: c.deleg[n-1].Sub, parent: c.deleg[n-1].Parent}
	} else if k, ok := c.a.links.Lookup(c.ctx, keyTask+crewTask); ok && k.TaskID != "" {
		l = taskLink{task: k.TaskID, parent: k.Kind}
	}
	c.tasks[crewTask] = l
	c.fresh[crewTask] = l
	return l.task, l.parent
}

// take removes and returns members of d.
func take(d map[string]jsonValue, k string) jsonValue {
	v := d[k]
	delete(d, k)
	return v
}

func takeStr(d map[string]jsonValue, k string) string {
	s, _ := rawjson.Str(take(d, k))
	return s
}

// emit appends one envelope for event e.
func (c *conv) emit(e *event, suffix string, typ protocol.Type, task, parent string, from protocol.Participant, to []protocol.Participant, payload any, meta map[string]any) error {
	m := &protocol.Message{
		V: protocol.Version, ID: e.id + suffix, TS: e.ts, ThreadID: c.thread, RunID: c.run, TaskID: task,
		ParentTaskID: parent, From: from, To: to, Type: typ, Attempt: 1, Meta: meta,
	}
	if m.To == nil {
		m.To = []protocol.Participant{}
	}
	if m.Meta == nil {
		m.Meta = map[string]any{}
	}
	m.Meta[adapters.MetaSource] = Source
	m.Meta[MetaType] = e.typ
	m.Meta[MetaEventID] = e.id
	m.Meta[MetaExecutionID] = c.exec
	if e.sent != "" {
		m.Meta[MetaTimestamp] = e.sent
	}
	if e.links != nil {
		m.Meta[MetaLinks] = e.links
	}
	if err := setPayload(m, payload); err != nil {
		return err
	}
	if typ.Terminal() && !c.end(task) {
		// The task has ended already (a repeated end, or one that came in
		// another order): one terminal event a task, this is progress.
		m.Type = protocol.TypeTaskProgress
		if err := setPayload(m, map[string]any{"event": e.typ, "ended": true, "data": json.RawMessage(m.Payload)}); err != nil {
			return err
		}
	}
	if err := redact.Message(m); err != nil {
		return inErr(protocol.CodeOf(err), e.path, "payload", err)
	}
	if err := bound.Fit(m, 0); err != nil {
		return inErr(protocol.CodeTooLarge, e.path, "the event does not fit in one envelope", err)
	}
	if err := m.Validate(); err != nil {
		return inErr(protocol.CodeOf(err), e.path, "the translated envelope is not valid: "+err.Error(), err)
	}
	c.out = append(c.out, m)
	return nil
}

func setPayload(m *protocol.Message, payload any) error {
	var b []byte
	var err error
	switch p := payload.(type) {
	case nil:
		b = []byte("null")
	case jsonValue:
		b = rawjson.Compact(p)
		if len(b) == 0 {
			b = []byte("null") // an absent member
		}
	case map[string]jsonValue:
		b, err = jsonv2.Marshal(p, jsonv2.Deterministic(true))
	default:
		b, err = json.Marshal(p)
	}
	if err == nil {
		err = m.SetPayload(json.RawMessage(b))
	}
	if err != nil {
		return inErr(protocol.CodeOf(err), "", "payload", err)
	}
	return nil
}

// leftovers puts the members of d the mapping did not use in meta
// (crewai_extra), and the names of the dropped object dumps in
// crewai_dropped.
func leftovers(d map[string]jsonValue, e *event, meta map[string]any) map[string]any {
	if meta == nil {
		meta = map[string]any{}
	}
	var dropped []any
	for _, k := range dropKeys {
		if v, ok := d[k]; ok {
			delete(d, k)
			if rawjson.Kind(v) != 'n' {
				dropped = append(dropped, k)
			}
		}
	}
	// The event's own type repeats the wrapper's; null fingerprints say
	// nothing.
	delete(d, "type")
	for _, k := range []string{"source_fingerprint", "source_type", "fingerprint_metadata"} {
		if rawjson.Kind(d[k]) == 'n' {
			delete(d, k)
		}
	}
	if len(dropped) > 0 {
		meta[MetaDropped] = dropped
	}
	var extra map[string]any
	if len(d) > 0 || len(e.extra) > 0 {
		extra = make(map[string]any, len(d)+len(e.extra))
		for k, v := range e.extra {
			extra[k] = v
		}
		for k, v := range d {
			extra[k] = rawjson.ToAny(v)
		}
		meta[MetaExtra] = extra
	}
	return meta
}

// event maps one crewAI event (docs: the mapping table).
func (c *conv) event(e *event) error {
	d := e.data
	crewTask := takeStr(d, "task_id")
	taskName := takeStr(d, "task_name")
	role := takeStr(d, "agent_role")
	crewAgentID := takeStr(d, "agent_id")
	if len(crewTask) > maxOutsideID {
		return inErr(protocol.CodeInvalidField, e.path+"/task_id", "task_id is too long", nil)
	}
	if n, ok := rawjson.Str(d["crew_name"]); ok && n != "" {
		c.crew = crewAgent(n)
	}
	meta := map[string]any{}
	if crewTask != "" {
		meta[MetaTaskID] = crewTask
	}
	if taskName != "" {
		meta[MetaTaskName] = taskName
	}
	if crewAgentID != "" {
		meta[MetaAgentID] = crewAgentID
	}
	agent := protocol.Participant{AgentID: agentOf(role), Role: role}
	crew := protocol.Participant{AgentID: c.crew, Role: "crew"}
	typ := e.typ
	switch {
	case typ == "crew_kickoff_started" || typ == "flow_started":
		var payload any // no inputs: null
		if v, ok := d["inputs"]; ok {
			payload = v
			delete(d, "inputs")
		}
		return c.emit(e, "", protocol.TypeTaskRequest, c.root, "", crew, nil, payload, leftovers(d, e, meta))

	case typ == "crew_kickoff_completed" || typ == "flow_finished":
		out := take(d, "output")
		if typ == "flow_finished" {
			out = take(d, "result")
		}
		payload := out
		if o, _ := object(out, ""); o != nil && has(o, "raw") {
			payload = o["raw"]
			delete(o, "raw")
			meta["crewai_output"] = mapAny(o)
		}
		if t, ok := d["total_tokens"]; ok {
			meta[MetaUsage] = map[string]any{"total_tokens": rawjson.ToAny(t)}
			delete(d, "total_tokens")
		}
		return c.emit(e, "", protocol.TypeTaskResult, c.root, "", crew, nil, payload, leftovers(d, e, meta))

	case typ == "crew_kickoff_failed" || typ == "flow_failed":
		return c.emit(e, "", protocol.TypeTaskError, c.root, "", crew, nil, failure(d, e, protocol.CodeToolFailed), leftovers(d, e, meta))

	case typ == "task_started":
		task, parent := c.taskOf(crewTask)
		c.cur = task
		payload := map[string]jsonValue{}
		for _, k := range []string{"task_description", "expected_output", "context"} {
			if v, ok := d[k]; ok {
				payload[strings.TrimPrefix(k, "task_")] = v
				delete(d, k)
			}
		}
		if taskName != "" {
			payload["name"] = jsontextString(taskName)
			delete(meta, MetaTaskName) // once, in the payload
		}
		var to []protocol.Participant
		if role != "" {
			to = []protocol.Participant{agent}
		}
		return c.emit(e, "", protocol.TypeTaskRequest, task, parent, crew, to, payload, leftovers(d, e, meta))

	case typ == "task_completed":
		task, parent := c.taskOf(crewTask)
		if task == c.cur {
			c.cur = ""
		}
		payload := take(d, "output_raw")
		if payload == nil {
			if o, _ := object(d["output"], ""); o != nil && has(o, "raw") {
				payload = o["raw"]
				delete(o, "raw")
				delete(d, "output")
				meta["crewai_output"] = mapAny(o)
			}
		}
		delete(d, "task_description")
		if task == c.root {
			// As task_failed: the crew ends with crew_kickoff_completed.
			return c.emit(e, "", protocol.TypeTaskProgress, task, parent, agent, nil, map[string]any{"event": typ, "output": payload}, leftovers(d, e, meta))
		}
		return c.emit(e, "", protocol.TypeTaskResult, task, parent, agent, nil, payload, leftovers(d, e, meta))

	case typ == "task_failed":
		task, parent := c.taskOf(crewTask)
		if task == c.cur {
			c.cur = ""
		}
		ep := failure(d, e, protocol.CodeToolFailed)
		if task == c.root {
			// No crewAI task to end (old traces name none): the crew's own
			// end is crew_kickoff_failed; this is its progress.
			return c.emit(e, "", protocol.TypeTaskProgress, task, parent, agent, nil, map[string]any{"event": typ, "error": ep}, leftovers(d, e, meta))
		}
		return c.emit(e, "", protocol.TypeTaskError, task, parent, agent, nil, ep, leftovers(d, e, meta))

	case typ == "agent_execution_started" || typ == "lite_agent_execution_started":
		task, parent := c.taskOf(crewTask)
		return c.emit(e, "", protocol.TypeTaskAccept, task, parent, agent, nil, nil, leftovers(d, e, meta))

	case strings.HasPrefix(typ, "tool_usage_started"):
		return c.toolStarted(e, d, crewTask, agent, meta)

	case typ == "tool_usage_finished":
		return c.toolFinished(e, d, crewTask, agent, meta)

	case typ == "tool_usage_error" || typ == "tool_execution_error" || typ == "tool_validate_input_error" || typ == "tool_selection_error":
		return c.toolError(e, d, crewTask, agent, meta)

	case strings.HasPrefix(typ, "llm_call_") || typ == "llm_stream_chunk" || typ == "llm_thinking_chunk":
		task, parent := c.taskOf(crewTask)
		if u, ok := d["usage"]; ok && rawjson.Kind(u) == '{' {
			meta[MetaUsage] = rawjson.ToAny(u)
		}
		meta = leftovers(d, e, meta)
		payload := meta[MetaExtra]
		delete(meta, MetaExtra)
		if payload == nil {
			payload = map[string]any{}
		}
		return c.emit(e, "", TypeLLMCall, task, parent, agent, nil, payload, meta)

	case progressKind(typ):
		task, parent := c.taskOf(crewTask)
		from := agent
		if role == "" {
			from = crew
		}
		meta = leftovers(d, e, meta)
		data := meta[MetaExtra]
		delete(meta, MetaExtra)
		p := map[string]any{"event": typ}
		if data != nil {
			p["data"] = data
		}
		if inputRequested(typ) {
			p["awaiting_input"] = true
		}
		return c.emit(e, "", protocol.TypeTaskProgress, task, parent, from, nil, p, meta)
	}
	// Unknown kind: kept whole as an extension event, and counted.
	c.a.countUnknown(typ)
	task, parent := c.taskOf(crewTask)
	from := agent
	if role == "" {
		from = crew
	}
	meta = leftovers(d, e, meta)
	payload := meta[MetaExtra]
	delete(meta, MetaExtra)
	if payload == nil {
		payload = map[string]any{}
	}
	return c.emit(e, "", extKind(typ), task, parent, from, nil, payload, meta)
}

// inputRequested reports whether a crewAI event type says the run waits
// for a person: an input or feedback request (flow_input_requested,
// human_feedback_requested) or a pause for one (flow_paused,
// method_execution_paused). human_feedback_received is not one.
func inputRequested(typ string) bool {
	return strings.HasSuffix(typ, "input_requested") || strings.HasSuffix(typ, "feedback_requested") || strings.HasSuffix(typ, "_paused")
}

// progressKind lists the event types that are progress of a task.
func progressKind(typ string) bool {
	switch typ {
	case "agent_execution_completed", "agent_execution_error", "lite_agent_execution_completed", "lite_agent_execution_error",
		"flow_paused", "flow_input_requested", "conversation_message_added", "flow_created", "flow_plot":
		return true
	}
	for _, p := range []string{"method_execution_", "memory_", "knowledge_", "agent_reasoning_", "llm_guardrail_", "human_feedback", "task_evaluation", "crew_test_", "crew_train_"} {
		if strings.HasPrefix(typ, p) {
			return true
		}
	}
	return false
}

func mapAny(o map[string]jsonValue) map[string]any {
	out := make(map[string]any, len(o))
	for k, v := range o {
		out[k] = rawjson.ToAny(v)
	}
	return out
}

func jsontextString(s string) jsonValue {
	b, _ := json.Marshal(s)
	return b
}

// failure builds the wire error of a failed crewAI event (docs/protocol.md
// §5.4) from its error (or serialization_error) member.
func failure(d map[string]jsonValue, e *event, def protocol.Code) *protocol.ErrorPayload {
	msg := ""
	for _, k := range []string{"error", "failure", "serialization_error"} {
		if v, ok := d[k]; ok {
			delete(d, k)
			if s, ok := rawjson.Str(v); ok {
				msg = s
			} else if rawjson.Kind(v) != 'n' {
				msg = string(rawjson.Compact(v))
			}
			if msg != "" {
				break
			}
		}
	}
	if msg == "" {
		msg = "crewAI reported " + e.typ
	}
	code := ErrorCode(msg, def)
	return &protocol.ErrorPayload{Code: code, Message: msg, Retryable: code.Retryable(), Details: map[string]any{"crewai_type": e.typ}}
}

// ErrorCode classifies a crewAI error message into the protocol's error
// table (docs/protocol.md §5.4): timeouts → TIMEOUT, rate limits →
// RATE_LIMITED, authentication and API key failures → UNAUTHORIZED,
// unknown tools → TOOL_NOT_FOUND, anything else def.
func ErrorCode(msg string, def protocol.Code) protocol.Code {
	l := strings.ToLower(msg)
	switch {
	case strings.Contains(l, "timed out") || strings.Contains(l, "timeout"):
		return protocol.CodeTimeout
	case strings.Contains(l, "rate limit") || strings.Contains(l, "ratelimit") || strings.Contains(l, "429"):
		return protocol.CodeRateLimited
	case strings.Contains(l, "api key") || strings.Contains(l, "authenticat") || strings.Contains(l, "unauthorized") || strings.Contains(l, "401"):
		return protocol.CodeUnauthorized
	case toolNotFound(l):
		return protocol.CodeToolNotFound
	}
	return def
}

// toolNotFound reports whether a lower-case error text says that a tool
// was not found: "not found" with "tool" shortly before it in the same
// sentence, and no coworker or agent (a coworker not found is the
// delegation tool failing on its argument, not a missing tool).
func toolNotFound(l string) bool {
	i := strings.Index(l, "not found")
	if i < 0 {
		return false
	}
	before := l[max(0, i-60):i]
	if j := strings.LastIndexAny(before, ".\n"); j >= 0 {
		before = before[j+1:]
	}
	return strings.Contains(before, "tool") && !strings.Contains(before, "coworker") && !strings.Contains(before, "agent")
}

// toolArgs reads tool_args: a JSON string holding an object (as
// tool_usage_started sends it) is parsed; an object is taken as it is.
func toolArgs(v jsonValue) jsonValue {
	if s, ok := rawjson.Str(v); ok {
		var probe map[string]jsonValue
		if jsonv2.Unmarshal([]byte(s), &probe) == nil {
			return rawjson.Compact([]byte(s))
		}
	}
	if v == nil {
		return jsonValue("null")
	}
	return v
}

func (c *conv) toolStarted(e *event, d map[string]jsonValue, crewTask string, agent protocol.Participant, meta map[string]any) error {
	task, parent := c.taskOf(crewTask)
	name := takeStr(d, "tool_name")
	args := toolArgs(take(d, "tool_args"))
	tool := "crewai"
	if cls := takeStr(d, "tool_class"); cls != "" {
		tool = "crewai:" + cls
	}
	for _, k := range []string{"run_attempts", "delegations", "agent_key"} {
		if v, ok := d[k]; ok {
			meta["crewai_"+k] = rawjson.ToAny(v)
			delete(d, k)
		}
	}
	payload := map[string]any{"tool": tool, "name": name, "args": json.RawMessage(args), "call_id": e.id}
	k := call{ID: e.id, Name: name, Task: task, Agent: agent.AgentID}
	c.calls = append(c.calls, k)
	c.fcalls[e.id] = k
	meta = leftovers(d, e, meta)
	if err := c.emit(e, "", protocol.TypeToolCall, task, parent, agent, nil, payload, meta); err != nil {
		return err
	}
	if !delegationTools[name] {
		return nil
	}
	// Delegation: a subtask of the delegating task, to the coworker.
	var a map[string]jsonValue
	_ = jsonv2.Unmarshal(args, &a)
	coworker, _ := rawjson.Str(a["coworker"])
	sub := protocol.PrefixTask + e.id
	to := []protocol.Participant{{AgentID: agentOf(coworker), Role: coworker}}
	c.deleg = append(c.deleg, delegation{Call: e.id, Sub: sub, Parent: task, Owner: crewTask, Coworker: to[0].AgentID, AgentRole: coworker})
	req := map[string]any{"tool": name, "args": json.RawMessage(args)}
	m := map[string]any{"crewai_delegation": name}
	if crewTask != "" {
		m[MetaTaskID] = crewTask
	}
	return c.emit(e, "/delegate", protocol.TypeTaskRequest, sub, task, agent, to, req, m)
}

// findCall finds the started call a finished or failed tool event answers:
// by started_event_id, else the last open call of that tool name, else
// the Index.
func (c *conv) findCall(e *event, name string) (call, bool) {
	started, _ := e.links["started_event_id"].(string)
	for i := len(c.calls) - 1; i >= 0; i-- {
		k := c.calls[i]
		if (started != "" && k.ID == started) || (started == "" && k.Name == name) {
			c.calls = append(c.calls[:i], c.calls[i+1:]...)
			return k, true
		}
	}
	if started != "" {
		if l, ok := c.a.links.Lookup(c.ctx, keyCall+started); ok {
			return call{ID: started, Name: l.Kind, Task: l.TaskID}, true
		}
	}
	return call{}, false
}

func (c *conv) endDelegation(callID string) (delegation, bool) {
	for i := len(c.deleg) - 1; i >= 0; i-- {
		if c.deleg[i].Call == callID {
			dl := c.deleg[i]
			c.deleg = append(c.deleg[:i], c.deleg[i+1:]...)
			return dl, true
		}
	}
	return delegation{}, false
}

func (c *conv) toolFinished(e *event, d map[string]jsonValue, crewTask string, agent protocol.Participant, meta map[string]any) error {
	name := takeStr(d, "tool_name")
	k, found := c.findCall(e, name)
	// After a delegation the event names the delegating task again.
	dl, isDeleg := c.endDelegation(k.ID)
	task, parent := c.taskOf(crewTask)
	if found && k.Task != "" {
		task, parent = k.Task, c.parentOf(k.Task)
	}
	callID := k.ID
	if !found {
		callID = e.id
	}
	tool := "crewai"
	if cls := takeStr(d, "tool_class"); cls != "" {
		tool = "crewai:" + cls
	}
	for _, x := range []string{"run_attempts", "delegations", "agent_key", "from_cache", "started_at", "finished_at"} {
		if v, ok := d[x]; ok {
			meta["crewai_"+x] = rawjson.ToAny(v)
			delete(d, x)
		}
	}
	if v, ok := d["tool_args"]; ok {
		meta["crewai_tool_args"] = rawjson.ToAny(toolArgs(v))
		delete(d, "tool_args")
	}
	output := take(d, "output")
	failed := rawjson.Kind(d["failure"]) != 0 && rawjson.Kind(d["failure"]) != 'n' && rawjson.Kind(d["failure"]) != 'f'
	if failed {
		ep := failure(d, e, protocol.CodeToolFailed)
		ep.Details["tool"], ep.Details["name"], ep.Details["call_id"] = tool, name, callID
		if err := c.emit(e, "", protocol.TypeToolError, task, parent, agent, nil, ep, leftovers(d, e, meta)); err != nil {
			return err
		}
	} else {
		if output == nil {
			output = jsonValue("null")
		}
		payload := map[string]any{"tool": tool, "name": name, "call_id": callID, "content": json.RawMessage(rawjson.Compact(output))}
		if err := c.emit(e, "", protocol.TypeToolResult, task, parent, agent, nil, payload, leftovers(d, e, meta)); err != nil {
			return err
		}
	}
	if !isDeleg {
		return nil
	}
	from := protocol.Participant{AgentID: dl.Coworker, Role: dl.AgentRole}
	if failed {
		ep := &protocol.ErrorPayload{Code: protocol.CodeToolFailed, Message: "the coworker failed", Details: map[string]any{"call_id": dl.Call}}
		return c.emit(e, "/result", protocol.TypeTaskError, dl.Sub, dl.Parent, from, nil, ep, map[string]any{"crewai_delegation": name})
	}
	if output == nil {
		output = jsonValue("null")
	}
	return c.emit(e, "/result", protocol.TypeTaskResult, dl.Sub, dl.Parent, from, nil, output, map[string]any{"crewai_delegation": name})
}

func (c *conv) toolError(e *event, d map[string]jsonValue, crewTask string, agent protocol.Participant, meta map[string]any) error {
	name := takeStr(d, "tool_name")
	k, found := c.findCall(e, name)
	task, parent := c.taskOf(crewTask)
	if found && k.Task != "" {
		task, parent = k.Task, c.parentOf(k.Task)
	}
	callID := k.ID
	if !found {
		callID = e.id
	}
	def := protocol.CodeToolFailed
	switch e.typ {
	case "tool_validate_input_error":
		def = protocol.CodeInvalidField
	case "tool_selection_error":
		def = protocol.CodeToolNotFound
	}
	ep := failure(d, e, def)
	ep.Details["name"], ep.Details["call_id"] = name, callID
	if v, ok := d["tool_args"]; ok {
		ep.Details["args"] = rawjson.ToAny(toolArgs(v))
		delete(d, "tool_args")
	}
	if err := c.emit(e, "", protocol.TypeToolError, task, parent, agent, nil, ep, leftovers(d, e, meta)); err != nil {
		return err
	}
	if dl, ok := c.endDelegation(k.ID); ok && found {
		from := protocol.Participant{AgentID: dl.Coworker, Role: dl.AgentRole}
		return c.emit(e, "/result", protocol.TypeTaskError, dl.Sub, dl.Parent, from, nil, &protocol.ErrorPayload{Code: ep.Code, Message: ep.Message, Retryable: ep.Retryable}, map[string]any{"crewai_delegation": name})
	}
	return nil
}
