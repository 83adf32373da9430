package langgraph

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/internal/bound"
	"github.com/clutchprotocol/clutch/adapters/internal/rawjson"
	"github.com/clutchprotocol/clutch/protocol"
)

// Scope fixes where a Stream's messages land. Empty fields are filled from
// the stream itself: the run from the first run_id it meets ("run:<run_id>",
// root task "task:<run_id>", thread "thread:<thread_id>" or, without one,
// "thread:<run_id>"); before any, the run "run:langgraph" (meta.lg_no_run).
type Scope struct {
	RunID    string // Clutch run
	ThreadID string // Clutch thread
	TaskID   string // Clutch task of the LangGraph run (the root task)
	AgentID  string // sender; the Translator's AgentID when empty
	Attempt  int    // attempt of the messages; 1 when ≤ 0
}

// Stream translates the frames of one LangGraph run in order, keeping the
// state the wire format spreads over frames: the run and thread ids of the
// metadata frame, the messages/metadata of each message, how much of each
// cumulative messages/partial was seen, the tool calls already reported
// and the last values. A Stream is not safe for concurrent use.
type Stream struct {
	t     *Translator
	scope Scope

	run, thread, task string
	lgRun, lgThread   string
	noRun             bool

	msgMeta map[string]map[string]any // message id -> messages/metadata
	partial map[string]int            // message id -> text length reported
	calls   map[string]bool           // tool call ids reported as tool.call
	results map[string]bool           // tool call ids reported as tool.result/error
	anon    []anonCall                // calls LangGraph gave no id, unanswered, oldest first
	asked   map[string]bool           // interrupt ids reported as INPUT_REQUIRED
	started map[string]bool           // tasks given their task.request
	ended   map[string]bool           // tasks given their terminal event
	waiting bool                      // an interrupt was reported: the run waits for input

	// LastValues is the last state a values frame carried (nil before).
	lastValues any
	// Interrupts holds the interrupts of the last frame that reported any.
	interrupts []any

	// per frame
	key   [32]byte
	n     int
	event string
	seq   string
	ns    []string
	ts    string
	out   []*protocol.Message
	err   error
}

// anonCall is a tool call LangGraph gave no id: its derived call id.
type anonCall struct{ name, id string }

// callID returns the call id (docs/protocol.md §2.3.1) of a tool call
// LangGraph names id (tool_calls[i].id, tool_call_id, the tool's run_id):
// id itself, or adapters.CallID of it when it cannot be kept. A call
// without one gets an id derived from the run and from the frame and
// place of its tool.call, and waits for an outcome without one
// (outcomeID).
func (s *Stream) callID(id, name string) string {
	if id != "" {
		return adapters.CallID(id)
	}
	cid := adapters.CallID("", s.run, hex.EncodeToString(s.key[:]), strconv.Itoa(s.n))
	s.anon = append(s.anon, anonCall{name: name, id: cid})
	return cid
}

// outcomeID returns the call id of a tool outcome LangGraph names id (as
// callID). An outcome without one answers the oldest call of the stream
// that had none either, is not answered yet and has the same tool name
// (either name may be unknown); with no such call it gets an id of its
// own, which names no call.
func (s *Stream) outcomeID(id, name string) string {
	if id != "" {
		return adapters.CallID(id)
	}
	for i, c := range s.anon {
		if c.name == name || c.name == "" || name == "" {
			s.anon = slices.Delete(s.anon, i, i+1)
			return c.id
		}
	}
	return adapters.CallID("", s.run, hex.EncodeToString(s.key[:]), strconv.Itoa(s.n))
}

// answered records that the call LangGraph names id has its outcome, and
// reports whether it had one already (from this Stream or another of the
// Translator); a call without an id is never answered twice.
func (s *Stream) answered(id string) bool {
	if id == "" {
		return false
	}
	s.ensureRun() // the run its events land in
	return s.t.answered.end(s.run + "\x00" + id)
}

// NewStream returns a Stream translating into scope.
func (t *Translator) NewStream(scope Scope) *Stream {
	if scope.AgentID == "" {
		scope.AgentID = t.opts.AgentID
	}
	if scope.Attempt <= 0 {
		scope.Attempt = 1
	}
	return &Stream{t: t, scope: scope, run: scope.RunID, thread: scope.ThreadID, task: scope.TaskID,
		msgMeta: map[string]map[string]any{}, partial: map[string]int{}, calls: map[string]bool{}, results: map[string]bool{}, asked: map[string]bool{},
		started: map[string]bool{}, ended: map[string]bool{}}
}

