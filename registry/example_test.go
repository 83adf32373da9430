package registry_test

import (
	"context"
	"crypto/ed25519"
	"fmt"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// exampleCard is a card with one capability per id.
func exampleCard(id string, maxConcurrency int, caps ...string) *protocol.AgentCard {
	c := &protocol.AgentCard{V: protocol.Version, AgentID: id, Capabilities: []protocol.Capability{}}
	for _, cp := range caps {
		c.Capabilities = append(c.Capabilities, protocol.Capability{ID: cp})
	}
	if maxConcurrency > 0 {
		c.Limits = &protocol.Limits{MaxConcurrency: maxConcurrency}
	}
	return c
}

// Open a registry over a store, register two in-process agents, find the
// ones that can research and write, and take a slot on the first.
func Example() {
	ctx := context.Background()
	st, err := memstore.New(nil)
	if err != nil {
		panic(err)
	}
	defer st.Close()
	reg, err := registry.Open(ctx, st, nil)
	if err != nil {
		panic(err)
	}

	local := &registry.RegisterOptions{Local: true} // handlers in this process
	if err := reg.Register(ctx, exampleCard("agent:ken", 1, "skill:research", "skill:writing"), local); err != nil {
		panic(err)
	}
	if err := reg.Register(ctx, exampleCard("agent:ada", 0, "skill:research"), local); err != nil {
		panic(err)
	}

	for _, requires := range [][]string{{"skill:research"}, {"skill:research", "skill:writing"}} {
		fmt.Print(requires, ":")
		for _, a := range reg.Candidates(requires) {
			fmt.Print(" ", a.ID())
		}
		fmt.Println()
	}

	ken, _ := reg.Get("agent:ken")
	fmt.Println("first task:", reg.TryAcquire(ken), "second task:", reg.TryAcquire(ken))
	reg.Release(ken, true)
	fmt.Println("in flight:", ken.InFlight(), "success rate:", ken.SuccessRate())
	// Output:
	// [skill:research]: agent:ada agent:ken
	// [skill:research skill:writing]: agent:ken
	// first task: true second task: false
	// in flight: 0 success rate: 1
}

// A registry is rebuilt from the store's events: here a second Open over
// the same store sees the first one's agents, without their Local status
// (their handlers belonged to the first).
func ExampleOpen() {
	ctx := context.Background()
	st, err := memstore.New(nil)
	if err != nil {
		panic(err)
	}
	defer st.Close()

	first, err := registry.Open(ctx, st, nil)
	if err != nil {
		panic(err)
	}
	_ = first.Register(ctx, exampleCard("agent:ken", 0, "skill:research"), &registry.RegisterOptions{Local: true})
	_ = first.Register(ctx, exampleCard("agent:remote", 0, "skill:research"), nil)
	_ = first.Update(ctx, exampleCard("agent:remote", 0, "skill:research", "skill:writing"))

	second, err := registry.Open(ctx, st, nil)
	if err != nil {
		panic(err)
	}
	for _, a := range second.List() {
		fmt.Println(a.ID(), "capabilities:", len(a.Card().Capabilities), "online:", second.Online(a))
	}
	// Output:
	// agent:ken capabilities: 1 online: false
	// agent:remote capabilities: 2 online: true
}

// A remote agent stays online while it sends heartbeats within the TTL.
func ExampleRegistry_Heartbeat() {
	ctx := context.Background()
	st, _ := memstore.New(nil)
	defer st.Close()
	reg, _ := registry.Open(ctx, st, nil)
	_ = reg.Register(ctx, exampleCard("agent:remote", 0, "skill:research"), nil)

	// Call this every HeartbeatTTL/3 or so, e.g. from a time.Ticker loop.
	if err := reg.Heartbeat(ctx, "agent:remote"); err != nil {
		fmt.Println(err)
	}
	err := reg.Heartbeat(ctx, "agent:unknown")
	fmt.Println(err)
	// Output:
	// registry: agent not found: agent:unknown
}

// An agent rotates its key: the update, signed with the current key,
// lists only the new one; the old kid then verifies no new message but
// still verifies what was stored while it was current.
func ExampleRegistry_Admit() {
	ctx := context.Background()
	st, _ := memstore.New(nil)
	defer st.Close()
	old := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	next := ed25519.NewKeyFromSeed(append(make([]byte, ed25519.SeedSize-1), 1))
	reg, _ := registry.Open(ctx, st, &registry.Options{Signatures: &registry.SignaturePolicy{
		FirstUse: true, KeyedAgents: true, Types: registry.DefaultSignaturePolicy.Types,
	}})

	send := func(t protocol.Type, kid string, key ed25519.PrivateKey, keys ...protocol.CardKey) *protocol.Message {
		card := exampleCard("agent:ken", 0, "skill:research")
		card.Security = &protocol.CardSecurity{Keys: keys}
		m := protocol.NewMessage(t, "agent:ken")
		m.RunID = registry.DefaultRunID
		if err := m.SetPayload(card); err != nil {
			panic(err)
		}
		if err := protocol.Sign(m, kid, key); err != nil {
			panic(err)
		}
		in, _ := protocol.Decode(m.Raw()) // as received
		if err := reg.Admit(ctx, in); err != nil {
			fmt.Println(t, "signed with", kid+":", protocol.CodeOf(err))
		} else {
			fmt.Println(t, "signed with", kid+": accepted")
		}
		return in
	}
	oldKey := protocol.NewCardKey("ken-1", old.Public().(ed25519.PublicKey))
	newKey := protocol.NewCardKey("ken-2", next.Public().(ed25519.PublicKey))
	first := send(protocol.TypeAgentRegister, "ken-1", old, oldKey) // first use: its own card's key
	send(protocol.TypeAgentUpdate, "ken-1", old, newKey)            // rotation
	send(protocol.TypeAgentUpdate, "ken-1", old, newKey)            // ken-1 is retired
	fmt.Println("stored registration verifies:", protocol.Verify(first.Raw(), reg.AllKeys("agent:ken")) == nil)
	// Output:
	// agent.register signed with ken-1: accepted
	// agent.update signed with ken-1: accepted
	// agent.update signed with ken-1: UNKNOWN_KEY
	// stored registration verifies: true
}
