package router

import (
	"context"
	"errors"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router/internal/idem"
)

// Every terminal event carries the attempt's end key, and an end the
// store already holds (stored by an adopter) wins: the router's own end
// of that attempt is not stored and its outcome is the stored one.
func TestEndKeyFencesTheAttempt(t *testing.T) {
	e := newEnv(t, nil)
	e.register(card("agent:a", skill("skill:x")), func(ctx context.Context, tk *Task) (*Result, error) {
		if tk.Request().Meta["fence"] == nil {
			return summary("x"), nil
		}
		m := e.r.IDs().Reply(tk.Request(), protocol.TypeTaskError, "agent:orchestrator")
		m.IdempotencyKey = idem.End(tk.ID(), tk.Attempt())
		m.SetPayload(protocol.ErrorPayload{Code: protocol.CodeInterrupted, Message: "adopted elsewhere"})
		if _, err := e.st.Append(ctx, m); err != nil {
			return nil, err
		}
		return summary("too late"), nil
	})
	out, err := e.wait(e.submit(e.request("skill:x")))
	if err != nil || out.Message.IdempotencyKey != idem.End(out.TaskID, 1) {
		t.Fatalf("outcome %+v, %v; want a result keyed %s", out, err, idem.End(out.TaskID, 1))
	}
	req := e.request("skill:x")
	req.Meta = map[string]any{"fence": true}
	out, err = e.wait(e.submit(req))
	if !errors.Is(err, protocol.CodeInterrupted) || out.Type != protocol.TypeTaskError {
		t.Fatalf("outcome %+v, %v; want the stored INTERRUPTED", out, err)
	}
	if got := e.types(req.TaskID); got[len(got)-1] != string(protocol.TypeTaskError) {
		t.Fatalf("events %v: the router's result was stored after the fenced end", got)
	}
}
