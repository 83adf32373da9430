package webhook

import (
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/internal/rawjson"
	"github.com/clutchprotocol/clutch/protocol"
)

// Mapping declares how the JSON body of a delivery becomes envelopes:
// constants, and JSON pointers (RFC 6901) into the body for the fields that
// come from it. Every pointer a Mapping names must be present in a body
// (MISSING_FIELD otherwise), except those of Meta. The sender (from) is the
// authenticated one, never the body's; the ids not mapped, ts and
// idempotency_key are set by the Handler (or Translator).
type Mapping struct {
	// Each, when set, points to an array of the body (a batch of events):
	// every element gives one envelope, in order, and every other pointer
	// is read from the element. A body with an empty array gives none.
	Each string
	// Type is the type of every envelope, unless TypeFrom is set: one the
	// Handler can hand on (see the package doc, "Where envelopes go").
	Type protocol.Type
	// TypeFrom points to a string of the body naming the event
	// ("order.created"), looked up in Types; a name missing from Types
	// gets Type, and is refused (UNKNOWN_TYPE) when Type is "".
	TypeFrom string
	// Types maps the event names TypeFrom finds to envelope types.
	Types map[string]protocol.Type
	// PayloadType is the payload_type of every envelope ("" for none).
	PayloadType string
	// Payload points to the payload; "" is the whole body.
	Payload string
	// RunID, ThreadID, TaskID, ParentTaskID and Domain point to a string
	// (or a number, kept as written) of the body; "" leaves the field to
	// the Handler's default.
	RunID, ThreadID, TaskID, ParentTaskID, Domain string
	// IdempotencyKey points to the sender's own event id in the body, used
	// for deduplication instead of the webhook-id header.
	IdempotencyKey string
	// To lists the recipients' agent ids; empty lets the router choose.
	To []string
	// Requires lists the capabilities a task.request requires
	// (docs/protocol.md §4.2).
	Requires []string
	// Meta maps meta keys to pointers; a pointer the body does not hold
	// leaves its key out.
	Meta map[string]string
}

// compiled is a validated Mapping with its pointers split into tokens.
type compiled struct {
	each        *pointer
	typ         protocol.Type
	typeFrom    *pointer
	types       map[string]protocol.Type
	payloadType string
	payload     pointer
	fields      [6]*pointer // runID, threadID, taskID, parentTaskID, domain, idempotencyKey
	to          []protocol.Participant
	requires    []string
	meta        []metaPointer
}

const (
	fRunID = iota
	fThreadID
	fTaskID
	fParentTaskID
	fDomain
	fIdempotencyKey
)

type metaPointer struct {
	key string
	p   pointer
}

// pointer is a parsed JSON pointer: its text and its reference tokens.
type pointer struct {
	text   string
	tokens []string
}

// parsePointer parses an RFC 6901 JSON pointer ("" is the whole document).
func parsePointer(s string) (pointer, error) {
	p := pointer{text: s}
	if s == "" {
		return p, nil
	}
	if s[0] != '/' {
		return p, errors.New(`a JSON pointer must be "" or start with "/"`)
	}
	for t := range strings.SplitSeq(s[1:], "/") {
		for i := 0; i < len(t); i++ {
			if t[i] == '~' && (i+1 == len(t) || (t[i+1] != '0' && t[i+1] != '1')) {
				return p, errors.New(`"~" in a JSON pointer must be followed by 0 or 1`)
			}
		}
		p.tokens = append(p.tokens, strings.NewReplacer("~1", "/", "~0", "~").Replace(t))
	}
	return p, nil
}

// admissible reports whether the Handler can hand an envelope of type t on.
func admissible(t protocol.Type) bool {
	switch t {
	case protocol.TypeTaskRequest, protocol.TypeTaskCancel, protocol.TypeChatMessage, protocol.TypeChatSystem:
		return true
	}
	return t.Extension() && t.Valid() && !strings.HasPrefix(string(t), typePrefix)
}

