package registry

import (
	"context"
	"crypto/ed25519"
	"slices"

	"github.com/clutchprotocol/clutch/protocol"
)

// The key registry lives here, not in a package of its own, because an
// agent's keys are part of its AgentCard (security.keys): they change with
// the card's agent.register and agent.update events, so they are
// event-sourced with it, and a registration arriving as a message is
// checked against the keys of the very registry it changes.

// SignaturePolicy says which messages entering from outside must carry a
// valid Ed25519 signature (docs/protocol.md §6.1 "Enforcement"). It is
// applied by [Registry.Verify], [Registry.Admit] and the router's ingress.
type SignaturePolicy struct {
	// Types must be signed whoever sends them.
	Types []protocol.Type
	// PolicyRequests: a task.request carrying security.policy must be
	// signed.
	PolicyRequests bool
	// KeyedAgents: every message whose from.agent_id has a current key
	// must be signed.
	KeyedAgents bool
	// Agents: every message claiming one of these from.agent_id must be
	// signed, whether or not the agent has a key yet (without one, such
	// messages are refused).
	Agents []string
	// FirstUse lets the agent.register of an agent that never had a key
	// be signed by a key its own card lists (proof of possession). Off,
	// an agent registers from outside only with keys configured in
	// Options.Keys.
	FirstUse bool
}

// DefaultSignaturePolicy is the policy of a nil Options.Signatures:
// agent.register, agent.update and task.cancel, requests carrying a
// policy, and every message of a keyed agent must be signed.
var DefaultSignaturePolicy = SignaturePolicy{
	Types:          []protocol.Type{protocol.TypeAgentRegister, protocol.TypeAgentUpdate, protocol.TypeTaskCancel},
	PolicyRequests: true,
	KeyedAgents:    true,
}

// Requires reports whether the policy asks m to be signed; keyed says
// whether m's sender has a current key.
func (p *SignaturePolicy) Requires(m *protocol.Message, keyed bool) bool {
	switch {
	case keyed && p.KeyedAgents, slices.Contains(p.Types, m.Type), slices.Contains(p.Agents, m.From.AgentID):
		return true
	case p.PolicyRequests && m.Type == protocol.TypeTaskRequest:
		return m.Security != nil && m.Security.Policy != nil
	}
	return false
}

// keyring holds an agent's keys; it is never changed once published.
type keyring struct {
	agent string
	cur   map[string]ed25519.PublicKey // configured and current card keys
	all   map[string]ed25519.PublicKey // cur and every retired card key
}

// ResolveKey resolves a current kid of the agent (protocol.KeyResolver).
func (k *keyring) ResolveKey(kid string) (ed25519.PublicKey, error) {
	if pk, ok := k.cur[kid]; ok {
		return pk, nil
	}
	if _, ok := k.all[kid]; ok {
		return nil, unknownKey("kid " + quote(kid) + " of " + k.agent + " is retired")
	}
	return nil, unknownKey("kid " + quote(kid) + " is not a key of " + k.agent)
}

// allKeys resolves current and retired kids, for stored messages.
type allKeys keyring

func (k *allKeys) ResolveKey(kid string) (ed25519.PublicKey, error) {
	if pk, ok := k.all[kid]; ok {
		return pk, nil
	}
	return nil, unknownKey("kid " + quote(kid) + " was never a key of " + k.agent)
}

func unknownKey(detail string) error {
	return &protocol.Error{Code: protocol.CodeUnknownKey, Path: "/security/auth/kid", Offset: -1, Detail: detail}
}

func quote(s string) string { return `"` + s + `"` }

// Keys returns the resolver of agentID's current keys: its configured
// keys and those of its current card. A message signed with another
// agent's kid, or with a retired kid, does not resolve (UNKNOWN_KEY).
func (r *Registry) Keys(agentID string) protocol.KeyResolver {
	if k := r.keyring(agentID); k != nil {
		return k
	}
	return &keyring{agent: agentID}
}

