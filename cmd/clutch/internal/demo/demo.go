package demo

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
)

// The demo's agent ids.
const (
	UI         = "agent:ui"
	Lead       = "agent:lead"
	Ken        = "agent:ken"
	Researcher = "agent:research-2"
	// UIKid is the kid of the UI's signing key.
	UIKid = "key_ui_demo"
)

// Team is the demo team and the UI's signing key.
type Team struct {
	pub  ed25519.PublicKey
	priv ed25519.PrivateKey
}

// New makes a team with a fresh signing key for the UI.
func New() (*Team, error) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		return nil, err
	}
	return &Team{pub: pub, priv: priv}, nil
}

// Keys are the public keys to give the registry (registry.Options.Keys),
// so that the router verifies what the demo UI signs.
func (t *Team) Keys() map[string][]protocol.CardKey {
	return map[string][]protocol.CardKey{UI: {protocol.NewCardKey(UIKid, t.pub)}}
}

// Sign signs m as the demo UI.
func (t *Team) Sign(m *protocol.Message) error { return protocol.Sign(m, UIKid, t.priv) }

// Register registers the lead and the two researchers with r.
func (t *Team) Register(ctx context.Context, r *router.Router) error {
	sandbox := &protocol.CardSecurity{Sandbox: true, Network: "egress-restricted"}
	cards := []struct {
		card *protocol.AgentCard
		h    router.Handler
	}{
		{&protocol.AgentCard{
			V: protocol.Version, AgentID: Lead,
			Display: &protocol.Display{Name: "Lead", Desc: "Plans research and merges the findings"},
			Capabilities: []protocol.Capability{{ID: "skill:plan", Version: "1.0", Tags: []string{"planning"},
				TrustLevel: protocol.TrustSandbox, CostHint: protocol.CostLow}},
			Limits: &protocol.Limits{MaxConcurrency: 4, MaxRuntimeSec: 120}, Security: sandbox,
		}, lead},
		{&protocol.AgentCard{
			V: protocol.Version, AgentID: Ken,
			Display: &protocol.Display{Name: "Ken", Desc: "Research specialist, fintech"},
			Capabilities: []protocol.Capability{{ID: "skill:research", Version: "1.0", Tags: []string{"market", "fintech"},
				Tools: []string{"mcp:browser"}, TrustLevel: protocol.TrustSandbox, CostHint: protocol.CostMedium}},
			Limits: &protocol.Limits{MaxConcurrency: 4, MaxRuntimeSec: 120}, Security: sandbox,
		}, researcher("mcp:browser")},
		{&protocol.AgentCard{
			V: protocol.Version, AgentID: Researcher,
			Display: &protocol.Display{Name: "Research 2", Desc: "Research, health markets"},
			Capabilities: []protocol.Capability{{ID: "skill:research", Version: "1.0", Tags: []string{"market", "health"},
				Tools: []string{"mcp:papers"}, TrustLevel: protocol.TrustSandbox}},
			Limits: &protocol.Limits{MaxConcurrency: 4, MaxRuntimeSec: 120}, Security: sandbox,
		}, researcher("mcp:papers")},
	}
	for _, c := range cards {
		if err := r.Register(ctx, c.card, c.h); err != nil {
			return err
		}
	}
	return nil
}

var topics = []string{
	"Nordic payments: incumbents and real-time rails",
	"Telehealth adoption in rural clinics",
	"Open banking APIs in the EU",
	"Wearables for remote patient monitoring",
}

var channels = []string{"chat:research", "chat:markets"}

// Round runs round i: a chat message, a signed task for the lead, the
// lead's answer in the thread. It returns when the run has ended; the
// run's outcome is returned (a failed run is not an error of Round).
func (t *Team) Round(ctx context.Context, r *router.Router, i int) (*router.Outcome, error) {
	topic := topics[i%len(topics)]
	q := schema.ResearchQuery{Query: topic, MaxSources: 3}
	if i%4 == 3 {
		q.Context = "outage" // research-2's tool is down this round
	}
	req, err := r.NewRequest(UI, "research.query.v1", q)
	if err != nil {
		return nil, err
	}
	req.Domain = "research"
	req.Requires = []string{"skill:plan"}
	req.Meta = map[string]any{"ui_channel": channels[i%len(channels)]}
	if err := t.Sign(req); err != nil {
		return nil, err
	}
	ask := r.IDs().Reply(req, protocol.TypeChatMessage, UI)
	ask.To = []protocol.Participant{{AgentID: Lead}}
	ask.Meta = req.Meta
	if err := ask.SetPayload(map[string]any{"text": "Can you look into " + topic + "?"}); err != nil {
		return nil, err
	}
	if _, err := r.Store().Append(ctx, ask); err != nil {
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
	text := "Done: see the findings in the task result."
	if !out.OK() {
		text = "I could not finish: " + out.Err.Message
	}
	reply := r.IDs().Reply(req, protocol.TypeChatMessage, Lead)
	reply.To = []protocol.Participant{{AgentID: UI}}
	reply.Meta = req.Meta
	if err := reply.SetPayload(map[string]any{"text": text}); err != nil {
		return nil, err
	}
	if _, err := r.Store().Append(ctx, reply); err != nil {
		return nil, err
	}
	return out, nil
}

// Run plays rounds one after another, pausing every between them, until
// ctx is done; it returns nil then, or the first error of a round.
func (t *Team) Run(ctx context.Context, r *router.Router, every time.Duration) error {
	for i := 0; ; i++ {
		if _, err := t.Round(ctx, r, i); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("demo round %d: %w", i, err)
		}
		tm := time.NewTimer(every)
		select {
		case <-ctx.Done():
			tm.Stop()
			return nil
		case <-tm.C:
		}
	}
}

