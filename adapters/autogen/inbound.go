package autogen

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/internal/bound"
	"github.com/clutchprotocol/clutch/adapters/internal/rawjson"
	"github.com/clutchprotocol/clutch/adapters/internal/redact"
	"github.com/clutchprotocol/clutch/protocol"
)

// The AutoGen kinds the adapter knows (autogen_agentchat/messages.py).
const (
	kindText        = "TextMessage"
	kindMultiModal  = "MultiModalMessage"
	kindStop        = "StopMessage"
	kindHandoff     = "HandoffMessage"
	kindToolSummary = "ToolCallSummaryMessage"
	kindStructured  = "StructuredMessage["
	kindToolRequest = "ToolCallRequestEvent"
	kindToolExec    = "ToolCallExecutionEvent"
	kindChunk       = "ModelClientStreamingChunkEvent"
	kindThought     = "ThoughtEvent"
	kindUserInput   = "UserInputRequestedEvent"
	kindTaskResult  = "TaskResult"
	kindTeamState   = "TeamState"
)

// progressKinds become task.progress; extKinds are known but have no
// envelope type of their own (x.autogen.<snake_case>).
var (
	progressKinds = map[string]bool{
		kindChunk: true, kindThought: true, kindUserInput: true, "MemoryQueryEvent": true,
		"SelectSpeakerEvent": true, "SelectorEvent": true, "CodeGenerationEvent": true, "CodeExecutionEvent": true,
	}
	extKinds = map[string]bool{
		kindTeamState: true, "SystemMessage": true, "UserMessage": true, "AssistantMessage": true,
		"FunctionExecutionResultMessage": true,
	}
)

func chatKind(k string) bool {
	switch k {
	case kindText, kindMultiModal, kindStop, kindHandoff, kindToolSummary:
		return true
	}
	return strings.HasPrefix(k, kindStructured) && strings.HasSuffix(k, "]")
}

// item is one AutoGen message or event, its common members read.
type item struct {
	path                  string
	raw                   []byte
	kind                  string
	id, source, createdAt string
	hasID, hasSource      bool
	usage, metadata       jsontext.Value
	content               jsontext.Value
	rest                  []rawjson.Member // type-specific members other than content, in order
	ts                    time.Time
	hasTS                 bool
	core                  map[string]any // meta.autogen_core of a message that came in a worker message
}

// translation is the state of one InboundRun call.
type translation struct {
	a          *Adapter
	run        Run
	agents     string
	resolved   bool
	started    bool
	index      int
	out        []*protocol.Message
	last       *item          // the last chat message, for the result
	lastSystem jsontext.Value // the content of the last StopMessage
	lastSource string         // the source of the last message
	now        time.Time
}

func (a *Adapter) newTranslation(run Run) (*translation, error) {
	t := &translation{a: a, run: run, agents: a.opts.Agents, started: run.Started}
	if run.Agents != "" {
		if !validAgents(run.Agents) {
			return nil, inErr(protocol.CodeInvalidField, "", "agent prefix "+strconv.Quote(run.Agents)+" must start with agent:", nil)
		}
		t.agents = run.Agents
	}
	for _, id := range []string{run.ID, run.ThreadID, run.TaskID, run.Key} {
		if len(id) > protocol.MaxIDLength-32 {
			return nil, inErr(protocol.CodeInvalidField, "", "run id over "+strconv.Itoa(protocol.MaxIDLength-32)+" bytes", nil)
		}
	}
	return t, nil
}

// value translates one JSON value at path: a message, a list, a
// TaskResult, a Response or a worker message.
func (t *translation) value(ctx context.Context, raw []byte, path string) error {
	if len(raw) > t.a.opts.MaxBytes {
		return inErr(protocol.CodeTooLarge, path, "input is "+strconv.Itoa(len(raw))+" bytes, limit "+strconv.Itoa(t.a.opts.MaxBytes), nil)
	}
	var v jsontext.Value
	if err := adapters.DecodeJSON(Name, raw, &v); err != nil {
		return err
	}
	return t.decoded(ctx, v, path)
}

