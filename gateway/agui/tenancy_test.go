package agui_test

import (
	"io"
	"testing"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/gateway/agui"
	"github.com/clutchprotocol/clutch/internal/backends"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

// TestSameIdsOtherCaller: another caller posting the same threadId and
// runId gets a run and a thread of its own (derived with the store's
// secret, docs/protocol.md §6.7), writes nothing into the first caller's,
// and cannot watch it; the first caller's run ran once.
func TestSameIdsOtherCaller(t *testing.T) {
	backends.Each(t, func(t *testing.T, st store.Store) {
		e := newEnvOn(t, st, router.Options{MaxAttempts: 1}, nil)
		resp := e.do(t, "POST", "/", testKey, input("thread-1", "run-1", "mine"))
		mine := resp.Header.Get(agui.HeaderRunID)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()

		resp = e.do(t, "POST", "/", otherKey, input("thread-1", "run-1", "theirs"))
		theirs := resp.Header.Get(agui.HeaderRunID)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || theirs == "" || theirs == mine {
			t.Fatalf("the other caller's run: %d %q (mine %q)", resp.StatusCode, theirs, mine)
		}
		if e.threadID(&auth.Caller{AgentID: tester}, "thread-1") == e.threadID(&auth.Caller{AgentID: "agent:other"}, "thread-1") {
			t.Fatal("one thread for two callers")
		}
		requests := 0
		for _, m := range e.Events(store.Query{RunID: mine}) {
			if m.From.AgentID == "agent:other" {
				t.Errorf("the other caller's %s is in my run", m.Type)
			}
			if m.Type == "task.request" && m.ParentTaskID == "" {
				requests++
			}
		}
		if requests != 1 {
			t.Errorf("my run has %d root requests", requests)
		}
		watch := e.do(t, "GET", "/?run="+mine, otherKey, "")
		watch.Body.Close()
		if watch.StatusCode != 404 {
			t.Fatalf("the other caller watches my run: %d", watch.StatusCode)
		}
	})
}
