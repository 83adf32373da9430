package router

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

// TestRestartRecoveryOnBoltstore: a process dies mid-task (the log holds the
// request, the decision and the accept, nothing after); the next process
// opens the same file, registers its agents and recovers the task.
func TestRestartRecoveryOnBoltstore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	st, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnvOn(t, st, nil)
	e.register(card("agent:a", skill("skill:r")), ok())
	crashed := crashedTask(t, e)
	finished := e.request("skill:r")
	if _, err := e.wait(e.submit(finished)); err != nil {
		t.Fatal(err)
	}
	// The "crash": the router is gone without a word; the file stays.
	e.r.mu.Lock()
	e.r.closed = true
	e.r.mu.Unlock()
	e.r.pool.close() // nor does it keep idle worker goroutines
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st2, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st2.Close() })
	e2 := newEnvOn(t, st2, &Options{Recovery: RecoverRedispatch})
	if a, ok := e2.reg.Get("agent:a"); !ok || e2.reg.Online(a) {
		t.Fatal("the in-process agent of the dead process should be known but offline")
	}
	e2.register(card("agent:a", skill("skill:r")), ok("recovered"))
	n, err := e2.r.Recover(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("Recover = %d, %v", n, err)
	}
	// The client resends its request (at-least-once): it follows the
	// re-dispatched task instead of starting another.
	again, err := protocol.Decode(crashed.Raw())
	if err != nil {
		t.Fatal(err)
	}
	out, err := e2.wait(e2.submit(again))
	if err != nil || out.Message.Attempt != 2 || out.Message.From.AgentID != "agent:a" {
		t.Fatalf("%+v %v attempt %d from %s events %v", out, err, out.Message.Attempt, out.Message.From.AgentID, e2.types(crashed.TaskID))
	}
	// The finished task keeps its stored outcome.
	again, _ = protocol.Decode(finished.Raw())
	if out, err := e2.wait(e2.submit(again)); err != nil || out.Type != protocol.TypeTaskResult {
		t.Fatalf("finished task after restart: %+v %v", out, err)
	}
	tree, err := e2.r.Tree(context.Background(), crashed.RunID)
	if err != nil || tree.Tasks[crashed.TaskID].State != protocol.TypeTaskResult {
		t.Fatalf("tree %v %v", tree, err)
	}
	// Nothing is left to recover.
	if n, _ := e2.r.Recover(context.Background()); n != 0 {
		t.Fatalf("second Recover found %d", n)
	}
	if _, err := e2.r.Retry(context.Background(), crashed.TaskID); !errors.Is(err, ErrNotRetryable) {
		t.Fatalf("retry of a finished task: %v", err)
	}
}