func (t *translation) decoded(ctx context.Context, v jsontext.Value, path string) error {
	switch rawjson.Kind(v) {
	case '[':
		return t.list(ctx, v, path)
	case '{':
	default:
		return inErr(protocol.CodeWrongType, path, "want an object or an array, got "+rawjson.KindName(v), ErrNotAutoGen)
	}
	ms, err := rawjson.Members(v)
	if err != nil {
		return inErr(protocol.CodeInvalidJSON, path, err.Error(), err)
	}
	get := func(n string) jsontext.Value {
		for _, m := range ms {
			if m.Name == n {
				return m.Value
			}
		}
		return nil
	}
	switch {
	case get("type") != nil:
		return t.message(ctx, v, ms, path)
	case get("messages") != nil && (get("stop_reason") != nil || get("__class__") != nil):
		return t.taskResult(ctx, ms, path)
	case get("chat_message") != nil:
		return t.response(ctx, ms, path)
	case get("cloudEvent") != nil || get("request") != nil || get("response") != nil:
		return t.worker(ctx, ms, path)
	}
	return inErr(protocol.CodeMissingField, path+"/type", "no type, and not a TaskResult, Response or worker message", ErrNotAutoGen)
}

func (t *translation) list(ctx context.Context, v jsontext.Value, path string) error {
	var elems []jsontext.Value
	if err := adapters.DecodeJSON(Name, v, &elems); err != nil {
		return err
	}
	for i, e := range elems {
		p := path + "/" + strconv.Itoa(i)
		if rawjson.Kind(e) != '{' {
			return inErr(protocol.CodeWrongType, p, "want a message object, got "+rawjson.KindName(e), nil)
		}
		if err := t.decoded(ctx, e, p); err != nil {
			return err
		}
	}
	return nil
}

// parseItem reads the common members of an AutoGen message.
func parseItem(v jsontext.Value, ms []rawjson.Member, path string) (*item, error) {
	it := &item{path: path, raw: v}
	for _, m := range ms {
		p := path + "/" + m.Name
		switch m.Name {
		case "type":
			s, ok := rawjson.Str(m.Value)
			if !ok {
				return nil, inErr(protocol.CodeWrongType, p, "want a string, got "+rawjson.KindName(m.Value), nil)
			}
			if s == "" {
				return nil, inErr(protocol.CodeInvalidField, p, "empty type", nil)
			}
			it.kind = s
		case "id", "source", "created_at":
			if rawjson.Kind(m.Value) == 'n' { // AutoGen always writes a string
				return nil, inErr(protocol.CodeWrongType, p, "want a string, got null", nil)
			}
			s, present, code, detail := rawjson.OptString(m.Value)
			if code != "" {
				return nil, inErr(code, p, detail, nil)
			}
			if !present {
				continue
			}
			if s == "" || len(s) > protocol.MaxIDLength/2 {
				return nil, inErr(protocol.CodeInvalidField, p, m.Name+" must be 1 to "+strconv.Itoa(protocol.MaxIDLength/2)+" bytes", nil)
			}
			switch m.Name {
			case "id":
				it.id, it.hasID = s, true
			case "source":
				it.source, it.hasSource = s, true
			default:
				ts, err := time.Parse(time.RFC3339Nano, s)
				if err != nil {
					return nil, inErr(protocol.CodeInvalidField, p, "created_at is not an RFC 3339 time", err)
				}
				it.createdAt, it.ts, it.hasTS = s, ts, true
			}
		case "models_usage", "metadata":
			if k := rawjson.Kind(m.Value); k != '{' && k != 'n' {
				return nil, inErr(protocol.CodeWrongType, p, "want an object or null, got "+rawjson.KindName(m.Value), nil)
			}
			if m.Name == "metadata" {
				it.metadata = m.Value
			} else {
				it.usage = m.Value
			}
		case "content":
			it.content = m.Value
		default:
			it.rest = append(it.rest, m)
		}
	}
	return it, nil
}