// LastValues returns the state of the last values frame (or protocol
// values event) of the stream, nil before one.
func (s *Stream) LastValues() any { return s.lastValues }

// Interrupts returns the interrupts ({value, id}) the stream last reported,
// nil when none.
func (s *Stream) Interrupts() []any { return s.interrupts }

// RunID returns the LangGraph run id the stream learnt, "" before.
func (s *Stream) RunID() string { return s.lgRun }

// Frame translates one SSE frame.
func (s *Stream) Frame(ctx context.Context, f Frame) ([]*protocol.Message, error) {
	if len(bytes.TrimSpace(f.Data)) == 0 {
		return nil, inErr(protocol.CodeMissingField, "/data", "frame "+strconv.Quote(f.Event)+" has no data", nil)
	}
	var v jsontext.Value
	if err := adapters.DecodeJSON(Name, f.Data, &v); err != nil {
		return nil, err
	}
	event := f.Event
	if event == "" {
		event = "message" // the SSE default event name
	}
	if !utf8.ValidString(event) || !utf8.ValidString(f.ID) {
		return nil, inErr(protocol.CodeInvalidUTF8, "/event", "the frame's event or id is not valid UTF-8", nil)
	}
	data := rawjson.ToAny(v)
	s.beginRaw(event, f.ID, f.Data)
	return s.finish(s.frame(ctx, event, data))
}

// record translates one JSON record (see Translator.Inbound).
func (s *Stream) record(ctx context.Context, v jsontext.Value, base string) ([]*protocol.Message, error) {
	obj, ok := rawjson.ToAny(v).(map[string]any)
	if !ok {
		return nil, inErr(protocol.CodeWrongType, base, "a LangGraph record is a JSON object, not "+kindOf(v), ErrNotLangGraph)
	}
	sh := shapeOfMap(obj)
	ev := sh.event
	switch sh.kind() {
	case kindEvents:
		s.begin("events", "", obj)
		return s.finish(s.streamEvent(obj))
	case kindFrame:
		if ev == "" {
			return nil, inErr(protocol.CodeInvalidField, base+"/event", "empty event name", ErrNotLangGraph)
		}
		id, _ := obj["id"].(string)
		if _, has := obj["id"]; has && id == "" && len(obj) == 3 {
			return nil, inErr(protocol.CodeWrongType, base+"/id", "the frame id is not a non-empty string", ErrNotLangGraph)
		}
		if len(obj) == 3 && id == "" {
			return nil, inErr(protocol.CodeUnknownField, base, "a frame has event, data and id only", ErrNotLangGraph)
		}
		s.begin(ev, id, obj["data"])
		return s.finish(s.frame(ctx, ev, obj["data"]))
	case kindProtocol:
		s.begin("", "", obj)
		return s.finish(s.frame(ctx, "", obj))
	case kindPart:
		// v2 stream part {"type": mode, "ns": [...], "data": chunk, "interrupts"?}
		ns, _ := obj["ns"].([]any)
		event := sh.typ
		for _, e := range ns {
			es, _ := e.(string)
			event += "|" + es
		}
		data := obj["data"]
		if in, ok := obj["interrupts"].([]any); ok && len(in) > 0 {
			if m, ok := data.(map[string]any); ok {
				m["__interrupt__"] = in
			}
		}
		// The part's identity is that of the frame it is: the same ids
		// whichever form the stream was read in.
		s.begin(event, "", data)
		return s.finish(s.frame(ctx, event, data))
	case kindRun:
		s.begin("run", "", obj)
		return s.finish(s.runObject(obj))
	case kindThread:
		s.begin("thread", "", obj)
		return s.finish(s.threadObject(obj))
	case kindMessage:
		s.begin("message", "", obj)
		return s.finish(s.message(obj, "", nil, false))
	}
	return nil, inErr(protocol.CodeInvalidField, base, "not a LangGraph frame, stream part, astream_events record, protocol event, run, thread or LangChain message", ErrNotLangGraph)
}

func (s *Stream) begin(event, seq string, v any) {
	s.beginRaw(event, seq, jsonOf(v)) // sorted keys: the same record hashes the same however it was spelt
}

