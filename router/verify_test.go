package router

import (
	"context"
	"crypto/ed25519"
	"log/slog"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/stretchr/testify/require"
)

func seedKey(b byte) ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = b
	}
	return ed25519.NewKeyFromSeed(seed)
}

func pubOf(k ed25519.PrivateKey) ed25519.PublicKey { return k.Public().(ed25519.PublicKey) }

// signedEnv is an env whose registry knows agent:ui's key (kid "ui") and
// agent:other's (kid "other"), with the default signature policy.
func signedEnv(t *testing.T, opts *Options) (*env, ed25519.PrivateKey, ed25519.PrivateKey) {
	t.Helper()
	ui, other := seedKey(1), seedKey(2)
	st, err := memstore.New(nil)
	require.NoError(t, err)
	reg, err := registry.Open(context.Background(), st, &registry.Options{Keys: map[string][]protocol.CardKey{
		"agent:ui":    {protocol.NewCardKey("ui", pubOf(ui))},
		"agent:other": {protocol.NewCardKey("other", pubOf(other))},
	}})
	require.NoError(t, err)
	sch, err := schema.New(nil)
	require.NoError(t, err)
	if opts == nil {
		opts = &Options{}
	}
	opts.Logger = slog.New(slog.DiscardHandler)
	if opts.Validator == nil {
		opts.Validator = sch
	}
	r, err := New(st, reg, opts)
	require.NoError(t, err)
	t.Cleanup(func() { r.Close() })
	return &env{t: t, st: st, reg: reg, sch: sch, r: r}, ui, other
}

