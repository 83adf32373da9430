package genkit_test

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/firebase/genkit/go/ai"
	"github.com/firebase/genkit/go/genkit"

	clutchgenkit "github.com/clutchprotocol/clutch/adapters/genkit"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// exampleRouter is a router on a memstore, for the examples.
func exampleRouter() *router.Router {
	st, _ := memstore.New(nil)
	reg, _ := registry.Open(context.Background(), st, nil)
	r, _ := router.New(st, reg, &router.Options{Logger: slog.New(slog.DiscardHandler)})
	return r
}

// A Genkit flow as a Clutch agent: its model and tool calls become the
// task's events, its output the task's result.
func ExampleNew() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := exampleRouter()
	defer r.Close()

	g := genkit.Init(ctx)
	// A deterministic model: it answers in capitals.
	genkit.DefineModel(g, "fake/shout", nil, func(_ context.Context, req *ai.ModelRequest, _ ai.ModelStreamCallback) (*ai.ModelResponse, error) {
		text := req.Messages[len(req.Messages)-1].Text()
		return &ai.ModelResponse{Request: req, Message: ai.NewModelTextMessage(fmt.Sprintf("%q, LOUDLY", text)), FinishReason: ai.FinishReasonStop}, nil
	})
	flow := genkit.DefineFlow(g, "shouter", func(ctx context.Context, in string) (string, error) {
		resp, err := clutchgenkit.Generate(ctx, g, ai.WithModelName("fake/shout"), ai.WithPrompt(in))
		if err != nil {
			return "", err
		}
		return resp.Text(), nil
	})

	a, err := clutchgenkit.New("agent:shouter", flow, &clutchgenkit.Options{Description: "Says it loudly", Store: r.Store()})
	if err != nil {
		panic(err)
	}
	if err := r.Register(ctx, a.Card(), a.Handle); err != nil {
		panic(err)
	}
	req, _ := r.NewRequest("agent:user", "", "hello")
	req.Requires = []string{"skill:shouter"}
	h, _ := r.Submit(ctx, req)
	out, err := h.Wait(ctx)
	if err != nil {
		panic(err)
	}
	res, _ := router.ResultAs[string](out)
	fmt.Println(a.Card().Capabilities[0].ID)
	fmt.Println(res)
	// Output:
	// skill:shouter
	// "hello", LOUDLY
}

// A capability of the team as a Genkit tool: here called directly,
// outside a Clutch task, so it submits a root task and waits for it.
func ExampleTool() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := exampleRouter()
	defer r.Close()
	_ = r.Register(ctx, router.Card("agent:meteo", "skill:weather"), func(_ context.Context, t *router.Task) (*router.Result, error) {
		city, _ := router.Input[string](t)
		return &router.Result{Payload: "rain in " + city}, nil
	})

	weather, err := clutchgenkit.Tool(r, "skill:weather", nil)
	if err != nil {
		panic(err)
	}
	// A flow passes it to its model: genkit.Generate(ctx, g, ai.WithTools(weather), ...).
	out, err := weather.RunRaw(ctx, map[string]any{"input": "Bergen"})
	if err != nil {
		panic(err)
	}
	fmt.Println(weather.Name(), "->", out)
	// Output: skill_weather -> rain in Bergen
}