func (m *Mapping) compile() (*compiled, error) {
	if m == nil {
		return nil, optionsError("a Mapping is required")
	}
	c := &compiled{typ: m.Type, payloadType: m.PayloadType}
	if m.Each != "" {
		p, err := parsePointer(m.Each)
		if err != nil {
			return nil, optionsError("Mapping.Each: " + err.Error())
		}
		c.each = &p
	}
	if m.Type != "" && !admissible(m.Type) {
		return nil, optionsError("Mapping.Type " + strconv.Quote(string(m.Type)) + " cannot come from a webhook: use task.request, task.cancel, chat.message, chat.system or an x.<vendor>.<name> extension")
	}
	if m.TypeFrom != "" {
		p, err := parsePointer(m.TypeFrom)
		if err != nil {
			return nil, optionsError("Mapping.TypeFrom: " + err.Error())
		}
		c.typeFrom = &p
		if len(m.Types) == 0 && m.Type == "" {
			return nil, optionsError("Mapping.TypeFrom needs Types or a default Type")
		}
		c.types = make(map[string]protocol.Type, len(m.Types))
		for k, t := range m.Types {
			if !admissible(t) {
				return nil, optionsError("Mapping.Types[" + strconv.Quote(k) + "] " + strconv.Quote(string(t)) + " cannot come from a webhook")
			}
			c.types[k] = t
		}
	} else if m.Type == "" {
		return nil, optionsError("Mapping.Type or Mapping.TypeFrom is required")
	} else if len(m.Types) > 0 {
		return nil, optionsError("Mapping.Types needs Mapping.TypeFrom")
	}
	if m.PayloadType != "" && !protocol.ValidPayloadType(m.PayloadType) {
		return nil, optionsError("Mapping.PayloadType " + strconv.Quote(m.PayloadType) + " is not a payload type")
	}
	var err error
	if c.payload, err = parsePointer(m.Payload); err != nil {
		return nil, optionsError("Mapping.Payload: " + err.Error())
	}
	for i, s := range [...]struct{ name, v string }{
		{"RunID", m.RunID}, {"ThreadID", m.ThreadID}, {"TaskID", m.TaskID},
		{"ParentTaskID", m.ParentTaskID}, {"Domain", m.Domain}, {"IdempotencyKey", m.IdempotencyKey},
	} {
		if s.v == "" {
			continue
		}
		p, err := parsePointer(s.v)
		if err != nil {
			return nil, optionsError("Mapping." + s.name + ": " + err.Error())
		}
		c.fields[i] = &p
	}
	for _, id := range m.To {
		if !strings.HasPrefix(id, protocol.PrefixAgent) && !strings.HasPrefix(id, protocol.PrefixGroup) {
			return nil, optionsError("Mapping.To: " + strconv.Quote(id) + " is not an agent id")
		}
		c.to = append(c.to, protocol.Participant{AgentID: id})
	}
	if c.fields[fTaskID] == nil && (m.Type == protocol.TypeTaskCancel || slices.Contains(slices.Collect(maps.Values(m.Types)), protocol.TypeTaskCancel)) {
		return nil, optionsError("a Mapping that makes task.cancel needs Mapping.TaskID: the task to cancel")
	}
	c.requires = append([]string(nil), m.Requires...)
	for k, v := range m.Meta {
		if k == "" || strings.HasPrefix(k, "webhook_") || k == adapters.MetaSource {
			return nil, optionsError("Mapping.Meta: key " + strconv.Quote(k) + " is empty or reserved")
		}
		p, err := parsePointer(v)
		if err != nil {
			return nil, optionsError("Mapping.Meta[" + strconv.Quote(k) + "]: " + err.Error())
		}
		c.meta = append(c.meta, metaPointer{k, p})
	}
	return c, nil
}