// lead delegates the question to a fintech and a health researcher and
// merges their findings.
func lead(ctx context.Context, t *router.Task) (*router.Result, error) {
	q, err := router.Input[schema.ResearchQuery](t)
	if err != nil {
		return nil, err
	}
	if err := t.Progress(ctx, map[string]any{"step": "planning", "subtasks": 2}); err != nil {
		return nil, err
	}
	var merged schema.ResearchSummary
	for _, tag := range []string{"tag:fintech", "tag:health"} {
		sub, err := t.NewSubtask("research.query.v1", schema.ResearchQuery{Query: q.Query + " (" + tag[4:] + ")", Context: q.Context, MaxSources: q.MaxSources})
		if err != nil {
			return nil, err
		}
		sub.Requires = []string{"skill:research"}
		sub.Prefers = []string{tag}
		out, err := t.Delegate(ctx, sub)
		if err != nil {
			return nil, fmt.Errorf("research %s: %w", tag[4:], err)
		}
		s, err := router.ResultAs[schema.ResearchSummary](out)
		if err != nil {
			return nil, err
		}
		merged.Findings = append(merged.Findings, s.Findings...)
		merged.Citations = append(merged.Citations, s.Citations...)
	}
	merged.Title = "Research on " + q.Query
	return &router.Result{PayloadType: "research.summary.v1", Payload: merged}, nil
}

// researcher searches with its tool (a fake: no network) and summarises.
func researcher(tool string) router.Handler {
	return func(ctx context.Context, t *router.Task) (*router.Result, error) {
		q, err := router.Input[schema.ResearchQuery](t)
		if err != nil {
			return nil, err
		}
		args := map[string]any{"query": q.Query, "max_results": q.MaxSources}
		if _, err := t.Emit(ctx, protocol.TypeToolCall, "", map[string]any{"tool": tool, "name": "search", "args": args}); err != nil {
			return nil, err
		}
		if q.Context == "outage" && tool == "mcp:papers" {
			if _, err := t.Emit(ctx, protocol.TypeToolError, "", map[string]any{"tool": tool, "name": "search",
				"code": protocol.CodeToolUnavailable, "message": "the papers index is offline", "retryable": false}); err != nil {
				return nil, err
			}
			return nil, router.Fail(protocol.CodeToolUnavailable, "the papers index is offline", false, map[string]any{"tool": tool})
		}
		hits := []map[string]string{
			{"url": "https://example.com/reports/" + slug(q.Query), "title": "Report: " + q.Query},
			{"url": "https://example.com/data/" + slug(q.Query), "title": "Data: " + q.Query},
		}
		content, _ := json.Marshal(hits)
		if _, err := t.Emit(ctx, protocol.TypeToolResult, "", map[string]any{"tool": tool, "name": "search", "content": json.RawMessage(content)}); err != nil {
			return nil, err
		}
		if err := t.Progress(ctx, map[string]any{"step": "summarising", "sources": len(hits)}); err != nil {
			return nil, err
		}
		return &router.Result{PayloadType: "research.summary.v1", Payload: schema.ResearchSummary{
			Title:     "Findings: " + q.Query,
			Findings:  []string{"Three providers hold most of the market", "Adoption doubled in two years"},
			Citations: []string{hits[0]["url"], hits[1]["url"]},
		}}, nil
	}
}

func slug(s string) string {
	b := make([]byte, 0, len(s))
	for _, c := range []byte(s) {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			b = append(b, c)
		case c >= 'A' && c <= 'Z':
			b = append(b, c+'a'-'A')
		case len(b) > 0 && b[len(b)-1] != '-':
			b = append(b, '-')
		}
	}
	return string(b)
}
