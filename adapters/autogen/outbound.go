package autogen

import (
	"encoding/base64"
	"encoding/json"
	"strings"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/internal/rawjson"
	"github.com/clutchprotocol/clutch/protocol"
)

// mappable reports whether an envelope that came in through the adapter
// has an AutoGen form: the kind it came from, in the envelope type the
// adapter gave that kind. Messages that came in a worker message's
// CloudEvent go out as plain agentchat messages through the app, not
// back onto the runtime, so they have none.
func mappable(m *protocol.Message) bool {
	if _, core := m.Meta["autogen_core"]; core && m.Meta["autogen_core"] != nil {
		k, _ := m.Meta["autogen_core"].(map[string]any)
		if k == nil || k["kind"] == "publish" {
			return false
		}
	}
	kind := rawjson.MetaString(m, MetaType)
	switch {
	case kind == "":
		return false
	case kind == kindRPCRequest || kind == kindRPCResponse:
		return m.Type.Extension() || kind == kindRPCResponse && m.Type == protocol.TypeTaskError
	case kind == kindTaskResult:
		return m.Type == protocol.TypeTaskResult || m.Type == protocol.TypeTaskError || m.Type == protocol.TypeTaskCancel || m.Type == protocol.TypeTaskTimeout
	case kind == kindToolRequest:
		return m.Type == protocol.TypeToolCall
	case kind == kindToolExec:
		return m.Type == protocol.TypeToolResult || m.Type == protocol.TypeToolError
	case chatKind(kind):
		return m.Type == protocol.TypeChatMessage || m.Type == protocol.TypeChatSystem || m.Type == protocol.TypeTaskRequest
	case progressKinds[kind]:
		return m.Type == protocol.TypeTaskProgress
	}
	return m.Type == extType(kind)
}

