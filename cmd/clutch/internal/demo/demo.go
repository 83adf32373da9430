package demo

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
)

// The demo's agent ids.
const (
	// UI is the person at the web UI who asks for each round's research.
	UI = "agent:ui"
	// Lead plans, delegates and writes the brief.
	Lead = "agent:lead"
	// Ken researches the web (tool mcp:browser).
	Ken = "agent:ken"
	// Ines researches papers and regulation (tool mcp:papers).
	Ines = "agent:ines"
	// Dara queries licensed market data (tool mcp:market-data).
	Dara = "agent:dara"
)

// members are the demo's agents that sign: the UI and the team.
var members = []string{UI, Lead, Ken, Ines, Dara}

// QuestionDeadline is how long a question of the demo waits for an
// answer, at TimeScale 1, before its task ends with TIMEOUT.
const QuestionDeadline = 2 * time.Minute

// Answerers may answer the demo's questions: the requester (agent:ui)
// and any caller with the admin scope, which the key `clutch serve`
// makes for the UI has.
var Answerers = &protocol.Answerers{Requester: true, Scopes: []string{auth.ScopeAdmin}}

// Options configure a Team. A nil *Options means the defaults.
type Options struct {
	// TimeScale multiplies every duration of the demo: each task's work,
	// the pauses between its progress events and the questions'
	// deadline. 0 means 1, real time (a task takes 1 to 4 s, a round
	// about 5 to 10 s); tests use 0.001 or run in a testing/synctest
	// bubble.
	TimeScale float64
	// QuestionDeadline is how long a question waits for an answer before
	// its task ends with TIMEOUT; 0 means the package's
	// QuestionDeadline times TimeScale.
	QuestionDeadline time.Duration
}

// Team is the demo team: its agents, their signing keys, its pace.
type Team struct {
	scale    float64
	deadline time.Duration // of a question
	keys     map[string]router.SigningKey
}

// New makes a team with a fresh Ed25519 signing key for each agent and
// the UI. Each key has a kid of its own (key_<name>_<8 hex digits of the
// public key>): a kid names one key forever (docs/protocol.md §6.1), and
// every process makes new keys.
func New(opts *Options) (*Team, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.TimeScale < 0 || o.QuestionDeadline < 0 {
		return nil, errors.New("demo: TimeScale and QuestionDeadline must not be negative")
	}
	if o.TimeScale == 0 {
		o.TimeScale = 1
	}
	t := &Team{scale: o.TimeScale, deadline: o.QuestionDeadline, keys: map[string]router.SigningKey{}}
	if t.deadline == 0 {
		t.deadline = t.d(QuestionDeadline.Seconds())
	}
	for _, id := range members {
		pub, priv, err := ed25519.GenerateKey(nil)
		if err != nil {
			return nil, err
		}
		kid := "key_" + strings.TrimPrefix(id, "agent:") + "_" + hex.EncodeToString(pub[:4])
		t.keys[id] = router.SigningKey{Kid: kid, Key: priv}
	}
	return t, nil
}

// Keys are the public keys of the UI and the agents, in the form of
// registry.Options.Keys and of the key file of `clutch verify`.
func (t *Team) Keys() map[string][]protocol.CardKey {
	out := make(map[string][]protocol.CardKey, len(t.keys))
	for id := range t.keys {
		out[id] = []protocol.CardKey{t.cardKey(id)}
	}
	return out
}

func (t *Team) cardKey(id string) protocol.CardKey {
	k := t.keys[id]
	return protocol.NewCardKey(k.Kid, k.Key.Public().(ed25519.PublicKey))
}

// Signers are the agents' private keys, for router.Options.Signers: the
// router signs every event an agent of the team sends. The UI signs its
// own messages (Sign).
func (t *Team) Signers() map[string]router.SigningKey {
	out := make(map[string]router.SigningKey, len(t.keys)-1)
	for id, k := range t.keys {
		if id != UI {
			out[id] = k
		}
	}
	return out
}

// Sign signs m as the demo UI.
func (t *Team) Sign(m *protocol.Message) error {
	k := t.keys[UI]
	return protocol.Sign(m, k.Kid, k.Key)
}

// d is sec seconds of demo time.
func (t *Team) d(sec float64) time.Duration {
	return time.Duration(sec * t.scale * float64(time.Second))
}

// pause waits d, or until ctx is done.
func pause(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}

