package reviewer

import (
	"context"
	"errors"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/schema"
)

// newEnv is the set-up every test shares: the reviewer and two fake linters.
func newEnv(t *testing.T) *routertest.Env {
	env := routertest.New(t, nil)
	if err := RegisterTypes(env.Schemas); err != nil {
		t.Fatal(err)
	}
	env.Register(Card, Reviewer)
	return env
}

func linter(problems ...string) router.Handler {
	return func(ctx context.Context, t *router.Task) (*router.Result, error) {
		return &router.Result{PayloadType: "lint.report.v1", Payload: LintReport{Problems: append([]string{}, problems...)}}, nil
	}
}

func lintCard(id, language string) *protocol.AgentCard {
	return &protocol.AgentCard{AgentID: id, Capabilities: []protocol.Capability{{ID: "skill:lint", Tags: []string{language}}}}
}

func TestReviewFindsLintProblems(t *testing.T) {
	env := newEnv(t)
	env.Register(lintCard("agent:golint", "go"), linter("unused variable x"))
	env.Register(lintCard("agent:pylint", "python"), linter())

	out, err := env.Run(env.Request("review.request.v1", ReviewRequest{Language: "go", Code: "x := 1"}, "skill:code-review"))
	if err != nil {
		t.Fatal(err)
	}
	review, err := router.ResultAs[schema.CodeReview](out)
	if err != nil {
		t.Fatal(err)
	}
	if review.Severity != schema.SeverityMedium || len(review.Findings) != 1 || review.Findings[0].Message != "unused variable x" {
		t.Fatalf("review = %+v", review)
	}

	// The events tell the whole story: the review task, and the lint
	// subtask routed to the Go linter because it prefers tag:go.
	env.AssertTypes(out.TaskID, protocol.TypeTaskRequest, protocol.TypeRoutingDecision, protocol.TypeTaskAccept, protocol.TypeTaskResult)
	tree, err := env.Router.Tree(context.Background(), out.Message.RunID)
	if err != nil {
		t.Fatal(err)
	}
	lint := tree.Tasks[out.TaskID].Children
	if len(lint) != 1 {
		t.Fatalf("tree:\n%s", tree)
	}
	env.AssertRoutedTo(lint[0].TaskID, "agent:golint")
}

func TestCleanCodeIsLowSeverity(t *testing.T) {
	env := newEnv(t)
	env.Register(lintCard("agent:golint", "go"), linter())
	out, err := env.Run(env.Request("review.request.v1", ReviewRequest{Language: "go", Code: "package main"}, "skill:code-review"))
	if err != nil {
		t.Fatal(err)
	}
	review, _ := router.ResultAs[schema.CodeReview](out)
	if review.Severity != schema.SeverityLow || len(review.Findings) != 0 {
		t.Fatalf("review = %+v", review)
	}
}

func TestNoLinterAvailable(t *testing.T) {
	env := newEnv(t)
	_, err := env.Run(env.Request("review.request.v1", ReviewRequest{Language: "go", Code: "x"}, "skill:code-review"))
	// The subtask found no agent with skill:lint; the reviewer passes the
	// coded error on.
	if !errors.Is(err, protocol.CodeNoMatch) {
		t.Fatalf("err = %v, want NO_MATCH", err)
	}
}

func TestRejectsBadInput(t *testing.T) {
	env := newEnv(t)
	env.Register(lintCard("agent:golint", "go"), linter())
	_, err := env.Run(env.Request("research.query.v1", schema.ResearchQuery{Query: "not code"}, "skill:code-review"))
	if !errors.Is(err, protocol.CodeValidation) {
		t.Fatalf("err = %v, want VALIDATION", err)
	}
}
