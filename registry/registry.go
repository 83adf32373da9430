package registry

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"maps"
	"math/bits"
	"slices"
	"strings"
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
// docs/protocol.md §2.4 has register, heartbeat and update but no removal.
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
	// IDs makes event ids and timestamps and is the registry's clock, the
	// one liveness is measured with. When nil, the registry makes its own
	// IDs on the store's clock (store.ClockOf; every in-tree store has
	// one, its Options.Clock), or uses protocol.DefaultIDs() for a store
	// without a clock. A router takes the registry's IDs by default, so
	// one clock, set on the store, serves store, registry and router.
	IDs *protocol.IDs
	// Keys are public signing keys the host vouches for, by agent id, in
	// addition to those of the agents' cards (docs/protocol.md §6.1
	// "Keys"). They stay current whatever the cards say.
	Keys map[string][]protocol.CardKey
	// Signatures says which messages from outside must be signed;
	// DefaultSignaturePolicy when nil.
	Signatures *SignaturePolicy
	// PollInterval is how often a Shared registry's Follow, over a store
	// with store.Presence, reads the beats of the other processes and
	// stores the offline events of the lapses it finds; a quarter of
	// HeartbeatTTL when 0.
	PollInterval time.Duration
	// Shared says that several processes share the store, each with its
	// own registry kept current by [Registry.Follow]: an agent registered
	// Local by a process is, for every other registry (and for this one
	// after a restart), online while its heartbeats keep coming, instead
	// of gone until it registers again. See shared.go.
	Shared bool
}

func (o *Options) setDefaults(st store.Store) error {
	if o.HeartbeatTTL < 0 {
		return wrap(ErrInvalidOptions, "HeartbeatTTL must not be negative", nil)
	}
	if o.SuccessWindow < 0 || o.SuccessWindow > 64 {
		return wrap(ErrInvalidOptions, "SuccessWindow must be 1 to 64", nil)
	}
	if len(o.RunID) > protocol.MaxIDLength {
		return wrap(ErrInvalidOptions, "RunID is longer than protocol.MaxIDLength", nil)
	}
	if o.PollInterval < 0 {
		return wrap(ErrInvalidOptions, "PollInterval must not be negative", nil)
	}
	if o.HeartbeatTTL == 0 {
		o.HeartbeatTTL = DefaultHeartbeatTTL
	}
	if o.PollInterval == 0 {
		o.PollInterval = o.HeartbeatTTL / 4
	}
	if o.SuccessWindow == 0 {
		o.SuccessWindow = DefaultSuccessWindow
	}
	if o.RunID == "" {
		o.RunID = DefaultRunID
	}
	if o.IDs == nil {
		if clock := store.ClockOf(st); clock != nil {
			o.IDs = protocol.NewIDs(&protocol.IDOptions{Clock: clock})
		} else {
			o.IDs = protocol.DefaultIDs()
		}
	}
	if o.Signatures == nil {
		o.Signatures = &DefaultSignaturePolicy
	}
	p := *o.Signatures // a copy: the caller's policy may change later
	p.Types, p.Agents = slices.Clone(p.Types), slices.Clone(p.Agents)
	o.Signatures = &p
	for id, keys := range o.Keys {
		if !strings.HasPrefix(id, protocol.PrefixAgent) {
			return wrap(ErrInvalidOptions, "Keys: "+id+" is not an agent id", nil)
		}
		for i, k := range keys {
			if _, err := k.Ed25519(); err != nil {
				return wrap(ErrInvalidOptions, fmt.Sprintf("Keys[%s][%d]", id, i), err)
			}
			for _, o := range keys[:i] {
				if o.Kid == k.Kid {
					return wrap(ErrInvalidOptions, fmt.Sprintf("Keys[%s]: kid %q twice", id, k.Kid), nil)
				}
			}
		}
	}
	return nil
}

// Registry holds the AgentCards of a Clutch deployment (docs/protocol.md §1.4),
// event-sourced from a store. It is safe for concurrent use.
type Registry struct {
	st   store.Store
	pres store.Presence // st's, nil without: heartbeats are events then (presence.go)
	opts Options

	wmu sync.Mutex // serialises writers, so store order = apply order

	synced uint64              // seq of the last registry event applied from the store (Open, Follow)
	own    map[uint64]struct{} // seqs of this registry's writes Follow has not passed yet; guarded by wmu

	mu     sync.RWMutex
	agents map[string]*Agent
	stats  map[string]*stats // survive card updates and re-registration
	keys   map[string]*keyring
	conf   map[string]map[string]ed25519.PublicKey // Options.Keys, decoded

	// byCap is the capability index: capability id → agents, sorted by
	// id. Every routing reads it and few events change it, so it is read
	// without a lock: each shard's map and lists are never changed once
	// published; a change (under mu) publishes a new map for the shard of
	// each capability it touches, with a new list for that capability.
	// Shards keep the copies small when there are many capabilities.
	byCap [capShards]atomic.Pointer[map[string][]*Agent]
}

