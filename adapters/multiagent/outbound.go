package multiagent

import (
	"context"
	"encoding/json"
	"github.com/clutchprotocol/clutch/adapters/internal/rawjson"
	"github.com/go-json-experiment/json/jsontext"
	"sort"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/protocol"
)

// mappable reports whether a message type has a multiagent-1.0 form.
func mappable(t protocol.Type) bool {
	switch t.Family() {
	case "task", "tool", "chat", "agent":
		return t.Standard()
	}
	return false
}

// outEnv is a multiagent-1.0 envelope being written; raw values are
// compact JSON, nil when absent.
type outEnv struct {
	role, intent, task, timestamp string
	agent                         []rawjson.Member
	inputs, content, outputs      []byte
	confidence, trace             []byte
	extra                         []rawjson.Member
}

// fromEnvelope maps an envelope (see the package doc's table).
func (a *Adapter) fromEnvelope(ctx context.Context, m *protocol.Message) (*outEnv, error) {
	if m == nil {
		return nil, outErr(protocol.CodeMissingField, "", "nil message", nil)
	}
	if err := m.Validate(); err != nil {
		return nil, outErr(protocol.CodeOf(err), "", "the envelope is invalid", err)
	}
	if !mappable(m.Type) {
		return nil, outErr(protocol.CodeUnsupportedTask, "/type", string(m.Type)+" has no multiagent-1.0 form", ErrNotMappable)
	}
	t, err := m.Time()
	if err != nil {
		return nil, outErr(protocol.CodeInvalidField, "/ts", "ts is not RFC 3339", err)
	}
	e := &outEnv{role: role(m), intent: a.intent(ctx, m), timestamp: t.UTC().Format(time.RFC3339Nano)}
	if s := rawjson.MetaString(m, MetaTimestamp); s != "" {
		if st, err := time.Parse(time.RFC3339Nano, s); err == nil && st.Equal(t) {
			e.timestamp = s
		}
	}
	if b, _ := rawjson.MetaBool(m, MetaNoAgent); !b {
		id := strings.TrimPrefix(m.From.AgentID, protocol.PrefixAgent)
		idJSON, err := jsontext.AppendQuote(nil, id)
		if err != nil {
			return nil, outErr(protocol.CodeInvalidUTF8, "/from/agent_id", "", err)
		}
		e.agent = []rawjson.Member{rawjson.Field("id", idJSON)}
		ag, _ := m.Meta[MetaAgent].(map[string]any)
		if ag == nil {
			ag = map[string]any{"name": id, "model": "n/a"} // AgentRef needs both
		}
		for _, k := range sortedKeys(ag) {
			if k == "id" {
				continue
			}
			v, err := rawjson.FromAny(ag[k])
			if err != nil {
				return nil, outErr(protocol.CodeWrongType, "/meta/agent/"+k, "", err)
			}
			e.agent = append(e.agent, rawjson.Field(k, v))
		}
	}
	if err := e.body(m); err != nil {
		return nil, err
	}
	if err := e.traceOf(m); err != nil {
		return nil, err
	}
	if x, ok := m.Meta[MetaExtra].(map[string]any); ok {
		for _, k := range sortedKeys(x) {
			switch k {
			case "protocol", "role", "agent", "timestamp", "intent", "task", "inputs", "content", "outputs", "confidence", "trace":
				continue // never shadow a defined member
			}
			v, err := rawjson.FromAny(x[k])
			if err != nil {
				return nil, outErr(protocol.CodeWrongType, "/meta/extra/"+k, "", err)
			}
			e.extra = append(e.extra, rawjson.Field(k, v))
		}
	}
	return e, nil
}

// role picks the envelope's role: from.role when it agrees with the
// message's kind (asking: user or system; answering: agent or tool), else
// the kind's default.
func role(m *protocol.Message) string {
	r := m.From.Role
	switch m.Type {
	case protocol.TypeTaskRequest, protocol.TypeToolCall, protocol.TypeTaskCancel:
		if r == RoleUser || r == RoleSystem {
			return r
		}
		return RoleSystem
	case protocol.TypeToolResult, protocol.TypeToolError:
		if r == RoleAgent || r == RoleTool {
			return r
		}
		return RoleTool
	case protocol.TypeAgentRegister, protocol.TypeAgentHeartbeat, protocol.TypeAgentUpdate, protocol.TypeChatSystem:
		return RoleSystem
	case protocol.TypeChatMessage:
		switch r {
		case RoleAgent, RoleUser, RoleSystem, RoleTool:
			return r
		}
		return RoleAgent
	}
	if r == RoleAgent || r == RoleTool {
		return r
	}
	return RoleAgent
}

