package router

import (
	"context"
	"errors"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
)

// TestDuplicateOfAnotherSender: a request that duplicates another
// sender's stored or running request (same run_id and idempotency_key, or
// same id) is refused, never answered with the other sender's task; the
// original sender's redelivery still follows its task.
func TestDuplicateOfAnotherSender(t *testing.T) {
	e := newEnv(t, nil)
	release := make(chan struct{})
	e.register(card("agent:r", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return summary("x"), nil
	})
	orig := e.request("skill:r")
	orig.IdempotencyKey = "order-1"
	h := e.submit(orig)

	for name, mod := range map[string]func(m *protocol.Message){
		"same run and key": func(m *protocol.Message) { m.RunID, m.IdempotencyKey = orig.RunID, orig.IdempotencyKey },
		"same id":          func(m *protocol.Message) { m.ID = orig.ID },
		"same task id": func(m *protocol.Message) {
			m.RunID, m.TaskID, m.IdempotencyKey = orig.RunID, orig.TaskID, orig.IdempotencyKey
		},
	} {
		for _, running := range []bool{true, false} {
			m, err := e.r.NewRequest("agent:eve", "research.query.v1", map[string]any{"query": "mine"})
			if err != nil {
				t.Fatal(err)
			}
			m.Requires = []string{"skill:r"}
			mod(m)
			if !running {
				close(release)
				if _, err := e.wait(h); err != nil {
					t.Fatal(err)
				}
			}
			got, err := e.r.Submit(context.Background(), m)
			if !errors.Is(err, ErrInvalidRequest) {
				t.Fatalf("%s (running %v): got handle %v, err %v; want ErrInvalidRequest", name, running, got, err)
			}
			if running {
				continue
			}
			// The original sender's redelivery is still a duplicate.
			again := *orig
			again.ID = e.r.IDs().MessageID()
			h2, err := e.r.Submit(context.Background(), &again)
			if err != nil || h2.TaskID() != orig.TaskID {
				t.Fatalf("%s: redelivery by the sender: %v, %v", name, h2, err)
			}
			release = make(chan struct{})
			h = e.submit(func() *protocol.Message { m := e.request("skill:r"); m.IdempotencyKey = "order-1"; orig = m; return m }())
		}
	}
	close(release)
	e.wait(h)
}

// TestDepthOfAChainFromOutside: requests submitted from outside, each
// naming the previous one as parent_task_id, count the stored chain
// toward Budget.MaxDepth.
func TestDepthOfAChainFromOutside(t *testing.T) {
	e := newEnv(t, &Options{Budget: Budget{MaxDepth: 3}})
	e.register(card("agent:r", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
		return summary("x"), nil
	})
	parent := ""
	for i := range 5 {
		m := e.request("skill:r")
		m.ParentTaskID = parent
		_, err := e.wait(e.submit(m))
		if i <= 3 && err != nil {
			t.Fatalf("depth %d: %v", i, err)
		}
		if i > 3 && !errors.Is(err, protocol.CodeBudget) {
			t.Fatalf("depth %d: %v, want BUDGET", i, err)
		}
		parent = m.TaskID
	}
}
