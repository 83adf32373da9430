package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/protocol"
)

// PayloadContent is the payload_type of a task.request made from an A2A
// message or a simple-surface prompt: a [Content].
const PayloadContent = "a2a.content.v1"

// Content is the payload of a task.request that came in over A2A or the
// simple HTTP surface (payload_type [PayloadContent]), and of a task.result
// mapped back from a remote A2A agent whose answer names no payload_type
// (then without a payload_type). Text holds the text parts joined by "\n"
// (the prompt of the simple surface), Data the data parts in order.
type Content struct {
	Text string            `json:"text,omitempty"`
	Data []json.RawMessage `json:"data,omitempty"`
}

// Metadata keys this package reads and writes in A2A metadata. They are
// namespaced so that they never collide with a client's own keys.
const (
	// MetaPayloadType, on a data part, names the Clutch payload_type of
	// its data ("research.query.v1"). A message made of exactly one such
	// data part (plus file parts) becomes a typed task.request; a result
	// artifact carries it on its data part.
	MetaPayloadType = "clutch.payload_type"
	// MetaKind, on a data part of a status message, says what the data is:
	// "progress" (a task.progress payload) or "error" (a §5.4 error).
	MetaKind = "clutch.kind"
	// MetaRequires, MetaPrefers and MetaDomain, in the request's or the
	// message's metadata, set requires[] (array of capability ids),
	// prefers[] and domain of the task.request made from it.
	MetaRequires = "clutch.requires"
	MetaPrefers  = "clutch.prefers"
	MetaDomain   = "clutch.domain"
	// MetaRunID and MetaAgentID, in a Task's metadata, name the Clutch run
	// and the agent that took the task.
	MetaRunID   = "clutch.run_id"
	MetaAgentID = "clutch.agent_id"
)

// Keys of the envelope's meta set on task.requests that enter through the
// Server.
const (
	// SourceA2A is the meta.src (adapters.MetaSource) of a task.request that
	// came in over A2A JSON-RPC; only such tasks are visible to GetTask,
	// ListTasks, CancelTask and SubscribeToTask.
	SourceA2A = "a2a/1.0"
	// SourceHTTP is the meta.src of a task.request from the simple surface.
	SourceHTTP = "a2a/http"
	// metaMessageID keeps the A2A messageId of the request, for history.
	metaMessageID = "a2a_message_id"
	// metaContextID keeps the client's contextId (sessionId on the simple
	// surface) of a request, whose thread_id is derived from it and the
	// caller (contextThread).
	metaContextID = "a2a_context_id"
	// metaSource is adapters.MetaSource; not imported to keep the
	// dependency direction plain.
	metaSource = "src"
)

// Part kinds of MetaKind.
const (
	kindProgress = "progress"
	kindError    = "error"
	kindQuestion = "question" // the question a task waits on: protocol.Question
)

// filePart is a raw or URL part of an inbound message, turned into an
// attachment by the caller (raw bytes go to the artifact store).
type filePart struct {
	raw       []byte
	url       string
	mediaType string
	name      string
}

// inbound is what an A2A message maps to.
type inbound struct {
	payloadType string
	payload     json.RawMessage
	files       []filePart
	requires    []string
	prefers     []string
	domain      string
}

// maxParts bounds the parts of one inbound message.
const maxParts = 1024

// mapMessage maps an A2A user message (and the request's metadata) to the
// parts of a task.request: text and data parts become a [Content] payload,
// or a typed payload when the message is one data part naming its
// payload_type; raw and URL parts become attachments; clutch.* metadata sets
// requires, prefers and domain.
func mapMessage(msg *a2a.Message, reqMeta map[string]any) (*inbound, error) {
	if msg == nil {
		return nil, inputError(protocol.CodeMissingField, "/message", "message is required")
	}
	if len(msg.Parts) == 0 {
		return nil, inputError(protocol.CodeMissingField, "/message/parts", "a message needs at least one part")
	}
	if len(msg.Parts) > maxParts {
		return nil, inputError(protocol.CodeTooLarge, "/message/parts", "more than "+strconv.Itoa(maxParts)+" parts")
	}
	in := &inbound{}
	var texts []string
	var data []json.RawMessage
	typedAt, typed := -1, ""
	for i, p := range msg.Parts {
		path := "/message/parts/" + strconv.Itoa(i)
		if p == nil {
			return nil, inputError(protocol.CodeMissingField, path, "null part")
		}
		switch c := p.Content.(type) {
		case a2a.Text:
			texts = append(texts, string(c))
		case a2a.Data:
			b, err := json.Marshal(c.Value)
			if err != nil {
				return nil, inputError(protocol.CodeWrongType, path+"/data", "data is not JSON: "+err.Error())
			}
			data = append(data, b)
			if pt, _ := p.Metadata[MetaPayloadType].(string); pt != "" {
				if !protocol.ValidPayloadType(pt) {
					return nil, inputError(protocol.CodeInvalidField, path+"/metadata/"+MetaPayloadType, "payload_type "+strconv.Quote(pt)+" is not of the form <domain>.<name>.v<N>")
				}
				if typedAt < 0 {
					typedAt, typed = len(data)-1, pt
				}
			}
		case a2a.Raw:
			in.files = append(in.files, filePart{raw: []byte(c), mediaType: p.MediaType, name: p.Filename})
		case a2a.URL:
			in.files = append(in.files, filePart{url: string(c), mediaType: p.MediaType, name: p.Filename})
		default:
			return nil, inputError(protocol.CodeWrongType, path, "a part holds text, data, raw or url")
		}
	}
	if typedAt >= 0 && len(texts) == 0 && len(data) == 1 {
		in.payloadType, in.payload = typed, data[0]
	} else {
		c := Content{Text: strings.Join(texts, "\n"), Data: data}
		if c.Text == "" && len(c.Data) == 0 && len(in.files) == 0 {
			return nil, inputError(protocol.CodeMissingField, "/message/parts", "the message has no content")
		}
		b, err := json.Marshal(c)
		if err != nil {
			return nil, inputError(protocol.CodeWrongType, "/message/parts", err.Error())
		}
		in.payloadType, in.payload = PayloadContent, b
	}
	for _, meta := range []map[string]any{reqMeta, msg.Metadata} {
		if err := in.routingHints(meta); err != nil {
			return nil, err
		}
	}
	return in, nil
}

