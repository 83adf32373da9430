package multiagent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"github.com/clutchprotocol/clutch/adapters/internal/rawjson"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/clowl"
	"github.com/clutchprotocol/clutch/adapters/internal/bound"
	"github.com/clutchprotocol/clutch/adapters/internal/redact"
	"github.com/clutchprotocol/clutch/protocol"
)

// toEnvelope maps a parsed envelope (see the package doc's table).
func (a *Adapter) toEnvelope(ctx context.Context, raw []byte, w *wire) ([]*protocol.Message, error) {
	m := &protocol.Message{
		V:       protocol.Version,
		ID:      w.traceID,
		TS:      protocol.Timestamp(w.time),
		From:    protocol.Participant{Role: w.role},
		To:      []protocol.Participant{},
		Attempt: 1,
	}
	meta := map[string]any{adapters.MetaSource: Source, MetaIntent: w.intent}
	if w.agentID != "" {
		m.From.AgentID = protocol.PrefixAgent + w.agentID
		ag := make(map[string]any, len(w.agent))
		for _, mb := range w.agent {
			ag[mb.Name] = rawjson.ToAny(mb.Value)
		}
		meta[MetaAgent] = ag
	} else {
		m.From.AgentID = protocol.PrefixAgent + w.role // an anonymous user, system or tool
		meta[MetaNoAgent] = true
	}
	if back := w.time.UTC().Format(time.RFC3339Nano); back != w.ts {
		meta[MetaTimestamp] = w.ts
	}
	if m.ID == "" {
		// No trace.id: an id from the content, so that a re-sent envelope
		// dedups.
		canon, err := protocol.Canonical(raw)
		if err != nil {
			return nil, inErr(protocol.CodeOf(err), "", "", err)
		}
		sum := sha256.Sum256(canon)
		m.ID = protocol.IDPrefixMessage + hex.EncodeToString(sum[:16])
		meta[MetaIDDerived] = true
	}
	if w.hasScore {
		meta[MetaConfidence] = w.score
	}
	if w.parents != nil {
		meta[MetaParents] = strList(w.parents)
		if len(w.parents) > 0 {
			meta[MetaInReplyTo] = w.parents[len(w.parents)-1]
		}
	}
	if w.tags != nil {
		meta[MetaTags] = strList(w.tags)
	}
	if w.cost != nil {
		meta[MetaUsage] = rawjson.ToAny(w.cost)
	}
	if len(w.traceExtra) > 0 {
		x := map[string]any{}
		for _, mb := range w.traceExtra {
			x[mb.Name] = rawjson.ToAny(mb.Value)
		}
		meta[MetaTraceExtra] = x
	}
	if len(w.Unknown) > 0 {
		meta[MetaExtra] = rawjson.ToAny(w.Unknown)
	}
	m.Meta = meta

	// Where it lands: the run and thread of the message it answers (the
	// last of trace.parents), else of the lineage's root.
	var parent string
	var plink adapters.Link
	var known bool
	if n := len(w.parents); n > 0 {
		parent = w.parents[n-1]
		plink, known = a.links.Lookup(ctx, parent)
	}
	if known && plink.RunID != "" {
		m.RunID, m.ThreadID = plink.RunID, plink.ThreadID
	} else {
		root := m.ID
		if len(w.parents) > 0 {
			root = w.parents[0]
		}
		m.RunID, m.ThreadID = protocol.PrefixRun+root, protocol.PrefixThread+root
	}
	parentTask := ""
	if parent != "" {
		parentTask = a.links.TaskOf(ctx, parent)
	}
	own := protocol.PrefixTask + m.ID

	info, isKnown := LookupIntent(w.intent)
	if isKnown && !w.handshake {
		m.Domain = info.Domain
	}
	payload := w.payload()
	// The call a tool event names (docs/protocol.md §2.3.1): a call is
	// its own message; an answer or failure answers its last parent.
	callID := func() string {
		if n := len(w.parents); n > 0 {
			return adapters.CallID(w.parents[n-1])
		}
		return adapters.CallID("", m.ID) // answers nothing known: its own
	}
	switch {
	case w.handshake:
		m.Type, m.TaskID = protocol.TypeAgentRegister, own
		if a.links.Registered(ctx, m.From.AgentID, own) {
			m.Type = protocol.TypeAgentHeartbeat
		}
		var err error
		if m.Payload, err = w.handshakePayload(m.Type, m.From.AgentID, payload); err != nil {
			return nil, err
		}
		if ag, ok := meta[MetaAgent].(map[string]any); ok && m.Type == protocol.TypeAgentRegister {
			if s, _ := ag["name"].(string); len(s) > maxMetaName {
				delete(ag, "name") // the card's display name holds it: big text once
			}
		}
	case w.contentType == ContentError:
		m.Type = protocol.TypeTaskError
		if w.intent == ToolCall {
			m.Type = protocol.TypeToolError
		}
		m.TaskID = cmpOr(parentTask, own)
		cid := ""
		if m.Type == protocol.TypeToolError {
			cid = callID()
		}
		m.Payload = errorPayload(w, payload, cid)
	default:
		m.Type = info.Answer
		if w.intent == ToolCall && w.contentType != ContentToolResult || w.intent != ToolCall && (w.role == RoleUser || w.role == RoleSystem) {
			m.Type = info.Request
		}
		m.PayloadType = PayloadType(w.intent)
		m.Payload = payload
		switch m.Type {
		case protocol.TypeToolCall:
			m.Payload = withCallID(payload, m.ID)
		case protocol.TypeToolResult:
			m.Payload = withCallID(payload, callID())
		}
		if m.Type == protocol.TypeTaskRequest || m.Type == protocol.TypeToolCall {
			m.TaskID, m.ParentTaskID = own, parentTask
		} else {
			m.TaskID = cmpOr(parentTask, own)
		}
	}
	for _, ar := range w.artifacts {
		if ar.uri == "" {
			continue // inline artifacts stay in the payload
		}
		m.Attachments = append(m.Attachments, protocol.Attachment{Kind: refKind(ar.uri), Ref: ar.uri, Name: cmpOr(ar.name, ar.kind)})
	}
	out := []*protocol.Message{m}
	for i, act := range w.actions {
		out = append(out, proposed(m, i, act))
	}
	for i, x := range out {
		// Credentials are not stored, and each envelope fits the event
		// store (package doc, Caveats).
		if err := redact.Message(x); err != nil {
			return nil, inErr(protocol.CodeOf(err), "", "payload", err)
		}
		if err := bound.Fit(x, 0); err != nil {
			return nil, inErr(protocol.CodeTooLarge, "", "translated message "+strconv.Itoa(i)+" does not fit in one envelope", err)
		}
		if err := x.Validate(); err != nil {
			return nil, inErr(protocol.CodeOf(err), "", "translated message "+strconv.Itoa(i)+" is invalid", err)
		}
	}
	for _, x := range out {
		a.links.Remember(ctx, x, rawjson.MetaString(x, MetaIntent))
	}
	if m.Type == protocol.TypeAgentRegister {
		a.links.Register(ctx, m.From.AgentID, own)
	}
	return out, nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func strList(l []string) []any {
	out := make([]any, len(l))
	for i, s := range l {
		out[i] = s
	}
	return out
}

// payload is the envelope's body, verbatim: task, inputs, content,
// outputs, confidence.
func (w *wire) payload() []byte {
	ms := []rawjson.Member{rawjson.Field("task", rawjson.Compact(w.Task))}
	for _, f := range []struct {
		name string
		v    jsontext.Value
	}{{"inputs", w.Inputs}, {"content", w.Content}, {"outputs", w.Outputs}, {"confidence", w.Confidence}} {
		if present(f.v) {
			ms = append(ms, rawjson.Field(f.name, f.v))
		}
	}
	return rawjson.Object(ms)
}

// withCallID returns a tool event's body with call_id first (Outbound
// leaves it out again: the ids it comes from go out as trace.id and
// trace.parents).
func withCallID(body []byte, callID string) []byte {
	ms, _ := rawjson.Members(body) // the body is an object built by payload
	return rawjson.Object(append([]rawjson.Member{rawjson.Field("call_id", quote(callID))}, ms...))
}

// errorPayload maps content.type "error" to the wire error of docs/protocol.md
// §5.4: content.data.code when it is a protocol code (or a CLowl
// E-code), else INTERNAL; content.text as the message; the body kept
// whole in details.multiagent; for a tool.error, the call it answers in
// details.call_id (callID, "" for other types).
func errorPayload(w *wire, body []byte, callID string) []byte {
	ep := protocol.ErrorPayload{Code: protocol.CodeInternal, Details: map[string]any{detailBody: rawjson.ToAny(body)}}
	if callID != "" {
		ep.Details["call_id"] = callID
	}
	cm, _ := rawjson.Members(w.Content)
	for _, mb := range cm {
		switch mb.Name {
		case "text":
			ep.Message, _ = rawjson.Str(mb.Value)
		case "data":
			dm, _ := rawjson.Members(mb.Value)
			for _, d := range dm {
				s, _ := rawjson.Str(d.Value)
				switch {
				case d.Name == "code" && protocol.Code(s).Known():
					ep.Code = protocol.Code(s)
				case d.Name == "code" && len(s) == 4 && s[0] == 'E':
					ep.Code = clowl.ProtocolCode(s)
				}
			}
		}
	}
	ep.Retryable = ep.Code.Retryable()
	dm := map[string]any{}
	for _, mb := range cm {
		if mb.Name == "data" {
			if d, ok := rawjson.ToAny(mb.Value).(map[string]any); ok {
				dm = d
			}
		}
	}
	if r, ok := dm["retryable"].(bool); ok {
		ep.Retryable = r
	}
	var m protocol.Message
	_ = m.SetPayload(&ep) // the router's own error type: cannot fail
	return m.Payload
}

// detailBody is the details member of a task.error that keeps the
// envelope's body.
const detailBody = "multiagent"

// maxMetaName bounds the agent name meta.agent repeats from a handshake's
// AgentCard.
const maxMetaName = 1024

// handshakePayload builds the AgentCard of a handshake (agent.register) or
// the heartbeat payload {"status": "ok", "multiagent": body}.
func (w *wire) handshakePayload(t protocol.Type, agentID string, body []byte) ([]byte, error) {
	if t == protocol.TypeAgentHeartbeat {
		return rawjson.Object([]rawjson.Member{rawjson.Field("status", []byte(`"ok"`)), rawjson.Field(detailBody, body)}), nil
	}
	card := &protocol.AgentCard{V: protocol.Version, AgentID: agentID, Capabilities: []protocol.Capability{},
		Extensions: map[string]json.RawMessage{detailBody: body}}
	for _, mb := range w.agent {
		if s, ok := rawjson.Str(mb.Value); ok && mb.Name == "name" && s != "" {
			card.Display = &protocol.Display{Name: s}
		}
	}
	for _, s := range w.supports {
		if id := "content:" + s; validCapability(s) && !hasCap(card, id) {
			card.Capabilities = append(card.Capabilities, protocol.Capability{ID: id})
		}
	}
	b, err := protocol.EncodeAgentCard(card)
	if err != nil {
		return nil, inErr(protocol.CodeOf(err), "/content/data", "the handshake does not make a valid AgentCard", err)
	}
	return b, nil
}

func validCapability(s string) bool {
	return s != "" && len(s) < 200 && !strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f })
}

