package demo_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/demo"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// Play the six rounds of the demo a thousand times faster than live and
// print how each one ended.
func Example() {
	ctx := context.Background()
	st, _ := memstore.New(nil)
	defer st.Close()
	team, _ := demo.New(&demo.Options{TimeScale: 0.001})
	reg, _ := registry.Open(ctx, st, &registry.Options{Keys: team.Keys()})
	schemas, _ := schema.New(nil)
	r, err := router.New(st, reg, &router.Options{Validator: schemas, Signers: team.Signers(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer r.Close()
	if err := team.Register(ctx, r); err != nil {
		panic(err)
	}
	for i := range 6 {
		out, err := team.Round(ctx, r, i)
		if err != nil {
			panic(err)
		}
		tree, _ := r.Tree(ctx, out.Message.RunID)
		root := tree.Roots[0]
		switch {
		case out.Question != nil:
			fmt.Printf("%d asks: %s\n", i, out.Question.Text)
		case out.OK():
			fmt.Printf("%d completed with %d subtasks\n", i, len(root.Children))
		default:
			fmt.Printf("%d failed with %d subtasks: %s\n", i, len(root.Children), out.Err.Code)
		}
	}
	// Output:
	// 0 completed with 2 subtasks
	// 1 asks: Which region should the brief cover?
	// 2 completed with 2 subtasks
	// 3 asks: Approve a paid market-data query (€12)?
	// 4 failed with 2 subtasks: TOOL_FAILED
	// 5 completed with 3 subtasks
}
