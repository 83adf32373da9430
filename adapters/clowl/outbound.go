package clowl

import (
	"encoding/json"
	"github.com/clutchprotocol/clutch/adapters/internal/rawjson"
	"github.com/go-json-experiment/json/jsontext"
	"slices"
	"sort"
	"strings"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/protocol"
)

// mappable reports whether a message type has a CLowl performative.
func mappable(t protocol.Type) bool {
	switch t {
	case protocol.TypeTaskRequest, protocol.TypeTaskAccept, protocol.TypeTaskProgress,
		protocol.TypeTaskResult, protocol.TypeTaskError, protocol.TypeTaskCancel, protocol.TypeTaskTimeout,
		protocol.TypeChatMessage, protocol.TypeChatSystem,
		protocol.TypeAgentRegister, protocol.TypeAgentUpdate:
		return true
	}
	return false
}

// FromEnvelope maps an envelope to a CLowl message (see the package doc's
// table). The result is not yet checked against the schema; Marshal does
// that. Errors are *adapters.Error values of ErrOutbound.
func FromEnvelope(m *protocol.Message) (*Message, error) { return fromEnvelope(m, nil) }

// fromEnvelope is FromEnvelope; kindOf, when set, gives the body.t of the
// REQ that started a task, for the events of that task.
func fromEnvelope(m *protocol.Message, kindOf func(taskID string) string) (*Message, error) {
	if m == nil {
		return nil, outErr(protocol.CodeMissingField, "", "nil message", nil)
	}
	if err := m.Validate(); err != nil {
		return nil, outErr(protocol.CodeOf(err), "", "the envelope is invalid", err)
	}
	if !mappable(m.Type) {
		return nil, outErr(protocol.CodeUnsupportedTask, "/type", string(m.Type)+" has no CLowl performative", ErrNotMappable)
	}
	t, err := m.Time()
	if err != nil {
		return nil, outErr(protocol.CodeInvalidField, "/ts", "ts is not RFC 3339", err)
	}
	cm := &Message{
		MID:  m.ID,
		TS:   t.Unix(), // CLowl has seconds: milliseconds are dropped
		P:    performative(m),
		From: strings.TrimPrefix(m.From.AgentID, protocol.PrefixAgent),
		CID:  m.ThreadID,
		PID:  rawjson.MetaString(m, MetaInReplyTo),
	}
	if m.RunID != runPrefix+m.ThreadID {
		cm.TID = m.RunID
	}
	if cm.PID == "" && adapters.Source(m) != Source && answers(m.Type) && strings.HasPrefix(m.TaskID, taskPrefix) && len(m.TaskID) > len(taskPrefix) {
		// A Clutch event about a task a CLowl REQ started answers that REQ.
		cm.PID = m.TaskID[len(taskPrefix):]
	}
	for _, p := range m.To {
		switch {
		case p.AgentID == broadcast:
			cm.To = append(cm.To, "*")
		case strings.HasPrefix(p.AgentID, protocol.PrefixAgent):
			cm.To = append(cm.To, p.AgentID[len(protocol.PrefixAgent):])
		default:
			cm.To = append(cm.To, strings.TrimPrefix(p.AgentID, protocol.PrefixGroup))
		}
	}
	if len(cm.To) == 0 {
		cm.To = []string{"*"} // the router chooses: everyone may answer
	}
	cm.ToList = len(cm.To) > 1
	if b, ok := rawjson.MetaBool(m, MetaToList); ok && b {
		cm.ToList = true
	}
	if b, ok := rawjson.MetaBool(m, MetaDet); ok {
		cm.Det = &b
	}
	cm.Body.T = taskType(m, cm.P)
	if kindOf != nil && rawjson.MetaString(m, MetaTaskType) == "" && cm.P != ERR && cm.P != CAPS {
		if t := kindOf(m.TaskID); t != "" {
			cm.Body.T = t // an event of a task a CLowl REQ started
		}
	}
	if cm.Body.D, err = bodyData(m, cm.P); err != nil {
		return nil, err
	}
	cm.Ctx = outContext(m)
	if s := m.Security; s != nil && s.Auth != nil && s.Auth.Scheme == AuthScheme {
		cm.Auth = s.Auth.Sig
	}
	return cm, nil
}

// answers reports whether a message of type t answers the request of its
// task.
func answers(t protocol.Type) bool {
	switch t {
	case protocol.TypeTaskAccept, protocol.TypeTaskProgress, protocol.TypeTaskResult,
		protocol.TypeTaskError, protocol.TypeTaskCancel, protocol.TypeTaskTimeout:
		return true
	}
	return false
}

