package registry_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/store"
	"github.com/stretchr/testify/require"
)

// testKey returns a deterministic Ed25519 key pair made from one byte.
func testKey(b byte) (ed25519.PublicKey, ed25519.PrivateKey) {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = b
	}
	priv := ed25519.NewKeyFromSeed(seed)
	return priv.Public().(ed25519.PublicKey), priv
}

func keyedCard(id string, keys ...protocol.CardKey) *protocol.AgentCard {
	c := card(id, "skill:x")
	if len(keys) > 0 {
		c.Security = &protocol.CardSecurity{Keys: keys}
	}
	return c
}

// cardMessage returns an agent.* message of the registry's run from the
// card's agent, signed with priv under kid unless priv is nil, decoded
// from its bytes as a surface would.
func cardMessage(t *testing.T, c *clock, typ protocol.Type, cd *protocol.AgentCard, kid string, priv ed25519.PrivateKey) *protocol.Message {
	t.Helper()
	m := c.ids.NewMessage(typ, cd.AgentID)
	m.RunID, m.ThreadID, m.TaskID = registry.DefaultRunID, "thr_registry", "task_registry"
	var payload any = cd
	if typ == protocol.TypeAgentHeartbeat {
		payload = map[string]string{"status": "ok"}
	}
	require.NoError(t, m.SetPayload(payload))
	if priv != nil {
		require.NoError(t, protocol.Sign(m, kid, priv))
	} else {
		_, err := protocol.Encode(m)
		require.NoError(t, err)
	}
	d, err := protocol.Decode(m.Raw())
	require.NoError(t, err)
	return d
}

func eventCount(t *testing.T, st store.Store) uint64 {
	t.Helper()
	n, err := st.LastSeq(context.Background())
	require.NoError(t, err)
	return n
}

func TestAdmitRefusesBadSignatures(t *testing.T) {
	ctx := context.Background()
	pubA, privA := testKey(1)
	_, privB := testKey(2)
	pubB := privB.Public().(ed25519.PublicKey)
	_, privX := testKey(3)
	c := newClock()
	st := newStore(t)
	reg := open(t, st, c, &registry.Options{Keys: map[string][]protocol.CardKey{
		"agent:a": {protocol.NewCardKey("ka", pubA)},
		"agent:b": {protocol.NewCardKey("kb", pubB)},
	}})
	cd := keyedCard("agent:a")
	tampered := cardMessage(t, c, protocol.TypeAgentRegister, cd, "ka", privA)
	raw := bytes.Replace(tampered.Raw(), []byte("skill:x"), []byte("skill:y"), 1)
	cases := map[string]struct {
		m    *protocol.Message
		code protocol.Code
	}{
		"unsigned":          {cardMessage(t, c, protocol.TypeAgentRegister, cd, "", nil), protocol.CodeBadSignature},
		"wrong key":         {cardMessage(t, c, protocol.TypeAgentRegister, cd, "ka", privX), protocol.CodeBadSignature},
		"unknown kid":       {cardMessage(t, c, protocol.TypeAgentRegister, cd, "k-other", privA), protocol.CodeUnknownKey},
		"other agent's kid": {cardMessage(t, c, protocol.TypeAgentRegister, cd, "kb", privB), protocol.CodeUnknownKey},
	}
	if m, err := protocol.Decode(raw); err == nil {
		cases["tampered"] = struct {
			m    *protocol.Message
			code protocol.Code
		}{m, protocol.CodeBadSignature}
	} else {
		t.Fatalf("tampered message does not decode: %v", err)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := reg.Admit(ctx, tc.m)
			require.ErrorIs(t, err, registry.ErrSignature)
			require.Equal(t, tc.code, protocol.CodeOf(err), "%v", err)
			require.Zero(t, eventCount(t, st), "nothing is stored")
			_, ok := reg.Get("agent:a")
			require.False(t, ok)
		})
	}

	good := cardMessage(t, c, protocol.TypeAgentRegister, cd, "ka", privA)
	require.NoError(t, reg.Admit(ctx, good))
	_, ok := reg.Get("agent:a")
	require.True(t, ok)
	// Stored as received: the signed bytes still verify.
	for ev, err := range st.Read(ctx, store.Query{}) {
		require.NoError(t, err)
		require.Equal(t, good.Raw(), ev.Raw)
		require.NoError(t, protocol.Verify(ev.Raw, reg.AllKeys("agent:a")))
	}
}

