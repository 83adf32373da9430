package multiagent

import (
	"bytes"
	"context"
	"slices"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/protocol"
)

// Name is the adapter's name in an adapters.Registry.
const Name = "multiagent"

// Protocol is the "protocol" of the envelope this package speaks, and the
// meta.src (adapters.MetaSource) of inbound messages.
const Protocol = "multiagent-1.0"

// Source is the meta.src of inbound messages (the same as Protocol).
const Source = Protocol

// The meta keys the adapter sets on inbound messages and reads on outbound
// ones (see the mapping table in the package doc).
const (
	MetaIntent     = "intent"      // "intent"
	MetaAgent      = "agent"       // "agent" without its id (name, model, version, ...)
	MetaNoAgent    = "no_agent"    // true: the envelope had no "agent"
	MetaTimestamp  = "timestamp"   // "timestamp" as sent, when ts does not write it back the same
	MetaConfidence = "confidence"  // confidence.score, a number
	MetaParents    = "parents"     // trace.parents
	MetaInReplyTo  = "in_reply_to" // the last of trace.parents: the message this one answers
	MetaTags       = "tags"        // trace.tags
	MetaUsage      = "usage"       // trace.cost {input_tokens, output_tokens}
	MetaTraceExtra = "trace_extra" // members of trace multiagent-1.0 does not define
	MetaExtra      = "extra"       // top-level members multiagent-1.0 does not define
	MetaIDDerived  = "id_derived"  // true: no trace.id, the id is derived from the content
	MetaProposed   = "proposed"    // true: a task.request made from outputs.next_actions
	MetaAction     = "next_action" // the index of that next action
)

// Options configures an Adapter. The zero value (or nil) gives an adapter
// with an in-memory Index.
type Options struct {
	// Index remembers where translated messages landed (their Kind is the
	// intent), so that trace.parents link messages across hops. Nil:
	// adapters.NewMemoryIndex(0).
	Index adapters.Index
	// Peers are agent ids reached over multiagent-1.0: CanHandle accepts
	// messages addressed to them, besides those that came in through this
	// adapter.
	Peers []string
	// MaxBytes is the largest envelope accepted; protocol.DefaultMaxBytes
	// when ≤ 0.
	MaxBytes int
}

// Adapter translates multiagent-1.0 envelopes to and from the Clutch
// envelope. It implements adapters.Adapter and adapters.Detector and is
// safe for concurrent use.
type Adapter struct {
	opts  Options
	links *adapters.Links
}

var (
	_ adapters.Adapter  = (*Adapter)(nil)
	_ adapters.Detector = (*Adapter)(nil)
)

// New returns an adapter; opts may be nil.
func New(opts *Options) *Adapter {
	a := &Adapter{}
	if opts != nil {
		a.opts = *opts
		a.opts.Peers = slices.Clone(opts.Peers)
	}
	a.links = adapters.NewLinks(a.opts.Index)
	if a.opts.MaxBytes <= 0 {
		a.opts.MaxBytes = protocol.DefaultMaxBytes
	}
	return a
}

// Name returns "multiagent".
func (a *Adapter) Name() string { return Name }

// Detect reports whether raw looks like a multiagent-1.0 envelope: a JSON
// object that mentions "multiagent-1.0". It does not parse raw.
func (a *Adapter) Detect(raw []byte) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	return len(raw) > 0 && raw[0] == '{' && bytes.Contains(raw, []byte(`"protocol"`)) && bytes.Contains(raw, []byte(`"`+Protocol+`"`))
}

// CanHandle reports whether Outbound can translate m: a type
// multiagent-1.0 has a form for, and m came in through this adapter
// (meta.src) or is addressed to one of Options.Peers.
func (a *Adapter) CanHandle(m *protocol.Message) bool {
	if m == nil || !mappable(m.Type) {
		return false
	}
	if adapters.Source(m) == Source {
		return true
	}
	for _, p := range m.To {
		if slices.Contains(a.opts.Peers, p.AgentID) {
			return true
		}
	}
	return false
}

// Inbound translates one envelope into the message it is, followed by one
// proposed task.request per outputs.next_actions entry (see the package
// doc).
func (a *Adapter) Inbound(ctx context.Context, raw []byte) ([]*protocol.Message, error) {
	w, err := parse(raw, a.opts.MaxBytes)
	if err != nil {
		return nil, err
	}
	return a.toEnvelope(ctx, raw, w)
}

// Outbound translates an envelope into one multiagent-1.0 envelope.
func (a *Adapter) Outbound(ctx context.Context, m *protocol.Message) ([]byte, error) {
	e, err := a.fromEnvelope(ctx, m)
	if err != nil {
		return nil, err
	}
	return e.encode()
}
