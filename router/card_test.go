package router_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/store"
)

func ExampleCard() {
	ctx := context.Background()
	r, st := newRouter()
	defer st.Close()
	defer r.Close()

	card := router.Card("agent:ken", "skill:research", "skill:summarise")
	if err := r.Register(ctx, card, researcher("ken")); err != nil {
		fmt.Println(err)
	}
	a, _ := r.Registry().Get("agent:ken")
	for _, c := range a.Card().Capabilities {
		fmt.Println(c.ID)
	}
	// Output:
	// skill:research
	// skill:summarise
}

// TestRegisterCardDefaults: Card gives a valid card, with capabilities
// even when it has none; a literal without v registers as the current
// version, and registering it again appends nothing.
func TestRegisterCardDefaults(t *testing.T) {
	if err := router.Card("agent:idle").Validate(); err != nil {
		t.Errorf("Card with no capabilities: %v", err)
	}
	env := routertest.New(t, nil)
	echo := func(context.Context, *router.Task) (*router.Result, error) {
		return &router.Result{Payload: map[string]string{"ok": "yes"}}, nil
	}
	card := &protocol.AgentCard{AgentID: "agent:ken", Capabilities: []protocol.Capability{{ID: "skill:research"}}}
	env.Register(card, echo)
	env.Register(card, echo) // a second start of the process, say
	regs := env.Events(store.Query{TypePrefix: string(protocol.TypeAgentRegister)})
	if len(regs) != 1 {
		t.Fatalf("%d agent.register events, want 1", len(regs))
	}
	stored, err := protocol.DecodeAgentCard(regs[0].Payload)
	if err != nil || stored.V != protocol.Version {
		t.Fatalf("stored card %+v, %v; want v %q", stored, err, protocol.Version)
	}
	out, err := env.Run(env.Request("", map[string]string{"q": "x"}, "skill:research"))
	if err != nil {
		t.Fatal(err)
	}
	env.AssertRoutedTo(out.TaskID, "agent:ken")
}