func (t *translation) message(ctx context.Context, v jsontext.Value, ms []rawjson.Member, path string) error {
	it, err := parseItem(v, ms, path)
	if err != nil {
		return err
	}
	return t.item(ctx, it)
}

func (t *translation) item(ctx context.Context, it *item) error {
	known := chatKind(it.kind) || progressKinds[it.kind] || it.kind == kindToolRequest || it.kind == kindToolExec
	if known && !it.hasSource {
		return inErr(protocol.CodeMissingField, it.path+"/source", "source is required", nil)
	}
	if it.content == nil && (chatKind(it.kind) || it.kind == kindToolRequest || it.kind == kindToolExec) {
		return inErr(protocol.CodeMissingField, it.path+"/content", "content is required", nil)
	}
	t.resolve(ctx, it)
	t.index++
	if it.hasSource {
		t.lastSource = it.source
	}
	switch {
	case it.kind == kindToolRequest:
		return t.toolCalls(ctx, it)
	case it.kind == kindToolExec:
		return t.toolResults(ctx, it)
	case chatKind(it.kind):
		return t.chat(ctx, it)
	case progressKinds[it.kind]:
		return t.progress(ctx, it)
	}
	return t.extension(ctx, it, it.kind, !extKinds[it.kind])
}

// resolve fixes the run's ids at its first message: from Run, else from
// the run a tool result's call landed in, else from the message.
func (t *translation) resolve(ctx context.Context, it *item) {
	if t.resolved {
		return
	}
	t.resolved = true
	key := t.run.Key
	if key == "" && t.run.ID == "" && it.kind == kindToolExec {
		if id := firstCallID(it.content); id != "" {
			if l, ok := t.a.links.Lookup(ctx, linkCall+id); ok {
				t.run.ID, t.run.ThreadID, t.run.TaskID, t.started = l.RunID, l.ThreadID, l.TaskID, true
				return
			}
		}
	}
	if key == "" {
		if it.hasID {
			key = it.id
		} else {
			key = digest(it.raw)
		}
	}
	if t.run.ID == "" {
		t.run.ID = protocol.PrefixRun + "autogen/" + key
	}
	if t.run.ThreadID == "" {
		t.run.ThreadID = protocol.PrefixThread + "autogen/" + key
	}
	if t.run.TaskID == "" {
		t.run.TaskID = protocol.PrefixTask + "autogen/" + key
	}
}

const (
	linkMsg  = "autogen-msg:"
	linkCall = "autogen-call:"
)

func firstCallID(content jsontext.Value) string {
	var rs []struct {
		CallID string `json:"call_id"`
	}
	if err := adapters.DecodeJSON(Name, content, &rs); err != nil || len(rs) == 0 {
		return ""
	}
	return rs[0].CallID
}

// digest is 24 hex digits of the SHA-256 of v's canonical form (v's bytes
// when it has none).
func digest(v []byte) string {
	c, err := protocol.Canonical(v)
	if err != nil {
		c = v
	}
	sum := sha256.Sum256(c)
	return hex.EncodeToString(sum[:12])
}

// base is the envelope of it's part-th translation (of parts).
func (t *translation) base(it *item, typ protocol.Type, part, parts int) *protocol.Message {
	key := it.id
	if !it.hasID {
		key = "#" + t.run.Salt + "#" + strconv.Itoa(t.index) + "#" + digest(it.raw)
	}
	m := &protocol.Message{
		V: protocol.Version, ID: envID(t.run.ID, key, part), Type: typ,
		RunID: t.run.ID, ThreadID: t.run.ThreadID, TaskID: t.run.TaskID,
		From: protocol.Participant{AgentID: t.agent(it.source)}, To: []protocol.Participant{}, Attempt: 1,
	}
	if it.hasTS {
		m.TS = protocol.Timestamp(it.ts)
	} else {
		if t.now.IsZero() {
			t.now = t.a.opts.Now()
		}
		m.TS = protocol.Timestamp(t.now)
	}
	meta := map[string]any{adapters.MetaSource: Source, MetaType: it.kind}
	if it.hasID {
		meta[MetaID] = it.id
		m.IdempotencyKey = it.id
		if part > 0 {
			m.IdempotencyKey += "/" + strconv.Itoa(part)
		}
	} else {
		meta[MetaDerivedID] = true
	}
	if it.hasSource {
		meta[MetaSourceName] = it.source
	}
	// null is kept (as a nil meta value) so that Outbound writes back
	// the same JSON value.
	if it.usage != nil && part == 0 { // counted once, on the first part

		meta[MetaUsage] = rawjson.ToAny(it.usage)
	}
	if it.metadata != nil {
		meta[MetaMetadata] = rawjson.ToAny(it.metadata)
	}
	if it.hasTS {
		meta[MetaCreatedAt] = it.createdAt
	}
	if parts > 1 {
		meta[MetaPart], meta[MetaParts] = part, parts
	}
	if t.run.Owner != "" {
		meta[MetaOwner] = t.run.Owner
	}
	if it.core != nil {
		meta["autogen_core"] = it.core
	}
	m.Meta = meta
	return m
}

