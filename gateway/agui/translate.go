package agui

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/internal/httpjson"
	"github.com/clutchprotocol/clutch/protocol"
)

// Names of the CUSTOM events: "clutch." followed by the Clutch type.
const customPrefix = "clutch."

// Translator turns the stored events of one run, fed in seq order, into
// AG-UI events (the mapping table is in the package doc). It is not safe
// for concurrent use; make one per stream.
type Translator struct {
	threadID, runID string
	text            func(*protocol.Message) string
	resumed         uint64 // events of seq ≤ resumed belong to earlier AG-UI runs

	started, done bool
	root          string // task id of the run's root task
	requester     string // from.agent_id of the root task.request

	steps    map[string]string // open steps: task id → step name
	stepList []string          // task ids of open steps, in the order opened
	agents   map[string]string // task id → agent of its latest accept

	subtasks map[string]bool     // task ids shown as tool calls, until their result
	calls    []toolCall          // tool.call events not answered yet, oldest first
	callIDs  map[string]bool     // the toolCallIds of the tool calls sent
	progress map[string]progress // last progress of each task, for STATE_SNAPSHOT
	order    []string            // task ids in progress, in the order first seen
	snap     []byte              // scratch for snapshots
}

// toolCall is an unanswered tool.call: its call id (docs/protocol.md
// §2.3.1), which is its toolCallId, its task and name.
type toolCall struct{ id, task, name string }

type progress struct {
	agent   string
	payload json.RawMessage
}

// TranslatorOptions configures a Translator. Nil means defaults.
type TranslatorOptions struct {
	// Text turns a task.result or chat message into the text of a
	// TEXT_MESSAGE; DefaultText when nil.
	Text func(m *protocol.Message) string
	// Resumed is the seq of the task.question this AG-UI run resumes
	// from: the events up to it belong to earlier AG-UI runs of the same
	// Clutch run (each ended with an interrupt), so a question among them
	// does not end this one. 0 for a run that starts with the task.
	Resumed uint64
}

// NewTranslator returns a Translator of one run whose AG-UI RUN_STARTED and
// RUN_FINISHED carry threadID and runID. opts may be nil.
func NewTranslator(threadID, runID string, opts *TranslatorOptions) *Translator {
	t := &Translator{
		threadID: threadID, runID: runID, text: DefaultText,
		steps: map[string]string{}, agents: map[string]string{}, subtasks: map[string]bool{},
		progress: map[string]progress{}, callIDs: map[string]bool{},
	}
	if opts != nil && opts.Text != nil {
		t.text = opts.Text
	}
	if opts != nil {
		t.resumed = opts.Resumed
	}
	return t
}

// Done reports whether the run's root task has ended for good: the last
// event was sent (RUN_FINISHED or RUN_ERROR) and Translate adds nothing
// more.
func (t *Translator) Done() bool { return t.done }

// Started reports whether RUN_STARTED was sent.
func (t *Translator) Started() bool { return t.started }

// Translate appends to dst the AG-UI events of m, the stored event of seq
// seq, and returns the extended slice. The first call also appends
// RUN_STARTED; the root task's final outcome appends RUN_FINISHED or
// RUN_ERROR, after which Translate appends nothing (see Done).
func (t *Translator) Translate(dst []Event, seq uint64, m *protocol.Message) []Event {
	if t.done || m == nil {
		return dst
	}
	ts := int64(0)
	if tm, err := m.Time(); err == nil {
		ts = tm.UnixMilli()
	}
	n := len(dst)
	if !t.started {
		t.started = true
		dst = append(dst, Event{Type: RunStarted, ThreadID: t.threadID, RunID: t.runID})
	}
	switch m.Type {
	case protocol.TypeTaskRequest:
		dst = t.request(dst, m)
	case protocol.TypeTaskAccept:
		dst = t.openStep(dst, m.TaskID, m.From.AgentID)
	case protocol.TypeTaskProgress:
		dst = t.snapshot(dst, m)
	case protocol.TypeTaskResult, protocol.TypeTaskError, protocol.TypeTaskCancel, protocol.TypeTaskTimeout:
		dst = t.end(dst, m)
	case protocol.TypeTaskQuestion:
		dst = t.question(dst, seq, m)
	case protocol.TypeTaskAnswer:
		// The resume entry of the run that sent it: nothing to show.
	case protocol.TypeChatMessage, protocol.TypeChatSystem:
		dst = t.chat(dst, m)
	case protocol.TypeToolCall:
		dst = t.toolCall(dst, m)
	case protocol.TypeToolResult, protocol.TypeToolError:
		dst = t.toolResult(dst, m)
	case protocol.TypeAgentRegister, protocol.TypeAgentHeartbeat, protocol.TypeAgentUpdate:
		// Registry events are not part of a run's work.
	default: // routing.decision, routing.failure, x.<vendor>.<name>
		dst = append(dst, Event{Type: Custom, Name: customPrefix + string(m.Type), Value: m.Payload})
	}
	for i := n; i < len(dst); i++ {
		dst[i].Seq, dst[i].Timestamp = seq, ts
	}
	return dst
}