// intent picks the envelope's intent: meta.intent, else the intent of the
// request that started the task (Index), else the payload_type's, else
// the domain's, else the type's default.
func (a *Adapter) intent(ctx context.Context, m *protocol.Message) string {
	if s := rawjson.MetaString(m, MetaIntent); s != "" {
		return s
	}
	if k := a.links.KindOf(ctx, m.TaskID); k != "" {
		return k
	}
	if i := intentOfPayloadType(m.PayloadType); i != "" {
		return i
	}
	if i := intentOfDomain(m.Domain); i != "" {
		return i
	}
	switch m.Type.Family() {
	case "tool":
		return ToolCall
	case "agent":
		return Reflect // the handshake of docs/protocol.md §12 says "reflect"
	case "chat":
		return Analyze
	}
	return Execute
}

// body fills task, inputs, content, outputs and confidence.
func (e *outEnv) body(m *protocol.Message) error {
	switch m.Type {
	case protocol.TypeAgentRegister, protocol.TypeAgentUpdate:
		card, err := protocol.DecodeAgentCard(m.Payload)
		if err != nil {
			return outErr(protocol.CodeOf(err), "/payload", "an agent.register or agent.update payload must be an AgentCard", err)
		}
		if b, ok := card.Extensions[detailBody]; ok && rawjson.Kind(b) == '{' {
			return e.fromBody(b)
		}
		var supports []any
		for _, c := range card.Capabilities {
			supports = append(supports, strings.TrimPrefix(c.ID, "content:"))
		}
		data, _ := rawjson.FromAny(map[string]any{"supports": supports})
		e.task = "Announce envelope support and capabilities"
		e.content = rawjson.Object([]rawjson.Member{rawjson.Field("type", quote(ContentJSON)), rawjson.Field("data", data)})
		return nil
	case protocol.TypeAgentHeartbeat:
		if b := member0(m.Payload, detailBody); rawjson.Kind(b) == '{' {
			return e.fromBody(b)
		}
		e.task = "Heartbeat"
		e.content = rawjson.Object([]rawjson.Member{rawjson.Field("type", quote(ContentJSON)), rawjson.Field("data", objectOr(m.Payload))})
		return nil
	case protocol.TypeTaskError, protocol.TypeToolError, protocol.TypeTaskTimeout, protocol.TypeTaskCancel:
		if ep, err := protocol.DecodePayload[protocol.ErrorPayload](m); err == nil && ep.Code != "" {
			if b, ok := ep.Details[detailBody].(map[string]any); ok {
				raw, err := rawjson.FromAny(b)
				if err == nil {
					return e.fromBody(raw)
				}
			}
			data := map[string]any{"code": string(ep.Code), "retryable": ep.Retryable}
			if len(ep.Details) > 0 {
				data["details"] = ep.Details
			}
			d, err := rawjson.FromAny(data)
			if err != nil {
				return outErr(protocol.CodeWrongType, "/payload/details", "", err)
			}
			e.task = string(m.Type)
			e.content = rawjson.Object([]rawjson.Member{rawjson.Field("type", quote(ContentError)), rawjson.Field("text", quote(ep.Message)), rawjson.Field("data", d)})
			return nil
		}
	}
	if rawjson.Kind(m.Payload) == '{' && isBody(m.Payload, m.Type == protocol.TypeToolCall || m.Type == protocol.TypeToolResult) {
		if err := e.fromBody(m.Payload); err != nil {
			return err
		}
	} else {
		e.task = cmpOr(m.PayloadType, string(m.Type))
		switch rawjson.Kind(m.Payload) {
		case '"':
			e.content = rawjson.Object([]rawjson.Member{rawjson.Field("type", quote(ContentText)), rawjson.Field("text", rawjson.Compact(m.Payload))})
		default:
			ct := ContentJSON
			if m.Type == protocol.TypeToolResult {
				ct = ContentToolResult
			}
			e.content = rawjson.Object([]rawjson.Member{rawjson.Field("type", quote(ct)), rawjson.Field("data", rawjson.Compact(m.Payload))})
		}
	}
	if e.outputs == nil && len(m.Attachments) > 0 {
		arts := make([]any, len(m.Attachments))
		for i, at := range m.Attachments {
			arts[i] = map[string]any{"kind": at.Kind, "name": cmpOr(at.Name, at.Ref), "uri": at.Ref}
		}
		b, _ := rawjson.FromAny(map[string]any{"artifacts": arts})
		e.outputs = b
	}
	if e.confidence == nil {
		if f, ok := m.Meta[MetaConfidence]; ok {
			if _, isNum := rawjson.Number(f); isNum {
				b, err := rawjson.FromAny(map[string]any{"score": f})
				if err == nil {
					e.confidence = b
				}
			}
		}
	}
	return nil
}

// isBody reports whether a payload object is a multiagent body: it has a
// content object with a type, or a string task and nothing the body does
// not define (but the call_id Inbound adds to a tool event's, when tool).
func isBody(p []byte, tool bool) bool {
	ms, err := rawjson.Members(p)
	if err != nil {
		return false
	}
	hasTask := false
	for _, mb := range ms {
		switch mb.Name {
		case "content":
			if rawjson.Kind(mb.Value) == '{' && rawjson.Kind(member0(mb.Value, "type")) == '"' {
				return true
			}
		case "task":
			hasTask = rawjson.Kind(mb.Value) == '"'
		case "inputs", "outputs", "confidence":
		case "call_id":
			if !tool {
				return false
			}
		default:
			return false
		}
	}
	return hasTask
}