func envID(run, key string, part int) string {
	h := sha256.New()
	h.Write([]byte(run))
	h.Write([]byte{0})
	h.Write([]byte(key))
	h.Write([]byte{0})
	h.Write([]byte(strconv.Itoa(part)))
	return protocol.IDPrefixMessage + hex.EncodeToString(h.Sum(nil)[:16])
}

func (t *translation) agent(name string) string {
	if name == "" {
		name = "team"
	}
	return t.agents + name
}

// textPayload is {"text": content} for string content, else {"content":
// content}, followed by the type-specific members.
func textPayload(it *item) []byte {
	ms := make([]rawjson.Member, 0, 1+len(it.rest))
	if it.content != nil {
		name := "content"
		if rawjson.Kind(it.content) == '"' {
			name = "text"
		}
		ms = append(ms, rawjson.Field(name, it.content))
	}
	return rawjson.Object(append(ms, it.rest...))
}

func (t *translation) chat(ctx context.Context, it *item) error {
	typ := protocol.TypeChatMessage
	switch {
	case it.kind == kindStop:
		typ = protocol.TypeChatSystem
	case !t.started && (it.kind == kindText || it.kind == kindMultiModal || strings.HasPrefix(it.kind, kindStructured)):
		typ = protocol.TypeTaskRequest
		t.started = true
	}
	if it.kind != kindStructured && it.kind != kindMultiModal && !strings.HasPrefix(it.kind, kindStructured) && rawjson.Kind(it.content) != '"' {
		return inErr(protocol.CodeWrongType, it.path+"/content", "want a string, got "+rawjson.KindName(it.content), nil)
	}
	m := t.base(it, typ, 0, 1)
	m.Payload = textPayload(it)
	switch it.kind {
	case kindMultiModal:
		p, atts, err := multiModal(it)
		if err != nil {
			return err
		}
		m.Payload, m.Attachments = p, atts
	case kindHandoff:
		var target string
		for _, r := range it.rest {
			if r.Name == "target" {
				s, ok := rawjson.Str(r.Value)
				if !ok || s == "" || len(s) > protocol.MaxIDLength/2 {
					return inErr(protocol.CodeInvalidField, it.path+"/target", "target must be a non-empty string", nil)
				}
				target = s
			}
		}
		if target == "" {
			return inErr(protocol.CodeMissingField, it.path+"/target", "target is required", nil)
		}
		m.To = []protocol.Participant{{AgentID: t.agent(target)}}
		m.Meta[MetaHandoff] = target
	}
	if it.kind == kindStop {
		t.lastSystem = it.content
	} else {
		t.last = it
	}
	return t.emit(ctx, it, m)
}