const capShards = 64

func capShard(c string) int {
	h := uint32(2166136261) // FNV-1a
	for i := 0; i < len(c); i++ {
		h = (h ^ uint32(c[i])) * 16777619
	}
	return int(h % capShards)
}

// capList returns the agents with capability c, sorted by id; read-only.
func (r *Registry) capList(c string) []*Agent { return (*r.byCap[capShard(c)].Load())[c] }

// setCapList publishes l as the agents with capability c (none: l empty);
// r.mu is held.
func (r *Registry) setCapList(c string, l []*Agent) {
	sh := &r.byCap[capShard(c)]
	next := maps.Clone(*sh.Load())
	if len(l) == 0 {
		delete(next, c)
	} else {
		next[c] = l
	}
	sh.Store(&next)
}

// Agent is one registered agent as the registry sees it. The card is
// shared and must not be modified; the counters are live.
type Agent struct {
	card  *protocol.AgentCard
	local bool
	// regLocal is the Local of the agent's last registration in the log,
	// whichever process wrote it: Register compares it to tell a
	// registration the log already holds.
	regLocal bool
	// gone marks an agent registered Local by an earlier process: its
	// handler died with that process, so replayed updates and heartbeats
	// must not bring it back online; only a new registration does.
	gone     bool
	caps     []string     // the card's capability ids, each once
	lastSeen atomic.Int64 // unix nanoseconds; 0 for never
	offline  atomic.Int64 // the lastSeen the last offline event covers (presence.go)
	st       *stats
}

// has reports whether the agent has capability id. Cards list a few
// capabilities, so a scan beats a map; it also avoids copying
// protocol.Capability values as AgentCard.Capability does.
func (a *Agent) has(id string) bool { return slices.Contains(a.caps, id) }

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

