package rules

import (
	"context"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTaskAgentAndPolicy runs in-process agents that use the library
// through ForTask, under a Policy that requires references to the review
// rule: a result with them is accepted, one without is refused with
// VALIDATION naming what is missing.
func TestTaskAgentAndPolicy(t *testing.T) {
	ctx := context.Background()
	var env *routertest.Env
	policy := Policy{
		Capabilities: map[string][]Requirement{"skill:review": {{Rule: "rules/REVIEW.md", Constraint: "Checks/1"}}},
		Steps:        map[string][]Requirement{"publish": {{Rule: "rules/REVIEW.md"}}},
	}
	late := func(next router.Handler) router.Handler {
		return func(ctx context.Context, t *router.Task) (*router.Result, error) {
			return Require(env.Store, policy)(next)(ctx, t)
		}
	}
	env = routertest.New(t, &routertest.Options{Router: router.Options{Middleware: []router.Middleware{late}}})
	lib, err := Open(ctx, env.Store, &Options{Workspace: "team", IDs: env.IDs, Schemas: env.Schemas})
	require.NoError(t, err)
	_, rule, _ := seed(t, lib)

	refer := true
	env.Agent("agent:reviewer", []string{"skill:review"}, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		s := lib.ForTask(t)
		items, err := s.Discover(ctx, Filter{Kind: "rule"})
		if err != nil {
			return nil, err
		}
		ld, err := s.Load(ctx, []string{items[0].ID}, map[string]string{items[0].ID: ""})
		if err != nil {
			return nil, err
		}
		if refer {
			if _, err := s.Refer(ctx, []Ref{{RuleID: ld[0].ID, ConstraintID: ld[0].Constraints[1].ID, Reason: "ran the tests"}}); err != nil {
				return nil, err
			}
			if err := s.Report(ctx, "reviewed"); err != nil {
				return nil, err
			}
		} else if err := s.Reject(ctx, "skipped the checks"); err != nil {
			return nil, err
		}
		return &router.Result{Payload: map[string]any{"ok": true}}, nil
	})

	out, err := env.Run(env.Request("", map[string]any{}, "skill:review"))
	require.NoError(t, err)
	env.AssertTypes(out.TaskID, protocol.TypeTaskRequest, protocol.TypeRoutingDecision, protocol.TypeTaskAccept,
		TypeDiscover, TypeLoad, TypeRefer, TypeReport, protocol.TypeTaskResult)
	refs := env.Events(store.Query{TaskID: out.TaskID, TypePrefix: string(TypeRefer)})
	require.Len(t, refs, 1)
	assert.Equal(t, "agent:reviewer", refs[0].From.AgentID)
	p, err := protocol.DecodePayload[ReferEvent](refs[0])
	require.NoError(t, err)
	assert.Equal(t, out.TaskID, p.SessionID)
	assert.Equal(t, []ReferRecord{{RuleID: rule.ID, Path: "rules/REVIEW.md", ConstraintID: "Checks/1", TextHash: HashContent([]byte("tests pass")),
		Hash: rule.Hash, Reason: "ran the tests"}}, p.Refs)
	for _, m := range env.Events(store.Query{TaskID: out.TaskID, TypePrefix: "x.clutch.rules."}) {
		require.NoError(t, env.Schemas.ValidateMessage(m))
	}

	refer = false
	out, err = env.Run(env.Request("", map[string]any{}, "skill:review"))
	require.Error(t, err)
	assert.ErrorIs(t, err, protocol.CodeValidation)
	assert.Contains(t, err.Error(), "did not refer to rules/REVIEW.md#Checks/1")
	stored, err := protocol.DecodePayload[protocol.ErrorPayload](out.Message)
	require.NoError(t, err)
	assert.Equal(t, []any{map[string]any{"rule": "rules/REVIEW.md", "constraint": "Checks/1"}}, stored.Details["missing"])
	assert.False(t, stored.Retryable)
	env.AssertTypes(out.TaskID, protocol.TypeTaskRequest, protocol.TypeRoutingDecision, protocol.TypeTaskAccept,
		TypeDiscover, TypeLoad, TypeReject, protocol.TypeTaskError)

	// A workflow step requires any reference to the rule, by path.
	refer = true
	req := env.Request("", map[string]any{}, "skill:review")
	req.Meta = map[string]any{"step": "publish"}
	_, err = env.Run(req)
	require.NoError(t, err)
}