// multiModal maps MultiModalMessage.content: strings joined into text, each
// image ({"data": base64}) an inline attachment with a data: URL.
func multiModal(it *item) ([]byte, []protocol.Attachment, error) {
	var parts []jsontext.Value
	if rawjson.Kind(it.content) != '[' {
		return nil, nil, inErr(protocol.CodeWrongType, it.path+"/content", "want an array, got "+rawjson.KindName(it.content), nil)
	}
	if err := adapters.DecodeJSON(Name, it.content, &parts); err != nil {
		return nil, nil, err
	}
	var texts []string
	var atts []protocol.Attachment
	out := make([]jsontext.Value, 0, len(parts))
	for i, p := range parts {
		pp := it.path + "/content/" + strconv.Itoa(i)
		switch rawjson.Kind(p) {
		case '"':
			s, _ := rawjson.Str(p)
			texts = append(texts, s)
			out = append(out, p)
		case '{':
			ms, err := rawjson.Members(p)
			if err != nil || len(ms) != 1 || ms[0].Name != "data" {
				return nil, nil, inErr(protocol.CodeInvalidField, pp, "an image part is {\"data\": <base64>}", err)
			}
			s, ok := rawjson.Str(ms[0].Value)
			if !ok {
				return nil, nil, inErr(protocol.CodeWrongType, pp+"/data", "want a base64 string", nil)
			}
			b, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return nil, nil, inErr(protocol.CodeInvalidField, pp+"/data", "not base64", err)
			}
			mt := http.DetectContentType(b)
			atts = append(atts, protocol.Attachment{Kind: "inline", Ref: "data:" + mt + ";base64," + s, MediaType: mt, Size: int64(len(b))})
			out = append(out, rawjson.Object([]rawjson.Member{rawjson.Field("attachment", jsontext.Value(strconv.Itoa(len(atts)-1)))}))
		default:
			return nil, nil, inErr(protocol.CodeWrongType, pp, "want a string or an image, got "+rawjson.KindName(p), nil)
		}
	}
	partsRaw, _ := rawjson.FromAny(out)
	ms := []rawjson.Member{rawjson.Field("parts", partsRaw)}
	if joined := strings.Join(texts, "\n"); len(joined) <= maxJoinedText {
		// The text parts joined, for readers of text; bigger text is
		// kept once, in parts.
		text, _ := rawjson.FromAny(joined)
		ms = append([]rawjson.Member{rawjson.Field("text", text)}, ms...)
	}
	return rawjson.Object(append(ms, it.rest...)), atts, nil
}

func (t *translation) progress(ctx context.Context, it *item) error {
	m := t.base(it, protocol.TypeTaskProgress, 0, 1)
	m.Payload = textPayload(it)
	for _, r := range it.rest {
		s, ok := rawjson.Str(r.Value)
		if ok && (r.Name == "full_message_id" || r.Name == "request_id") && len(s) > protocol.MaxIDLength/2 {
			return inErr(protocol.CodeInvalidField, it.path+"/"+r.Name, r.Name+" is over "+strconv.Itoa(protocol.MaxIDLength/2)+" bytes", nil)
		}
		switch {
		case r.Name == "full_message_id" && ok:
			m.Meta[MetaFullID] = s
		case r.Name == "request_id" && ok:
			m.Meta[MetaRequestID] = s
		}
	}
	switch it.kind {
	case kindChunk:
		m.Meta[MetaPartial] = true
	case kindThought:
		m.Meta[MetaThought] = true
	case kindUserInput:
		m.Meta[MetaInputRequest] = true
	}
	return t.emit(ctx, it, m)
}

// objects decodes content as a non-empty array of objects.
func objects(it *item) ([][]rawjson.Member, error) {
	var elems []jsontext.Value
	if rawjson.Kind(it.content) != '[' {
		return nil, inErr(protocol.CodeWrongType, it.path+"/content", "want an array, got "+rawjson.KindName(it.content), nil)
	}
	if err := adapters.DecodeJSON(Name, it.content, &elems); err != nil {
		return nil, err
	}
	if len(elems) == 0 {
		return nil, inErr(protocol.CodeInvalidField, it.path+"/content", "no calls or results", nil)
	}
	out := make([][]rawjson.Member, len(elems))
	for i, e := range elems {
		if rawjson.Kind(e) != '{' {
			return nil, inErr(protocol.CodeWrongType, it.path+"/content/"+strconv.Itoa(i), "want an object, got "+rawjson.KindName(e), nil)
		}
		ms, err := rawjson.Members(e)
		if err != nil {
			return nil, inErr(protocol.CodeInvalidJSON, it.path+"/content/"+strconv.Itoa(i), err.Error(), err)
		}
		out[i] = ms
	}
	return out, nil
}