func TestAdmitRefusesOtherMessages(t *testing.T) {
	ctx := context.Background()
	pub, priv := testKey(1)
	c := newClock()
	st := newStore(t)
	reg := open(t, st, c, &registry.Options{Keys: map[string][]protocol.CardKey{"agent:a": {protocol.NewCardKey("ka", pub)}}})
	otherRun := c.ids.NewMessage(protocol.TypeAgentRegister, "agent:a")
	require.NoError(t, otherRun.SetPayload(keyedCard("agent:a")))
	require.NoError(t, protocol.Sign(otherRun, "ka", priv))
	local := cardMessage(t, c, protocol.TypeAgentRegister, keyedCard("agent:a"), "", nil)
	local.Meta = map[string]any{"clutch_local": true}
	local.Reset()
	require.NoError(t, protocol.Sign(local, "ka", priv))
	result := c.ids.NewMessage(protocol.TypeTaskResult, "agent:a")
	for name, m := range map[string]*protocol.Message{"other run": otherRun, "local claim": local, "task.result": result} {
		err := reg.Admit(ctx, m)
		require.ErrorIs(t, err, registry.ErrInvalidMessage, name)
	}
	// A card of another agent, signed by a's key.
	stolen := cardMessage(t, c, protocol.TypeAgentRegister, keyedCard("agent:b"), "ka", priv)
	stolen.From.AgentID = "agent:a"
	stolen.Reset()
	require.NoError(t, protocol.Sign(stolen, "ka", priv))
	require.ErrorIs(t, reg.Admit(ctx, stolen), registry.ErrInvalidCard)
	require.Zero(t, eventCount(t, st))
}

// TestKeyRotation: a card update that drops a kid retires it: new messages
// signed with it are refused, messages stored while it was current still
// verify with AllKeys, and a reopened registry agrees.
func TestKeyRotation(t *testing.T) {
	ctx := context.Background()
	pub1, priv1 := testKey(1)
	pub2, priv2 := testKey(2)
	c := newClock()
	st := newStore(t)
	reg := open(t, st, c, &registry.Options{Signatures: &registry.SignaturePolicy{FirstUse: true, KeyedAgents: true,
		Types: []protocol.Type{protocol.TypeAgentRegister, protocol.TypeAgentUpdate}}})

	// First use: the card's own key signs its registration.
	reg1 := cardMessage(t, c, protocol.TypeAgentRegister, keyedCard("agent:a", protocol.NewCardKey("k1", pub1)), "k1", priv1)
	require.NoError(t, reg.Admit(ctx, reg1))
	require.True(t, reg.Keyed("agent:a"))
	beat1 := cardMessage(t, c, protocol.TypeAgentHeartbeat, keyedCard("agent:a"), "k1", priv1)
	require.NoError(t, reg.Admit(ctx, beat1))

	// Rotate: the update, signed by the current k1, lists only k2.
	upd := cardMessage(t, c, protocol.TypeAgentUpdate, keyedCard("agent:a", protocol.NewCardKey("k2", pub2)), "k1", priv1)
	require.NoError(t, reg.Admit(ctx, upd))

	n := eventCount(t, st)
	late := cardMessage(t, c, protocol.TypeAgentHeartbeat, keyedCard("agent:a"), "k1", priv1)
	err := reg.Admit(ctx, late)
	require.ErrorIs(t, err, protocol.CodeUnknownKey)
	require.ErrorContains(t, err, "retired")
	require.Equal(t, n, eventCount(t, st))
	unsigned := cardMessage(t, c, protocol.TypeAgentHeartbeat, keyedCard("agent:a"), "", nil)
	require.ErrorIs(t, reg.Admit(ctx, unsigned), protocol.CodeBadSignature, "a keyed agent's messages must be signed")
	require.NoError(t, reg.Admit(ctx, cardMessage(t, c, protocol.TypeAgentHeartbeat, keyedCard("agent:a"), "k2", priv2)))

	// A kid names one key forever.
	_, privEvil := testKey(9)
	rebind := keyedCard("agent:a", protocol.NewCardKey("k1", privEvil.Public().(ed25519.PublicKey)))
	require.ErrorIs(t, reg.Update(ctx, rebind), registry.ErrInvalidCard)

	check := func(reg *registry.Registry) {
		t.Helper()
		require.NoError(t, protocol.Verify(beat1.Raw(), reg.AllKeys("agent:a")), "stored before the rotation")
		require.ErrorIs(t, protocol.Verify(beat1.Raw(), reg.Keys("agent:a")), protocol.CodeUnknownKey)
		require.NoError(t, protocol.Verify(upd.Raw(), reg.AllKeys("agent:a")))
		require.ErrorIs(t, protocol.Verify(beat1.Raw(), reg.AllKeys("agent:b")), protocol.CodeUnknownKey, "kids belong to their agent")
	}
	check(reg)
	check(open(t, st, c, nil)) // event-sourced

	// After a removal the card keys retire, and first use does not let
	// anyone claim the agent again.
	require.NoError(t, reg.Remove(ctx, "agent:a"))
	require.False(t, reg.Keyed("agent:a"))
	_, privNew := testKey(5)
	takeover := cardMessage(t, c, protocol.TypeAgentRegister,
		keyedCard("agent:a", protocol.NewCardKey("k9", privNew.Public().(ed25519.PublicKey))), "k9", privNew)
	require.ErrorIs(t, reg.Admit(ctx, takeover), protocol.CodeUnknownKey)
}

