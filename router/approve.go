package router

import (
	"context"
	"encoding/json"

	"github.com/clutchprotocol/clutch/protocol"
)

// Approve asks for a person's approval of what the task is about to do —
// a tool call, a delegation, a payment — with its proposed arguments
// (docs/protocol.md §2.7), and returns the arguments to go on with: args
// as proposed when approved, the person's when edited. A reject is an
// error of code POLICY_DENIED, not retryable, whose message carries the
// reason. It is Task.Ask with a question of kind approval whose details
// name what and hold args: the task waits until somebody who may (who;
// nil means the requester) answers, and the error to return while it
// waits matches ErrWaiting.
//
//	args, err := router.Approve(ctx, t, "tool mail.send", mail, nil)
//	if err != nil {
//		return nil, err
//	}
//	// send with args
func Approve(ctx context.Context, t *Task, what string, args any, who *protocol.Answerers) (json.RawMessage, error) {
	proposed, err := json.Marshal(args)
	if err != nil {
		return nil, wrap(ErrInvalidRequest, "the arguments to approve are not JSON", err)
	}
	a, err := AskAs[protocol.Approval](ctx, t, protocol.Question{
		Kind: protocol.QuestionApproval, Text: "Approve " + what + "?", Who: who,
		Details: map[string]any{"action": what, "arguments": json.RawMessage(proposed)},
	})
	if err != nil {
		return nil, err
	}
	switch a.Decision {
	case protocol.Reject:
		msg := what + " was rejected"
		if a.Reason != "" {
			msg += ": " + a.Reason
		}
		return nil, &protocol.ErrorPayload{Code: protocol.CodePolicyDenied, Message: msg,
			Details: map[string]any{"action": what, "reason": a.Reason}}
	case protocol.Edit:
		return a.Arguments, nil
	}
	return proposed, nil
}

// RequireApproval is a Middleware that asks for a person's approval
// before the handler runs a task that need selects — a capability, an
// agent, a payload type — showing its input as the arguments. Approved,
// the handler runs; edited, it runs on the edited input (Input decodes
// it); rejected, the task ends with POLICY_DENIED and the reason. who
// names who may approve (nil: the requester). need may be nil: every task.
//
//	router.Options{Middleware: []router.Middleware{
//		router.RequireApproval(func(t *router.Task) bool { return t.Agent() == "agent:payer" }, nil),
//	}}
func RequireApproval(need func(t *Task) bool, who *protocol.Answerers) Middleware {
	return func(next Handler) Handler {
		return func(ctx context.Context, t *Task) (*Result, error) {
			if need == nil || need(t) {
				args, err := Approve(ctx, t, "the task for "+t.Agent(), json.RawMessage(t.Request().Payload), who)
				if err != nil {
					return nil, err
				}
				if string(args) != string(t.Request().Payload) {
					t.edited = args
				}
			}
			return next(ctx, t)
		}
	}
}