// performative picks the performative of m: the one it came in with when
// that still fits its type, else the type's own.
func performative(m *protocol.Message) Performative {
	p := Performative(rawjson.MetaString(m, MetaPerformative))
	switch m.Type {
	case protocol.TypeTaskRequest:
		if p == REQ || p == DLGT {
			return p
		}
		if m.ParentTaskID != "" {
			return DLGT // a Clutch subtask is a delegation
		}
		return REQ
	case protocol.TypeTaskAccept:
		return ACK
	case protocol.TypeTaskProgress:
		return PROG
	case protocol.TypeTaskResult:
		return DONE
	case protocol.TypeTaskError, protocol.TypeTaskTimeout:
		return ERR
	case protocol.TypeTaskCancel:
		return CNCL
	case protocol.TypeChatMessage, protocol.TypeChatSystem:
		if p == QRY {
			return QRY
		}
		return INF
	}
	return CAPS // agent.register, agent.update
}

// taskType picks body.t: the one the message came in with, else its
// domain, else its payload_type without the version, else a word for the
// performative.
func taskType(m *protocol.Message, p Performative) string {
	if t := rawjson.MetaString(m, MetaTaskType); t != "" {
		return t
	}
	switch p {
	case ERR:
		return "error"
	case CAPS:
		return "capabilities"
	}
	if m.Domain != "" {
		return m.Domain
	}
	if pt := m.PayloadType; pt != "" {
		if i := strings.LastIndexByte(pt, '.'); i > 0 {
			return pt[:i]
		}
	}
	if p == INF || p == QRY {
		return "message"
	}
	return "task"
}

// bodyData builds body.d from the payload.
func bodyData(m *protocol.Message, p Performative) ([]byte, error) {
	switch p {
	case ERR:
		if ep, err := protocol.DecodePayload[protocol.ErrorPayload](m); err == nil && ep.Code != "" {
			return errorData(&ep)
		}
	case CNCL:
		if ep, err := protocol.DecodePayload[protocol.ErrorPayload](m); err == nil && ep.Code != "" {
			return cancelData(&ep)
		}
	case CAPS:
		card, err := protocol.DecodeAgentCard(m.Payload)
		if err != nil {
			return nil, outErr(protocol.CodeOf(err), "/payload", "an agent.register or agent.update payload must be an AgentCard", err)
		}
		return capsData(card)
	case DLGT:
		return withMode(objectData(m.Payload), m)
	}
	return objectData(m.Payload), nil
}

// objectData returns the payload as a JSON object: an object as it is,
// null as {}, anything else wrapped as {"value": ...}.
func objectData(p json.RawMessage) []byte {
	switch rawjson.Kind(p) {
	case '{':
		return rawjson.Compact(p)
	case 0, 'n':
		return []byte("{}")
	}
	return append(append([]byte(`{"value":`), rawjson.Compact(p)...), '}')
}

// errorData builds an ERR body.d from a wire error: code, msg and retry
// (error-codes.md requires all three), clutch_code when the CLowl code
// does not say the Clutch code exactly, then the details.
func errorData(ep *protocol.ErrorPayload) ([]byte, error) {
	code, _ := ep.Details[detailCLowlCode].(string)
	if code == "" {
		code = CodeFor(ep.Code)
	}
	ms := []rawjson.Member{rawjson.Field("code", quoted(code)), rawjson.Field("msg", quoted(ep.Message)), rawjson.Field("retry", boolJSON(ep.Retryable))}
	ms, err := clutchCode(ms, ep, ProtocolCode(code))
	if err != nil {
		return nil, err
	}
	ms, err = appendDetails(ms, ep.Details, "code", "msg", "retry", "clutch_code", detailCLowlCode)
	if err != nil {
		return nil, err
	}
	return rawjson.Object(ms), nil
}

// cancelData builds a CNCL body.d {reason} from the router's task.cancel
// payload.
func cancelData(ep *protocol.ErrorPayload) ([]byte, error) {
	var ms []rawjson.Member
	reserved := []string{"clutch_code"}
	if ep.Message != "" {
		ms = append(ms, rawjson.Field("reason", quoted(ep.Message)))
		reserved = append(reserved, "reason")
	}
	ms, err := clutchCode(ms, ep, protocol.CodeCancelled)
	if err != nil {
		return nil, err
	}
	ms, err = appendDetails(ms, ep.Details, reserved...)
	if err != nil {
		return nil, err
	}
	return rawjson.Object(ms), nil
}