func TestVerifyPolicy(t *testing.T) {
	pub, priv := testKey(1)
	c := newClock()
	reg := open(t, newStore(t), c, &registry.Options{Keys: map[string][]protocol.CardKey{"agent:k": {protocol.NewCardKey("k", pub)}}})
	req := func(from string, policy bool, sign bool) *protocol.Message {
		m := c.ids.NewMessage(protocol.TypeTaskRequest, from)
		if policy {
			m.Security = &protocol.Security{Policy: &protocol.Policy{Sandbox: true}}
		}
		if sign {
			require.NoError(t, protocol.Sign(m, "k", priv))
		}
		return m
	}
	require.NoError(t, reg.Verify(req("agent:u", false, false)), "not covered by the policy")
	require.ErrorIs(t, reg.Verify(req("agent:u", true, false)), protocol.CodeBadSignature, "a request with a policy")
	require.ErrorIs(t, reg.Verify(req("agent:u", true, true)), protocol.CodeUnknownKey, "agent:u has no key")
	require.NoError(t, reg.Verify(req("agent:u", false, true)), "an unkeyed agent's signature cannot be checked")
	require.ErrorIs(t, reg.Verify(req("agent:k", false, false)), protocol.CodeBadSignature, "keyed agents sign everything")
	require.NoError(t, reg.Verify(req("agent:k", true, true)))

	byAgent := open(t, newStore(t), c, &registry.Options{Signatures: &registry.SignaturePolicy{Agents: []string{"agent:u"}}})
	require.ErrorIs(t, byAgent.Verify(req("agent:u", false, false)), protocol.CodeBadSignature, "agent:u must sign")
	require.NoError(t, byAgent.Verify(req("agent:v", false, false)))

	off := open(t, newStore(t), c, &registry.Options{Signatures: &registry.SignaturePolicy{}})
	require.NoError(t, off.Verify(req("agent:u", true, false)), "an empty policy asks for nothing")
	var err error
	_, err = registry.Open(context.Background(), newStore(t), &registry.Options{Keys: map[string][]protocol.CardKey{"agent:k": {{Kid: "k", Alg: "rsa"}}}})
	require.True(t, errors.Is(err, registry.ErrInvalidOptions), "%v", err)
}