// beginRaw starts a frame whose identity is its raw bytes (an SSE frame: a
// re-sent frame has the same bytes).
func (s *Stream) beginRaw(event, seq string, raw []byte) {
	h := sha256.New()
	h.Write([]byte(s.run + "\x00" + s.lgRun + "\x00" + event + "\x00" + seq + "\x00"))
	h.Write(raw)
	h.Sum(s.key[:0])
	s.n, s.event, s.seq, s.ts, s.out, s.err = 0, event, seq, "", nil, nil
	_, ns, ok := strings.Cut(event, "|")
	s.ns = nil
	if ok {
		s.ns = strings.Split(ns, "|")
	}
}

func (s *Stream) finish(err error) ([]*protocol.Message, error) {
	if err == nil {
		err = s.err
	}
	if err != nil {
		s.out = nil
		return nil, err
	}
	out := s.out
	s.out = nil
	return out, nil
}

// ensureRun fixes the Clutch run, thread and root task.
func (s *Stream) ensureRun() {
	if s.run != "" {
		if s.task == "" {
			s.task = protocol.PrefixTask + strings.TrimPrefix(s.run, protocol.PrefixRun)
		}
		if s.thread == "" && s.lgThread != "" {
			s.thread = protocol.PrefixThread + s.lgThread
		} else if s.thread == "" {
			s.thread = protocol.PrefixThread + strings.TrimPrefix(s.run, protocol.PrefixRun)
		}
		return
	}
	if s.lgRun != "" {
		s.run, s.task = protocol.PrefixRun+s.lgRun, protocol.PrefixTask+s.lgRun
		if s.thread == "" {
			if s.lgThread != "" {
				s.thread = protocol.PrefixThread + s.lgThread
			} else {
				s.thread = protocol.PrefixThread + s.lgRun
			}
		}
		return
	}
	s.run, s.task, s.noRun = protocol.PrefixRun+"langgraph", protocol.PrefixTask+"langgraph", true
	if s.thread == "" {
		if s.lgThread != "" {
			s.thread = protocol.PrefixThread + s.lgThread
		} else {
			s.thread = protocol.PrefixThread + "langgraph"
		}
	}
}

// learn records LangGraph run and thread ids met in a record.
func (s *Stream) learn(run, thread string) {
	if s.lgRun == "" && run != "" {
		s.lgRun = run
	}
	if s.lgThread == "" && thread != "" {
		s.lgThread = thread
	}
}

// nsTask returns the Clutch task of a namespace ("node:task_id" elements):
// the innermost element's task, else the root task.
func (s *Stream) nsTask(ns []string) string {
	for i := len(ns) - 1; i >= 0; i-- {
		if _, id, ok := strings.Cut(ns[i], ":"); ok && id != "" {
			return protocol.PrefixTask + id
		}
	}
	return s.task
}

