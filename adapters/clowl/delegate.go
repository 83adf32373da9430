package clowl

import (
	"context"
	"encoding/json"
	"github.com/clutchprotocol/clutch/adapters/internal/rawjson"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
)

// Mode is a DLGT delegation mode (docs/protocol.md §14.3, required by the schema).
type Mode string

// The three delegation modes of docs/protocol.md §14.3.
const (
	// Transfer is a full handoff: the delegating agent is done and the
	// delegate takes ownership, so the subtask's outcome is the task's.
	Transfer Mode = "transfer"
	// Fork is parallel work: the delegating agent goes on independently.
	Fork Mode = "fork"
	// Assist is a helper role: the delegating agent stays accountable and
	// folds the delegate's outcome into its own result.
	Assist Mode = "assist"
)

// Valid reports whether m is one of the three modes.
func (m Mode) Valid() bool { return m == Transfer || m == Fork || m == Assist }

// ModeOf returns the delegation mode of a delegated task.request
// (meta.delegation_mode), "" when it has none.
func ModeOf(m *protocol.Message) Mode {
	if m == nil {
		return ""
	}
	return Mode(rawjson.MetaString(m, MetaDelegationMode))
}

// Delegation follows a subtask started by Delegate.
type Delegation struct {
	Mode Mode // how the subtask was delegated
	done chan struct{}
	out  *router.Outcome
	err  error
}

// Done is closed when the subtask has ended.
func (d *Delegation) Done() <-chan struct{} { return d.done }

// Wait blocks until the subtask ends or ctx is done, and returns its
// outcome as router.Task.Delegate does.
func (d *Delegation) Wait(ctx context.Context) (*router.Outcome, error) {
	select {
	case <-d.done:
		return d.out, d.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Result waits for the subtask and returns it as the delegating
// handler's own return values: the subtask's payload, payload type and
// attachments, or its error. A handler that transferred its task returns
// this.
func (d *Delegation) Result(ctx context.Context) (*router.Result, error) {
	out, err := d.Wait(ctx)
	if err != nil {
		return nil, err
	}
	m := out.Message
	return &router.Result{PayloadType: m.PayloadType, Payload: json.RawMessage(m.Payload), Attachments: m.Attachments}, nil
}

// Delegate runs sub, a subtask of t (router.Task.NewSubtask makes one), the
// way mode says (docs/protocol.md §14.3 DLGT), and records the mode in sub's meta, so
// that Outbound sends sub to a CLowl agent as a DLGT with that
// delegation_mode:
//   - Assist: Delegate waits for the subtask (router.Task.Delegate) and
//     returns; the handler reads Wait's outcome and stays accountable for
//     its own result.
//   - Transfer: Delegate waits too; the handler returns d.Result(ctx), so
//     the task's outcome is the delegate's.
//   - Fork: Delegate returns at once while the subtask runs; the handler
//     goes on with its own work. The router cancels a subtask when the
//     handler that delegated it returns, so a handler Waits for its forks
//     before it returns (see the package doc's caveats).
func Delegate(ctx context.Context, t *router.Task, sub *protocol.Message, mode Mode) (*Delegation, error) {
	if !mode.Valid() {
		return nil, outErr(protocol.CodeInvalidField, "/meta/"+MetaDelegationMode, "delegation mode "+string(mode)+" is not transfer, fork or assist", nil)
	}
	if sub.Meta == nil {
		sub.Meta = map[string]any{}
	}
	sub.Meta[MetaDelegationMode] = string(mode)
	sub.Meta[MetaPerformative] = string(DLGT)
	sub.Reset()
	d := &Delegation{Mode: mode, done: make(chan struct{})}
	run := func() {
		defer close(d.done)
		d.out, d.err = t.Delegate(ctx, sub)
	}
	if mode == Fork {
		go run()
	} else {
		run()
	}
	return d, nil
}
