package team_test

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/team"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// Two routers over one store form a team: the agent registered in the
// worker runs the task submitted to the other. In production each router
// is a process of its own and the store is a store/pgstore database
// (examples/distributed); here both share a memstore.
func ExampleJoin() {
	ctx := context.Background()
	st, _ := memstore.New(nil)
	defer st.Close()
	process := func() (*router.Router, *team.Node) {
		reg, _ := registry.Open(ctx, st, &registry.Options{Shared: true})
		sch, _ := schema.New(&schema.Options{Permissive: true})
		r, _ := router.New(st, reg, &router.Options{Validator: sch, Logger: slog.New(slog.DiscardHandler)})
		n, err := team.Join(ctx, r, nil)
		if err != nil {
			panic(err)
		}
		return r, n
	}
	submitter, sn := process()
	worker, wn := process()
	defer func() {
		sn.Leave()
		wn.Leave()
		submitter.Close()
		worker.Close()
	}()

	card := &protocol.AgentCard{V: protocol.Version, AgentID: "agent:ken", Capabilities: []protocol.Capability{{ID: "skill:research"}}}
	worker.Register(ctx, card, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		return &router.Result{PayloadType: "demo.answer.v1", Payload: map[string]string{"ran_in": "the worker"}}, nil
	})
	wait, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := sn.AwaitAgents(wait, []string{"skill:research"}, 1); err != nil {
		fmt.Println(err)
		return
	}
	req, _ := submitter.NewRequest("agent:ui", "demo.question.v1", map[string]string{"q": "where?"})
	req.Requires = []string{"skill:research"}
	h, _ := submitter.Submit(ctx, req)
	out, err := h.Wait(wait)
	if err != nil {
		fmt.Println(err)
		return
	}
	answer, _ := router.ResultAs[map[string]string](out)
	fmt.Println(out.Type, "from", out.Message.From.AgentID, "- ran in", answer["ran_in"])
	// Output: task.result from agent:ken - ran in the worker
}
