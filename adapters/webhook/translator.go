package webhook

import (
	"context"
	"strconv"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/internal/bound"
	"github.com/clutchprotocol/clutch/adapters/internal/redact"
	"github.com/clutchprotocol/clutch/protocol"
)

// Translator is a Mapping as an adapters.Adapter, for bodies that arrive some
// other way than a signed HTTP delivery (a queue, a file, a test): Inbound
// maps a body to its envelopes, from a fixed sender, with ids the mapping
// does not give generated and, when Mapping.IdempotencyKey is set, the
// sender's event id as idempotency key. It checks no signature and derives
// no run. It is inbound only: what goes out to webhook receivers is the
// envelope itself (Deliverer), so CanHandle is false and Outbound refuses.
type Translator struct {
	m    *compiled
	from string
	ids  *protocol.IDs
}

var _ adapters.Adapter = (*Translator)(nil)

// NewTranslator returns the Translator of m for bodies sent by the agent
// from; ids makes ids and timestamps (protocol.DefaultIDs() when nil).
func NewTranslator(m *Mapping, from string, ids *protocol.IDs) (*Translator, error) {
	c, err := m.compile()
	if err != nil {
		return nil, err
	}
	if len(from) <= len(protocol.PrefixAgent) || from[:len(protocol.PrefixAgent)] != protocol.PrefixAgent {
		return nil, optionsError("a Translator's sender must be an agent id")
	}
	if ids == nil {
		ids = protocol.DefaultIDs()
	}
	return &Translator{m: c, from: from, ids: ids}, nil
}

// Name returns "webhook".
func (t *Translator) Name() string { return name }

// CanHandle returns false: the Translator is inbound only.
func (t *Translator) CanHandle(*protocol.Message) bool { return false }

// Inbound maps raw to envelopes (one, or one per Mapping.Each item; an empty
// Each array is refused, MISSING_FIELD). A body
// that does not fit the mapping is an *Error matching adapters.ErrInbound,
// with the JSON pointer of the offending value.
func (t *Translator) Inbound(_ context.Context, raw []byte) ([]*protocol.Message, error) {
	items, err := t.m.translate(raw)
	if err != nil {
		return nil, inbound(err)
	}
	if len(items) == 0 { // an empty batch: the contract wants a message or an error
		return nil, inbound(inputError(protocol.CodeMissingField, t.m.each.text, "the mapped array is empty", nil))
	}
	out := make([]*protocol.Message, 0, len(items))
	for i, mp := range items {
		m := t.m.envelope(t.ids, t.from, mp)
		if k := mp.fields[fIdempotencyKey]; k != "" {
			m.IdempotencyKey = scopedKey("", t.from, k)
		}
		if i > 0 {
			// One body is one run and thread, unless the mapping says
			// otherwise.
			if mp.fields[fRunID] == "" && items[0].fields[fRunID] == "" {
				m.RunID = out[0].RunID
			}
			if mp.fields[fThreadID] == "" && items[0].fields[fThreadID] == "" {
				m.ThreadID = out[0].ThreadID
			}
		}
		if err := finish(m); err != nil {
			return nil, inbound(inputError(protocol.CodeOf(err), itemPath(t.m, mp), "the mapped envelope does not fit the store", err))
		}
		if err := m.Validate(); err != nil {
			path := ""
			if mp.index >= 0 {
				path = t.m.each.text + "/" + strconv.Itoa(mp.index)
			}
			return nil, inbound(inputError(protocol.CodeOf(err), path, "the mapped envelope is invalid", err))
		}
		out = append(out, m)
	}
	return out, nil
}

// finish keeps credentials out of m and bounds its text to what the event
// store holds (the package doc, Credentials and size).
func finish(m *protocol.Message) error {
	if err := redact.Message(m); err != nil {
		return err
	}
	return bound.Fit(m, 0)
}

// itemPath is the JSON pointer of a batch item, "" for a whole body.
func itemPath(c *compiled, mp *mapped) string {
	if mp.index < 0 {
		return ""
	}
	return c.each.text + "/" + strconv.Itoa(mp.index)
}

// Outbound refuses: webhook receivers get the envelope itself.
func (t *Translator) Outbound(context.Context, *protocol.Message) ([]byte, error) {
	return nil, adapters.OutboundError(name, protocol.CodeUnsupportedTask, "", "the webhook adapter is inbound only: deliveries carry the envelope itself (Deliverer)", nil)
}

// inbound makes an input error match adapters.ErrInbound, as the Adapter
// contract asks.
func inbound(err error) error {
	if e, ok := err.(*Error); ok {
		c := *e
		c.Sentinel = adapters.ErrInbound
		return &c
	}
	return err
}
