// Command quickstart is the first tutorial: the end-to-end flow of docs/protocol.md
// §10, in one process, with no services and no API keys.
//
//  1. The UI signs a task.request (research.query.v1) for the orchestrator;
//     the gateway verifies the signature and submits it.
//  2. The router evaluates two research agents and records a
//     routing.decision: agent:ken wins on its fintech tag and browser tool.
//  3. Ken accepts, calls a local fake tool mcp:browser (tool.call /
//     tool.result events), and returns a research.summary.v1 result, which
//     is validated against its schema.
//  4. The UI follows the thread's events live and prints each as it comes;
//     at the end the program prints the task tree rebuilt from the store.
//
// The events go to an embedded store file in a temporary folder, removed at
// exit; -db PATH keeps them in PATH instead.
//
//	go run ./examples/quickstart
//	go run ./examples/quickstart -db /tmp/clutch.db
package main

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
)

func main() {
	db := flag.String("db", "", "store file to keep the events in (default: a temporary file)")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *db); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, w io.Writer, dbPath string) error {
	st, cleanup, err := openStore(dbPath)
	if err != nil {
		return err
	}
	defer cleanup()

	// The UI's signing key. The registry knows its public half, so the
	// router verifies what the UI sends (docs/protocol.md §6.1).
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		return err
	}
	reg, err := registry.Open(ctx, st, &registry.Options{
		Keys: map[string][]protocol.CardKey{"agent:ui": {protocol.NewCardKey("key_ui_01", pub)}},
	})
	if err != nil {
		return err
	}
	schemas, err := schema.New(nil)
	if err != nil {
		return err
	}
	r, err := router.New(st, reg, &router.Options{Validator: schemas, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer r.Close()

	// Two research agents. Ken specialises in fintech and has a browser.
	ken := &protocol.AgentCard{
		AgentID: "agent:ken",
		Display: &protocol.Display{Name: "Ken", Desc: "Research specialist"},
		Capabilities: []protocol.Capability{{
			ID: "skill:research", Version: "1.0", Tags: []string{"market", "competitive", "fintech"},
			Tools: []string{"mcp:browser"}, TrustLevel: protocol.TrustSandbox, CostHint: protocol.CostMedium,
		}},
		Limits:   &protocol.Limits{MaxConcurrency: 2, MaxRuntimeSec: 600},
		Security: &protocol.CardSecurity{Sandbox: true, Network: "egress-restricted"},
	}
	other := &protocol.AgentCard{
		AgentID:      "agent:research-2",
		Capabilities: []protocol.Capability{{ID: "skill:research", Version: "1.0", Tags: []string{"market", "health"}, TrustLevel: protocol.TrustSandbox}},
		Limits:       &protocol.Limits{MaxConcurrency: 2, MaxRuntimeSec: 600},
		Security:     &protocol.CardSecurity{Sandbox: true},
	}
	if err := r.Register(ctx, ken, researcher(browser)); err != nil {
		return err
	}
	if err := r.Register(ctx, other, researcher(nil)); err != nil {
		return err
	}

	// 1. UI → Gateway: a signed task.request.
	req, err := r.NewRequest("agent:ui", "research.query.v1", schema.ResearchQuery{
		Query: "Nordic payments market: incumbents and real-time rails", MaxSources: 5,
	})
	if err != nil {
		return err
	}
	req.Domain = "research"
	req.Requires = []string{"skill:research"}
	req.Prefers = []string{"tool:browser", "domain:fintech"}
	req.Security = &protocol.Security{Policy: &protocol.Policy{Sandbox: true, ToolAllowlist: []string{"mcp:browser"}}}
	req.Meta = map[string]any{"ui_channel": "chat:research"}
	if err := protocol.Sign(req, "key_ui_01", priv); err != nil {
		return err
	}
	wire := req.Raw()
	// The gateway decodes the bytes as received; Admit verifies the
	// signature against the registry's keys before anything is stored.
	in, err := protocol.Decode(wire)
	if err != nil {
		return err
	}

	// 8. The UI subscribes to the thread and gets every event as it comes.
	follow, stopFollow := context.WithCancel(ctx)
	defer stopFollow()
	var wg sync.WaitGroup
	wg.Add(1)
	events := make(chan followed, 64)
	go func() {
		defer wg.Done()
		defer close(events)
		for ev, err := range st.Follow(follow, store.Query{ThreadID: in.ThreadID}) {
			if err != nil {
				if follow.Err() == nil {
					events <- followed{err: err}
				}
				return
			}
			m, err := ev.Message()
			events <- followed{ev: ev, m: m, err: err}
		}
	}()

	h, err := r.Admit(ctx, in)
	if err != nil {
		stopFollow()
		wg.Wait()
		return fmt.Errorf("gateway: %w", err)
	}
	fmt.Fprintf(w, "gateway: verified %s from %s (%d bytes, signed with %s)\n\n", in.Type, in.From.AgentID, len(wire), in.Security.Auth.Kid)
	out, taskErr := h.Wait(ctx)

	// Print the live events up to the task's outcome: the event whose id
	// is the outcome's message id is the last one of the task.
	fmt.Fprintf(w, "The thread's events, as the store records them:\n\n")
	fmt.Fprintf(w, "%-4s %-12s %-17s %-18s %s\n", "seq", "time", "type", "from", "to")
	for f := range events {
		if f.err != nil {
			fmt.Fprintf(w, "follow: %v\n", f.err)
			break
		}
		fmt.Fprintln(w, render(f.ev, f.m))
		if f.m.ID == out.Message.ID {
			break
		}
	}
	stopFollow()
	for range events { // let the follower see the cancellation and return
	}
	wg.Wait()
	if taskErr != nil {
		return fmt.Errorf("task failed: %w", taskErr)
	}

	s, err := router.ResultAs[schema.ResearchSummary](out)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nresult (%s, validated): %s\n", out.Message.PayloadType, s.Title)
	for _, f := range s.Findings {
		fmt.Fprintf(w, "  - %s\n", f)
	}

	tree, err := r.Tree(ctx, in.RunID)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\ntask tree of %s:\n%s", in.RunID, tree)
	return nil
}

// browser is the local fake tool behind mcp:browser: no network.
func browser(query string) []map[string]string {
	return []map[string]string{
		{"url": "https://example.com/reports/nordic-payments-2026", "title": "Nordic payments 2026"},
		{"url": "https://example.com/data/real-time-rails", "title": "Real-time rails adoption"},
	}
}

// researcher is an agent's handler: it searches with the browser tool when
// it has one and returns a research.summary.v1.
func researcher(search func(string) []map[string]string) router.Handler {
	return func(ctx context.Context, t *router.Task) (*router.Result, error) {
		q, err := router.Input[schema.ResearchQuery](t)
		if err != nil {
			return nil, err
		}
		var citations []string
		if search != nil {
			// 5. Ken → MCP: tool.call, 6. MCP → Ken: tool.result, both
			// with one call id (CallTool records them).
			args := map[string]any{"query": q.Query, "max_results": q.MaxSources}
			hits, err := router.CallTool(ctx, t, "mcp:browser", "search", args, func(ctx context.Context) ([]map[string]string, error) {
				return search(q.Query), nil
			})
			if err != nil {
				return nil, err
			}
			for _, h := range hits {
				citations = append(citations, h["url"])
			}
		}
		if err := t.Progress(ctx, map[string]any{"step": "summarising", "sources": len(citations)}); err != nil {
			return nil, err
		}
		// 7. Ken → Orchestrator: task.result, research.summary.v1.
		return &router.Result{PayloadType: "research.summary.v1", Payload: schema.ResearchSummary{
			Title: "Market analysis complete",
			Findings: []string{
				"Three incumbents process about 70% of card volume",
				"Real-time rails adoption doubled in 2026",
			},
			Citations: citations,
		}}, nil
	}
}

// followed is one event of the thread the UI follows, decoded.
type followed struct {
	ev  store.Event
	m   *protocol.Message
	err error
}

// render turns one event into a log line and a plain-language line under
// it that says what the event means.
func render(ev store.Event, m *protocol.Message) string {
	to := make([]string, len(m.To))
	for i, p := range m.To {
		to[i] = p.AgentID
	}
	head := strings.TrimRight(fmt.Sprintf("%-4d %-12s %-17s %-18s %s", ev.Seq, ev.Time.Format("15:04:05.000"), m.Type, m.From.AgentID, strings.Join(to, ", ")), " ")
	var lines []string
	switch m.Type {
	case protocol.TypeTaskRequest:
		lines = append(lines, fmt.Sprintf("asks for %s; requires %s; prefers %s", m.PayloadType, strings.Join(m.Requires, ", "), strings.Join(m.Prefers, ", ")))
	case protocol.TypeRoutingDecision:
		d, err := protocol.DecodePayload[protocol.RoutingDecision](m)
		if err != nil {
			lines = append(lines, "undecodable decision: "+err.Error())
			break
		}
		cands := make([]string, len(d.Candidates))
		for i, c := range d.Candidates {
			cands[i] = fmt.Sprintf("%s (score %.2f)", c, d.Scores[c])
		}
		lines = append(lines, "candidates: "+strings.Join(cands, ", "))
		for agent, why := range d.Rejected {
			lines = append(lines, "rejected "+agent+": "+why)
		}
		lines = append(lines, "selected "+d.Selected+"; reason: "+d.Reason)
	case protocol.TypeTaskAccept:
		lines = append(lines, fmt.Sprintf("%s takes the task (attempt %d)", m.From.AgentID, m.Attempt))
	case protocol.TypeToolCall:
		var c struct {
			Tool, Name string
			Args       map[string]any
		}
		if err := json.Unmarshal(m.Payload, &c); err == nil {
			lines = append(lines, fmt.Sprintf("calls %s %s with query %q, max_results %v", c.Tool, c.Name, c.Args["query"], c.Args["max_results"]))
		}
	case protocol.TypeToolResult:
		var r struct {
			Tool, Name string
			Content    []map[string]string
		}
		if err := json.Unmarshal(m.Payload, &r); err == nil {
			lines = append(lines, fmt.Sprintf("%s %s returned %d results", r.Tool, r.Name, len(r.Content)))
			for _, c := range r.Content {
				lines = append(lines, "  "+c["title"]+" <"+c["url"]+">")
			}
		}
	case protocol.TypeTaskProgress:
		var p struct {
			Step    string
			Sources int
		}
		if err := json.Unmarshal(m.Payload, &p); err == nil {
			lines = append(lines, fmt.Sprintf("progress: %s, %d sources", p.Step, p.Sources))
		}
	case protocol.TypeTaskResult:
		lines = append(lines, "returns a "+m.PayloadType+" result")
	default:
		lines = append(lines, string(m.Payload))
	}
	for _, l := range lines {
		head += "\n     " + l
	}
	return head
}