// envelope builds the envelope of mp from the sender from: the mapped
// fields, ids from ids for those not mapped, meta.src and the mapped meta.
func (c *compiled) envelope(ids *protocol.IDs, from string, mp *mapped) *protocol.Message {
	m := ids.NewMessage(mp.typ, from)
	if v := mp.fields[fRunID]; v != "" {
		m.RunID = v
	}
	if v := mp.fields[fThreadID]; v != "" {
		m.ThreadID = v
	}
	if v := mp.fields[fTaskID]; v != "" {
		m.TaskID = v
	}
	m.ParentTaskID = mp.fields[fParentTaskID]
	m.Domain = mp.fields[fDomain]
	m.PayloadType = c.payloadType
	if m.PayloadType != "" {
		m.SchemaRef = protocol.SchemaRefFor(m.PayloadType)
	}
	m.Payload = mp.payload
	m.To = append([]protocol.Participant{}, c.to...)
	if m.Type == protocol.TypeTaskRequest && len(c.requires) > 0 {
		m.Requires = append([]string(nil), c.requires...)
	}
	m.Meta = make(map[string]any, len(mp.meta)+5)
	for k, v := range mp.meta {
		m.Meta[k] = v
	}
	m.Meta[adapters.MetaSource] = Source
	if mp.event != "" {
		m.Meta[MetaEvent] = mp.event
	}
	if mp.index >= 0 {
		m.Meta[MetaIndex] = mp.index
	}
	return m
}

// mapped is what one item of a body gives an envelope.
type mapped struct {
	typ     protocol.Type
	event   string // the TypeFrom name, "" without TypeFrom
	payload []byte
	fields  [6]string
	meta    map[string]any
	index   int // position in the Each array, -1 without Each
}

// maxItems bounds the envelopes one delivery may give.
const maxItems = 1000

// translate applies the mapping to body: one envelope's worth, or one per
// element of the Each array. Every item is mapped before any is returned,
// so a body with one bad item gives no envelope at all.
func (c *compiled) translate(body []byte) ([]*mapped, error) {
	var root jsontext.Value
	if err := adapters.DecodeJSON(name, body, &root); err != nil {
		var ae *adapters.Error
		if errors.As(err, &ae) {
			return nil, inputError(ae.Code, ae.Path, ae.Detail, ae.Err)
		}
		return nil, inputError(protocol.CodeInvalidJSON, "", "", err)
	}
	if c.each == nil {
		m, err := c.item(root, "")
		if err != nil {
			return nil, err
		}
		m.index = -1
		return []*mapped{m}, nil
	}
	v, ok, err := lookup(root, *c.each, "")
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, inputError(protocol.CodeMissingField, c.each.text, "the mapped array is missing", nil)
	}
	if v.Kind() != '[' {
		return nil, inputError(protocol.CodeWrongType, c.each.text, "the mapped value is "+rawjson.KindName(v)+", not an array", nil)
	}
	var items []jsontext.Value
	if err := jsonv2.Unmarshal(v, &items); err != nil {
		return nil, inputError(protocol.CodeInvalidJSON, c.each.text, "", err)
	}
	if len(items) > maxItems {
		return nil, inputError(protocol.CodeTooLarge, c.each.text, "more than "+strconv.Itoa(maxItems)+" items", nil)
	}
	out := make([]*mapped, 0, len(items))
	for i, it := range items {
		m, err := c.item(it, c.each.text+"/"+strconv.Itoa(i))
		if err != nil {
			return nil, err
		}
		m.index = i
		out = append(out, m)
	}
	return out, nil
}