// str reads the string member name of ms; a required one must be present,
// an id (required and id) 1 to 128 bytes.
func str(ms []rawjson.Member, name, path string, required, id bool) (string, error) {
	for _, m := range ms {
		if m.Name != name {
			continue
		}
		s, present, code, detail := rawjson.OptString(m.Value)
		if code != "" {
			return "", inErr(code, path+"/"+name, detail, nil)
		}
		if !present {
			break
		}
		if id && (s == "" || len(s) > protocol.MaxIDLength/2) {
			return "", inErr(protocol.CodeInvalidField, path+"/"+name, name+" must be 1 to 128 bytes", nil)
		}
		return s, nil
	}
	if required {
		return "", inErr(protocol.CodeMissingField, path+"/"+name, name+" is required", nil)
	}
	return "", nil
}

// maxJoinedText bounds the joined text a multimodal message's payload
// also carries.
const maxJoinedText = 64 << 10

// maxParsedArgs bounds the arguments a tool.call also carries parsed
// (args): bigger ones are kept once, as sent.
const maxParsedArgs = 64 << 10

// without returns ms less the member name.
func without(ms []rawjson.Member, name string) []rawjson.Member {
	out := make([]rawjson.Member, 0, len(ms))
	for _, mb := range ms {
		if mb.Name != name {
			out = append(out, mb)
		}
	}
	return out
}

// toolCalls maps ToolCallRequestEvent: one tool.call per FunctionCall,
// payload {name, call_id, arguments, args}, args being arguments parsed
// when they are JSON.
func (t *translation) toolCalls(ctx context.Context, it *item) error {
	calls, err := objects(it)
	if err != nil {
		return err
	}
	for i, c := range calls {
		p := it.path + "/content/" + strconv.Itoa(i)
		id, err := str(c, "id", p, true, true)
		if err != nil {
			return err
		}
		if _, err := str(c, "name", p, true, false); err != nil {
			return err
		}
		args, err := str(c, "arguments", p, false, false)
		if err != nil {
			return err
		}
		ms := make([]rawjson.Member, 0, len(c)+1)
		for _, mb := range c {
			if mb.Name == "id" {
				mb.Name = "call_id"
			}
			ms = append(ms, mb)
		}
		if args != "" && len(args) <= maxParsedArgs {
			var parsed jsontext.Value
			if adapters.DecodeJSON(Name, []byte(args), &parsed) == nil {
				ms = append(ms, rawjson.Field("args", rawjson.Compact(parsed)))
			}
		}
		m := t.base(it, protocol.TypeToolCall, i, len(calls))
		m.Payload = rawjson.Object(ms)
		m.Meta[MetaToolCallID] = id
		keepExtra(it, m)
		if err := t.emit(ctx, it, m); err != nil {
			return err
		}
		t.a.links.Remember(ctx, &protocol.Message{ID: linkCall + id, RunID: m.RunID, ThreadID: m.ThreadID, TaskID: m.TaskID}, it.kind)
	}
	return nil
}