// fromBody takes task, inputs, content, outputs and confidence from a
// multiagent body; a body without content gets {type: text, text: task}.
func (e *outEnv) fromBody(b []byte) error {
	ms, err := rawjson.Members(b)
	if err != nil {
		return outErr(protocol.CodeInvalidJSON, "/payload", "", err)
	}
	for _, mb := range ms {
		v := rawjson.Compact(mb.Value)
		switch mb.Name {
		case "task":
			e.task, _ = rawjson.Str(v)
		case "inputs":
			e.inputs = v
		case "content":
			e.content = v
		case "outputs":
			e.outputs = v
		case "confidence":
			e.confidence = v
		}
	}
	if e.content == nil {
		e.content = rawjson.Object([]rawjson.Member{rawjson.Field("type", quote(ContentText)), rawjson.Field("text", quote(e.task))})
	}
	return nil
}

// traceOf builds trace {parents, id, tags, cost, ...}.
func (e *outEnv) traceOf(m *protocol.Message) error {
	var ms []rawjson.Member
	add := func(name string, v any) error {
		b, err := rawjson.FromAny(v)
		if err != nil {
			return outErr(protocol.CodeWrongType, "/meta/"+name, "", err)
		}
		ms = append(ms, rawjson.Field(name, b))
		return nil
	}
	if p, ok := m.Meta[MetaParents]; ok {
		if err := add("parents", p); err != nil {
			return err
		}
	} else if id, ok := strings.CutPrefix(m.TaskID, protocol.PrefixTask); ok && id != "" && id != m.ID && adapters.Source(m) != Source {
		// A Clutch event of a task a multiagent request started answers it.
		if err := add("parents", []any{id}); err != nil {
			return err
		}
	}
	if b, _ := rawjson.MetaBool(m, MetaIDDerived); !b {
		if err := add("id", m.ID); err != nil {
			return err
		}
	}
	for _, f := range []struct{ meta, name string }{{MetaTags, "tags"}, {MetaUsage, "cost"}} {
		if v, ok := m.Meta[f.meta]; ok {
			if err := add(f.name, v); err != nil {
				return err
			}
		}
	}
	if x, ok := m.Meta[MetaTraceExtra].(map[string]any); ok {
		for _, k := range sortedKeys(x) {
			switch k {
			case "parents", "id", "tags", "cost":
				continue
			}
			if err := add(k, x[k]); err != nil {
				return err
			}
		}
	}
	if len(ms) > 0 {
		e.trace = rawjson.Object(ms)
	}
	return nil
}

// encode writes the envelope in the member order of docs/protocol.md §12.
func (e *outEnv) encode() ([]byte, error) {
	ms := []rawjson.Member{rawjson.Field("protocol", quote(Protocol)), rawjson.Field("role", quote(e.role))}
	if e.agent != nil {
		ms = append(ms, rawjson.Field("agent", rawjson.Object(e.agent)))
	}
	task, err := jsontext.AppendQuote(nil, e.task)
	if err != nil {
		return nil, outErr(protocol.CodeInvalidUTF8, "/payload/task", "", err)
	}
	intent, err := jsontext.AppendQuote(nil, e.intent)
	if err != nil {
		return nil, outErr(protocol.CodeInvalidUTF8, "/meta/intent", "", err)
	}
	ms = append(ms, rawjson.Field("timestamp", quote(e.timestamp)), rawjson.Field("intent", intent), rawjson.Field("task", task))
	for _, f := range []struct {
		name string
		v    []byte
	}{{"inputs", e.inputs}, {"content", e.content}, {"outputs", e.outputs}, {"confidence", e.confidence}, {"trace", e.trace}} {
		if f.v != nil {
			ms = append(ms, rawjson.Field(f.name, f.v))
		}
	}
	return rawjson.Object(append(ms, e.extra...)), nil
}

func quote(s string) []byte {
	b, err := jsontext.AppendQuote(nil, s)
	if err != nil {
		b, _ = jsontext.AppendQuote(nil, strings.ToValidUTF8(s, "\uFFFD"))
	}
	return b
}

// member0 returns the value of the member name of an object, nil if none.
func member0(obj []byte, name string) []byte {
	ms, err := rawjson.Members(obj)
	if err != nil {
		return nil
	}
	for _, mb := range ms {
		if mb.Name == name {
			return mb.Value
		}
	}
	return nil
}

func objectOr(p json.RawMessage) []byte {
	if rawjson.Kind(p) == '{' {
		return rawjson.Compact(p)
	}
	return []byte("{}")
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
