package team

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// Over a store with store.Presence the heartbeats of nodes and of their
// agents are beats: a task runs across processes, and the log holds no
// x.clutch.node.heartbeat and no agent.heartbeat, while the agent has
// one beat and the nodes at most one each.
func TestNodeHeartbeatsAreBeats(t *testing.T) {
	st, _ := memstore.New(nil)
	a := newProc(t, st, time.Minute, nil)
	b := newProc(t, st, time.Minute, nil)
	b.register(card("agent:ken", skill("skill:research")), func(ctx context.Context, tk *router.Task) (*router.Result, error) {
		return summary("found in b"), nil
	})
	waitFor(t, "a sees agent:ken", func() bool {
		ag, ok := a.reg.Get("agent:ken")
		return ok && a.reg.Online(ag) && a.handles("agent:ken")
	}, a)
	out, err := a.wait(a.submit(a.request("skill:research")))
	if err != nil || !out.OK() {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	for ev, err := range st.Read(t.Context(), store.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		m, _ := ev.Message()
		if m.Type == TypeNodeHeartbeat || m.Type == protocol.TypeAgentHeartbeat {
			t.Errorf("event %d is a %s: heartbeats are beats over a store with Presence", ev.Seq, m.Type)
		}
	}
	for _, k := range beatKeys(t, st, NodesRunID+"/") {
		if k != NodesRunID+"/"+a.node.id && k != NodesRunID+"/"+b.node.id {
			t.Errorf("node beat %q, want only a's and b's", k)
		}
	}
	if keys := beatKeys(t, st, "run_registry/"); len(keys) != 1 || keys[0] != "run_registry/agent:ken" {
		t.Errorf("agent beats %v, want one of agent:ken", keys)
	}
	checkTerminals(t, st)
}

func beatKeys(t *testing.T, st store.Store, prefix string) []string {
	var keys []string
	for b, err := range store.PresenceOf(st).Beats(t.Context(), prefix) {
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(b.Key, prefix) {
			t.Fatalf("Beats(%q) gave %q", prefix, b.Key)
		}
		keys = append(keys, b.Key)
	}
	return keys
}