// emit appends a message of the current frame. task "" means the root
// task, or the namespace's task; parent is its parent_task_id.
func (s *Stream) emit(typ protocol.Type, task, parent, payloadType string, payload any, meta map[string]any) {
	s.ensureRun()
	if task == "" {
		task = s.nsTask(s.ns)
		if task != s.task && parent == "" {
			parent = s.parentOf(s.ns)
		}
	}
	if task == s.task {
		parent = ""
	}
	for _, id := range []string{s.run, s.thread, task, parent} {
		if len(id) > protocol.MaxIDLength {
			if s.err == nil {
				s.err = inErr(protocol.CodeInvalidField, "", "a LangGraph id is over "+itoa(protocol.MaxIDLength-10)+" bytes", ErrNotLangGraph)
			}
			return
		}
	}
	// One task.request and one terminal event per task, whatever the stream
	// modes (tasks and debug report the same node task): a repeat is kept
	// as progress.
	switch typ {
	case protocol.TypeTaskRequest:
		if s.started[task] {
			typ = protocol.TypeTaskProgress
		}
		s.started[task] = true
	case protocol.TypeTaskResult, protocol.TypeTaskError, protocol.TypeTaskCancel, protocol.TypeTaskTimeout:
		// The Translator remembers ends across calls too: a stream fed a
		// frame per Inbound call still ends each task attempt once.
		before := s.t.ended.end(s.run + "\x00" + task + "\x00" + itoa(s.scope.Attempt))
		if s.ended[task] || before {
			typ = protocol.TypeTaskProgress
			if payloadType == "" {
				payloadType = PayloadTask
			}
		}
		s.ended[task] = true
	}
	h := sha256.New()
	h.Write(s.key[:])
	h.Write([]byte{byte(s.n), byte(s.n >> 8), byte(s.n >> 16)})
	sum := h.Sum(nil)
	s.n++
	ts := s.ts
	if ts == "" {
		ts = protocol.Timestamp(s.t.opts.Now())
	}
	m := &protocol.Message{
		V: protocol.Version, ID: "msg_lg_" + hex.EncodeToString(sum[:16]), TS: ts,
		ThreadID: s.thread, RunID: s.run, TaskID: task, ParentTaskID: parent,
		From: protocol.Participant{AgentID: s.scope.AgentID}, To: []protocol.Participant{},
		Type: typ, PayloadType: payloadType, Attempt: s.scope.Attempt,
	}
	var raw json.RawMessage
	ep, isErr := payload.(protocol.ErrorPayload)
	switch p := payload.(type) {
	case json.RawMessage:
		raw = p
	case protocol.ErrorPayload:
		ep = boundError(p)
		raw = jsonOf(ep)
	default:
		raw = jsonOf(scrub(p))
	}
	m.Payload = raw
	mm := map[string]any{adapters.MetaSource: Source}
	if s.event != "" {
		mm[MetaEvent] = s.event
		// A stream mode is a short name; anything longer is not one, and
		// would repeat the event name's text (kept once, in MetaEvent).
		if mode, _, _ := strings.Cut(s.event, "|"); len(mode) <= maxModeLen {
			mm[MetaMode] = mode
		}
	}
	if len(s.ns) > 0 {
		ns := make([]any, len(s.ns))
		for i, e := range s.ns {
			ns[i] = e
		}
		mm[MetaNamespace] = ns
	}
	if s.seq != "" {
		mm[MetaSeq] = s.seq
	}
	if s.lgRun != "" {
		mm[MetaRunID] = s.lgRun
	}
	if s.lgThread != "" {
		mm[MetaThreadID] = s.lgThread
	}
	if s.noRun {
		mm[MetaNoRun] = true
	}
	for k, v := range meta {
		if v != nil && v != "" {
			mm[k] = scrub(v)
		}
	}
	m.Meta = mm
	s.fit(m, ep, isErr)
	if typ.Extension() && typ != protocol.Type("x.langgraph.interrupt") {
		s.t.unknown.Add(1)
	}
	s.out = append(s.out, m)
}

// parentOf returns the parent task of the namespace's task.
func (s *Stream) parentOf(ns []string) string {
	if len(ns) <= 1 {
		return s.task
	}
	return s.nsTask(ns[:len(ns)-1])
}

// unknown keeps a record of a kind the translator does not know as
// x.langgraph.<kind>, with its data as payload.
func (s *Stream) unknown(kind string, data any) {
	s.emit(protocol.Type("x.langgraph."+extName(kind)), "", "", "", data, map[string]any{MetaUnknown: true})
}

// extName turns a LangGraph kind into the <name> of an x.langgraph.<name>
// type: lower-case letters, digits, '.', '-' and '_' kept, anything else '_'.
func extName(kind string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(kind) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
		if b.Len() >= 64 {
			break
		}
	}
	if b.Len() == 0 || !(b.String()[0] >= 'a' && b.String()[0] <= 'z') {
		return "k" + b.String()
	}
	return b.String()
}

// setTime stamps the frame's messages with a LangGraph time: an ISO string
// or epoch milliseconds.
func (s *Stream) setTime(v any) {
	switch t := v.(type) {
	case string:
		if tt, err := time.Parse(time.RFC3339Nano, t); err == nil {
			s.ts = protocol.Timestamp(tt)
		}
	case json.Number:
		if ms, err := t.Int64(); err == nil && ms > 0 && ms < 1e14 {
			s.ts = protocol.Timestamp(time.UnixMilli(ms))
		}
	}
}

func str(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

func kindOf(v jsontext.Value) string {
	switch v.Kind() {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	}
	return "null"
}

// secretKeys are keys whose values the Agent Server echoes from request
// headers into metadata and config; they never reach the store.
var secretKeys = map[string]bool{"authorization": true, "cookie": true, "x-api-key": true, "proxy-authorization": true,
	"set-cookie": true, "x-auth-token": true, "api-key": true, "apikey": true, "x-langsmith-api-key": true, "langsmith-api-key": true}

// secretKey reports whether a key names a credential: a known header, or
// a name holding api key, secret, password or ending in token.
func secretKey(k string) bool {
	k = strings.ToLower(k)
	if secretKeys[k] {
		return true
	}
	for _, w := range []string{"api_key", "api-key", "apikey", "secret", "password", "passwd"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return strings.HasSuffix(k, "token") || strings.HasSuffix(k, "cookie")
}

// secretValue reports whether a string is a credential whatever its key:
// an HTTP authorization value.
func secretValue(s string) bool {
	for _, p := range []string{"Bearer ", "Basic ", "bearer ", "basic "} {
		if strings.HasPrefix(s, p) && len(s) > len(p) {
			return true
		}
	}
	return false
}

const redacted = "[redacted]"

// scrub replaces credentials (the values of secret keys, request headers
// the Agent Server echoes, and authorization values anywhere) with
// "[redacted]", in place; it returns v, or "[redacted]" for a credential
// string.
func scrub(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			if secretKey(k) {
				if e != nil {
					t[k] = redacted
				}
				continue
			}
			t[k] = scrub(e)
		}
	case []any:
		for i, e := range t {
			t[i] = scrub(e)
		}
	case string:
		if secretValue(t) {
			return redacted
		}
	}
	return v
}

