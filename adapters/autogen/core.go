package autogen

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/internal/rawjson"
	"github.com/clutchprotocol/clutch/protocol"
)

// The worker-message kinds (meta.autogen_type) of autogen-core's gRPC
// runtime (protos/agent_worker.proto Message oneof).
const (
	kindRPCRequest  = "RpcRequest"
	kindRPCResponse = "RpcResponse"
	kindCloudEvent  = "CloudEvent"
)

// The group-chat events of teams/_group_chat/_events.py that carry
// agentchat messages.
const (
	schemaMessage       = "GroupChatMessage"
	schemaStart         = "GroupChatStart"
	schemaAgentResponse = "GroupChatAgentResponse"
	schemaTermination   = "GroupChatTermination"
	schemaError         = "GroupChatError"
)

// controlSchemas are the other group-chat events: known, kept as
// x.autogen.<snake_case>.
var controlSchemas = map[string]bool{
	"GroupChatRequestPublish": true, "GroupChatReset": true, "GroupChatPause": true, "GroupChatResume": true,
	"GroupChatTeamResponse": true, "GroupChatStart": true,
}

// member returns the value of the first of names present in ms: proto3
// JSON allows both the lowerCamelCase and the proto field name.
func member(ms []rawjson.Member, names ...string) jsontext.Value {
	for _, n := range names {
		for _, m := range ms {
			if m.Name == n {
				return m.Value
			}
		}
	}
	return nil
}

func objMembers(v jsontext.Value, path string) ([]rawjson.Member, error) {
	if rawjson.Kind(v) != '{' {
		return nil, inErr(protocol.CodeWrongType, path, "want an object, got "+rawjson.KindName(v), nil)
	}
	ms, err := rawjson.Members(v)
	if err != nil {
		return nil, inErr(protocol.CodeInvalidJSON, path, err.Error(), err)
	}
	return ms, nil
}

// worker maps a worker-runtime Message: a CloudEvent (publish), an
// RpcRequest or an RpcResponse.
func (t *translation) worker(ctx context.Context, ms []rawjson.Member, path string) error {
	if len(ms) != 1 {
		return inErr(protocol.CodeInvalidField, path, "a worker message has exactly one of cloudEvent, request, response", nil)
	}
	switch ms[0].Name {
	case "cloudEvent":
		return t.cloudEvent(ctx, ms[0].Value, path+"/cloudEvent")
	case "request":
		return t.rpc(ctx, ms[0].Value, path+"/request", kindRPCRequest)
	default:
		return t.rpc(ctx, ms[0].Value, path+"/response", kindRPCResponse)
	}
}

// ceString reads attributes.<name>.ce_string.
// maxAttr bounds a CloudEvent attribute the adapter keeps (types, keys,
// a schema name): names and ids, not text.
const maxAttr = 256

func ceString(attrs []rawjson.Member, name string) string {
	v := member(attrs, name)
	if v == nil {
		return ""
	}
	ms, err := rawjson.Members(v)
	if err != nil {
		return ""
	}
	s, _ := rawjson.Str(member(ms, "ce_string", "ceString"))
	return s
}

