package registry_test

import (
	"context"
	"fmt"

	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// Two registries over one store, as in two processes (in production the
// store is a store/pgstore database each process opens): one follows the
// store and sees the agent the other registers.
func ExampleRegistry_Follow() {
	ctx := context.Background()
	st, _ := memstore.New(nil)
	defer st.Close()
	opts := &registry.Options{Shared: true}
	worker, _ := registry.Open(ctx, st, opts)
	submitter, _ := registry.Open(ctx, st, opts)

	followCtx, stop := context.WithCancel(ctx)
	defer stop()
	changed := make(chan string, 8)
	done := make(chan error, 1)
	go func() {
		done <- submitter.Follow(followCtx, func(agentID string) { changed <- agentID })
	}()

	card := exampleCard("agent:ken", 0, "skill:research")
	if err := worker.Register(ctx, card, &registry.RegisterOptions{Local: true}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("changed:", <-changed)
	ken, _ := submitter.Get("agent:ken")
	fmt.Println("online:", submitter.Online(ken), "local here:", ken.Local())
	stop()
	fmt.Println("Follow returned:", <-done)
	// Output:
	// changed: agent:ken
	// online: true local here: false
	// Follow returned: <nil>
}