// routingHints reads clutch.requires, clutch.prefers and clutch.domain;
// the first metadata that sets one wins.
func (in *inbound) routingHints(meta map[string]any) error {
	if meta == nil {
		return nil
	}
	for _, f := range []struct {
		key string
		dst *[]string
	}{{MetaRequires, &in.requires}, {MetaPrefers, &in.prefers}} {
		v, ok := meta[f.key]
		if !ok || *f.dst != nil {
			continue
		}
		list, ok := v.([]any)
		if !ok {
			return inputError(protocol.CodeWrongType, "/metadata/"+f.key, f.key+" is an array of capability ids")
		}
		out := make([]string, 0, len(list))
		for i, e := range list {
			s, ok := e.(string)
			if !ok || !validCapabilityRef(s) {
				return inputError(protocol.CodeInvalidField, "/metadata/"+f.key+"/"+strconv.Itoa(i), "not a capability id of the form <kind>:<name>")
			}
			out = append(out, s)
		}
		*f.dst = out
	}
	if v, ok := meta[MetaDomain]; ok && in.domain == "" {
		s, ok := v.(string)
		if !ok || len(s) > protocol.MaxIDLength {
			return inputError(protocol.CodeWrongType, "/metadata/"+MetaDomain, "domain is a short string")
		}
		in.domain = s
	}
	return nil
}