func (t *translation) cloudEvent(ctx context.Context, v jsontext.Value, path string) error {
	ms, err := objMembers(v, path)
	if err != nil {
		return err
	}
	id, err := str(ms, "id", path, true, true)
	if err != nil {
		return err
	}
	topicSource, err := str(ms, "source", path, true, true)
	if err != nil {
		return err
	}
	topicType, err := str(ms, "type", path, true, false)
	if err != nil {
		return err
	}
	var attrs []rawjson.Member
	if a := member(ms, "attributes"); a != nil {
		if attrs, err = objMembers(a, path+"/attributes"); err != nil {
			return err
		}
	}
	schema := ceString(attrs, "dataschema")
	for _, a := range []string{"dataschema", "agagentsendertype", "agagentsenderkey", "agmsgkind", "datacontenttype"} {
		if len(ceString(attrs, a)) > maxAttr {
			return inErr(protocol.CodeInvalidField, path+"/attributes/"+a, a+" is over "+strconv.Itoa(maxAttr)+" bytes", nil)
		}
	}
	core := map[string]any{
		"kind": "publish", "id": id, "topic_type": topicType, "topic_source": topicSource, "dataschema": schema,
		"sender_type": ceString(attrs, "agagentsendertype"), "sender_key": ceString(attrs, "agagentsenderkey"),
		"msg_kind": ceString(attrs, "agmsgkind"), "datacontenttype": ceString(attrs, "datacontenttype"),
	}
	if t.run.Key == "" && t.run.ID == "" {
		t.run.Key = topicSource // the team id: one run per team topic
	}
	// The data: JSON in binary_data (base64) or text_data; protobuf data
	// is kept as it came.
	var data []byte
	dataPath := path + "/binary_data"
	if b := member(ms, "binary_data", "binaryData"); b != nil {
		s, ok := rawjson.Str(b)
		if !ok {
			return inErr(protocol.CodeWrongType, dataPath, "want a base64 string", nil)
		}
		if data, err = base64.StdEncoding.DecodeString(s); err != nil {
			return inErr(protocol.CodeInvalidField, dataPath, "not base64", err)
		}
	} else if s, ok := rawjson.Str(member(ms, "text_data", "textData")); ok {
		data, dataPath = []byte(s), path+"/text_data"
	}
	var dv jsontext.Value
	if data != nil {
		if err := adapters.DecodeJSON(Name, data, &dv); err != nil {
			if e, ok := err.(*adapters.Error); ok {
				e.Path = dataPath + e.Path
			}
			return err
		}
	}
	sender := core["sender_type"].(string)
	ev := &item{path: path, raw: v, kind: schema, id: id, hasID: true, source: sender, hasSource: sender != "", core: core}
	var dms []rawjson.Member
	if rawjson.Kind(dv) == '{' {
		dms, _ = rawjson.Members(dv)
	}
	switch schema {
	case schemaMessage:
		return t.inner(ctx, member(dms, "message"), dataPath+"/message", core)
	case schemaAgentResponse:
		resp := member(dms, "response")
		if rawjson.Kind(resp) != '{' {
			return inErr(protocol.CodeWrongType, dataPath+"/response", "want a Response object", nil)
		}
		return t.withCore(ctx, core, func() error { return t.decoded(ctx, resp, dataPath+"/response") })
	case schemaTermination, schemaError:
		if msg := member(dms, "message"); rawjson.Kind(msg) == '{' {
			if err := t.inner(ctx, msg, dataPath+"/message", core); err != nil {
				return err
			}
		}
		return t.coreEnd(ctx, ev, member(dms, "error"), dataPath)
	}
	if dv == nil {
		dv = jsontext.Value(`null`)
	}
	ev.content = nil
	ev.rest = []rawjson.Member{rawjson.Field("data", dv)}
	if data == nil {
		ev.rest = append(ev.rest, rawjson.Field("cloudEvent", v))
	}
	t.resolve(ctx, ev)
	t.index++
	name := schema
	if name == "" {
		name = "cloud_event"
	}
	return t.extension(ctx, ev, name, !controlSchemas[schema])
}

// inner maps an agentchat message carried by a worker message.
func (t *translation) inner(ctx context.Context, v jsontext.Value, path string, core map[string]any) error {
	if rawjson.Kind(v) != '{' {
		return inErr(protocol.CodeWrongType, path, "want a message object, got "+rawjson.KindName(v), nil)
	}
	return t.withCore(ctx, core, func() error { return t.decoded(ctx, v, path) })
}

// withCore runs f with every message it emits carrying meta.autogen_core.
func (t *translation) withCore(ctx context.Context, core map[string]any, f func() error) error {
	n := len(t.out)
	if err := f(); err != nil {
		return err
	}
	for _, m := range t.out[n:] {
		m.Meta["autogen_core"] = core
	}
	return nil
}

