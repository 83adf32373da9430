package clowl

import (
	"bytes"
	"context"
	"slices"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/protocol"
)

// Name is the adapter's name in an adapters.Registry.
const Name = "clowl"

// Source is the meta.src (adapters.MetaSource) of inbound messages.
const Source = "clowl/" + Version

// The meta keys the adapter sets on inbound messages and reads on outbound
// ones (see the mapping table in the package doc).
const (
	MetaPerformative   = "performative"    // "p": REQ, INF, ...
	MetaTaskType       = "task_type"       // "body.t"
	MetaInReplyTo      = "in_reply_to"     // "pid"
	MetaDet            = "det"             // "det"
	MetaDelegationMode = "delegation_mode" // body.d.delegation_mode of a DLGT
	MetaCtxInline      = "ctx_inline"      // "ctx.inline"
	MetaCtxHash        = "ctx_hash"        // "ctx.hash" when there is no ctx.ref
	MetaCtxFallback    = "ctx_fallback"    // true: ctx.ref was unreachable, ctx.inline stands in
	MetaToList         = "to_list"         // true: "to" was an array of one
	MetaCoercions      = "coercions"       // lenient repairs, as Coercion objects
)

// AttachmentName is the name of the attachment that carries ctx.ref.
const AttachmentName = "ctx"

// Resolver fetches the content of a ctx.ref so that its hash can be
// checked. An error means the ref is unreachable (ctx.inline then stands
// in, or the message is refused with E003); ErrSkip leaves the ref
// unresolved and unchecked. A Resolver for artifact refs of the event
// store is a call to store.Store.GetArtifact.
type Resolver func(ctx context.Context, ref string) ([]byte, error)

// Options configures an Adapter. The zero value (or nil) is the strict
// adapter with an in-memory Index and no Resolver.
type Options struct {
	// Lenient parses like the CLowl SDKs (see ParseLenient) instead of
	// following the schema strictly (see Parse).
	Lenient bool
	// Resolve fetches ctx.ref content for the hash check. Nil: refs are
	// not resolved; they become attachments for the recipient to resolve,
	// unchecked.
	Resolve Resolver
	// Authenticate, when set, is called with the sender and the auth token
	// ("" when none) of each inbound message; an error refuses it with
	// UNAUTHORIZED (CLowl E002).
	Authenticate func(ctx context.Context, from, token string) error
	// RedactAuth keeps auth tokens out of the envelope (and so out of the
	// event store): security.auth then says "bearer" without the token,
	// and Outbound cannot send it back.
	RedactAuth bool
	// Index remembers where translated messages landed (their Kind is
	// body.t). Nil: adapters.NewMemoryIndex(0).
	Index adapters.Index
	// Peers are agent ids ("agent:radar") reached over CLowl: CanHandle
	// accepts messages addressed to them, besides those that came in
	// through CLowl.
	Peers []string
	// MaxBytes is the largest message accepted; DefaultMaxBytes when ≤ 0.
	MaxBytes int
}

// Adapter translates CLowl v0.2 to and from the envelope. It implements
// adapters.Adapter and adapters.Detector and is safe for concurrent use.
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
		a.opts.MaxBytes = DefaultMaxBytes
	}
	return a
}

// Name returns "clowl".
func (a *Adapter) Name() string { return Name }

// Detect reports whether raw looks like a CLowl message: a JSON object
// with a "clowl" (or v0.1 "cl") member and a "p" member. It does not
// parse raw.
func (a *Adapter) Detect(raw []byte) bool {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 || raw[0] != '{' {
		return false
	}
	return bytes.Contains(raw, []byte(`"p"`)) &&
		(bytes.Contains(raw, []byte(`"clowl"`)) || bytes.Contains(raw, []byte(`"cl"`)) && bytes.Contains(raw, []byte(`"mid"`)))
}

// CanHandle reports whether Outbound can translate m: a type CLowl has a
// performative for, and m came in through CLowl (meta.src) or is
// addressed to one of Options.Peers.
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

// Inbound translates one CLowl message into one envelope (see the package
// doc for the mapping). Errors are *adapters.Error values whose Code gives
// the CLowl error code to answer with ([CodeFor]).
func (a *Adapter) Inbound(ctx context.Context, raw []byte) ([]*protocol.Message, error) {
	var (
		cm  *Message
		cs  []Coercion
		err error
	)
	if a.opts.Lenient {
		cm, cs, err = parseLenient(raw, a.opts.MaxBytes)
	} else {
		cm, err = parse(raw, a.opts.MaxBytes)
	}
	if err != nil {
		return nil, err
	}
	m, err := a.toEnvelope(ctx, cm, cs)
	if err != nil {
		return nil, err
	}
	return []*protocol.Message{m}, nil
}

// Outbound translates an envelope into one CLowl message that validates
// against the CLowl v0.2 schema (see the package doc for the mapping).
func (a *Adapter) Outbound(ctx context.Context, m *protocol.Message) ([]byte, error) {
	cm, err := fromEnvelope(m, func(taskID string) string { return a.links.KindOf(ctx, taskID) })
	if err != nil {
		return nil, err
	}
	return cm.Marshal()
}