// validCapabilityRef mirrors the protocol's rule for capability ids:
// <kind>:<name>, kind of lower-case letters, digits, '_' and '-', name
// without spaces or control characters.
func validCapabilityRef(s string) bool {
	if len(s) > protocol.MaxIDLength {
		return false
	}
	kind, name, ok := strings.Cut(s, ":")
	if !ok || kind == "" || name == "" {
		return false
	}
	for i := 0; i < len(kind); i++ {
		c := kind[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}

// skillCapability maps an A2A skill id to a Clutch capability id: an id
// that already has the form <kind>:<name> is kept (so a Clutch card served
// over A2A maps back to itself), any other becomes "skill:<id>" with spaces
// and control characters replaced by '-'.
func skillCapability(id string) string {
	if validCapabilityRef(id) {
		return id
	}
	var b strings.Builder
	b.WriteString(protocol.PrefixSkill)
	for _, r := range id {
		if r <= ' ' || r == 0x7f {
			r = '-'
		}
		b.WriteRune(r)
	}
	s := b.String()
	if s == protocol.PrefixSkill {
		s += "unnamed"
	}
	if len(s) > protocol.MaxIDLength {
		s = s[:protocol.MaxIDLength]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
	}
	return s
}

// dataPart returns a data part holding raw JSON verbatim.
func dataPart(raw json.RawMessage, meta map[string]any) *a2a.Part {
	return &a2a.Part{Content: a2a.Data{Value: raw}, Metadata: meta}
}

// contentOf decodes a payload as [Content] when payloadType allows it:
// PayloadContent, or untyped and not empty (an untyped {} stays data); ok
// is false otherwise.
func contentOf(payloadType string, payload json.RawMessage) (Content, bool) {
	if payloadType != "" && payloadType != PayloadContent {
		return Content{}, false
	}
	if len(payload) == 0 || payload[0] != '{' {
		return Content{}, false
	}
	m := &protocol.Message{Payload: payload}
	c, err := protocol.DecodePayload[Content](m)
	if err != nil || (payloadType == "" && c.Text == "" && len(c.Data) == 0) {
		return Content{}, false
	}
	return c, true
}

// payloadParts maps a payload to A2A parts: a [Content] to its text and
// data parts, anything else to one data part (carrying its payload_type in
// metadata), preceded by a text summary when summary is set.
func payloadParts(payloadType string, payload json.RawMessage, kind string, summary bool) []*a2a.Part {
	if c, ok := contentOf(payloadType, payload); ok {
		parts := make([]*a2a.Part, 0, 1+len(c.Data))
		if c.Text != "" {
			parts = append(parts, a2a.NewTextPart(c.Text))
		}
		for _, d := range c.Data {
			parts = append(parts, dataPart(d, nil))
		}
		return parts
	}
	meta := map[string]any{}
	if payloadType != "" && payloadType != PayloadContent {
		meta[MetaPayloadType] = payloadType
	}
	if kind != "" {
		meta[MetaKind] = kind
	}
	if len(meta) == 0 {
		meta = nil
	}
	if len(payload) == 0 {
		payload = json.RawMessage("null")
	}
	var parts []*a2a.Part
	if summary {
		// The text first: clients that show one part show this one.
		if s := summarize(payload); s != "" {
			parts = append(parts, a2a.NewTextPart(s))
		}
	}
	return append(parts, dataPart(payload, meta))
}

// summaryKeys are the members whose string value summarises an object
// payload, in order of preference.
var summaryKeys = []string{"text", "summary", "title", "message", "content", "answer", "result", "prompt", "query"}

// maxSummary bounds a summary made from compact JSON.
const maxSummary = 512

// summarize returns a one-line human summary of a JSON payload: a string
// payload itself, the first string member of summaryKeys, the string
// findings joined by "; ", or else the compact JSON cut to 512 bytes.
func summarize(payload json.RawMessage) string {
	payload = bytes.TrimSpace(payload)
	if len(payload) == 0 || bytes.Equal(payload, []byte("null")) {
		return ""
	}
	switch payload[0] {
	case '"':
		var s string
		if json.Unmarshal(payload, &s) == nil {
			return s
		}
	case '{':
		var obj map[string]json.RawMessage
		if json.Unmarshal(payload, &obj) == nil {
			for _, k := range summaryKeys {
				var s string
				if v, ok := obj[k]; ok && json.Unmarshal(v, &s) == nil && s != "" {
					return s
				}
			}
			var findings []string
			if v, ok := obj["findings"]; ok && json.Unmarshal(v, &findings) == nil && len(findings) > 0 {
				return strings.Join(findings, "; ")
			}
		}
	}
	var buf bytes.Buffer
	if json.Compact(&buf, payload) != nil {
		return ""
	}
	s := buf.String()
	if len(s) > maxSummary {
		s = s[:maxSummary]
		for !utf8.ValidString(s) {
			s = s[:len(s)-1]
		}
		s += "…"
	}
	return s
}

// textOf joins the text parts of parts with "\n".
func textOf(parts []*a2a.Part) string {
	var texts []string
	for _, p := range parts {
		if p == nil {
			continue
		}
		if t, ok := p.Content.(a2a.Text); ok && t != "" {
			texts = append(texts, string(t))
		}
	}
	return strings.Join(texts, "\n")
}

// eventTime parses a message's ts; the zero time when it does not parse.
func eventTime(m *protocol.Message) *time.Time {
	t, err := m.Time()
	if err != nil {
		return nil
	}
	t = t.UTC()
	return &t
}

// setContext gives the request m the thread of the caller's context
// (contextId, or sessionId on the simple surface) and keeps the context in
// its meta. A request without one starts a new context, named by the
// thread id m was made with. The thread is derived from the caller and the
// context (contextThread), so contexts are per caller: another caller's
// contextId is a new context of this caller, never a way into (or a probe
// of) the other's thread (docs/protocol.md §6.7).
func (s *Server) setContext(ctx context.Context, c *auth.Caller, m *protocol.Message, surface, contextID string) error {
	if contextID == "" {
		contextID = m.ThreadID
	}
	thread, err := s.contextThread(ctx, c, surface, contextID)
	if err != nil {
		return err
	}
	m.ThreadID = thread
	m.Meta[metaContextID] = contextID
	return nil
}

// contextThread is the thread_id of the caller's context on surface.
func (s *Server) contextThread(ctx context.Context, c *auth.Caller, surface, contextID string) (string, error) {
	return s.ids.ID(ctx, protocol.IDPrefixThread, c, surface+" context", contextID)
}

// contextOf is the contextId of a stored request: the client's, kept in
// its meta, or its thread_id for a request that did not come in over A2A.
func contextOf(m *protocol.Message) string {
	if c, ok := m.Meta[metaContextID].(string); ok && c != "" {
		return c
	}
	return m.ThreadID
}
