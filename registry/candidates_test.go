package registry_test

import (
	"context"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/google/go-cmp/cmp"
)

func TestCandidates(t *testing.T) {
	st := newStore(t)
	c := newClock()
	r := open(t, st, c, nil)
	// Registered out of id order, so sorting is the registry's doing.
	for _, a := range []*protocol.AgentCard{
		card("agent:e"),
		card("agent:d", "skill:research", "skill:writing", "tool:mcp"),
		card("agent:a", "skill:research"),
		card("agent:c", "skill:writing"),
		card("agent:b", "skill:research", "skill:writing"),
	} {
		mustRegister(t, r, a, false)
	}
	for _, tc := range []struct {
		requires []string
		want     []string
	}{
		{nil, []string{"agent:a", "agent:b", "agent:c", "agent:d", "agent:e"}},
		{[]string{}, []string{"agent:a", "agent:b", "agent:c", "agent:d", "agent:e"}},
		{[]string{"skill:research"}, []string{"agent:a", "agent:b", "agent:d"}},
		{[]string{"skill:writing"}, []string{"agent:b", "agent:c", "agent:d"}},
		{[]string{"skill:research", "skill:writing"}, []string{"agent:b", "agent:d"}},
		{[]string{"skill:writing", "skill:research"}, []string{"agent:b", "agent:d"}},
		{[]string{"skill:research", "skill:research"}, []string{"agent:a", "agent:b", "agent:d"}},
		{[]string{"skill:research", "skill:writing", "tool:mcp"}, []string{"agent:d"}},
		{[]string{"tool:mcp", "skill:research"}, []string{"agent:d"}},
		{[]string{"skill:unknown"}, []string{}},
		{[]string{"skill:research", "skill:unknown"}, []string{}},
		// Capability ids match exactly, not by prefix or kind.
		{[]string{"skill:res"}, []string{}},
		{[]string{"tool:research"}, []string{}},
	} {
		if got := ids(r.Candidates(tc.requires)); !cmp.Equal(got, tc.want) {
			t.Errorf("Candidates(%v) = %v, want %v", tc.requires, got, tc.want)
		}
	}
}

// TestCandidatesIncludeOffline: Candidates is step 2 of §4.2; liveness is
// the caller's filter.
func TestCandidatesIncludeOffline(t *testing.T) {
	st := newStore(t)
	c := newClock()
	r := open(t, st, c, nil)
	mustRegister(t, r, card("agent:a", "skill:x"), false)
	c.Advance(2 * r.HeartbeatTTL())
	got := r.Candidates([]string{"skill:x"})
	if len(got) != 1 || r.Online(got[0]) {
		t.Fatalf("Candidates = %v (online %v), want the offline agent:a", ids(got), len(got) == 1 && r.Online(got[0]))
	}
}

func TestIndexFollowsChanges(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	c := newClock()
	r := open(t, st, c, nil)
	mustRegister(t, r, card("agent:a", "skill:x", "skill:y"), false)
	mustRegister(t, r, card("agent:b", "skill:x"), false)
	check := func(step string, requires []string, want ...string) {
		t.Helper()
		if want == nil {
			want = []string{}
		}
		if got := ids(r.Candidates(requires)); !cmp.Equal(got, want) {
			t.Errorf("%s: Candidates(%v) = %v, want %v", step, requires, got, want)
		}
	}
	check("start", []string{"skill:y"}, "agent:a")

	// Update drops skill:y and adds skill:z.
	if err := r.Update(ctx, card("agent:a", "skill:x", "skill:z")); err != nil {
		t.Fatal(err)
	}
	check("update", []string{"skill:y"})
	check("update", []string{"skill:x", "skill:y"})
	check("update", []string{"skill:z"}, "agent:a")
	check("update", []string{"skill:x"}, "agent:a", "agent:b")

	// Re-registration replaces the card in the index too.
	mustRegister(t, r, card("agent:b", "skill:y"), false)
	check("re-register", []string{"skill:x"}, "agent:a")
	check("re-register", []string{"skill:y"}, "agent:b")

	if err := r.Remove(ctx, "agent:a"); err != nil {
		t.Fatal(err)
	}
	check("remove", []string{"skill:x"})
	check("remove", []string{"skill:z"})
	check("remove", nil, "agent:b")

	mustRegister(t, r, card("agent:a", "skill:y"), false)
	check("register again", []string{"skill:y"}, "agent:a", "agent:b")
}

// TestDuplicateCapabilityID: a card may list one capability id twice
// (tool:mcp with two server sets, say); the agent is one candidate, and
// leaves the index with the card.
func TestDuplicateCapabilityID(t *testing.T) {
	ctx := context.Background()
	st := newStore(t)
	r := open(t, st, newClock(), nil)
	mustRegister(t, r, card("agent:a", "tool:mcp", "tool:mcp", "skill:x"), false)
	if got := ids(r.Candidates([]string{"tool:mcp"})); !cmp.Equal(got, []string{"agent:a"}) {
		t.Errorf("Candidates(tool:mcp) = %v, want [agent:a] once", got)
	}
	if err := r.Update(ctx, card("agent:a", "skill:x")); err != nil {
		t.Fatal(err)
	}
	if got := ids(r.Candidates([]string{"tool:mcp"})); len(got) != 0 {
		t.Errorf("after the update dropped tool:mcp: Candidates(tool:mcp) = %v", got)
	}
	mustRegister(t, r, card("agent:a", "tool:mcp", "tool:mcp"), false)
	if err := r.Remove(ctx, "agent:a"); err != nil {
		t.Fatal(err)
	}
	if got := ids(r.Candidates([]string{"tool:mcp"})); len(got) != 0 {
		t.Errorf("after Remove: Candidates(tool:mcp) = %v", got)
	}
}

// TestCandidatesResultIsOwned: changing the returned slice does not
// change the registry.
func TestCandidatesResultIsOwned(t *testing.T) {
	st := newStore(t)
	r := open(t, st, newClock(), nil)
	mustRegister(t, r, card("agent:a", "skill:x"), false)
	mustRegister(t, r, card("agent:b", "skill:x"), false)
	got := r.Candidates([]string{"skill:x"})
	got[0], got[1] = got[1], got[0]
	got = append(got[:0], got[1:]...)
	_ = got
	if got := ids(r.Candidates([]string{"skill:x"})); !cmp.Equal(got, []string{"agent:a", "agent:b"}) {
		t.Errorf("Candidates = %v after the caller changed an earlier result", got)
	}
}
