package router

import (
	"context"

	"github.com/clutchprotocol/clutch/protocol"
)

// Call runs a task that requires capability, with payload (of
// payloadType, "" for none), and returns its outcome once it has a
// result. It is how code that is handed only a context — an agent
// framework's tool, say — asks the team for something:
//
//   - in a handler (TaskFrom(ctx) is not nil), the task is a subtask of
//     the running one (Task.NewSubtask, Task.Delegate): same run, its own
//     routing decision, the parent's budget and cancellation; from is not
//     used;
//   - anywhere else, it is a root task from the agent from (NewRequest),
//     submitted and waited for; when ctx ends first the task is cancelled
//     and ctx's error returned.
//
// A task that ends without a result gives an error: its wire error
// (*protocol.ErrorPayload, Outcome.Err), or, when it has none, CANCELLED
// for a task.cancel and TIMEOUT for a task.timeout; a root task that
// waits for a person's answer gives its question's INPUT_REQUIRED
// (Outcome.Question set; Router.Answer runs it on). The outcome is
// returned with that error when there is one.
func (r *Router) Call(ctx context.Context, from, capability, payloadType string, payload any) (*Outcome, error) {
	if capability == "" {
		return nil, wrap(ErrInvalidRequest, "Call needs a capability", nil)
	}
	var out *Outcome
	if t := TaskFrom(ctx); t != nil {
		sub, err := t.NewSubtask(payloadType, payload)
		if err != nil {
			return nil, err
		}
		sub.Requires = []string{capability}
		if out, err = t.Delegate(ctx, sub); out == nil {
			return nil, err
		}
	} else {
		req, err := r.NewRequest(from, payloadType, payload)
		if err != nil {
			return nil, err
		}
		req.Requires = []string{capability}
		h, err := r.Submit(ctx, req)
		if err != nil {
			return nil, err
		}
		out, err = h.Wait(ctx)
		if ctx.Err() != nil {
			h.Cancel("the caller stopped waiting")
			return nil, ctx.Err()
		}
		if out == nil {
			return nil, err
		}
	}
	if out.OK() {
		return out, nil
	}
	if out.Err != nil {
		return out, out.Err
	}
	code := protocol.CodeInternal
	switch out.Type {
	case protocol.TypeTaskCancel:
		code = protocol.CodeCancelled
	case protocol.TypeTaskTimeout:
		code = protocol.CodeTimeout
	}
	return out, Fail(code, "the task for "+capability+" ended with "+string(out.Type), code.Retryable(), nil)
}

// ToolName is capability as the name of a tool offered to a model (a
// team's capability as a framework's tool, Router.Call): every byte other
// than an ASCII letter, a digit, '_' or '-' becomes '_', which the model
// APIs accept in a tool's name.
func ToolName(capability string) string {
	b := []byte(capability)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	return string(b)
}