// inbound signs m (unless priv is nil) and decodes its bytes, as a surface
// receiving it would.
func inbound(t *testing.T, m *protocol.Message, kid string, priv ed25519.PrivateKey) *protocol.Message {
	t.Helper()
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

func (e *env) lastSeq() uint64 {
	e.t.Helper()
	n, err := e.st.LastSeq(context.Background())
	require.NoError(e.t, err)
	return n
}

// badVariants returns, for a message builder, the refusals every ingress
// must give: unsigned, wrong key, tampered, unknown kid, another agent's kid.
func badVariants(t *testing.T, build func() *protocol.Message, ui, other ed25519.PrivateKey) map[string]struct {
	m    *protocol.Message
	code protocol.Code
} {
	t.Helper()
	tampered := inbound(t, build(), "ui", ui)
	raw := strings.Replace(string(tampered.Raw()), `"attempt":1`, `"attempt":2`, 1)
	tm, err := protocol.Decode([]byte(raw))
	require.NoError(t, err)
	return map[string]struct {
		m    *protocol.Message
		code protocol.Code
	}{
		"unsigned":          {inbound(t, build(), "", nil), protocol.CodeBadSignature},
		"wrong key":         {inbound(t, build(), "ui", seedKey(9)), protocol.CodeBadSignature},
		"tampered":          {tm, protocol.CodeBadSignature},
		"unknown kid":       {inbound(t, build(), "nope", ui), protocol.CodeUnknownKey},
		"other agent's kid": {inbound(t, build(), "other", other), protocol.CodeUnknownKey},
	}
}

func TestIngressRefusesBadSignatures(t *testing.T) {
	ctx := context.Background()
	e, ui, other := signedEnv(t, nil)
	started := make(chan string, 4)
	e.register(card("agent:ken", skill("skill:research")), func(ctx context.Context, t *Task) (*Result, error) {
		started <- t.ID()
		<-ctx.Done()
		return nil, ctx.Err()
	})
	request := func() *protocol.Message { return e.request("skill:research") }

	for name, tc := range badVariants(t, request, ui, other) {
		for ingress, call := range map[string]func(*protocol.Message) error{
			"Submit": func(m *protocol.Message) error { _, err := e.r.Submit(ctx, m); return err },
			"Admit":  func(m *protocol.Message) error { _, err := e.r.Admit(ctx, m); return err },
			"Verify": func(m *protocol.Message) error { return e.r.Verify(m) },
		} {
			t.Run(ingress+"/request/"+name, func(t *testing.T) {
				before := e.lastSeq()
				err := call(tc.m)
				require.ErrorIs(t, err, registry.ErrSignature)
				require.Equal(t, tc.code, protocol.CodeOf(err), "%v", err)
				require.Equal(t, before, e.lastSeq(), "nothing stored")
			})
		}
	}

	// A signed request runs; cancels of it are checked the same way.
	h, err := e.r.Admit(ctx, inbound(t, request(), "ui", ui))
	require.NoError(t, err)
	<-started
	cancelMsg := func() *protocol.Message {
		m := e.r.ids.Reply(h.Request(), protocol.TypeTaskCancel, "agent:ui")
		require.NoError(t, m.SetPayload(map[string]string{"code": "CANCELLED", "message": "changed my mind"}))
		return m
	}
	for name, tc := range badVariants(t, cancelMsg, ui, other) {
		t.Run("Admit/cancel/"+name, func(t *testing.T) {
			before := e.lastSeq()
			_, err := e.r.Admit(ctx, tc.m)
			require.Equal(t, tc.code, protocol.CodeOf(err), "%v", err)
			require.Equal(t, before, e.lastSeq(), "nothing stored")
		})
	}
	select {
	case <-h.Done():
		t.Fatal("a refused cancel ended the task")
	default:
	}
	// Well signed, but by an agent that did not request the task.
	foreign := cancelMsg()
	foreign.From.AgentID = "agent:other"
	_, err = e.r.Admit(ctx, inbound(t, foreign, "other", other))
	require.ErrorIs(t, err, ErrUnauthorized)
	require.Equal(t, protocol.CodeUnauthorized, protocol.CodeOf(err))

	_, err = e.r.Admit(ctx, inbound(t, cancelMsg(), "ui", ui))
	require.NoError(t, err)
	out, _ := e.wait(h)
	require.Equal(t, protocol.TypeTaskCancel, out.Type)
	require.Contains(t, string(out.Message.Payload), "cancelled by agent:ui: changed my mind")

	// Registry events through the router's Admit.
	upd := func() *protocol.Message {
		m := e.r.ids.NewMessage(protocol.TypeAgentRegister, "agent:ui")
		m.RunID, m.ThreadID, m.TaskID = registry.DefaultRunID, "thr_registry", "task_registry"
		require.NoError(t, m.SetPayload(card("agent:ui")))
		return m
	}
	for name, tc := range badVariants(t, upd, ui, other) {
		t.Run("Admit/register/"+name, func(t *testing.T) {
			before := e.lastSeq()
			_, err := e.r.Admit(ctx, tc.m)
			require.ErrorIs(t, err, registry.ErrSignature)
			require.Equal(t, tc.code, protocol.CodeOf(err), "%v", err)
			require.Equal(t, before, e.lastSeq(), "nothing stored")
		})
	}
	_, err = e.r.Admit(ctx, inbound(t, upd(), "ui", ui))
	require.NoError(t, err)
	_, ok := e.reg.Get("agent:ui")
	require.True(t, ok)

	_, err = e.r.Admit(ctx, inbound(t, e.r.ids.NewMessage(protocol.TypeChatMessage, "agent:ui"), "ui", ui))
	require.ErrorIs(t, err, ErrInvalidRequest)
}

// TestSubmitTrustsRequestsBuiltInProcess: the boundary. A request the
// process builds itself (NewRequest, for a caller a surface authenticated)
// is not an envelope from outside and needs no signature, even from a
// keyed agent and with a policy; the same request arriving as bytes does.
func TestSubmitTrustsRequestsBuiltInProcess(t *testing.T) {
	e, _, _ := signedEnv(t, nil)
	e.register(card("agent:ken", skill("skill:research")), func(ctx context.Context, t *Task) (*Result, error) {
		return summary("a"), nil
	})
	req := e.request("skill:research")
	req.Security = &protocol.Security{Policy: &protocol.Policy{Sandbox: false, ToolAllowlist: []string{}}}
	out, err := e.wait(e.submit(req))
	require.NoError(t, err)
	require.True(t, out.OK())

	again := e.request("skill:research")
	_, err = e.r.Submit(context.Background(), inbound(t, again, "", nil))
	require.ErrorIs(t, err, protocol.CodeBadSignature)
}

// TestSignedRoundTrip: a caller signs a request with a policy; the router
// admits it; the local agent, keyed, signs every event it sends; the
// caller verifies the result from the store with the agent's public key
// from the registry.
func TestSignedRoundTrip(t *testing.T) {
	ctx := context.Background()
	ken := seedKey(7)
	e, ui, _ := signedEnv(t, &Options{Signers: map[string]SigningKey{"agent:ken": {Kid: "ken-1", Key: ken}}})

	// The card must list the signer's public key.
	bad := card("agent:ken", skill("skill:research"))
	bad.Security = &protocol.CardSecurity{Keys: []protocol.CardKey{protocol.NewCardKey("ken-1", pubOf(seedKey(8)))}}
	require.ErrorIs(t, e.r.Register(ctx, bad, func(context.Context, *Task) (*Result, error) { return nil, nil }), ErrInvalidOptions)
	require.ErrorIs(t, e.r.Register(ctx, card("agent:ken", skill("skill:research")), func(context.Context, *Task) (*Result, error) { return nil, nil }), ErrInvalidOptions)

	c := card("agent:ken", skill("skill:research"))
	c.Security = &protocol.CardSecurity{Keys: []protocol.CardKey{protocol.NewCardKey("ken-1", pubOf(ken))}}
	e.register(c, func(ctx context.Context, t *Task) (*Result, error) {
		if err := t.Progress(ctx, map[string]string{"step": "searching"}); err != nil {
			return nil, err
		}
		if _, err := t.Emit(ctx, protocol.TypeToolCall, "", map[string]string{"tool": "search"}); err != nil {
			return nil, err
		}
		return summary("signed"), nil
	})
	req := e.request("skill:research")
	req.Security = &protocol.Security{Policy: &protocol.Policy{Sandbox: false}}
	h, err := e.r.Admit(ctx, inbound(t, req, "ui", ui))
	require.NoError(t, err)
	out, err := e.wait(h)
	require.NoError(t, err)
	require.True(t, out.OK())

	kenKeys := e.reg.Keys("agent:ken")
	seen := map[protocol.Type]bool{}
	for ev, err := range e.st.Read(ctx, store.Query{TaskID: h.TaskID()}) {
		require.NoError(t, err)
		m, err := ev.Message()
		require.NoError(t, err)
		switch m.From.AgentID {
		case "agent:ken":
			seen[m.Type] = true
			require.NotNil(t, m.Security, "%s from agent:ken is signed", m.Type)
			require.Equal(t, "ken-1", m.Security.Auth.Kid)
			require.NoError(t, protocol.Verify(ev.Raw, kenKeys), "%s", m.Type)
			require.NoError(t, protocol.Verify(ev.Raw, protocol.StaticKeys{"ken-1": pubOf(ken)}))
		case "agent:ui":
			require.NoError(t, protocol.Verify(ev.Raw, e.reg.Keys("agent:ui")), "the request is stored as signed")
		}
	}
	for _, ty := range []protocol.Type{protocol.TypeTaskAccept, protocol.TypeTaskProgress, protocol.TypeToolCall, protocol.TypeTaskResult} {
		require.True(t, seen[ty], "no signed %s", ty)
	}
	require.NoError(t, protocol.Verify(out.Message.Raw(), kenKeys))
	// Submit's store stays the host's own.
	_, isSigning := e.r.Store().(*signingStore)
	require.False(t, isSigning)
}
