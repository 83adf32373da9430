// Command first is the README's first program: one agent, one task, every
// step stored as an event in an embedded store file.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

func main() {
	if err := run(context.Background(), os.Stdout, "events.db"); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, w io.Writer, path string) error {
	st, err := boltstore.Open(path, nil) // or memstore.New(nil) in tests
	if err != nil {
		return err
	}
	defer st.Close()
	reg, err := registry.Open(ctx, st, nil)
	if err != nil {
		return err
	}
	schemas, err := schema.New(nil) // built-in payload types included
	if err != nil {
		return err
	}
	r, err := router.New(st, reg, &router.Options{Validator: schemas})
	if err != nil {
		return err
	}
	defer r.Close()

	err = r.Register(ctx, router.Card("agent:ken", "skill:research"), func(ctx context.Context, t *router.Task) (*router.Result, error) {
		q, err := router.Input[schema.ResearchQuery](t)
		if err != nil {
			return nil, err
		}
		return &router.Result{PayloadType: schema.PayloadResearchSummary, Payload: schema.ResearchSummary{
			Findings:  []string{"Three incumbents hold most of " + q.Query},
			Citations: []string{"https://example.com/report"},
		}}, nil
	})
	if err != nil {
		return err
	}

	req, err := r.NewRequest("agent:ui", schema.PayloadResearchQuery, schema.ResearchQuery{Query: "Nordic payments"})
	if err != nil {
		return err
	}
	req.Requires = []string{"skill:research"}
	h, err := r.Submit(ctx, req) // validated, stored, routed (routing.decision), run, result validated
	if err != nil {
		return err
	}
	out, err := h.Wait(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, out.Type, string(out.Message.Payload))

	// Every step is an event in the store.
	for ev, err := range st.Read(ctx, store.Query{RunID: req.RunID}) {
		if err != nil {
			return err
		}
		m, err := ev.Message()
		if err != nil {
			return err
		}
		fmt.Fprintln(w, ev.Seq, m.Type, m.From.AgentID)
	}
	return nil
}
