package demo_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/demo"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

// Play two rounds of the demo and print how each run ended and its tree.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "demo")
	defer os.RemoveAll(dir)
	st, err := boltstore.Open(filepath.Join(dir, "demo.db"), &boltstore.Options{NoSync: true})
	if err != nil {
		panic(err)
	}
	defer st.Close()
	team, _ := demo.New()
	reg, _ := registry.Open(ctx, st, &registry.Options{Keys: team.Keys()})
	schemas, _ := schema.New(nil)
	r, err := router.New(st, reg, &router.Options{Validator: schemas, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer r.Close()
	if err := team.Register(ctx, r); err != nil {
		panic(err)
	}
	for i := 2; i < 4; i++ {
		out, err := team.Round(ctx, r, i)
		if err != nil {
			panic(err)
		}
		tree, _ := r.Tree(ctx, out.Message.RunID)
		root := tree.Roots[0]
		fmt.Println(i, out.Type, root.Agent, len(root.Children), "subtasks")
	}
	// Output:
	// 2 task.result agent:lead 2 subtasks
	// 3 task.error agent:lead 2 subtasks
}