func (a *Adapter) outbound(m *protocol.Message) ([]byte, error) {
	if m == nil {
		return nil, outErr(protocol.CodeInvalidField, "", "nil message", nil)
	}
	if !a.CanHandle(m) {
		return nil, outErr(protocol.CodeUnsupportedTask, "/type", "no AutoGen form for "+string(m.Type), ErrNotMappable)
	}
	if adapters.Source(m) != Source {
		return a.native(m)
	}
	kind := rawjson.MetaString(m, MetaType)
	var pm []rawjson.Member
	if rawjson.Kind(m.Payload) == '{' {
		var err error
		if pm, err = rawjson.Members(m.Payload); err != nil {
			return nil, outErr(protocol.CodeInvalidJSON, "/payload", err.Error(), err)
		}
	} else if kind != kindTaskResult {
		return nil, outErr(protocol.CodeWrongType, "/payload", "want an object, got "+rawjson.KindName(m.Payload), nil)
	}
	var body []rawjson.Member
	var err error
	switch {
	case kind == kindRPCRequest || kind == kindRPCResponse:
		v := jsontext.Value(m.Payload)
		if m.Type == protocol.TypeTaskError {
			if v = detail(pm, "autogen"); v == nil {
				return nil, outErr(protocol.CodeMissingField, "/payload/details/autogen", "no AutoGen response kept", nil)
			}
			v = withText(v, "error", pm)
		}
		name := "request"
		if kind == kindRPCResponse {
			name = "response"
		}
		return rawjson.Object([]rawjson.Member{rawjson.Field(name, v)}), nil
	case kind == kindTaskResult:
		stop := jsontext.Value("null")
		if s, ok := m.Meta[MetaStopReason].(string); ok {
			stop, _ = rawjson.FromAny(s)
		} else if v := member(pm, "stop_reason"); v != nil {
			stop = v // too long for meta
		} else if v := member(pm, "message"); v != nil && m.Type != protocol.TypeTaskResult {
			stop = v
		}
		out := []rawjson.Member{rawjson.Field("messages", jsontext.Value("[]")), rawjson.Field("stop_reason", stop)}
		if x, ok := m.Meta[MetaExtra]; ok {
			b, err := rawjson.FromAny(x)
			if err != nil || rawjson.Kind(b) != '{' {
				return nil, outErr(protocol.CodeInvalidField, "/meta/"+MetaExtra, "want an object", err)
			}
			xm, _ := rawjson.Members(b)
			for _, mb := range xm {
				if mb.Name != "messages" && mb.Name != "stop_reason" {
					out = append(out, mb)
				}
			}
		}
		return rawjson.Object(out), nil
	case kind == kindToolRequest:
		call := make([]rawjson.Member, 0, len(pm))
		for _, mb := range pm {
			switch mb.Name {
			case "args":
				continue
			case "call_id":
				mb.Name = "id"
			}
			call = append(call, mb)
		}
		body = []rawjson.Member{rawjson.Field("content", list(rawjson.Object(call)))}
		if body, err = withExtra(m, body); err != nil {
			return nil, err
		}
	case kind == kindToolExec:
		res := jsontext.Value(m.Payload)
		if m.Type == protocol.TypeToolError {
			if res = detail(pm, "autogen"); res == nil {
				return nil, outErr(protocol.CodeMissingField, "/payload/details/autogen", "no AutoGen result kept", nil)
			}
			res = withText(res, "content", pm)
		}
		body = []rawjson.Member{rawjson.Field("content", list(res))}
		if body, err = withExtra(m, body); err != nil {
			return nil, err
		}
	case kind == kindMultiModal:
		for _, mb := range pm {
			switch mb.Name {
			case "text":
			case "parts":
				c, err := rebuildParts(mb.Value, m.Attachments)
				if err != nil {
					return nil, err
				}
				body = append(body, rawjson.Field("content", c))
			default:
				body = append(body, mb)
			}
		}
	default:
		for _, mb := range pm {
			if mb.Name == "text" && (chatKind(kind) || progressKinds[kind]) {
				mb.Name = "content"
			}
			body = append(body, mb)
		}
	}
	out := make([]rawjson.Member, 0, len(body)+6)
	if id := rawjson.MetaString(m, MetaID); id != "" {
		out = append(out, rawjson.Field("id", quote(id)))
	}
	if s, ok := m.Meta[MetaSourceName].(string); ok {
		out = append(out, rawjson.Field("source", quote(s)))
	}
	for _, k := range [][2]string{{MetaUsage, "models_usage"}, {MetaMetadata, "metadata"}} {
		if v, ok := m.Meta[k[0]]; ok {
			b, err := rawjson.FromAny(v)
			if err != nil {
				return nil, outErr(protocol.CodeInvalidField, "/meta/"+k[0], "cannot encode", err)
			}
			out = append(out, rawjson.Field(k[1], b))
		}
	}
	if s, ok := m.Meta[MetaCreatedAt].(string); ok {
		out = append(out, rawjson.Field("created_at", quote(s)))
	}
	out = append(out, body...)
	out = append(out, rawjson.Field("type", quote(kind)))
	return rawjson.Object(out), nil
}

// withExtra appends the members kept in meta.autogen_extra.
func withExtra(m *protocol.Message, body []rawjson.Member) ([]rawjson.Member, error) {
	x, ok := m.Meta[MetaExtra]
	if !ok {
		return body, nil
	}
	b, err := rawjson.FromAny(x)
	if err != nil || rawjson.Kind(b) != '{' {
		return nil, outErr(protocol.CodeInvalidField, "/meta/"+MetaExtra, "want an object", err)
	}
	xm, _ := rawjson.Members(b)
	for _, mb := range xm {
		switch mb.Name {
		case "id", "source", "models_usage", "metadata", "created_at", "content", "type":
		default:
			body = append(body, mb)
		}
	}
	return body, nil
}

func quote(s string) jsontext.Value {
	b, _ := rawjson.FromAny(s)
	return b
}

