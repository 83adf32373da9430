package registry

import (
	"context"
	"fmt"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// Defaults of a zero Options.
const (
	DefaultHeartbeatTTL  = 30 * time.Second
	DefaultSuccessWindow = 32
	// DefaultRunID is the run_id of the registry's own events, so that
	// Open replays them through the store's run index instead of a scan.
	DefaultRunID = "run_registry"
)

// TypeRemove is the extension type of the event that removes an agent:
// seed 000 §2.4 has register, heartbeat and update but no removal.
const TypeRemove protocol.Type = "x.clutch.agent.remove"

// metaLocal marks, in an agent.register event, an agent that ran inside
// the registering process (its handler does not survive a restart).
const metaLocal = "clutch_local"

// Options configures a Registry. Nil means defaults; zero fields take
// defaults.
type Options struct {
	// HeartbeatTTL is how long an agent stays online after its last
	// register, update or heartbeat event. DefaultHeartbeatTTL when 0.
	HeartbeatTTL time.Duration
	// SuccessWindow is how many recent task outcomes make an agent's
	// success rate, 1 to 64. DefaultSuccessWindow when 0.
	SuccessWindow int
	// RunID is the run_id of registry events. DefaultRunID when "".
	RunID string
	// IDs makes event ids and timestamps and is the registry's clock;
	// protocol.DefaultIDs() when nil. Tests pass one with a fixed clock.
	IDs *protocol.IDs
}

func (o *Options) setDefaults() error {
	if o.HeartbeatTTL < 0 {
		return wrap(ErrInvalidOptions, "HeartbeatTTL must not be negative", nil)
	}
	if o.SuccessWindow < 0 || o.SuccessWindow > 64 {
		return wrap(ErrInvalidOptions, "SuccessWindow must be 1 to 64", nil)
	}
	if o.HeartbeatTTL == 0 {
		o.HeartbeatTTL = DefaultHeartbeatTTL
	}
	if o.SuccessWindow == 0 {
		o.SuccessWindow = DefaultSuccessWindow
	}
	if o.RunID == "" {
		o.RunID = DefaultRunID
	}
	if o.IDs == nil {
		o.IDs = protocol.DefaultIDs()
	}
	return nil
}

// Registry holds the AgentCards of a Clutch deployment (seed 000 §1.4),
// event-sourced from a store. It is safe for concurrent use.
type Registry struct {
	st   store.Store
	opts Options

	wmu sync.Mutex // serialises writers, so store order = apply order

	mu     sync.RWMutex
	agents map[string]*Agent
	byCap  map[string][]*Agent // capability id → agents, sorted by id
	stats  map[string]*stats   // survive card updates and re-registration
}

// Agent is one registered agent as the registry sees it. The card is
// shared and must not be modified; the counters are live.
type Agent struct {
	card     *protocol.AgentCard
	local    bool
	lastSeen atomic.Int64 // unix nanoseconds
	st       *stats
}

type stats struct {
	inFlight atomic.Int64
	mu       sync.Mutex
	outcomes uint64 // 1 bits are successes, newest in bit 0
	n        int
}

// ID returns the agent id ("agent:ken").
func (a *Agent) ID() string { return a.card.AgentID }

// Card returns the agent's card. Do not modify it.
func (a *Agent) Card() *protocol.AgentCard { return a.card }

// Local reports whether the agent runs in this process (registered with
// RegisterOptions.Local): it needs no heartbeats.
func (a *Agent) Local() bool { return a.local }

// LastSeen returns the time of the agent's last register, update or
// heartbeat.
func (a *Agent) LastSeen() time.Time { return time.Unix(0, a.lastSeen.Load()) }

// InFlight returns the number of tasks the agent is running now.
func (a *Agent) InFlight() int { return int(a.st.inFlight.Load()) }

// MaxConcurrency returns the card's limits.max_concurrency, 0 for none.
func (a *Agent) MaxConcurrency() int {
	if a.card.Limits == nil {
		return 0
	}
	return a.card.Limits.MaxConcurrency
}

// SuccessRate returns the share of the agent's recent tasks that
// succeeded, 1 when it has none yet.
func (a *Agent) SuccessRate() float64 {
	a.st.mu.Lock()
	defer a.st.mu.Unlock()
	if a.st.n == 0 {
		return 1
	}
	mask := uint64(1)<<a.st.n - 1
	if a.st.n == 64 {
		mask = ^uint64(0)
	}
	return float64(bits.OnesCount64(a.st.outcomes&mask)) / float64(a.st.n)
}

// Open returns a registry over st, rebuilt from the registry events
// already in it (event sourcing): agents come back with their latest card,
// and are online if their last event is within the heartbeat TTL. Agents
// that were Local to a previous process come back offline: their handler
// is gone until they register again. opts may be nil.
func Open(ctx context.Context, st store.Store, opts *Options) (*Registry, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	r := &Registry{
		st: st, opts: o,
		agents: map[string]*Agent{}, byCap: map[string][]*Agent{}, stats: map[string]*stats{},
	}
	for ev, err := range st.Read(ctx, store.Query{RunID: o.RunID}) {
		if err != nil {
			return nil, fmt.Errorf("registry: replay: %w", err)
		}
		m, err := ev.Message()
		if err != nil {
			return nil, wrap(ErrCorruptLog, fmt.Sprintf("event %d", ev.Seq), err)
		}
		if err := r.apply(m, ev.Time, true); err != nil {
			return nil, wrap(ErrCorruptLog, fmt.Sprintf("event %d", ev.Seq), err)
		}
	}
	return r, nil
}

// RegisterOptions qualifies a registration.
type RegisterOptions struct {
	// Local marks an agent that runs in this process: it is online for as
	// long as it stays registered, without heartbeats.
	Local bool
}

// Register records card as an agent.register event and makes the agent
// routable. Registering an agent id again replaces its card (an agent
// coming back online); its load and success counters carry over. opts may
// be nil.
func (r *Registry) Register(ctx context.Context, card *protocol.AgentCard, opts *RegisterOptions) error {
	if card == nil {
		return wrap(ErrInvalidCard, "nil card", nil)
	}
	local := opts != nil && opts.Local
	m, err := r.event(protocol.TypeAgentRegister, card.AgentID, card)
	if err != nil {
		return err
	}
	if local {
		m.Meta = map[string]any{metaLocal: true}
	}
	return r.write(ctx, m)
}

// Update records a changed card as an agent.update event (seed 000 §2.4
// "capability change"). The agent must be registered.
func (r *Registry) Update(ctx context.Context, card *protocol.AgentCard) error {
	if card == nil {
		return wrap(ErrInvalidCard, "nil card", nil)
	}
	if _, ok := r.Get(card.AgentID); !ok {
		return wrap(ErrNotFound, card.AgentID, nil)
	}
	m, err := r.event(protocol.TypeAgentUpdate, card.AgentID, card)
	if err != nil {
		return err
	}
	return r.write(ctx, m)
}

// Remove records an x.clutch.agent.remove event and forgets the agent.
// Tasks it is running are not affected.
func (r *Registry) Remove(ctx context.Context, agentID string) error {
	if _, ok := r.Get(agentID); !ok {
		return wrap(ErrNotFound, agentID, nil)
	}
	m, err := r.event(TypeRemove, agentID, map[string]string{"agent_id": agentID})
	if err != nil {
		return err
	}
	return r.write(ctx, m)
}

// Heartbeat records an agent.heartbeat event: the agent stays online for
// another HeartbeatTTL.
func (r *Registry) Heartbeat(ctx context.Context, agentID string) error {
	if _, ok := r.Get(agentID); !ok {
		return wrap(ErrNotFound, agentID, nil)
	}
	m, err := r.event(protocol.TypeAgentHeartbeat, agentID, map[string]string{"status": "ok"})
	if err != nil {
		return err
	}
	return r.write(ctx, m)
}

func (r *Registry) event(t protocol.Type, agentID string, payload any) (*protocol.Message, error) {
	if c, ok := payload.(*protocol.AgentCard); ok {
		if err := c.Validate(); err != nil {
			return nil, wrap(ErrInvalidCard, "", err)
		}
	}
	m := r.opts.IDs.NewMessage(t, agentID)
	m.RunID, m.ThreadID, m.TaskID = r.opts.RunID, "thr_registry", "task_registry"
	if err := m.SetPayload(payload); err != nil {
		return nil, wrap(ErrInvalidCard, "", err)
	}
	if err := m.Validate(); err != nil {
		// An agent id the card accepted but the envelope refuses.
		return nil, wrap(ErrInvalidCard, "", err)
	}
	return m, nil
}

// write appends m and applies it, in that order, one writer at a time.
func (r *Registry) write(ctx context.Context, m *protocol.Message) error {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	res, err := r.st.Append(ctx, m)
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	ev, err := r.st.Get(ctx, m.ID)
	if err != nil || res[0].Duplicate {
		// Ids are fresh; a duplicate means someone else wrote it. Apply it
		// with the time we have.
		return r.apply(m, r.opts.IDs.Now(), false)
	}
	return r.apply(m, ev.Time, false)
}

// apply changes the in-memory state for one registry event.
func (r *Registry) apply(m *protocol.Message, at time.Time, replay bool) error {
	id := m.From.AgentID
	switch m.Type {
	case protocol.TypeAgentRegister, protocol.TypeAgentUpdate:
		card, err := protocol.DecodeAgentCard(m.Payload)
		if err != nil {
			return err
		}
		if card.AgentID != id {
			return fmt.Errorf("card of %s sent by %s", card.AgentID, id)
		}
		local := false
		if m.Type == protocol.TypeAgentRegister {
			local, _ = m.Meta[metaLocal].(bool)
		} else if old, ok := r.Get(id); ok {
			local = old.local
		}
		a := &Agent{card: card, local: local && !replay}
		if local && replay {
			// The process that ran it is gone: offline until it registers
			// again.
			a.lastSeen.Store(0)
		} else {
			a.lastSeen.Store(at.UnixNano())
		}
		r.mu.Lock()
		st := r.stats[id]
		if st == nil {
			st = &stats{}
			r.stats[id] = st
		}
		a.st = st
		if old := r.agents[id]; old != nil {
			r.unindex(old)
		}
		r.agents[id] = a
		for _, c := range card.Capabilities {
			l := r.byCap[c.ID]
			i, _ := slices.BinarySearchFunc(l, id, func(x *Agent, id string) int { return cmpString(x.ID(), id) })
			r.byCap[c.ID] = slices.Insert(l, i, a)
		}
		r.mu.Unlock()
	case TypeRemove:
		r.mu.Lock()
		if old := r.agents[id]; old != nil {
			r.unindex(old)
			delete(r.agents, id)
		}
		r.mu.Unlock()
	case protocol.TypeAgentHeartbeat:
		r.mu.RLock()
		a := r.agents[id]
		r.mu.RUnlock()
		if a != nil && !(replay && a.local) {
			a.lastSeen.Store(at.UnixNano())
		}
	default:
		// Other events in the registry's run are not the registry's.
	}
	return nil
}

// unindex removes a from the capability index; r.mu is held.
func (r *Registry) unindex(a *Agent) {
	for _, c := range a.card.Capabilities {
		l := r.byCap[c.ID]
		if i := slices.Index(l, a); i >= 0 {
			l = slices.Delete(l, i, i+1)
		}
		if len(l) == 0 {
			delete(r.byCap, c.ID)
		} else {
			r.byCap[c.ID] = l
		}
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// Get returns the registered agent with this id.
func (r *Registry) Get(agentID string) (*Agent, bool) {
	r.mu.RLock()
	a, ok := r.agents[agentID]
	r.mu.RUnlock()
	return a, ok
}

// List returns every registered agent, online or not, sorted by id.
func (r *Registry) List() []*Agent {
	r.mu.RLock()
	out := make([]*Agent, 0, len(r.agents))
	for _, a := range r.agents {
		out = append(out, a)
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b *Agent) int { return cmpString(a.ID(), b.ID()) })
	return out
}

// Online reports whether a can be routed to now: it is registered Local,
// or its last event is no older than the heartbeat TTL.
func (r *Registry) Online(a *Agent) bool {
	if a.local {
		return true
	}
	last := a.lastSeen.Load()
	return last != 0 && r.opts.IDs.Now().UnixNano()-last <= int64(r.opts.HeartbeatTTL)
}

// Candidates returns the registered agents that have every capability id
// in requires (seed 000 §4.2 step 2, AND semantics), online or not, sorted
// by id. It reads the capability index, so its cost follows the smallest
// matching set, not the number of agents. With no requires it returns
// every agent.
func (r *Registry) Candidates(requires []string) []*Agent {
	if len(requires) == 0 {
		return r.List()
	}
	r.mu.RLock()
	defer r.mu.RUnlock()
	base := r.byCap[requires[0]]
	for _, c := range requires[1:] {
		if l := r.byCap[c]; len(l) < len(base) {
			base = l
		}
	}
	out := make([]*Agent, 0, len(base))
outer:
	for _, a := range base {
		for _, c := range requires {
			if _, ok := a.card.Capability(c); !ok {
				continue outer
			}
		}
		out = append(out, a)
	}
	return out
}

// TryAcquire counts one more task in flight for a, unless that would pass
// its limits.max_concurrency; it reports whether it did.
func (r *Registry) TryAcquire(a *Agent) bool {
	limit := int64(a.MaxConcurrency())
	for {
		n := a.st.inFlight.Load()
		if limit > 0 && n >= limit {
			return false
		}
		if a.st.inFlight.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// Release ends a task counted by TryAcquire and records its outcome for
// the success rate.
func (r *Registry) Release(a *Agent, success bool) {
	a.st.inFlight.Add(-1)
	a.st.mu.Lock()
	a.st.outcomes <<= 1
	if success {
		a.st.outcomes |= 1
	}
	if a.st.n < r.opts.SuccessWindow {
		a.st.n++
	}
	a.st.mu.Unlock()
}

// HeartbeatTTL returns the TTL in force.
func (r *Registry) HeartbeatTTL() time.Duration { return r.opts.HeartbeatTTL }
