// Package reviewer is the second tutorial: how to unit-test an agent with
// router/routertest. The agent under test, Reviewer, reviews code: it
// delegates a static check to whatever agent has skill:lint, then returns a
// code.review.v1 payload. The tests in agent_test.go run it against fake
// collaborators on an in-memory store with deterministic ids and a test
// clock, and assert on the outcome, the events and the routing decisions.
//
//	go test ./examples/testing
package reviewer

import (
	"context"
	"fmt"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
)

// ReviewRequest is what Reviewer is asked to review (payload type
// review.request.v1, registered by Register).
type ReviewRequest struct {
	Language string `json:"language"`
	Code     string `json:"code"`
}

// LintReport is what a linter returns (lint.report.v1).
type LintReport struct {
	Problems []string `json:"problems"`
}

// Card is Reviewer's AgentCard.
var Card = &protocol.AgentCard{
	AgentID:      "agent:reviewer",
	Capabilities: []protocol.Capability{{ID: "skill:code-review", Tags: []string{"go"}}},
	Limits:       &protocol.Limits{MaxConcurrency: 4, MaxRuntimeSec: 60},
}

// RegisterTypes adds the tutorial's payload types to a schema registry.
func RegisterTypes(s *schema.Registry) error {
	if err := schema.RegisterType[ReviewRequest](s, "review.request.v1"); err != nil {
		return err
	}
	return schema.RegisterType[LintReport](s, "lint.report.v1")
}

// Reviewer is the agent under test.
func Reviewer(ctx context.Context, t *router.Task) (*router.Result, error) {
	req, err := router.Input[ReviewRequest](t)
	if err != nil {
		return nil, router.Fail(protocol.CodeValidation, "not a review request: "+err.Error(), false, nil)
	}
	sub, err := t.NewSubtask("review.request.v1", req)
	if err != nil {
		return nil, err
	}
	sub.Requires = []string{"skill:lint"}
	sub.Prefers = []string{"tag:" + req.Language}
	out, err := t.Delegate(ctx, sub)
	if err != nil {
		return nil, fmt.Errorf("lint: %w", err)
	}
	report, err := router.ResultAs[LintReport](out)
	if err != nil {
		return nil, err
	}
	review := schema.CodeReview{Severity: schema.SeverityLow}
	for _, p := range report.Problems {
		review.Findings = append(review.Findings, schema.ReviewFinding{Message: p})
		review.Severity = schema.SeverityMedium
	}
	return &router.Result{PayloadType: "code.review.v1", Payload: review}, nil
}