func list(v jsontext.Value) jsontext.Value {
	return jsontext.Value("[" + string(v) + "]")
}

// detail returns payload.details.<name> of an error payload.
// withText returns the AutoGen object v with its member name set to the
// error payload's message, when v lacks it: inbound keeps an error's text
// once, as the message.
func withText(v jsontext.Value, name string, pm []rawjson.Member) jsontext.Value {
	vm, err := rawjson.Members(v)
	msg := member(pm, "message")
	if err != nil || msg == nil || member(vm, name) != nil {
		return v
	}
	return rawjson.Object(append(vm, rawjson.Field(name, msg)))
}

func detail(pm []rawjson.Member, name string) jsontext.Value {
	d := member(pm, "details")
	if rawjson.Kind(d) != '{' {
		return nil
	}
	dm, err := rawjson.Members(d)
	if err != nil {
		return nil
	}
	return member(dm, name)
}

// rebuildParts turns the payload's parts back into MultiModalMessage
// content: {"attachment": i} becomes {"data": <base64>} of attachment i.
func rebuildParts(v jsontext.Value, atts []protocol.Attachment) (jsontext.Value, error) {
	var parts []jsontext.Value
	if err := json.Unmarshal(v, &parts); err != nil {
		return nil, outErr(protocol.CodeWrongType, "/payload/parts", "want an array", err)
	}
	out := make([]jsontext.Value, len(parts))
	for i, p := range parts {
		if rawjson.Kind(p) != '{' {
			out[i] = p
			continue
		}
		var ref struct {
			Attachment int `json:"attachment"`
		}
		if err := json.Unmarshal(p, &ref); err != nil || ref.Attachment < 0 || ref.Attachment >= len(atts) {
			return nil, outErr(protocol.CodeInvalidField, "/payload/parts", "a part names no attachment", err)
		}
		r := atts[ref.Attachment].Ref
		j := strings.Index(r, ";base64,")
		if !strings.HasPrefix(r, "data:") || j < 0 {
			return nil, outErr(protocol.CodeInvalidField, "/attachments", "an image is not a base64 data: URL", nil)
		}
		data := r[j+len(";base64,"):]
		if _, err := base64.StdEncoding.DecodeString(data); err != nil {
			return nil, outErr(protocol.CodeInvalidField, "/attachments", "an image is not base64", err)
		}
		out[i] = rawjson.Object([]rawjson.Member{rawjson.Field("data", quote(data))})
	}
	b, err := rawjson.FromAny(out)
	if err != nil {
		return nil, outErr(protocol.CodeInternal, "/payload/parts", "encoding", err)
	}
	return b, nil
}

// native maps a Clutch message addressed to an AutoGen peer to a
// TextMessage: the payload's text (a string payload, or its "text"
// member), else the payload's JSON as text.
func (a *Adapter) native(m *protocol.Message) ([]byte, error) {
	text := string(m.Payload)
	if s, ok := rawjson.Str(m.Payload); ok {
		text = s
	} else if rawjson.Kind(m.Payload) == '{' {
		if pm, err := rawjson.Members(m.Payload); err == nil {
			if s, ok := rawjson.Str(member(pm, "text")); ok {
				text = s
			}
		}
	}
	source := strings.TrimPrefix(strings.TrimPrefix(m.From.AgentID, a.opts.Agents), protocol.PrefixAgent)
	out := []rawjson.Member{rawjson.Field("id", quote(m.ID)), rawjson.Field("source", quote(source)), rawjson.Field("models_usage", jsontext.Value("null")), rawjson.Field("metadata", jsontext.Value("{}"))}
	if ts, err := m.Time(); err == nil {
		out = append(out, rawjson.Field("created_at", quote(ts.UTC().Format("2006-01-02T15:04:05.000000Z"))))
	}
	out = append(out, rawjson.Field("content", quote(text)), rawjson.Field("type", quote(kindText)))
	return rawjson.Object(out), nil
}
