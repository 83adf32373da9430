package clowl_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/adapters/clowl"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/store"
)

// A CLowl REQ runs on a Clutch agent through the router, and the router's
// events go back out as CLowl answers to that REQ.
func TestREQThroughTheRouter(t *testing.T) {
	env := routertest.New(t, nil)
	env.Agent("agent:radar", []string{"search:web"}, func(ctx context.Context, task *router.Task) (*router.Result, error) {
		var q struct {
			Q, Scope string
		}
		if err := json.Unmarshal(task.Request().Payload, &q); err != nil {
			return nil, err
		}
		return &router.Result{Payload: map[string]any{"found": q.Q, "sources": 8}}, nil
	})
	a := clowl.New(nil)
	req := inbound(t, a, examples(t)[8].Raw) // 09-m001-REQ, oscar → radar
	out, err := env.Run(req)
	if err != nil {
		t.Fatal(err)
	}
	env.AssertRoutedTo(req.TaskID, "agent:radar")
	done, err := a.Outbound(context.Background(), out.Message)
	if err != nil {
		t.Fatal(err)
	}
	cm, err := clowl.Parse(done)
	if err != nil {
		t.Fatal(err)
	}
	if cm.P != clowl.DONE || cm.PID != "m001" || cm.TID != "t001" || cm.CID != "pipe001" || cm.From != "radar" || cm.To[0] != "oscar" {
		t.Errorf("DONE: %s", done)
	}
	var accept *protocol.Message
	for _, m := range env.Events(store.Query{TaskID: req.TaskID, TypePrefix: "task.accept"}) {
		accept = m
	}
	ack, err := a.Outbound(context.Background(), accept)
	if err != nil || !strings.Contains(string(ack), `"p":"ACK"`) || !strings.Contains(string(ack), `"pid":"m001"`) {
		t.Errorf("ACK: %s %v", ack, err)
	}
}

// Delegate honours the three modes through the router.
func TestDelegateModes(t *testing.T) {
	for _, mode := range []clowl.Mode{clowl.Transfer, clowl.Assist, clowl.Fork} {
		t.Run(string(mode), func(t *testing.T) {
			env := routertest.New(t, nil)
			env.Agent("agent:muse", []string{"skill:draft"}, func(ctx context.Context, task *router.Task) (*router.Result, error) {
				if clowl.ModeOf(task.Request()) != mode {
					t.Errorf("delegate sees mode %q", clowl.ModeOf(task.Request()))
				}
				return &router.Result{Payload: map[string]any{"draft": "by muse"}}, nil
			})
			var sub *protocol.Message
			env.Agent("agent:oscar", []string{"skill:plan"}, func(ctx context.Context, task *router.Task) (*router.Result, error) {
				var err error
				sub, err = task.NewSubtask("", map[string]any{"topic": "MCP vs A2A"})
				if err != nil {
					return nil, err
				}
				sub.To = []protocol.Participant{{AgentID: "agent:muse"}}
				d, err := clowl.Delegate(ctx, task, sub, mode)
				if err != nil {
					return nil, err
				}
				switch mode {
				case clowl.Transfer:
					return d.Result(ctx) // the delegate's outcome is the task's
				case clowl.Fork:
					select {
					case <-d.Done():
						// may already have ended; that is fine
					default:
					}
					own := map[string]any{"review": "by oscar"} // work done alongside
					if _, err := d.Wait(ctx); err != nil {
						return nil, err
					}
					return &router.Result{Payload: own}, nil
				}
				got, err := d.Wait(ctx) // assist: fold the delegate's work in
				if err != nil {
					return nil, err
				}
				return &router.Result{Payload: map[string]any{"approved": json.RawMessage(got.Message.Payload)}}, nil
			})
			out, err := env.Run(env.Request("", map[string]any{"goal": "post"}, "skill:plan"))
			if err != nil {
				t.Fatal(err)
			}
			want := map[clowl.Mode]string{
				clowl.Transfer: `{"draft":"by muse"}`,
				clowl.Assist:   `{"approved":{"draft":"by muse"}}`,
				clowl.Fork:     `{"review":"by oscar"}`,
			}[mode]
			if string(out.Message.Payload) != want {
				t.Errorf("result %s, want %s", out.Message.Payload, want)
			}
			// The stored subtask goes out to a CLowl agent as a DLGT.
			stored := env.Events(store.Query{TaskID: sub.TaskID, TypePrefix: "task.request"})
			if len(stored) != 1 || stored[0].ParentTaskID != out.TaskID {
				t.Fatalf("subtask events %v", stored)
			}
			b, err := clowl.New(nil).Outbound(context.Background(), stored[0])
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), `"p":"DLGT"`) || !strings.Contains(string(b), `"delegation_mode":"`+string(mode)+`"`) {
				t.Errorf("outbound subtask: %s", b)
			}
		})
	}
	if _, err := clowl.Delegate(context.Background(), nil, protocol.NewMessage(protocol.TypeTaskRequest, "agent:a"), "swap"); err == nil {
		t.Error("unknown mode accepted")
	}
}

// An inbound DLGT carries its mode to the delegate's handler.
func TestInboundDLGTThroughTheRouter(t *testing.T) {
	env := routertest.New(t, &routertest.Options{Timeout: 5 * time.Second})
	got := make(chan clowl.Mode, 1)
	env.Agent("agent:ink", []string{"skill:draft"}, func(ctx context.Context, task *router.Task) (*router.Result, error) {
		got <- clowl.ModeOf(task.Request())
		return &router.Result{Payload: map[string]any{"path": "drafts/x.md"}}, nil
	})
	a := clowl.New(nil)
	for _, c := range examples(t)[8:14] {
		inbound(t, a, c.Raw) // the pipeline up to m006, so m004's task is known
	}
	dlgt := inbound(t, a, examples(t)[14].Raw) // 15-m007-DLGT, muse → ink, fork
	if dlgt.ParentTaskID != "task:m004" {
		t.Fatalf("parent %q", dlgt.ParentTaskID)
	}
	out, err := env.Run(dlgt)
	if err != nil {
		t.Fatal(err)
	}
	if m := <-got; m != clowl.Fork {
		t.Errorf("mode %q", m)
	}
	done, _ := a.Outbound(context.Background(), out.Message)
	if !strings.Contains(string(done), `"pid":"m007"`) || !strings.Contains(string(done), `"to":"muse"`) {
		t.Errorf("DONE %s", done)
	}
}