// toolResults maps ToolCallExecutionEvent: one tool.result per
// FunctionExecutionResult, or a tool.error (TOOL_FAILED) when is_error.
func (t *translation) toolResults(ctx context.Context, it *item) error {
	results, err := objects(it)
	if err != nil {
		return err
	}
	for i, r := range results {
		p := it.path + "/content/" + strconv.Itoa(i)
		id, err := str(r, "call_id", p, true, true)
		if err != nil {
			return err
		}
		content, err := str(r, "content", p, true, false)
		if err != nil {
			return err
		}
		isErr := false
		for _, mb := range r {
			if mb.Name == "is_error" {
				switch rawjson.Kind(mb.Value) {
				case 't':
					isErr = true
				case 'f', 'n':
				default:
					return inErr(protocol.CodeWrongType, p+"/is_error", "want a boolean, got "+rawjson.KindName(mb.Value), nil)
				}
			}
		}
		obj := rawjson.Object(r)
		m := t.base(it, protocol.TypeToolResult, i, len(results))
		m.Payload = obj
		if isErr {
			m.Type = protocol.TypeToolError
			name, _ := str(r, "name", p, false, false)
			// The text is the message; details.autogen is the rest of
			// the result (Outbound puts content back).
			ep := protocol.ErrorPayload{Code: protocol.CodeToolFailed, Message: content, Details: map[string]any{"autogen": rawjson.ToAny(rawjson.Object(without(r, "content"))), "call_id": id}}
			if name != "" && len(name) <= maxMetaReason {
				// A copy for readers of the error; a longer name is
				// kept once, in details.autogen.
				ep.Details["name"] = name
			}
			if m.Payload, err = rawjson.FromAny(ep); err != nil {
				return inErr(protocol.CodeInternal, p, "encoding the error", err)
			}
		}
		m.Meta[MetaToolCallID] = id
		keepExtra(it, m)
		if err := t.emit(ctx, it, m); err != nil {
			return err
		}
	}
	return nil
}

// keepExtra keeps the members of a tool event other than content, which
// has no place in a per-call payload, in meta.autogen_extra.
func keepExtra(it *item, m *protocol.Message) {
	if len(it.rest) > 0 {
		m.Meta[MetaExtra] = rawjson.ToAny(rawjson.Object(it.rest))
	}
}

// extension keeps a kind without an envelope type of its own as
// x.autogen.<snake_case kind>, its members in the payload.
func (t *translation) extension(ctx context.Context, it *item, kind string, unknown bool) error {
	m := t.base(it, extType(kind), 0, 1)
	ms := it.rest
	if it.content != nil {
		ms = append([]rawjson.Member{rawjson.Field("content", it.content)}, ms...)
	}
	m.Payload = rawjson.Object(ms)
	if unknown {
		m.Meta[MetaUnknown] = true
		t.a.unknown.Add(1)
	}
	return t.emit(ctx, it, m)
}

// extType is x.autogen.<kind in snake case>, with characters an extension
// name cannot hold replaced by '_'.
func extType(kind string) protocol.Type {
	var b strings.Builder
	b.WriteString("x.autogen.")
	for i, r := range kind {
		if b.Len() >= 128 {
			break
		}
		switch {
		case r >= 'A' && r <= 'Z':
			if i > 0 {
				b.WriteByte('_')
			}
			b.WriteRune(r + ('a' - 'A'))
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == len("x.autogen.") {
		b.WriteString("unknown")
	}
	return protocol.Type(b.String())
}

// emit redacts credentials in m, bounds its text to what the store
// holds, validates it and adds it.
func (t *translation) emit(ctx context.Context, it *item, m *protocol.Message) error {
	if err := redact.Message(m); err != nil {
		return inErr(protocol.CodeOf(err), it.path, "payload", err)
	}
	if err := bound.Fit(m, 0); err != nil {
		return inErr(protocol.CodeTooLarge, it.path, "the message does not fit in one envelope", err)
	}
	if err := m.Validate(); err != nil {
		return inErr(protocol.CodeOf(err), it.path, "translated message is invalid", err)
	}
	t.out = append(t.out, m)
	return nil
}

// finish remembers where the messages landed and returns them.
func (t *translation) finish(ctx context.Context) ([]*protocol.Message, error) {
	if len(t.out) == 0 {
		return nil, inErr(protocol.CodeMissingField, "", "no messages", ErrNotAutoGen)
	}
	for _, m := range t.out {
		if id := rawjson.MetaString(m, MetaID); id != "" {
			t.a.links.Remember(ctx, &protocol.Message{ID: linkMsg + id, RunID: m.RunID, ThreadID: m.ThreadID, TaskID: m.TaskID}, rawjson.MetaString(m, MetaType))
		}
	}
	return t.out, nil
}