// item maps one value; base is its JSON pointer in the body, for errors.
func (c *compiled) item(root jsontext.Value, base string) (*mapped, error) {
	out := &mapped{typ: c.typ}
	if c.typeFrom != nil {
		ev, err := str(root, *c.typeFrom, base)
		if err != nil {
			return nil, err
		}
		out.event = ev
		if t, ok := c.types[ev]; ok {
			out.typ = t
		} else if c.typ == "" {
			return nil, inputError(protocol.CodeUnknownType, base+c.typeFrom.text, "the event "+strconv.Quote(ev)+" is not mapped to a type", nil)
		}
	}
	v, ok, err := lookup(root, c.payload, base)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, inputError(protocol.CodeMissingField, base+c.payload.text, "the mapped payload is missing", nil)
	}
	out.payload = rawjson.Compact(v)
	for i, p := range c.fields {
		if p == nil {
			continue
		}
		if out.fields[i], err = str(root, *p, base); err != nil {
			return nil, err
		}
	}
	for _, mp := range c.meta {
		v, ok, err := lookup(root, mp.p, base)
		if err != nil {
			return nil, err
		}
		if ok {
			if out.meta == nil {
				out.meta = make(map[string]any, len(c.meta))
			}
			if len(v) > MaxMetaCopy && within(mp.p, c.payload) {
				// Big, and in the payload already: text is kept once.
				in, _ := out.meta[MetaInPayload].([]any)
				out.meta[MetaInPayload] = append(in, mp.key)
				continue
			}
			out.meta[mp.key] = rawjson.ToAny(v)
		}
	}
	return out, nil
}

// MaxMetaCopy is the largest value (in JSON bytes) Mapping.Meta copies
// into meta from inside the payload: a bigger one stays in the payload
// only (listed in meta.webhook_in_payload), so that one text is not stored
// twice in an envelope.
const MaxMetaCopy = 1024

// within reports whether p points into the value at q (or at it).
func within(p, q pointer) bool {
	return len(p.tokens) >= len(q.tokens) && slices.Equal(p.tokens[:len(q.tokens)], q.tokens)
}

// str reads the string (or number, as written) at p.
func str(root jsontext.Value, p pointer, base string) (string, error) {
	v, ok, err := lookup(root, p, base)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", inputError(protocol.CodeMissingField, base+p.text, "the mapped value is missing", nil)
	}
	switch v.Kind() {
	case '"':
		s, _ := rawjson.Str(v)
		if s == "" {
			return "", inputError(protocol.CodeInvalidField, base+p.text, "the mapped value is an empty string", nil)
		}
		return s, nil
	case '0':
		return string(v), nil
	}
	return "", inputError(protocol.CodeWrongType, base+p.text, "the mapped value is "+rawjson.KindName(v)+", not a string or number", nil)
}

// lookup resolves p in root: the value, whether it is present, and an error
// for a pointer that walks through a scalar. base prefixes error paths.
func lookup(root jsontext.Value, p pointer, base string) (jsontext.Value, bool, error) {
	v := root
	for i, t := range p.tokens {
		switch v.Kind() {
		case '{':
			ms, err := rawjson.Members(v)
			if err != nil {
				return nil, false, inputError(protocol.CodeInvalidJSON, base+p.text, "", err)
			}
			found := false
			for _, m := range ms {
				if m.Name == t {
					v, found = m.Value, true
					break
				}
			}
			if !found {
				return nil, false, nil
			}
		case '[':
			var arr []jsontext.Value
			if err := jsonv2.Unmarshal(v, &arr); err != nil {
				return nil, false, inputError(protocol.CodeInvalidJSON, base+p.text, "", err)
			}
			n, err := strconv.Atoi(t)
			if err != nil || n < 0 || (len(t) > 1 && t[0] == '0') {
				return nil, false, inputError(protocol.CodeWrongType, base+prefix(p, i), "an array where the mapping expects an object", nil)
			}
			if n >= len(arr) {
				return nil, false, nil
			}
			v = arr[n]
		default:
			return nil, false, inputError(protocol.CodeWrongType, base+prefix(p, i), "a "+rawjson.KindName(v)+" where the mapping expects an object or array", nil)
		}
	}
	return v, true, nil
}

// prefix is the pointer text of p's first n tokens.
func prefix(p pointer, n int) string {
	var b strings.Builder
	for _, t := range p.tokens[:n] {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(t))
	}
	return b.String()
}
