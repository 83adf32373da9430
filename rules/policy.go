package rules

import (
	"context"
	"fmt"
	"strings"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

// Requirement is a reference a Policy requires: to a rule or workflow
// (by id or by path), and optionally to one of its constraints.
type Requirement struct {
	Rule       string `json:"rule"`                 // a document id or path
	Constraint string `json:"constraint,omitempty"` // "" means any constraint of the rule
}

// String is "rule" or "rule#constraint".
func (q Requirement) String() string {
	if q.Constraint == "" {
		return q.Rule
	}
	return q.Rule + "#" + q.Constraint
}

// Policy says which references an agent must have made (memref, or
// Session.Refer of ForTask) during a task before its result is accepted
// (docs/protocol.md §15.11).
type Policy struct {
	// Capabilities requires references of tasks whose request requires the
	// capability id (e.g. "skill:review").
	Capabilities map[string][]Requirement
	// Steps requires references of tasks whose request names the workflow
	// step in meta.step.
	Steps map[string][]Requirement
}

// Require returns router middleware that enforces p: when a handler
// returns a result for a task that p covers, the task's refer events of
// the current attempt are read from st (the router's store), and a result without
// every required reference is refused — the attempt ends in a task.error
// of code VALIDATION, not retryable, whose message and details
// ("missing") name what is missing. Errors and tasks p does not cover pass
// unchanged. Install it with router.Options.Middleware.
func Require(st store.Store, p Policy) router.Middleware {
	return func(next router.Handler) router.Handler {
		return func(ctx context.Context, t *router.Task) (*router.Result, error) {
			res, err := next(ctx, t)
			if err != nil {
				return res, err
			}
			need := p.requirements(t.Request())
			if len(need) == 0 {
				return res, nil
			}
			missing, err := missingRefs(ctx, st, t, need)
			if err != nil {
				return nil, err
			}
			if len(missing) == 0 {
				return res, nil
			}
			names := make([]string, len(missing))
			for i, q := range missing {
				names[i] = q.String()
			}
			return nil, router.Fail(protocol.CodeValidation,
				fmt.Sprintf("%s: %s did not refer to %s", ErrMissingReferences, t.Agent(), strings.Join(names, ", ")),
				false, map[string]any{"missing": missing})
		}
	}
}

// requirements returns what p requires of a task's request.
func (p Policy) requirements(req *protocol.Message) []Requirement {
	var out []Requirement
	for _, c := range req.Requires {
		out = append(out, p.Capabilities[c]...)
	}
	if step, ok := req.Meta["step"].(string); ok {
		out = append(out, p.Steps[step]...)
	}
	return out
}

// missing returns the requirements the task's current attempt has not met.
func missingRefs(ctx context.Context, st store.Store, t *router.Task, need []Requirement) ([]Requirement, error) {
	type key struct{ rule, constraint string }
	have := map[key]bool{}
	for ev, err := range st.Read(ctx, store.Query{TaskID: t.ID(), AgentID: t.Agent(), TypePrefix: string(TypeRefer)}) {
		if err != nil {
			return nil, err
		}
		m, err := ev.Message()
		if err != nil {
			return nil, err
		}
		if m.Type != TypeRefer || m.Attempt != t.Attempt() {
			continue
		}
		p, err := protocol.DecodePayload[ReferEvent](m)
		if err != nil {
			continue
		}
		for _, r := range p.Refs {
			for _, rule := range []string{r.RuleID, r.Path} {
				have[key{rule, ""}] = true
				have[key{rule, r.ConstraintID}] = true
			}
		}
	}
	var out []Requirement
	for _, q := range need {
		if !have[key{q.Rule, q.Constraint}] {
			out = append(out, q)
		}
	}
	return out, nil
}