// AllKeys returns the resolver of every key agentID ever had: current,
// configured and retired by a card update or removal. Use it to verify a
// message read back from the store, which was signed when its kid was
// current; use [Registry.Keys] for messages arriving now.
func (r *Registry) AllKeys(agentID string) protocol.KeyResolver {
	if k := r.keyring(agentID); k != nil {
		return (*allKeys)(k)
	}
	return &allKeys{agent: agentID}
}

// Keyed reports whether agentID has a current key.
func (r *Registry) Keyed(agentID string) bool {
	k := r.keyring(agentID)
	return k != nil && len(k.cur) > 0
}

func (r *Registry) keyring(agentID string) *keyring {
	r.mu.RLock()
	k := r.keys[agentID]
	r.mu.RUnlock()
	return k
}

// setKeys publishes agentID's keys for its new card (nil: removed, only
// the configured keys stay current); r.mu is held. A card key whose kid
// already named another key of the agent is skipped: a kid names one key
// forever, so that a stored message's kid keeps meaning the key that
// signed it (cardEvent and Admit refuse such a card before it is stored).
func (r *Registry) setKeys(agentID string, card *protocol.AgentCard) {
	old, conf := r.keys[agentID], r.conf[agentID]
	var cardKeys []protocol.CardKey
	if card != nil && card.Security != nil {
		cardKeys = card.Security.Keys
	}
	if old == nil && conf == nil && len(cardKeys) == 0 {
		return
	}
	k := &keyring{agent: agentID, cur: map[string]ed25519.PublicKey{}, all: map[string]ed25519.PublicKey{}}
	if old != nil {
		for kid, pk := range old.all {
			k.all[kid] = pk
		}
	}
	for kid, pk := range conf {
		k.cur[kid], k.all[kid] = pk, pk
	}
	for _, ck := range cardKeys {
		pk, err := ck.Ed25519()
		if err != nil {
			continue // Validate refused it for our own writes
		}
		if prev, ok := k.all[ck.Kid]; ok && !prev.Equal(pk) {
			continue
		}
		k.cur[ck.Kid], k.all[ck.Kid] = pk, pk
	}
	r.keys[agentID] = k
}

// checkKids refuses a card that would bind a kid the agent already has
// (configured, current or retired) to a different key.
func (r *Registry) checkKids(card *protocol.AgentCard) error {
	if card.Security == nil || len(card.Security.Keys) == 0 {
		return nil
	}
	k := r.keyring(card.AgentID)
	if k == nil {
		return nil
	}
	for _, ck := range card.Security.Keys {
		pk, err := ck.Ed25519()
		if err != nil {
			return wrap(ErrInvalidCard, "", err)
		}
		if prev, ok := k.all[ck.Kid]; ok && !prev.Equal(pk) {
			return wrap(ErrInvalidCard, "kid "+quote(ck.Kid)+" of "+card.AgentID+" already names another key; a kid names one key forever (docs/protocol.md §6.1)", nil)
		}
	}
	return nil
}