func (t *Translator) request(dst []Event, m *protocol.Message) []Event {
	if t.root == "" && m.ParentTaskID == "" {
		t.root, t.requester = m.TaskID, m.From.AgentID
		return dst // the run's input: RUN_STARTED says it all
	}
	if m.TaskID == t.root || t.subtasks[m.TaskID] {
		return dst // a redelivery stored under a new id
	}
	// Another task of the run (a delegated subtask): a tool call whose
	// arguments are the request payload and whose result is the task's.
	t.subtasks[m.TaskID] = true
	name := m.PayloadType
	if name == "" {
		name = "task"
	}
	dst = append(dst, Event{Type: ToolCallStart, ToolCallID: m.TaskID, ToolCallName: name})
	dst = append(dst, Event{Type: ToolCallArgs, ToolCallID: m.TaskID, Delta: compactString(m.Payload)})
	return append(dst, Event{Type: ToolCallEnd, ToolCallID: m.TaskID})
}

func (t *Translator) openStep(dst []Event, task, agent string) []Event {
	t.agents[task] = agent
	if _, open := t.steps[task]; open {
		return dst
	}
	name := agent + "/" + task
	t.steps[task] = name
	t.stepList = append(t.stepList, task)
	return append(dst, Event{Type: StepStarted, StepName: name})
}

func (t *Translator) closeStep(dst []Event, task string) []Event {
	name, open := t.steps[task]
	if !open {
		return dst
	}
	delete(t.steps, task)
	for i, id := range t.stepList {
		if id == task {
			t.stepList = append(t.stepList[:i], t.stepList[i+1:]...)
			break
		}
	}
	return append(dst, Event{Type: StepFinished, StepName: name})
}

// snapshot records a task.progress and sends the run's state: the last
// progress payload of every task that reported one.
func (t *Translator) snapshot(dst []Event, m *protocol.Message) []Event {
	if _, seen := t.progress[m.TaskID]; !seen {
		t.order = append(t.order, m.TaskID)
	}
	t.progress[m.TaskID] = progress{agent: m.From.AgentID, payload: m.Payload}
	b := append(t.snap[:0], `{"tasks":{`...)
	for i, id := range t.order {
		if i > 0 {
			b = append(b, ',')
		}
		p := t.progress[id]
		b = appendString(b, id)
		b = append(b, `:{"agent_id":`...)
		b = appendString(b, p.agent)
		b = append(b, `,"progress":`...)
		b = appendRaw(b, p.payload)
		b = append(b, '}')
	}
	b = append(b, "}}"...)
	t.snap = b
	return append(dst, Event{Type: StateSnapshot, Snapshot: bytes.Clone(b)})
}

func (t *Translator) end(dst []Event, m *protocol.Message) []Event {
	final := protocol.EndsTask(m)
	task := m.TaskID
	if !final { // a task.error announcing a retry ends one attempt only
		dst = t.closeStep(dst, task)
		return append(dst, Event{Type: Custom, Name: customPrefix + string(m.Type), Value: m.Payload})
	}
	if task != t.root {
		if t.subtasks[task] {
			delete(t.subtasks, task)
			dst = append(dst, Event{Type: ToolCallResult, MessageID: m.ID, ToolCallID: task, Content: t.outcomeText(m)})
		}
		return t.closeStep(dst, task)
	}
	// The root task ended: the run is over.
	if m.Type == protocol.TypeTaskResult {
		dst = t.textMessage(dst, m, "assistant", m.From.AgentID)
	}
	for len(t.stepList) > 0 {
		dst = t.closeStep(dst, t.stepList[len(t.stepList)-1])
	}
	t.done = true
	if m.Type == protocol.TypeTaskResult {
		return append(dst, Event{Type: RunFinished, ThreadID: t.threadID, RunID: t.runID, Result: m.Payload})
	}
	ep, err := protocol.DecodePayload[protocol.ErrorPayload](m)
	if err != nil || ep.Code == "" {
		ep.Code = map[protocol.Type]protocol.Code{protocol.TypeTaskCancel: protocol.CodeCancelled, protocol.TypeTaskTimeout: protocol.CodeTimeout}[m.Type]
		if ep.Code == "" {
			ep.Code = protocol.CodeInternal
		}
	}
	if ep.Message == "" {
		ep.Message = ep.Code.Summary()
	}
	return append(dst, Event{Type: RunError, Message: ep.Message, Code: string(ep.Code)})
}

