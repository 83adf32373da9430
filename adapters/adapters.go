package adapters

import (
	"context"
	"slices"
	"sync"

	"github.com/clutchprotocol/clutch/protocol"
)

// Adapter translates one outside protocol or framework to and from the
// Clutch envelope: docs/protocol.md §7.2 in Go.
//
//	interface Adapter {
//	  name: string;
//	  canHandle(msg: ClutchMessage): boolean;
//	  inbound(raw: unknown): Promise<ClutchMessage[]>;
//	  outbound(msg: ClutchMessage): Promise<unknown>;
//	}
//
// Implementations must be safe for concurrent use. Inbound must never
// panic on any input: bad input is an error (an [*Error] carrying a
// protocol.Code), and every message it returns passes
// protocol.Message.Validate. Package adaptertest checks both.
type Adapter interface {
	// Name is the adapter's unique name, e.g. "clowl" or "multiagent".
	Name() string
	// CanHandle reports whether Outbound can translate m: a message of a
	// kind the outside protocol has, addressed to one of its parties or
	// carrying the adapter's meta.src.
	CanHandle(m *protocol.Message) bool
	// Inbound translates the outside protocol's bytes into one or more
	// envelopes.
	Inbound(ctx context.Context, raw []byte) ([]*protocol.Message, error)
	// Outbound translates an envelope into the outside protocol's bytes.
	Outbound(ctx context.Context, m *protocol.Message) ([]byte, error)
}

// Detector is an optional upgrade of an Adapter: it recognises the outside
// protocol's bytes without translating them, so that a Registry can pick
// the adapter for raw input. Detect must be cheap and must not panic.
type Detector interface {
	Detect(raw []byte) bool
}

// MetaSource is the meta key an adapter sets on inbound messages to name
// the protocol they came from ("clowl/0.2", "multiagent-1.0"), so that
// CanHandle can route answers back through the same adapter.
const MetaSource = "src"

// Source returns m's meta.src, "" when unset.
func Source(m *protocol.Message) string {
	s, _ := m.Meta[MetaSource].(string)
	return s
}

// Registry holds adapters by name and picks the one for a message or for
// raw bytes. It is safe for concurrent use.
type Registry struct {
	mu       sync.RWMutex
	adapters []Adapter // in the order added: the first that fits wins
}

// NewRegistry returns a registry holding the given adapters.
func NewRegistry(as ...Adapter) (*Registry, error) {
	r := &Registry{}
	for _, a := range as {
		if err := r.Add(a); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Add adds an adapter; its name must be new.
func (r *Registry) Add(a Adapter) error {
	if a == nil || a.Name() == "" {
		return &Error{Code: protocol.CodeInvalidField, Detail: "an adapter needs a name", Sentinel: ErrInvalidAdapter}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, b := range r.adapters {
		if b.Name() == a.Name() {
			return &Error{Adapter: a.Name(), Code: protocol.CodeConflict, Detail: "an adapter of that name is registered", Sentinel: ErrDuplicateAdapter}
		}
	}
	r.adapters = append(r.adapters, a)
	return nil
}

// Get returns the adapter with this name.
func (r *Registry) Get(name string) (Adapter, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	for _, a := range r.adapters {
		if a.Name() == name {
			return a, true
		}
	}
	return nil, false
}

// Names returns the names of the adapters, in the order added.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, len(r.adapters))
	for i, a := range r.adapters {
		out[i] = a.Name()
	}
	return out
}

// ForMessage returns the first adapter that can handle m outbound, or an
// error matching ErrNoAdapter.
func (r *Registry) ForMessage(m *protocol.Message) (Adapter, error) {
	r.mu.RLock()
	as := slices.Clone(r.adapters)
	r.mu.RUnlock()
	for _, a := range as {
		if a.CanHandle(m) {
			return a, nil
		}
	}
	return nil, &Error{Code: protocol.CodeUnsupportedTask, Detail: "no adapter handles " + string(m.Type) + " message " + m.ID, Sentinel: ErrNoAdapter}
}

// ForRaw returns the first adapter implementing Detector that recognises
// raw, or an error matching ErrNoAdapter.
func (r *Registry) ForRaw(raw []byte) (Adapter, error) {
	r.mu.RLock()
	as := slices.Clone(r.adapters)
	r.mu.RUnlock()
	for _, a := range as {
		if d, ok := a.(Detector); ok && d.Detect(raw) {
			return a, nil
		}
	}
	return nil, &Error{Code: protocol.CodeInvalidJSON, Detail: "no adapter recognises the input", Sentinel: ErrNoAdapter}
}

// Inbound picks the adapter for raw (ForRaw) and translates it.
func (r *Registry) Inbound(ctx context.Context, raw []byte) ([]*protocol.Message, Adapter, error) {
	a, err := r.ForRaw(raw)
	if err != nil {
		return nil, nil, err
	}
	msgs, err := a.Inbound(ctx, raw)
	return msgs, a, err
}

// Outbound picks the adapter for m (ForMessage) and translates it.
func (r *Registry) Outbound(ctx context.Context, m *protocol.Message) ([]byte, Adapter, error) {
	a, err := r.ForMessage(m)
	if err != nil {
		return nil, nil, err
	}
	b, err := a.Outbound(ctx, m)
	return b, a, err
}