func hasCap(c *protocol.AgentCard, id string) bool {
	for _, x := range c.Capabilities {
		if x.ID == id {
			return true
		}
	}
	return false
}

// proposed turns outputs.next_actions[i] into a task.request that still
// goes through routing: same run and thread, a subtask of the proposing
// message's task, from its sender, to nobody yet (the router or a Policy
// chooses).
func proposed(m *protocol.Message, i int, act action) *protocol.Message {
	id := m.ID + "/next/" + strconv.Itoa(i)
	if len(id) > protocol.MaxIDLength {
		sum := sha256.Sum256([]byte(id))
		id = protocol.IDPrefixMessage + hex.EncodeToString(sum[:16])
	}
	r := &protocol.Message{
		V: protocol.Version, ID: id, TS: m.TS, ThreadID: m.ThreadID, RunID: m.RunID,
		TaskID: protocol.PrefixTask + id, ParentTaskID: m.TaskID,
		From: m.From, To: []protocol.Participant{}, Type: protocol.TypeTaskRequest,
		PayloadType: PayloadType(act.intent), Attempt: 1,
		Meta: map[string]any{adapters.MetaSource: Source, MetaIntent: act.intent, MetaProposed: true,
			MetaAction: json.Number(strconv.Itoa(i)), MetaParents: []any{m.ID}, MetaInReplyTo: m.ID},
	}
	if info, ok := LookupIntent(act.intent); ok {
		r.Domain = info.Domain
	}
	if ag, ok := m.Meta[MetaAgent]; ok {
		r.Meta[MetaAgent] = ag
	}
	task, _ := jsontext.AppendQuote(nil, act.task)
	ms := []rawjson.Member{rawjson.Field("task", task)}
	if act.args != nil {
		ms = append(ms, rawjson.Field("inputs", rawjson.Object([]rawjson.Member{rawjson.Field("parameters", act.args)})))
	}
	r.Payload = rawjson.Object(ms)
	return r
}

// refKind is the attachment kind of an artifact uri: "artifact_ref" for
// an artifact of the event store, "url" for a URL, "path" otherwise.
func refKind(uri string) string {
	switch {
	case strings.HasPrefix(uri, protocol.PrefixArtifact):
		return "artifact_ref"
	case strings.Contains(uri, "://"):
		return "url"
	}
	return "path"
}