// question ends the AG-UI run when the root task asks (docs/protocol.md
// §2.7): its step closes and RUN_FINISHED carries an interrupt outcome
// whose one interrupt is the question (Interrupt). The next RunAgentInput
// of the thread answers it with a resume entry. A question of an earlier
// AG-UI run (seq ≤ Resumed) only closes the step.
func (t *Translator) question(dst []Event, seq uint64, m *protocol.Message) []Event {
	if m.TaskID != t.root {
		return append(dst, Event{Type: Custom, Name: customPrefix + string(m.Type), Value: m.Payload})
	}
	for len(t.stepList) > 0 {
		dst = t.closeStep(dst, t.stepList[len(t.stepList)-1])
	}
	if seq <= t.resumed {
		return dst
	}
	q, err := protocol.DecodePayload[protocol.Question](m)
	if err != nil || q.ID == "" {
		t.done = true
		return append(dst, Event{Type: RunError, Message: "the run asked a question that could not be read", Code: string(protocol.CodeInternal)})
	}
	t.done = true
	out, _ := httpjson.Marshal(struct {
		Type       string      `json:"type"`
		Interrupts []Interrupt `json:"interrupts"`
	}{"interrupt", []Interrupt{InterruptOf(&q)}})
	return append(dst, Event{Type: RunFinished, ThreadID: t.threadID, RunID: t.runID, Outcome: out})
}

// outcomeText is the TOOL_CALL_RESULT content of a subtask's final event:
// the text of a result, the JSON of an error.
func (t *Translator) outcomeText(m *protocol.Message) string {
	if m.Type == protocol.TypeTaskResult {
		return t.text(m)
	}
	return compactString(m.Payload)
}

func (t *Translator) textMessage(dst []Event, m *protocol.Message, role, name string) []Event {
	text := t.text(m)
	if text == "" {
		return dst
	}
	dst = append(dst, Event{Type: TextMessageStart, MessageID: m.ID, Role: role, Name: name})
	dst = append(dst, Event{Type: TextMessageContent, MessageID: m.ID, Delta: text})
	return append(dst, Event{Type: TextMessageEnd, MessageID: m.ID})
}

func (t *Translator) chat(dst []Event, m *protocol.Message) []Event {
	role := "assistant"
	switch {
	case m.Type == protocol.TypeChatSystem:
		role = "system"
	case t.requester != "" && m.From.AgentID == t.requester:
		role = "user"
	}
	return t.textMessage(dst, m, role, m.From.AgentID)
}

// toolCall sends a tool.call as a tool call whose toolCallId is its call
// id (docs/protocol.md §2.3.1: call_id, else the event's id). A tool.call
// of a call already sent (a streamed call's pieces share its id) adds
// nothing.
func (t *Translator) toolCall(dst []Event, m *protocol.Message) []Event {
	id, _ := protocol.ToolCallID(m)
	if t.callIDs[id] {
		return dst
	}
	var name, tool string
	var args []byte
	eachMember(m.Payload, func(k []byte, v jsontext.Value) {
		switch string(k) {
		case "name":
			name, _ = str(v)
		case "tool":
			tool, _ = str(v)
		case "args":
			args = compact(v)
		}
	})
	if name == "" {
		name = tool
	}
	if name == "" {
		name = "tool"
	}
	t.callIDs[id] = true
	t.calls = append(t.calls, toolCall{id: id, task: m.TaskID, name: name})
	dst = append(dst, Event{Type: ToolCallStart, ToolCallID: id, ToolCallName: name})
	if len(args) > 0 {
		dst = append(dst, Event{Type: ToolCallArgs, ToolCallID: id, Delta: string(args)})
	}
	return append(dst, Event{Type: ToolCallEnd, ToolCallID: id})
}

