package router

import (
	"context"
	"crypto/ed25519"
	"encoding/json"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// Signatures on the router's ingress and egress (docs/protocol.md §6.1
// "Enforcement"). The policy and the keys are the registry's
// (registry.Options.Signatures, registry.Options.Keys, card security.keys);
// the router applies them where envelopes from outside enter, and signs
// the events of local agents given a SigningKey.

// SigningKey is the private key a local agent signs its events with, under
// the kid its card (or registry.Options.Keys) lists with the public key.
type SigningKey struct {
	Kid string
	Key ed25519.PrivateKey
}

func checkSigners(signers map[string]SigningKey) error {
	for id, k := range signers {
		if k.Kid == "" || len(k.Key) != ed25519.PrivateKeySize {
			return wrap(ErrInvalidOptions, "Signers["+id+"] needs a kid and an Ed25519 private key", nil)
		}
	}
	return nil
}

// checkSigner refuses to register an agent whose signing key nobody could
// verify: the card, or the registry's configured keys, must list the kid
// with the matching public key.
func (r *Router) checkSigner(card *protocol.AgentCard) error {
	k, ok := r.opts.Signers[card.AgentID]
	if !ok {
		return nil
	}
	pub := k.Key.Public().(ed25519.PublicKey)
	if card.Security != nil {
		for _, ck := range card.Security.Keys {
			if ck.Kid == k.Kid {
				if p, err := ck.Ed25519(); err == nil && p.Equal(pub) {
					return nil
				}
				return wrap(ErrInvalidOptions, card.AgentID+": the card's key "+k.Kid+" is not the public key of Signers["+card.AgentID+"]", nil)
			}
		}
	}
	if p, err := r.reg.Keys(card.AgentID).ResolveKey(k.Kid); err == nil && p.Equal(pub) {
		return nil
	}
	return wrap(ErrInvalidOptions, card.AgentID+" signs with kid "+k.Kid+", which neither its card nor the registry's keys list", nil)
}

// signingStore signs, as they are appended, the messages of agents with a
// SigningKey that are not signed yet: every event of a local keyed agent
// (task.accept, task.progress, task.result, task.error, tool events, the
// requests it delegates) passes through the router's append.
type signingStore struct {
	store.Store
	signers map[string]SigningKey
}

func (s *signingStore) Append(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
	for _, m := range msgs {
		k, ok := s.signers[m.From.AgentID]
		if !ok || m.Security != nil && m.Security.Auth != nil {
			continue
		}
		if err := protocol.Sign(m, k.Kid, k.Key); err != nil {
			return nil, err
		}
	}
	return s.Store.Append(ctx, msgs...)
}

// verifyInbound applies the signature policy to a request given to
// Submit that comes from outside the process: one that carries bytes (it
// was decoded, or signed) or a signature. A request built in process
// (NewRequest, an adapter building one for its authenticated caller) is
// the caller's own, and a delegated subtask is the router's.
func (r *Router) verifyInbound(req *protocol.Message, parent *taskState) error {
	if parent != nil || req == nil || req.Raw() == nil && (req.Security == nil || req.Security.Auth == nil) {
		return nil
	}
	return r.reg.Verify(req)
}

// Verify applies the signature policy of the router's registry to m, an
// envelope that arrived from outside (registry.Registry.Verify): a message
// the policy covers, or any message of a keyed agent, must be signed by a
// current key of its own from.agent_id. Adapters and surfaces call it on
// every decoded inbound envelope they act on without Admit. A refusal
// matches registry.ErrSignature, with code BAD_SIGNATURE or UNKNOWN_KEY.
func (r *Router) Verify(m *protocol.Message) error { return r.reg.Verify(m) }

// Admit takes an envelope that arrived from outside, verifies it (Verify)
// and acts on it; a refused message leaves nothing in the store.
//   - task.request: submitted as by Submit; the handle follows the task.
//   - task.cancel: cancels the running task task_id and its subtree, with
//     the payload's message as the reason; only the task's requester may
//     (ErrUnauthorized otherwise), and the router stores the task.cancel.
//     The handle is the task's.
//   - agent.register, agent.update, agent.heartbeat: applied by
//     registry.Registry.Admit; the handle is nil.
//
// Any other type is refused with ErrInvalidRequest.
func (r *Router) Admit(ctx context.Context, m *protocol.Message) (*Handle, error) {
	if m == nil {
		return nil, wrap(ErrInvalidRequest, "nil message", nil)
	}
	// From outside: it has bytes from here on, so Submit verifies it.
	if _, err := protocol.Encode(m); err != nil {
		return nil, wrap(ErrInvalidRequest, "", err)
	}
	switch m.Type {
	case protocol.TypeTaskRequest:
		return r.Submit(ctx, m)
	case protocol.TypeTaskCancel:
		if err := r.reg.Verify(m); err != nil {
			return nil, err
		}
		return r.cancelByMessage(m)
	case protocol.TypeAgentRegister, protocol.TypeAgentUpdate, protocol.TypeAgentHeartbeat:
		return nil, r.reg.Admit(ctx, m)
	}
	return nil, wrap(ErrInvalidRequest, "Admit takes task.request, task.cancel and agent.register, update and heartbeat, not "+string(m.Type)+"; check other messages with Verify", nil)
}

func (r *Router) cancelByMessage(m *protocol.Message) (*Handle, error) {
	r.mu.Lock()
	ts := r.tasks[m.TaskID]
	r.mu.Unlock()
	if ts == nil {
		return nil, wrap(ErrUnknownTask, "no running task "+m.TaskID, nil)
	}
	if from := m.From.AgentID; from != ts.req.From.AgentID && from != r.opts.AgentID {
		return nil, wrap(ErrUnauthorized, from+" did not request task "+m.TaskID, nil)
	}
	reason := "cancelled by " + m.From.AgentID
	var p struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(m.Payload, &p) == nil && p.Message != "" {
		reason += ": " + p.Message
	}
	ts.handle.Cancel(reason)
	return &ts.handle, nil
}