// clutchCode adds "clutch_code" when the CLowl side would not read back
// the exact Clutch code (implied is what it would read), or the
// clutch_code an inbound message carried that the table could not honour.
func clutchCode(ms []rawjson.Member, ep *protocol.ErrorPayload, implied protocol.Code) ([]rawjson.Member, error) {
	if ep.Code != implied {
		return append(ms, rawjson.Field("clutch_code", quoted(string(ep.Code)))), nil
	}
	if v, ok := ep.Details["clutch_code"]; ok {
		b, err := rawjson.FromAny(v)
		if err != nil {
			return nil, outErr(protocol.CodeWrongType, "/payload/details/clutch_code", "", err)
		}
		return append(ms, rawjson.Field("clutch_code", b)), nil
	}
	return ms, nil
}

func appendDetails(ms []rawjson.Member, details map[string]any, reserved ...string) ([]rawjson.Member, error) {
	keys := make([]string, 0, len(details))
	for k := range details {
		if !slices.Contains(reserved, k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		v, err := rawjson.FromAny(details[k])
		if err != nil {
			return nil, outErr(protocol.CodeWrongType, "/payload/details/"+k, "detail cannot be encoded", err)
		}
		ms = append(ms, rawjson.Field(k, v))
	}
	return ms, nil
}

// capsData builds a CAPS body.d from an AgentCard: the CAPS body.d the
// card came from when it still lists the same capabilities, else
// {"supports": [capability ids], "clowl": "0.2"}.
func capsData(card *protocol.AgentCard) ([]byte, error) {
	ids := make([]string, len(card.Capabilities))
	for i, c := range card.Capabilities {
		ids[i] = c.ID
	}
	if orig, ok := card.Extensions[cardExtension]; ok && rawjson.Kind(orig) == '{' {
		var got []string
		for _, c := range capabilities(orig) {
			got = append(got, c.ID)
		}
		if slices.Equal(got, ids) || len(got) == 0 && len(ids) == 0 {
			return rawjson.Compact(orig), nil
		}
	}
	supports, err := rawjson.FromAny(ids)
	if err != nil {
		return nil, outErr(protocol.CodeWrongType, "/payload/capabilities", "", err)
	}
	return rawjson.Object([]rawjson.Member{rawjson.Field("supports", supports), rawjson.Field("clowl", quoted(Version))}), nil
}

// withMode sets body.d.delegation_mode of a DLGT (required by the schema):
// meta.delegation_mode, else the payload's own, else "assist" — what a
// Clutch subtask is: the parent waits for it and stays accountable.
func withMode(d []byte, m *protocol.Message) ([]byte, error) {
	mode := rawjson.MetaString(m, MetaDelegationMode)
	ms, err := rawjson.Members(d)
	if err != nil {
		return nil, outErr(protocol.CodeInvalidJSON, "/payload", "", err)
	}
	for i, mb := range ms {
		if mb.Name != "delegation_mode" {
			continue
		}
		if mode == "" {
			return d, nil
		}
		if s, _ := rawjson.Str(mb.Value); s == mode {
			return d, nil
		}
		ms[i].Value = quoted(mode)
		return rawjson.Object(ms), nil
	}
	if mode == "" {
		mode = string(Assist)
	}
	return rawjson.Object(append([]rawjson.Member{rawjson.Field("delegation_mode", quoted(mode))}, ms...)), nil
}

// outContext rebuilds ctx from the "ctx" attachment (or the first one),
// meta.ctx_inline and meta.ctx_hash. Other attachments have no place in
// CLowl and are dropped.
func outContext(m *protocol.Message) *Context {
	c := &Context{Inline: rawjson.MetaString(m, MetaCtxInline), Hash: rawjson.MetaString(m, MetaCtxHash)}
	if len(m.Attachments) > 0 {
		at := m.Attachments[0]
		for _, x := range m.Attachments {
			if x.Name == AttachmentName {
				at = x
				break
			}
		}
		c.Ref, c.Hash = at.Ref, strings.ToLower(at.SHA256)
		if !isSHA256(c.Hash) {
			c.Hash = "" // the schema wants 64 hex digits; a foreign digest is dropped
		}
	}
	if *c == (Context{}) {
		return nil
	}
	return c
}

func quoted(s string) []byte {
	b, err := jsontext.AppendQuote(nil, s)
	if err != nil {
		b, _ = jsontext.AppendQuote(nil, strings.ToValidUTF8(s, "\uFFFD"))
	}
	return b
}

func boolJSON(b bool) []byte {
	if b {
		return []byte("true")
	}
	return []byte("false")
}

func isSHA256(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if c := h[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