// Verify applies the signature policy (Options.Signatures) to m, a message
// that enters from outside, before anything about it is stored. A message
// the policy asks to be signed, or a signed message from a keyed agent,
// must carry a signature by a current key of its own from.agent_id over
// the bytes it arrived with ([protocol.Message.Raw]; a message without
// bytes is encoded first). An unsigned message the policy does not cover
// passes; so does a signed one from an agent without keys, whose
// signature nobody here can check.
//
// A refusal matches [ErrSignature]; protocol.CodeOf gives BAD_SIGNATURE
// (unsigned, malformed or wrong signature) or UNKNOWN_KEY (a kid that is
// not a current key of the sender).
func (r *Registry) Verify(m *protocol.Message) error {
	if m == nil {
		return wrap(ErrInvalidMessage, "nil message", nil)
	}
	from := m.From.AgentID
	var keys protocol.KeyResolver
	k := r.keyring(from)
	keyed := k != nil && len(k.cur) > 0
	if keyed {
		keys = k
	}
	signed := m.Security != nil && m.Security.Auth != nil
	p := r.opts.Signatures
	required := p.Requires(m, keyed)
	if !required && !(signed && keyed) {
		return nil
	}
	if !signed {
		return wrap(ErrSignature, from, &protocol.Error{Code: protocol.CodeBadSignature, Path: "/security/auth", Offset: -1,
			Detail: string(m.Type) + " from " + from + " must be signed"})
	}
	if k == nil && p.FirstUse && m.Type == protocol.TypeAgentRegister {
		// Proof of possession of a key the registering card lists.
		if card, err := protocol.DecodeAgentCard(m.Payload); err == nil && card.AgentID == from && card.Security != nil {
			own := protocol.StaticKeys{}
			for _, ck := range card.Security.Keys {
				if pk, err := ck.Ed25519(); err == nil {
					own[ck.Kid] = pk
				}
			}
			keys = own
		}
	}
	if keys == nil {
		return wrap(ErrSignature, from, unknownKey(from+" has no key"))
	}
	raw := m.Raw()
	if raw == nil {
		var err error
		if raw, err = protocol.Encode(m); err != nil {
			return wrap(ErrInvalidMessage, "", err)
		}
	}
	if err := protocol.Verify(raw, keys); err != nil {
		return wrap(ErrSignature, from, err)
	}
	return nil
}

// Admit applies a registry event that arrived from outside:
// agent.register, agent.update or agent.heartbeat sent by the agent
// itself, in the registry's run (Options.RunID). It checks the message
// ([Registry.Verify], then the card as Register and Update do) before
// anything is stored, then stores m as it arrived, so a signed
// registration stays verifiable in the log with [Registry.AllKeys]. A
// message may not claim to be Local. The agent's liveness counts from the
// registry's clock, or from the message's ts if that is earlier.
//
// Errors: [ErrSignature] for a refused signature, [ErrInvalidMessage] for
// another type, run or a meta.clutch_local claim, [ErrInvalidCard] and
// [ErrNotFound] as for Register, Update and Heartbeat.
func (r *Registry) Admit(ctx context.Context, m *protocol.Message) error {
	if m == nil {
		return wrap(ErrInvalidMessage, "nil message", nil)
	}
	if _, err := protocol.Encode(m); err != nil { // validates; keeps received bytes
		return wrap(ErrInvalidMessage, "", err)
	}
	switch {
	case m.Type != protocol.TypeAgentRegister && m.Type != protocol.TypeAgentUpdate && m.Type != protocol.TypeAgentHeartbeat:
		return wrap(ErrInvalidMessage, "Admit takes agent.register, agent.update and agent.heartbeat, not "+string(m.Type), nil)
	case m.RunID != r.opts.RunID:
		return wrap(ErrInvalidMessage, "registry events belong to run "+r.opts.RunID+", not "+m.RunID, nil)
	case m.Meta[metaLocal] != nil:
		return wrap(ErrInvalidMessage, "a message from outside cannot register a Local agent", nil)
	}
	var card *protocol.AgentCard
	if m.Type != protocol.TypeAgentHeartbeat {
		var err error
		if card, err = protocol.DecodeAgentCard(m.Payload); err != nil {
			return wrap(ErrInvalidCard, "", err)
		}
		if card.AgentID != m.From.AgentID {
			return wrap(ErrInvalidCard, "card of "+card.AgentID+" sent by "+m.From.AgentID, nil)
		}
	}
	at := r.opts.IDs.Now()
	if t, err := m.Time(); err == nil && t.Before(at) {
		at = t
	}
	verify := func() error { return r.Verify(m) }
	if m.Type == protocol.TypeAgentHeartbeat && r.pres != nil {
		// A beat, as Heartbeat: checked under the writers' lock like a write.
		r.wmu.Lock()
		err := verify()
		if _, ok := r.Get(m.From.AgentID); err == nil && !ok {
			err = wrap(ErrNotFound, m.From.AgentID, nil)
		}
		r.wmu.Unlock()
		if err != nil {
			return err
		}
		return r.beat(ctx, m.From.AgentID, false)
	}
	return r.writeAt(ctx, m, card, m.Type != protocol.TypeAgentRegister, at, verify)
}