// coreEnd ends the task of a GroupChatTermination (task.result, or
// task.error when it carries an error) or a GroupChatError (task.error).
func (t *translation) coreEnd(ctx context.Context, ev *item, errV jsontext.Value, path string) error {
	t.resolve(ctx, ev)
	t.index++
	m := t.base(ev, protocol.TypeTaskResult, 0, 1)
	if rawjson.Kind(errV) == '{' {
		ems, _ := rawjson.Members(errV)
		et, _ := rawjson.Str(member(ems, "error_type"))
		msg, _ := rawjson.Str(member(ems, "error_message"))
		ep := protocol.ErrorPayload{Code: protocol.CodeInternal, Message: msg, Retryable: true, Details: map[string]any{"error_type": et, "autogen": rawjson.ToAny(rawjson.Object(without(ems, "error_message")))}}
		m.Type = protocol.TypeTaskError
		var err error
		if m.Payload, err = rawjson.FromAny(ep); err != nil {
			return inErr(protocol.CodeInternal, path, "encoding the error", err)
		}
	} else if ev.kind == schemaError {
		return inErr(protocol.CodeMissingField, path+"/error", "a GroupChatError has an error", nil)
	} else {
		stop := jsontext.Value("null")
		if t.lastSystem != nil {
			stop = t.lastSystem
		}
		m.Payload = rawjson.Object([]rawjson.Member{rawjson.Field("stop_reason", stop)})
	}
	return t.emit(ctx, ev, m)
}

// rpc keeps an RpcRequest or RpcResponse as x.autogen.rpc_request or
// x.autogen.rpc_response (payload: the message as sent), except that an
// RpcResponse with an error is a task.error.
func (t *translation) rpc(ctx context.Context, v jsontext.Value, path, kind string) error {
	ms, err := objMembers(v, path)
	if err != nil {
		return err
	}
	reqID, err := str(ms, "request_id", path, false, true)
	if err != nil {
		return err
	}
	if reqID == "" {
		if reqID, err = str(ms, "requestId", path, true, true); err != nil {
			return err
		}
	}
	agentType := func(name string) (string, error) {
		a := member(ms, name)
		if a == nil {
			return "", nil
		}
		ams, err := objMembers(a, path+"/"+name)
		if err != nil {
			return "", err
		}
		typ, err := str(ams, "type", path+"/"+name, true, true)
		return typ, err
	}
	src, err := agentType("source")
	if err != nil {
		return err
	}
	target, err := agentType("target")
	if err != nil {
		return err
	}
	it := &item{path: path, raw: v, kind: kind, id: kind + ":" + reqID, hasID: true, source: src, hasSource: src != "",
		core: map[string]any{"kind": strings.ToLower(kind), "request_id": reqID}}
	t.resolve(ctx, it)
	t.index++
	if kind == kindRPCResponse {
		if e, _ := str(ms, "error", path, false, false); e != "" {
			m := t.base(it, protocol.TypeTaskError, 0, 1)
			// The text is the message; details.autogen is the rest of the
			// response (Outbound puts error back).
			ep := protocol.ErrorPayload{Code: protocol.CodeInternal, Message: e, Retryable: true, Details: map[string]any{"autogen": rawjson.ToAny(rawjson.Object(without(ms, "error")))}}
			if m.Payload, err = rawjson.FromAny(ep); err != nil {
				return inErr(protocol.CodeInternal, path, "encoding the error", err)
			}
			return t.emit(ctx, it, m)
		}
	}
	m := t.base(it, extType(strings.ToLower(kind[:3])+"_"+strings.ToLower(kind[3:])), 0, 1)
	m.Payload = json.RawMessage(rawjson.Compact(v))
	if target != "" {
		m.To = []protocol.Participant{{AgentID: t.agent(target)}}
	}
	return t.emit(ctx, it, m)
}