// toolResult sends a tool.result or tool.error as the result of the
// unanswered tool.call of its task with its call id (docs/protocol.md
// §2.3.1). An outcome whose call id names no such call stands alone; one
// without a call id (stored before the rule) answers the oldest
// unanswered call of its task, of the same name when it names one. An
// outcome with no call to belong to is announced first
// (TOOL_CALL_START, TOOL_CALL_END) under its call id, or its event id.
func (t *Translator) toolResult(dst []Event, m *protocol.Message) []Event {
	var name, tool, content string
	var structured, contentRaw []byte
	eachMember(m.Payload, func(k []byte, v jsontext.Value) {
		switch string(k) {
		case "name":
			name, _ = str(v)
		case "tool":
			tool, _ = str(v)
		case "structuredContent":
			structured = compact(v)
		case "content":
			if s, ok := str(v); ok {
				content = s
			} else {
				contentRaw = compact(v)
			}
		case "details": // tool.error: the call is named in details
			eachMember(v, func(k []byte, v jsontext.Value) {
				switch string(k) {
				case "name":
					if name == "" {
						name, _ = str(v)
					}
				case "tool":
					if tool == "" {
						tool, _ = str(v)
					}
				}
			})
		}
	})
	if name == "" {
		name = tool
	}
	callID, named := protocol.ToolCallID(m)
	switch {
	case m.Type == protocol.TypeToolError:
		content = compactString(m.Payload)
	case structured != nil:
		content = string(structured)
	case contentRaw != nil:
		content = string(contentRaw)
	case content == "" && !named && name == "":
		content = compactString(m.Payload)
	}
	open := -1
	for i, c := range t.calls {
		if c.task == m.TaskID && (c.id == callID || !named && (name == "" || c.name == name)) {
			open = i
			break
		}
	}
	if open >= 0 {
		callID = t.calls[open].id
		t.calls = append(t.calls[:open], t.calls[open+1:]...)
	} else { // nothing to attach to: announce the call first
		if callID == "" || t.callIDs[callID] {
			callID = m.ID
		}
		if name == "" {
			name = "tool"
		}
		t.callIDs[callID] = true
		dst = append(dst, Event{Type: ToolCallStart, ToolCallID: callID, ToolCallName: name})
		dst = append(dst, Event{Type: ToolCallEnd, ToolCallID: callID})
	}
	return append(dst, Event{Type: ToolCallResult, MessageID: m.ID, ToolCallID: callID, Content: content})
}

// DefaultText is the text of a task.result or chat message: the payload
// itself when it is a JSON string; else the first string member "text",
// "content", "message" or "summary" of a payload object; else the payload's
// compact JSON ("" for null or no payload).
func DefaultText(m *protocol.Message) string {
	p := bytes.TrimSpace(m.Payload)
	if len(p) == 0 || string(p) == "null" {
		return ""
	}
	if s, ok := str(p); ok {
		return s
	}
	var found [4]string
	eachMember(p, func(k []byte, v jsontext.Value) {
		for i, name := range [...]string{"text", "content", "message", "summary"} {
			if string(k) == name && found[i] == "" {
				found[i], _ = str(v)
			}
		}
	})
	for _, s := range found {
		if s != "" {
			return s
		}
	}
	return compactString(p)
}

// memberReader is a pooled decoder over a reusable reader.
type memberReader struct {
	r bytes.Reader
	d *jsontext.Decoder
}

var decoders = sync.Pool{New: func() any {
	mr := &memberReader{}
	mr.d = jsontext.NewDecoder(&mr.r, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	return mr
}}

// eachMember calls fn with the name and value of each member of the JSON
// object raw, in order; raw that is not an object is skipped. name and v
// are valid only during the call (switch on string(name) does not
// allocate).
func eachMember(raw []byte, fn func(name []byte, v jsontext.Value)) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return
	}
	mr := decoders.Get().(*memberReader)
	mr.r.Reset(raw)
	mr.d.Reset(&mr.r, jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	defer func() {
		mr.r.Reset(nil)
		decoders.Put(mr)
	}()
	if tok, err := mr.d.ReadToken(); err != nil || tok.Kind() != '{' {
		return
	}
	var buf [32]byte // the name, copied: reading the value may move the decoder's buffer
	for mr.d.PeekKind() == '"' {
		k, err := mr.d.ReadValue()
		if err != nil {
			return
		}
		name := append(buf[:0], k[1:len(k)-1]...)
		if bytes.IndexByte(name, '\\') >= 0 { // an escaped name: unquote it
			s, _ := str(k)
			name = []byte(s)
		}
		v, err := mr.d.ReadValue()
		if err != nil {
			return
		}
		fn(name, v)
	}
}

// str returns the string a JSON string value holds.
func str(v []byte) (string, bool) {
	v = bytes.TrimSpace(v)
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return "", false
	}
	if bytes.IndexByte(v[1:len(v)-1], '\\') < 0 { // no escapes: the bytes are the text
		return string(v[1 : len(v)-1]), true
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", false
	}
	return s, true
}

func compact(v []byte) []byte {
	if len(v) == 0 {
		return nil
	}
	return appendRaw(nil, v)
}

func compactString(v []byte) string {
	if len(bytes.TrimSpace(v)) == 0 {
		return "null"
	}
	return string(compact(v))
}