// LastSeen returns the ts of the agent's last register, update or
// heartbeat event, or the zero Time for an agent that was Local to an
// earlier process and has not registered since.
func (a *Agent) LastSeen() time.Time {
	n := a.lastSeen.Load()
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

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
	if err := o.setDefaults(st); err != nil {
		return nil, err
	}
	r := &Registry{
		st: st, pres: store.PresenceOf(st), opts: o,
		agents: map[string]*Agent{}, stats: map[string]*stats{},
		keys: map[string]*keyring{}, conf: map[string]map[string]ed25519.PublicKey{},
	}
	if o.Shared {
		r.own = map[uint64]struct{}{}
	}
	for id, keys := range o.Keys {
		c := map[string]ed25519.PublicKey{}
		for _, k := range keys {
			c[k.Kid], _ = k.Ed25519()
		}
		r.conf[id] = c
		r.setKeys(id, nil)
	}
	for i := range r.byCap {
		r.byCap[i].Store(&map[string][]*Agent{})
	}
	for ev, err := range st.Read(ctx, store.Query{RunID: o.RunID}) {
		if err != nil {
			return nil, fmt.Errorf("registry: replay: %w", err)
		}
		m, err := ev.Message()
		if err != nil {
			return nil, &CorruptEventError{Seq: ev.Seq, Err: err}
		}
		if err := r.apply(m, nil, eventTime(m, ev.Time), true); err != nil {
			return nil, &CorruptEventError{Seq: ev.Seq, Err: err}
		}
		r.synced = ev.Seq
	}
	if r.pres != nil {
		if err := r.refresh(ctx); err != nil {
			return nil, err
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
// be nil. An empty card.V means [protocol.Version]; the caller's card is
// not modified.
//
// A registration the registry already holds (the same Local, and a card
// whose canonical JSON, RFC 8785 as docs/protocol.md §6.1 signs it, equals
// that of the card held, from this process or from the log) is not
// stored again, so a process that registers its agents at every start
// does not grow the log: a Local agent is online again in this process
// and nothing is appended; a remote agent counts as alive, so its
// registration is stored as an agent.heartbeat.
func (r *Registry) Register(ctx context.Context, card *protocol.AgentCard, opts *RegisterOptions) error {
	m, dec, err := r.cardEvent(protocol.TypeAgentRegister, card)
	if err != nil {
		return err
	}
	local := opts != nil && opts.Local
	if local {
		m.Meta = map[string]any{metaLocal: true}
	}
	at := eventTime(m, r.opts.IDs.Now())
	r.wmu.Lock()
	if a, ok := r.Get(dec.AgentID); ok && a.regLocal == local && sameCard(a.card, m.Payload) {
		if local {
			err := r.apply(m, dec, at, false) // online again here; the log says the rest already
			r.wmu.Unlock()
			if err == nil && r.pres != nil {
				err = r.beat(ctx, dec.AgentID, true)
			}
			return err
		}
		if r.pres != nil {
			r.wmu.Unlock()
			return r.beat(ctx, dec.AgentID, false) // alive: a heartbeat
		}
		defer r.wmu.Unlock()
		hb, err := r.event(protocol.TypeAgentHeartbeat, dec.AgentID, map[string]string{"status": "ok"})
		if err != nil {
			return wrap(ErrInvalidCard, "", err)
		}
		return r.writeLocked(ctx, hb, nil, true, eventTime(hb, at), nil)
	}
	err = r.writeLocked(ctx, m, dec, false, at, nil)
	r.wmu.Unlock()
	if err == nil && r.pres != nil {
		err = r.beat(ctx, dec.AgentID, true) // its first sign of life, for the others
	}
	return err
}

// sameCard reports whether held and the encoded card payload have equal
// canonical JSON.
func sameCard(held *protocol.AgentCard, payload []byte) bool {
	b, err := protocol.EncodeAgentCard(held)
	if err != nil {
		return false
	}
	x, err1 := protocol.Canonical(b)
	y, err2 := protocol.Canonical(payload)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// Update records a changed card as an agent.update event (docs/protocol.md §2.4
// "capability change"). The agent must be registered; it keeps being
// Local if it was. An empty card.V means [protocol.Version].
func (r *Registry) Update(ctx context.Context, card *protocol.AgentCard) error {
	m, dec, err := r.cardEvent(protocol.TypeAgentUpdate, card)
	if err != nil {
		return err
	}
	err = r.write(ctx, m, dec, true)
	if err == nil && r.pres != nil {
		err = r.beat(ctx, dec.AgentID, true)
	}
	return err
}

// Remove records an x.clutch.agent.remove event and forgets the agent.
// Tasks it is running are not affected, and its counters are kept for a
// later registration under the same id.
func (r *Registry) Remove(ctx context.Context, agentID string) error {
	m, err := r.event(TypeRemove, agentID, map[string]string{"agent_id": agentID})
	if err != nil {
		return wrap(ErrNotFound, agentID, nil) // not a valid agent id, so not registered
	}
	return r.write(ctx, m, nil, true)
}

// Heartbeat keeps the agent online for another HeartbeatTTL. Over a store
// with [store.Presence] it is a beat, not an event: only a change is
// stored (the agent coming online, after the offline event of its lapse;
// see "Events" in the package doc). Over any other store it appends an
// agent.heartbeat event.
func (r *Registry) Heartbeat(ctx context.Context, agentID string) error {
	if r.pres != nil {
		if _, ok := r.Get(agentID); !ok {
			return wrap(ErrNotFound, agentID, nil)
		}
		return r.beat(ctx, agentID, false)
	}
	m, err := r.event(protocol.TypeAgentHeartbeat, agentID, map[string]string{"status": "ok"})
	if err != nil {
		return wrap(ErrNotFound, agentID, nil)
	}
	return r.write(ctx, m, nil, true)
}

// cardEvent makes the event of a register or update, and decodes its
// payload back the way Open will, so that a card the log could not replay
// is refused before it is stored, and the registry keeps its own copy.
func (r *Registry) cardEvent(t protocol.Type, card *protocol.AgentCard) (*protocol.Message, *protocol.AgentCard, error) {
	if card == nil {
		return nil, nil, wrap(ErrInvalidCard, "nil card", nil)
	}
	if card.V == "" {
		c := *card // the caller's card stays as it is
		c.V = protocol.Version
		card = &c
	}
	if err := card.Validate(); err != nil {
		return nil, nil, wrap(ErrInvalidCard, "", err)
	}
	if err := r.checkKids(card); err != nil {
		return nil, nil, err
	}
	m, err := r.event(t, card.AgentID, card)
	if err != nil {
		return nil, nil, wrap(ErrInvalidCard, "", err)
	}
	dec, err := protocol.DecodeAgentCard(m.Payload)
	if err != nil {
		return nil, nil, wrap(ErrInvalidCard, "", err)
	}
	return m, dec, nil
}

func (r *Registry) event(t protocol.Type, agentID string, payload any) (*protocol.Message, error) {
	m := r.opts.IDs.NewMessage(t, agentID)
	m.RunID, m.ThreadID, m.TaskID = r.opts.RunID, "thr_registry", "task_registry"
	if err := m.SetPayload(payload); err != nil {
		return nil, err
	}
	// Catches an agent id the card accepted but the envelope refuses.
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return m, nil
}

// write appends m and applies it, in that order, one writer at a time, so
// that the in-memory state is what replaying the log gives. mustExist is
// checked under the same lock: a concurrent Remove cannot slip between
// the check and the append.
func (r *Registry) write(ctx context.Context, m *protocol.Message, card *protocol.AgentCard, mustExist bool) error {
	return r.writeAt(ctx, m, card, mustExist, eventTime(m, r.opts.IDs.Now()), nil)
}

// writeAt is write with the time liveness counts from, and a check (nil:
// none) that runs under the writers' lock, before the append: a signature
// checked there cannot be by a key a concurrent update just retired.
func (r *Registry) writeAt(ctx context.Context, m *protocol.Message, card *protocol.AgentCard, mustExist bool, at time.Time, check func() error) error {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	return r.writeLocked(ctx, m, card, mustExist, at, check)
}

// writeLocked is writeAt with the writers' lock held.
func (r *Registry) writeLocked(ctx context.Context, m *protocol.Message, card *protocol.AgentCard, mustExist bool, at time.Time, check func() error) error {
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	if mustExist {
		if _, ok := r.Get(m.From.AgentID); !ok {
			return wrap(ErrNotFound, m.From.AgentID, nil)
		}
	}
	if card != nil {
		// Checked again under the writers' lock: a concurrent write may
		// have bound one of the card's kids since cardEvent.
		if err := r.checkKids(card); err != nil {
			return err
		}
	}
	res, err := r.st.Append(ctx, m)
	if err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	if res[0].Duplicate {
		// Not stored, so not applied: the registry stays what a replay gives.
		return wrap(ErrDuplicateEvent, fmt.Sprintf("%s is seq %d", m.ID, res[0].Seq), nil)
	}
	if r.own != nil {
		r.own[res[0].Seq] = struct{}{} // applied here: Follow skips it
	}
	return r.apply(m, card, at, false)
}

// eventTime is the time liveness counts from: the event's ts, which the
// writing registry took from its IDs clock, the clock Online compares with.
// (The store's append time comes from another clock.)
func eventTime(m *protocol.Message, fallback time.Time) time.Time {
	if t, err := m.Time(); err == nil {
		return t
	}
	return fallback
}

// apply changes the in-memory state for one registry event. card is the
// decoded payload of a register or update, nil to decode it here.
func (r *Registry) apply(m *protocol.Message, card *protocol.AgentCard, at time.Time, replay bool) error {
	id := m.From.AgentID
	switch m.Type {
	case protocol.TypeAgentRegister, protocol.TypeAgentUpdate:
		if card == nil {
			var err error
			if card, err = protocol.DecodeAgentCard(m.Payload); err != nil {
				return err
			}
		}
		if card.AgentID != id {
			return fmt.Errorf("card of %s sent by %s", card.AgentID, id)
		}
		a := &Agent{card: card, caps: make([]string, 0, len(card.Capabilities))}
		for _, c := range card.Capabilities {
			if !slices.Contains(a.caps, c.ID) {
				a.caps = append(a.caps, c.ID) // a card may list an id twice
			}
		}
		if m.Type == protocol.TypeAgentRegister {
			local, _ := m.Meta[metaLocal].(bool)
			// The process that ran a replayed Local agent is gone: offline
			// until it registers again. In a shared store it may be
			// another process, alive: online while it heartbeats.
			a.local, a.gone = local && !replay, local && replay && !r.opts.Shared
			a.regLocal = local
		} else {
			old, ok := r.Get(id)
			if !ok {
				// Only a foreign writer can update an agent that is not
				// registered; Update refuses it.
				return nil
			}
			a.local, a.gone, a.regLocal = old.local, old.gone, old.regLocal
		}
		if !a.gone {
			a.lastSeen.Store(at.UnixNano())
		}
		r.mu.Lock()
		st := r.stats[id]
		if st == nil {
			st = &stats{}
			r.stats[id] = st
		}
		a.st = st
		r.reindex(r.agents[id], a)
		r.agents[id] = a
		r.setKeys(id, card)
		r.mu.Unlock()
	case TypeRemove:
		r.mu.Lock()
		if old := r.agents[id]; old != nil {
			r.reindex(old, nil)
			delete(r.agents, id)
			r.setKeys(id, nil) // its card keys retire; configured ones stay
		}
		r.mu.Unlock()
	case protocol.TypeAgentHeartbeat:
		if a, ok := r.Get(id); ok && !a.gone {
			if r.pres != nil {
				storeMax(&a.lastSeen, at.UnixNano()) // a beat may be newer
			} else {
				a.lastSeen.Store(at.UnixNano())
			}
		}
	case TypeOffline:
		r.applyOffline(m)
	default:
		// Other events in the registry's run are not the registry's.
	}
	return nil
}

// reindex replaces agent old (nil: none) by agent a (nil: none, a
// removal) of the same id in the capability index; r.mu is held. Each
// capability's list is published once, with old out and a in: a reader
// never sees a list without the agent while its card is replaced by one
// that keeps the capability (readers take no lock, see byCap).
func (r *Registry) reindex(old, a *Agent) {
	var caps []string
	if old != nil {
		caps = append(caps, old.caps...)
	}
	if a != nil {
		for _, c := range a.caps {
			if !slices.Contains(caps, c) {
				caps = append(caps, c)
			}
		}
	}
	for _, c := range caps {
		l := slices.Clone(r.capList(c)) // a new array: readers may hold the old one
		if old != nil {
			if i, found := slices.BinarySearchFunc(l, old.ID(), byID); found && l[i] == old {
				l = slices.Delete(l, i, i+1)
			}
		}
		if a != nil && a.has(c) {
			i, _ := slices.BinarySearchFunc(l, a.ID(), byID)
			l = slices.Insert(l, i, a)
		}
		r.setCapList(c, l)
	}
}

func byID(a *Agent, id string) int { return strings.Compare(a.ID(), id) }

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
	slices.SortFunc(out, func(a, b *Agent) int { return strings.Compare(a.ID(), b.ID()) })
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
// in requires (docs/protocol.md §4.2 step 2, AND semantics), online or not, sorted
// by id. It reads the capability index, so its cost follows the smallest
// matching set, not the number of agents. With no requires it returns
// every agent.
func (r *Registry) Candidates(requires []string) []*Agent {
	return r.AppendCandidates(nil, requires)
}

// AppendCandidates is Candidates appending to dst: a caller routing task
// after task reuses one slice.
func (r *Registry) AppendCandidates(dst []*Agent, requires []string) []*Agent {
	if len(requires) == 0 {
		if dst == nil {
			return r.List() // already a copy
		}
		return append(dst, r.List()...)
	}
	base, rest := r.capList(requires[0]), requires[1:]
	for _, c := range rest {
		if l := r.capList(c); len(l) < len(base) {
			base = l
		}
	}
	if len(rest) == 0 {
		return append(dst, base...) // a new slice, even when dst is nil and base is not
	}
	out := dst
	if out == nil {
		// An AND of several capabilities usually keeps few of base: start
		// small rather than allocate for all of them.
		out = make([]*Agent, 0, min(len(base), 16))
	}
outer:
	for _, a := range base {
		for _, c := range requires {
			if !a.has(c) {
				continue outer
			}
		}
		out = append(out, a)
	}
	return out
}

// TryAcquire counts one more task in flight for a, unless that would pass
// its limits.max_concurrency (0: no limit); it reports whether it did. The
// limit is that of a's card: Get the agent again after an Update.
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
// the success rate. Like sync.WaitGroup, it panics when there is no task
// to end: a negative count would let TryAcquire pass the limit.
func (r *Registry) Release(a *Agent, success bool) {
	if a.st.inFlight.Add(-1) < 0 {
		a.st.inFlight.Add(1)
		panic("registry: Release without a matching TryAcquire")
	}
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

// IDs returns the registry's id source and clock (Options.IDs, or the
// default Open chose); a router uses it when its own Options.IDs is nil.
func (r *Registry) IDs() *protocol.IDs { return r.opts.IDs }

// HeartbeatTTL returns the TTL in force.
func (r *Registry) HeartbeatTTL() time.Duration { return r.opts.HeartbeatTTL }
