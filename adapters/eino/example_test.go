package eino_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/cloudwego/eino/compose"

	"github.com/clutchprotocol/clutch/adapters/eino"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// An eino chain as a Clutch agent: New wraps the compiled runnable,
// Register puts its card and Handle in the team, and a task for its
// capability runs the chain.
func ExampleNew() {
	ctx := context.Background()
	st, _ := memstore.New(nil)
	reg, _ := registry.Open(ctx, st, nil)
	r, _ := router.New(st, reg, &router.Options{Logger: slog.New(slog.DiscardHandler)})
	defer r.Close()

	g, _ := compose.NewChain[string, string]().
		AppendLambda(compose.InvokableLambda(func(_ context.Context, name string) (string, error) {
			return "hello, " + name, nil
		})).Compile(ctx)
	a, err := eino.New("agent:greeter", g, &eino.Options{Description: "Greets people"})
	if err != nil {
		panic(err)
	}
	r.Register(ctx, a.Card(), a.Handle)

	req, _ := r.NewRequest("agent:user", "", "Ada")
	req.Requires = []string{"skill:greeter"}
	h, _ := r.Submit(ctx, req)
	out, _ := h.Wait(ctx)
	res, _ := router.ResultAs[string](out)
	fmt.Println(a.Card().Capabilities[0].ID, "->", res)
	// Output: skill:greeter -> hello, Ada
}

// A capability of the team as an eino tool: give it to a graph's
// ToolsNode or agent. Inside a task of the bridge a call is a subtask;
// here, outside any task, it submits a task and waits for it.
func ExampleTool() {
	ctx := context.Background()
	st, _ := memstore.New(nil)
	reg, _ := registry.Open(ctx, st, nil)
	r, _ := router.New(st, reg, &router.Options{Logger: slog.New(slog.DiscardHandler)})
	defer r.Close()
	r.Register(ctx, router.Card("agent:shouter", "skill:shout"), func(_ context.Context, t *router.Task) (*router.Result, error) {
		s, err := router.Input[string](t)
		return &router.Result{Payload: strings.ToUpper(s)}, err
	})

	shout, err := eino.Tool(r, "skill:shout", nil)
	if err != nil {
		panic(err)
	}
	info, _ := shout.Info(ctx)
	got, err := shout.InvokableRun(ctx, `{"input":"hello"}`)
	fmt.Println(info.Name, got, err)
	// Output: skill_shout HELLO <nil>
}