// Register registers the lead and the three researchers with r. The
// router must have been built with Signers and a registry with Keys.
func (t *Team) Register(ctx context.Context, r *router.Router) error {
	limits := &protocol.Limits{MaxConcurrency: 4, MaxRuntimeSec: 120}
	cards := []struct {
		card *protocol.AgentCard
		h    router.Handler
	}{
		{&protocol.AgentCard{
			AgentID: Lead,
			Display: &protocol.Display{Name: "Mira (lead)", Desc: "Lead analyst: splits each question into research tracks, hands them to the team in parallel and writes the brief"},
			Capabilities: []protocol.Capability{
				{ID: "skill:plan", Version: "1.0", Tags: []string{"planning", "delegation"}, TrustLevel: protocol.TrustSandbox, CostHint: protocol.CostLow},
				{ID: "skill:write", Version: "1.0", Tags: []string{"briefs", "summaries"}, TrustLevel: protocol.TrustSandbox, CostHint: protocol.CostLow},
			},
		}, t.lead},
		{&protocol.AgentCard{
			AgentID: Ken,
			Display: &protocol.Display{Name: "Ken", Desc: "Web researcher for markets and fintech: news, company reports and regulators' sites"},
			Capabilities: []protocol.Capability{{ID: "skill:research", Version: "1.0", Tags: []string{"web", "fintech", "markets"},
				Tools: []string{"mcp:browser"}, TrustLevel: protocol.TrustSandbox, CostHint: protocol.CostMedium}},
		}, t.researcher("mcp:browser", "search")},
		{&protocol.AgentCard{
			AgentID: Ines,
			Display: &protocol.Display{Name: "Ines", Desc: "Literature researcher: peer-reviewed papers, health policy and regulation"},
			Capabilities: []protocol.Capability{{ID: "skill:research", Version: "1.0", Tags: []string{"papers", "health", "regulation"},
				Tools: []string{"mcp:papers"}, TrustLevel: protocol.TrustSandbox, CostHint: protocol.CostMedium}},
		}, t.researcher("mcp:papers", "search")},
		{&protocol.AgentCard{
			AgentID: Dara,
			Display: &protocol.Display{Name: "Dara", Desc: "Data analyst: volumes, prices and usage figures from licensed market datasets"},
			Capabilities: []protocol.Capability{
				{ID: "skill:research", Version: "1.0", Tags: []string{"data", "volumes", "prices"},
					Tools: []string{"mcp:market-data"}, TrustLevel: protocol.TrustSandbox, CostHint: protocol.CostHigh},
				{ID: "skill:analyze", Version: "1.0", Tags: []string{"statistics"}, TrustLevel: protocol.TrustSandbox, CostHint: protocol.CostMedium},
			},
		}, t.researcher("mcp:market-data", "query")},
	}
	for _, c := range cards {
		c.card.V = protocol.Version
		c.card.Limits = limits
		c.card.Security = &protocol.CardSecurity{Sandbox: true, Network: "egress-restricted", Keys: []protocol.CardKey{t.cardKey(c.card.AgentID)}}
		if err := r.Register(ctx, c.card, c.h); err != nil {
			return err
		}
	}
	return nil
}

// Round plays round i (asks[i%6], see the package doc): the UI says what
// it wants in a chat.message and sends a signed task.request
// (research.query.v1) for the lead, as a gateway would receive it. Round
// returns the outcome of the lead's task when it ends, or when it stops
// to ask the requester (Outcome.Question set): the task then waits for an
// answer (or its deadline) without Round. A failed run is not an error of
// Round.
func (t *Team) Round(ctx context.Context, r *router.Router, i int) (*router.Outcome, error) {
	a := &asks[i%len(asks)]
	req, err := r.NewRequest(UI, "research.query.v1", schema.ResearchQuery{Query: a.query, MaxSources: 5})
	if err != nil {
		return nil, err
	}
	req.Domain = "research"
	req.Requires = []string{"skill:plan"}
	req.Meta = map[string]any{"ui_channel": a.channel}
	if err := t.Sign(req); err != nil {
		return nil, err
	}
	say := r.IDs().Reply(req, protocol.TypeChatMessage, UI)
	say.To = []protocol.Participant{{AgentID: Lead}}
	say.Meta = req.Meta
	if err := say.SetPayload(map[string]any{"text": a.text}); err != nil {
		return nil, err
	}
	if err := t.Sign(say); err != nil {
		return nil, err
	}
	if _, err := r.Store().Append(ctx, say); err != nil {
		return nil, err
	}
	// The bytes as a gateway receives them: Admit verifies the signature.
	in, err := protocol.Decode(req.Raw())
	if err != nil {
		return nil, err
	}
	h, err := r.Admit(ctx, in)
	if err != nil {
		return nil, err
	}
	out, err := h.Wait(ctx)
	if out == nil {
		return nil, err
	}
	return out, nil
}

// Run plays rounds one after another, pausing every between them, until
// ctx is done; it returns nil then, or the first error of a round. A
// round whose lead waits for an answer does not hold up the next.
func (t *Team) Run(ctx context.Context, r *router.Router, every time.Duration) error {
	for i := 0; ; i++ {
		if _, err := t.Round(ctx, r, i); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("demo round %d: %w", i, err)
		}
		if pause(ctx, every) != nil {
			return nil
		}
	}
}