// maxText bounds one text of an error (message or a string in details):
// error text the store keeps once, cut with a marker and its size.
const maxText = 16 << 10

// envelopeLimit is the largest envelope the store takes (its decoder's
// default limit).
const envelopeLimit = protocol.DefaultMaxBytes

// maxModeLen bounds the stream mode kept in MetaMode.
const maxModeLen = 64

// cut bounds a text to maxText bytes, marking the cut and the whole size.
func cut(s string) string {
	if len(s) <= maxText {
		return s
	}
	n := maxText
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "… [truncated: " + strconv.Itoa(len(s)) + " bytes in all]"
}

// boundError makes an error payload the store can hold: credentials
// redacted, the message bounded, and the details a bounded copy in which
// the message's text is not repeated.
func boundError(ep protocol.ErrorPayload) protocol.ErrorPayload {
	full := ep.Message
	ep.Message = cut(full)
	if secretValue(ep.Message) {
		ep.Message = redacted
	}
	if ep.Details != nil {
		d, _ := boundCopy(map[string]any(ep.Details), full).(map[string]any)
		ep.Details = d
	}
	return ep
}

// boundCopy copies v with credentials redacted, every string bounded by
// cut, and strings equal to the (long) text msg replaced by a marker: the
// text is in the message already.
func boundCopy(v any, msg string) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			if secretKey(k) && e != nil {
				out[k] = redacted
				continue
			}
			out[k] = boundCopy(e, msg)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = boundCopy(e, msg)
		}
		return out
	case string:
		switch {
		case secretValue(t):
			return redacted
		case len(t) > 64 && t == msg:
			return "[the message]"
		}
		return cut(t)
	}
	return v
}

// approxSize is a cheap lower bound of a meta value's encoded size.
func approxSize(v any) int {
	switch t := v.(type) {
	case map[string]any:
		n := 2
		for k, e := range t {
			n += len(k) + 4 + approxSize(e)
		}
		return n
	case []any:
		n := 2
		for _, e := range t {
			n += 1 + approxSize(e)
		}
		return n
	case string:
		return len(t) + 2
	}
	return 8
}

// fit keeps m within the store's envelope limit: state near the input
// limit, or repeated from an earlier frame (the end frame's result), is
// replaced by a marker {"truncated": true, "bytes", "sha256"} of what it
// was (for an error, its details are); the big lg_metadata goes first.
func (s *Stream) fit(m *protocol.Message, ep protocol.ErrorPayload, isErr bool) {
	est := len(m.Payload) + 6*approxSize(m.Meta) + 1024
	if est <= envelopeLimit {
		return
	}
	size := func() int {
		b, err := protocol.Encode(m)
		m.Reset() // measured only: the message is still being built
		if err != nil {
			return envelopeLimit + 1
		}
		return len(b)
	}
	if size() <= envelopeLimit {
		return
	}
	if md, ok := m.Meta["lg_metadata"]; ok {
		m.Meta["lg_metadata"] = map[string]any{"truncated": true, "bytes": approxSize(md)}
		if size() <= envelopeLimit {
			return
		}
	}
	if size() > envelopeLimit {
		sum := sha256.Sum256(m.Payload)
		marker := map[string]any{"truncated": true, "bytes": len(m.Payload), "sha256": hex.EncodeToString(sum[:])}
		if isErr {
			ep.Details = marker
			m.Payload = jsonOf(ep)
		} else {
			m.Payload = jsonOf(marker)
		}
	}
	if size() > envelopeLimit {
		// Big text outside the payload (a huge event or node name in
		// meta): cut it as every adapter does, listed in meta.truncated.
		_ = bound.Fit(m, envelopeLimit)
	}
}

func sortStrings(s []string) { slices.Sort(s) }
