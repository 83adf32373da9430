// Command rules is the tutorial of package rules: a team keeps its rules in
// a library whose every change is an event, an in-process reviewer agent
// loads them through its task and declares which constraints it applied, a
// policy refuses a result that skips them, and an MCP host works with the
// same library through the rules tools of the Clutch MCP server. Run it with
//
//	go run ./examples/rules
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/clutchprotocol/clutch/adapters/mcp"
	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/rules"
	"github.com/clutchprotocol/clutch/rules/rulesmcp"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

const reviewMD = `# Code review

## Checks

1. The tests pass.
2. Every exported name has a doc comment.

## Tone

Be specific and kind.
`

func main() {
	dir, err := os.MkdirTemp("", "clutch-rules-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	if err := run(context.Background(), os.Stdout, filepath.Join(dir, "clutch.db")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out io.Writer, file string) error {
	st, err := boltstore.Open(file, nil)
	if err != nil {
		return err
	}
	defer st.Close()
	reg, err := registry.Open(ctx, st, nil)
	if err != nil {
		return err
	}
	schemas, err := schema.New(nil)
	if err != nil {
		return err
	}
	// A policy: a task that requires skill:review is accepted only when its
	// agent referred to check 1 of the review rule.
	policy := rules.Policy{Capabilities: map[string][]rules.Requirement{
		"skill:review": {{Rule: "rules/REVIEW.md", Constraint: "Checks/1"}}}}
	r, err := router.New(st, reg, &router.Options{Validator: schemas, Logger: slog.New(slog.DiscardHandler),
		MaxAttempts: 1, Middleware: []router.Middleware{rules.Require(st, policy)}})
	if err != nil {
		return err
	}
	defer r.Close()

	lib, err := rules.Open(ctx, st, &rules.Options{Workspace: "team", Schemas: schemas})
	if err != nil {
		return err
	}
	doc, err := lib.Publish(ctx, "agent:lead", rules.Publish{Path: "rules/REVIEW.md", Content: reviewMD, Description: "how we review code"})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "published %s (%s) version %d, %s\n", doc.Path, doc.Kind, doc.Version, doc.Hash[:19]+"…")
	_, cs, err := lib.Content(ctx, doc.ID)
	if err != nil {
		return err
	}
	for _, c := range cs {
		fmt.Fprintf(out, "  constraint %-9s %s\n", c.ID, strings.ReplaceAll(c.Text, "\n", " / "))
	}

	// An in-process reviewer: it loads the rule through its task and, when
	// careful, declares the constraint it applied.
	careful := true
	err = r.Register(ctx, router.Card("agent:reviewer", "skill:review"),
		func(ctx context.Context, t *router.Task) (*router.Result, error) {
			s := lib.ForTask(t)
			items, err := s.Load(ctx, []string{doc.ID}, map[string]string{doc.ID: ""})
			if err != nil {
				return nil, err
			}
			if careful {
				if _, err := s.Refer(ctx, []rules.Ref{{RuleID: items[0].ID, ConstraintID: "Checks/1", Reason: "ran go test"}}); err != nil {
					return nil, err
				}
				if err := s.Report(ctx, "reviewed the diff"); err != nil {
					return nil, err
				}
			}
			return &router.Result{Payload: map[string]any{"verdict": "approve"}}, nil
		})
	if err != nil {
		return err
	}
	for _, c := range []bool{true, false} {
		careful = c
		req, err := r.NewRequest("agent:ui", "", map[string]any{"diff": "…"})
		if err != nil {
			return err
		}
		req.Requires = []string{"skill:review"}
		h, err := r.Submit(ctx, req)
		if err != nil {
			return err
		}
		o, err := h.Wait(ctx)
		if o == nil {
			return err
		}
		fmt.Fprintf(out, "\nreview task (careful=%v) ended with %s\n", c, o.Type)
		if o.Err != nil {
			fmt.Fprintf(out, "  %s: %s\n", o.Err.Code, o.Err.Message)
		}
		for ev, err := range st.Read(ctx, store.Query{TaskID: h.TaskID()}) {
			if err != nil {
				return err
			}
			m, _ := ev.Message()
			fmt.Fprintf(out, "  %-22s from %s\n", m.Type, m.From.AgentID)
		}
	}

	// An MCP host works with the same library through the rules tools,
	// served next to the task tools (here over an in-memory transport).
	tools, err := rulesmcp.Tools(lib, nil)
	if err != nil {
		return err
	}
	srv, err := mcp.NewServer(r, &mcp.ServerOptions{Caller: &auth.Caller{AgentID: "agent:ide"}, Expose: []string{"agent:reviewer"},
		Logger: slog.New(slog.DiscardHandler), ExtraTools: tools})
	if err != nil {
		return err
	}
	serverEnd, clientEnd := sdk.NewInMemoryTransports()
	sctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Run(sctx, serverEnd) }()
	defer func() { stop(); <-done }()
	host, err := sdk.NewClient(&sdk.Implementation{Name: "ide", Version: "1"}, nil).Connect(ctx, clientEnd, nil)
	if err != nil {
		return err
	}
	defer host.Close()
	fmt.Fprintln(out, "\nMCP host agent:ide")
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"memsetup", map[string]any{"session_id": "ide-thread-7", "knownHashes": map[string]any{"META_PROMPT.md": ""}}},
		{"memdisc", map[string]any{"kind": "rule"}},
		{"memload", map[string]any{"ids": []string{doc.ID}, "knownHashes": map[string]any{doc.ID: doc.Hash}}},
		{"memref", map[string]any{"refs": []any{map[string]any{"ruleId": doc.ID, "constraintId": "Check"}}}},
		{"memref", map[string]any{"refs": []any{map[string]any{"ruleId": doc.ID, "constraintId": "Checks/2", "reason": "documented Open"}}}},
		{"artifact", map[string]any{"resource": "rule", "op": map[string]any{"update": map[string]any{"id": doc.ID, "body": reviewMD + "3. go vet is clean.\n"}}}},
		{"agentreport", map[string]any{"summary": "reviewed and proposed a third check"}},
	} {
		res, err := host.CallTool(ctx, &sdk.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			return err
		}
		sc := res.StructuredContent.(map[string]any)
		switch {
		case res.IsError:
			fmt.Fprintf(out, "  %-12s error %v (%v): %v\n", c.tool, sc["code"], sc["retryAction"], sc["error"])
		case c.tool == "memload":
			it := sc["items"].([]any)[0].(map[string]any)
			fmt.Fprintf(out, "  %-12s changed=%v content sent=%v constraints=%d\n", c.tool, it["changed"], it["content"] != nil, len(it["constraints"].([]any)))
		case c.tool == "memsetup":
			fmt.Fprintf(out, "  %-12s session %v in run %v\n", c.tool, sc["sessionId"], sc["runId"])
		default:
			fmt.Fprintf(out, "  %-12s ok\n", c.tool)
		}
	}

	// Review the host's draft: approving publishes version 2.
	for _, d := range lib.Drafts() {
		fmt.Fprintf(out, "\ndraft by %s: %s %s\n", d.Author, d.Op, d.Path)
		v2, err := lib.Approve(ctx, "agent:lead", d.Author, d.ID)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "approved: %s version %d\n", v2.Path, v2.Version)
	}
	runID, _, _ := lib.Run()
	fmt.Fprintln(out, "\nthe library's log:")
	for ev, err := range st.Read(ctx, store.Query{RunID: runID}) {
		if err != nil {
			return err
		}
		m, _ := ev.Message()
		fmt.Fprintf(out, "  %-30s from %s\n", m.Type, m.From.AgentID)
	}
	return nil
}
