package router

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// crashedTask leaves in st what a process killed mid-task leaves: a
// request, its routing decision and the accept, no terminal event.
func crashedTask(t *testing.T, e *env) *protocol.Message {
	t.Helper()
	return crashedTaskKeyed(t, e, "")
}

// crashedTaskKeyed is crashedTask with a request of idempotency key key.
func crashedTaskKeyed(t *testing.T, e *env, key string) *protocol.Message {
	t.Helper()
	req := e.request("skill:r")
	req.IdempotencyKey = key
	if _, err := protocol.Encode(req); err != nil {
		t.Fatal(err)
	}
	ts := &taskState{req: req}
	ts.attempt.Store(1)
	d := e.r.event(ts, protocol.TypeRoutingDecision, e.r.opts.AgentID, []string{"agent:a"})
	e.r.setPayload(d, protocol.RoutingDecision{Selected: "agent:a", Candidates: []string{"agent:a"}, Reason: "test"})
	acc := e.r.event(ts, protocol.TypeTaskAccept, "agent:a", nil)
	if _, err := e.st.Append(context.Background(), req, d, acc); err != nil {
		t.Fatal(err)
	}
	return req
}

func TestRecoverFail(t *testing.T) {
	st, _ := memstore.New(nil)
	e := newEnvOn(t, st, nil)
	var calls atomic.Int32
	e.register(card("agent:a", skill("skill:r")), func(ctx context.Context, t *Task) (*Result, error) {
		calls.Add(1)
		return summary("again"), nil
	})
	req := crashedTask(t, e)
	done := e.request("skill:r")
	if _, err := e.wait(e.submit(done)); err != nil { // a finished task is left alone
		t.Fatal(err)
	}
	n, err := e.r.Recover(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("Recover = %d, %v", n, err)
	}
	types := e.types(req.TaskID)
	if types[len(types)-1] != "task.error" {
		t.Fatalf("events %v", types)
	}
	out, err := e.r.storedOutcome(context.Background(), req.TaskID)
	if err != nil || out.Err.Code != protocol.CodeInterrupted || !out.Err.Retryable {
		t.Fatalf("outcome %+v %v", out, err)
	}
	if calls.Load() != 1 {
		t.Fatal("RecoverFail ran the handler")
	}
	// Recover is idempotent.
	if n, _ := e.r.Recover(context.Background()); n != 0 {
		t.Fatalf("second Recover found %d", n)
	}
	// Partial retry of the interrupted task.
	h, err := e.r.Retry(context.Background(), req.TaskID)
	if err != nil {
		t.Fatal(err)
	}
	out, err = e.wait(h)
	if err != nil || out.Message.Attempt != 2 {
		t.Fatalf("retry %+v %v", out, err)
	}
}

func TestRecoverRedispatch(t *testing.T) {
	st, _ := memstore.New(nil)
	e := newEnvOn(t, st, &Options{Recovery: RecoverRedispatch})
	e.register(card("agent:a", skill("skill:r")), ok("redone"))
	req := crashedTask(t, e)
	if n, err := e.r.Recover(context.Background()); err != nil || n != 1 {
		t.Fatalf("Recover = %d, %v", n, err)
	}
	// The redelivered request follows the re-dispatched task.
	again, _ := protocol.Decode(req.Raw())
	h := e.submit(again)
	out, err := e.wait(h)
	if err != nil || out.Message.Attempt != 2 {
		t.Fatalf("%+v %v", out, err)
	}
	want := []string{"task.request", "routing.decision", "task.accept", "routing.decision", "task.accept", "task.result"}
	if got := e.types(req.TaskID); !slices.Equal(got, want) {
		t.Fatalf("events %v", got)
	}
}

func TestRedeliveryOfInterruptedTask(t *testing.T) {
	st, _ := memstore.New(nil)
	e := newEnvOn(t, st, nil)
	e.register(card("agent:a", skill("skill:r")), ok())
	req := crashedTask(t, e)
	again, _ := protocol.Decode(req.Raw())
	_, err := e.wait(e.submit(again))
	if !errors.Is(err, protocol.CodeInterrupted) {
		t.Fatalf("redelivered interrupted task: %v", err)
	}
}

func TestRetryRules(t *testing.T) {
	e := newEnv(t, &Options{MaxAttempts: 1})
	e.register(card("agent:a", skill("skill:ok")), ok())
	var fail atomic.Bool
	fail.Store(true)
	e.register(card("agent:b", skill("skill:flaky")), func(ctx context.Context, t *Task) (*Result, error) {
		if fail.Load() {
			return nil, Fail(protocol.CodeToolFailed, "broken", false, nil)
		}
		return summary("fixed"), nil
	})
	okTask := e.submit(e.request("skill:ok"))
	e.wait(okTask)
	if _, err := e.r.Retry(context.Background(), okTask.TaskID()); !errors.Is(err, ErrNotRetryable) {
		t.Fatalf("retry of a successful task: %v", err)
	}
	if _, err := e.r.Retry(context.Background(), "task_nope"); !errors.Is(err, ErrUnknownTask) {
		t.Fatalf("retry of an unknown task: %v", err)
	}
	failed := e.submit(e.request("skill:flaky"))
	if _, err := e.wait(failed); !errors.Is(err, protocol.CodeToolFailed) {
		t.Fatal(err)
	}
	fail.Store(false)
	h, err := e.r.Retry(context.Background(), failed.TaskID())
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.wait(h)
	if err != nil || out.Message.Attempt != 2 {
		t.Fatalf("%+v %v", out, err)
	}
	tree, err := Replay(context.Background(), e.st, failed.Request().RunID)
	if err != nil {
		t.Fatal(err)
	}
	n := tree.Tasks[failed.TaskID()]
	if n.State != protocol.TypeTaskResult || n.Attempts != 2 || len(n.Decisions) != 2 || n.Agent != "agent:b" {
		t.Fatalf("replayed node %+v", n)
	}
	if !strings.Contains(tree.String(), "task.result  by agent:b  (2 attempts)") {
		t.Fatalf("tree:\n%s", tree)
	}
}

func TestCloseInterruptsRunningTasks(t *testing.T) {
	e := newEnv(t, nil)
	b := newBlocker()
	e.register(card("agent:a", skill("skill:r")), b.handler("a"))
	h := e.submit(e.request("skill:r"))
	<-b.started
	if err := e.r.Close(); err != nil {
		t.Fatal(err)
	}
	out, err := e.wait(h)
	if !errors.Is(err, protocol.CodeInterrupted) || out.Type != protocol.TypeTaskError {
		t.Fatalf("%+v %v", out, err)
	}
	if _, err := e.r.Submit(context.Background(), e.request("skill:r")); !errors.Is(err, ErrClosed) {
		t.Fatalf("submit after close: %v", err)
	}
	// Recover in the next process finds nothing: the task has ended.
	if n, _ := e.r.Recover(context.Background()); n != 0 {
		t.Fatalf("Recover found %d", n)
	}
}
