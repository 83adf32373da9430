package router_test

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

func newRouter() (*router.Router, store.Store) {
	ctx := context.Background()
	st, _ := memstore.New(nil)
	reg, _ := registry.Open(ctx, st, nil)
	schemas, _ := schema.New(nil)
	r, _ := router.New(st, reg, &router.Options{Validator: schemas, Logger: slog.New(slog.DiscardHandler)})
	return r, st
}

func researcher(name string) router.Handler {
	return func(ctx context.Context, t *router.Task) (*router.Result, error) {
		q, err := router.Input[schema.ResearchQuery](t)
		if err != nil {
			return nil, err
		}
		return &router.Result{PayloadType: "research.summary.v1", Payload: schema.ResearchSummary{
			Findings:  []string{name + " looked into " + q.Query},
			Citations: []string{"https://example.com"},
		}}, nil
	}
}

func Example() {
	ctx := context.Background()
	r, st := newRouter()
	defer st.Close()
	defer r.Close()

	ken := &protocol.AgentCard{AgentID: "agent:ken", Display: &protocol.Display{Name: "Ken"}, Capabilities: []protocol.Capability{
		{ID: "skill:research", Tags: []string{"fintech"}},
	}}
	ana := &protocol.AgentCard{AgentID: "agent:ana", Display: &protocol.Display{Name: "Ana"}, Capabilities: []protocol.Capability{
		{ID: "skill:research", Tags: []string{"health"}},
	}}
	r.Register(ctx, ken, researcher("ken"))
	r.Register(ctx, ana, researcher("ana"))

	req, _ := r.NewRequest("agent:ui", "research.query.v1", schema.ResearchQuery{Query: "Nordic payments"})
	req.Requires = []string{"skill:research"}
	req.Prefers = []string{"domain:fintech"}
	h, _ := r.Submit(ctx, req)
	out, err := h.Wait(ctx)
	if err != nil {
		panic(err)
	}
	s, _ := router.ResultAs[schema.ResearchSummary](out)
	fmt.Println(out.Type, "from", out.Message.From.AgentID+":", s.Findings[0])

	tree, _ := r.Tree(ctx, req.RunID)
	d := tree.Tasks[h.TaskID()].Decisions[0]
	for _, c := range d.Candidates {
		fmt.Printf("candidate %s score %.2f\n", c, d.Scores[c])
	}
	fmt.Println("selected", d.Selected+":", d.Reason)
	fmt.Println(d.Explanation) // the same, for people
	// Output:
	// task.result from agent:ken: ken looked into Nordic payments
	// candidate agent:ken score 1.00
	// candidate agent:ana score 0.00
	// selected agent:ken: matched requires[skill:research], best preference score 1.00
	// Ken chosen over Ana: both have skill:research; Ken matches the preferred domain fintech (score 1 vs 0).
}

func ExampleTask_Delegate() {
	ctx := context.Background()
	r, st := newRouter()
	defer st.Close()
	defer r.Close()

	lead := router.Card("agent:lead", "skill:plan")
	r.Register(ctx, lead, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		sub, err := t.NewSubtask("research.query.v1", schema.ResearchQuery{Query: "competitors"})
		if err != nil {
			return nil, err
		}
		sub.Requires = []string{"skill:research"}
		out, err := t.Delegate(ctx, sub) // blocks until the subtask ends
		if err != nil {
			return nil, err
		}
		return &router.Result{PayloadType: out.Message.PayloadType, Payload: out.Message.Payload}, nil
	})
	r.Register(ctx, router.Card("agent:ken", "skill:research"), researcher("ken"))

	req, _ := r.NewRequest("agent:ui", "research.query.v1", schema.ResearchQuery{Query: "market"})
	req.Requires = []string{"skill:plan"}
	h, _ := r.Submit(ctx, req)
	if _, err := h.Wait(ctx); err != nil {
		panic(err)
	}
	tree, _ := r.Tree(ctx, req.RunID)
	for _, root := range tree.Roots {
		fmt.Println(root.State, "by", root.Agent)
		for _, c := range root.Children {
			fmt.Println("  ", c.State, "by", c.Agent, "parent", c.ParentTaskID == root.TaskID)
		}
	}
	// Output:
	// task.result by agent:lead
	//    task.result by agent:ken parent true
}

func ExampleFail() {
	ctx := context.Background()
	r, st := newRouter()
	defer st.Close()
	defer r.Close()
	r.Register(ctx, router.Card("agent:browser", "skill:browse"),
		func(ctx context.Context, t *router.Task) (*router.Result, error) {
			return nil, router.Fail(protocol.CodeToolUnavailable, "MCP server mcp:browser not responding", false,
				map[string]any{"tool": "mcp:browser", "timeout_ms": 5000})
		})
	req, _ := r.NewRequest("agent:ui", "research.query.v1", schema.ResearchQuery{Query: "x"})
	req.Requires = []string{"skill:browse"}
	h, _ := r.Submit(ctx, req)
	out, err := h.Wait(ctx)
	fmt.Println(out.Type, errors.Is(err, protocol.CodeToolUnavailable), out.Err.Details["tool"])

	req, _ = r.NewRequest("agent:ui", "research.query.v1", schema.ResearchQuery{Query: "x"})
	req.Requires = []string{"skill:legal"}
	h, _ = r.Submit(ctx, req)
	_, err = h.Wait(ctx)
	fmt.Println(errors.Is(err, protocol.CodeNoMatch))
	// Output:
	// task.error true mcp:browser
	// true
}

// A middleware wraps every handler of the router: here it logs each task
// an agent starts and how it ended.
func ExampleMiddleware() {
	ctx := context.Background()
	logging := func(next router.Handler) router.Handler {
		return func(ctx context.Context, t *router.Task) (*router.Result, error) {
			fmt.Println("start", t.Agent(), "attempt", t.Attempt())
			res, err := next(ctx, t)
			fmt.Println("end  ", t.Agent(), "error:", err)
			return res, err
		}
	}
	st, _ := memstore.New(nil)
	defer st.Close()
	reg, _ := registry.Open(ctx, st, nil)
	schemas, _ := schema.New(nil)
	r, _ := router.New(st, reg, &router.Options{
		Validator:  schemas,
		Logger:     slog.New(slog.DiscardHandler),
		Middleware: []router.Middleware{logging},
	})
	defer r.Close()
	r.Register(ctx, router.Card("agent:ken", "skill:research"), researcher("ken"))

	req, _ := r.NewRequest("agent:ui", "research.query.v1", schema.ResearchQuery{Query: "Nordic payments"})
	req.Requires = []string{"skill:research"}
	h, _ := r.Submit(ctx, req)
	out, _ := h.Wait(ctx)
	fmt.Println(out.Type)
	// Output:
	// start agent:ken attempt 1
	// end   agent:ken error: <nil>
	// task.result
}

// Shutdown gives running handlers until its context ends; a handler that
// ignores its context is abandoned, its task ended with INTERRUPTED.
func ExampleRouter_Shutdown() {
	ctx := context.Background()
	r, st := newRouter()
	defer st.Close()

	started, release := make(chan struct{}), make(chan struct{})
	stubborn := router.Card("agent:stubborn", "skill:wait")
	r.Register(ctx, stubborn, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		close(started)
		<-release // ignores ctx
		return nil, nil
	})
	req, _ := r.NewRequest("agent:ui", "", nil)
	req.Requires = []string{"skill:wait"}
	h, _ := r.Submit(ctx, req)
	<-started

	sctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	err := r.Shutdown(sctx)
	var se *router.ShutdownError
	if errors.As(err, &se) {
		fmt.Println("abandoned:", len(se.TaskIDs), errors.Is(err, context.DeadlineExceeded))
	}
	_, err = h.Wait(ctx)
	fmt.Println("task:", protocol.CodeOf(err))

	close(release)                                // the handler returns at last
	fmt.Println("again:", r.Shutdown(ctx) == nil) // and nothing is left running
	// Output:
	// abandoned: 1 true
	// task: INTERRUPTED
	// again: true
}

// Past Options.MaxInFlight a new task is refused at once with CAPACITY,
// retryable, with a retry-after hint.
func ExampleRouter_Submit_capacity() {
	ctx := context.Background()
	st, _ := memstore.New(nil)
	defer st.Close()
	reg, _ := registry.Open(ctx, st, nil)
	schemas, _ := schema.New(nil)
	r, _ := router.New(st, reg, &router.Options{Validator: schemas, MaxInFlight: 1, Logger: slog.New(slog.DiscardHandler)})
	defer r.Close()

	release := make(chan struct{})
	busy := router.Card("agent:busy", "skill:wait")
	r.Register(ctx, busy, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		<-release
		return nil, nil
	})
	first, _ := r.NewRequest("agent:ui", "", nil)
	first.Requires = []string{"skill:wait"}
	h, _ := r.Submit(ctx, first)

	second, _ := r.NewRequest("agent:ui", "", nil)
	second.Requires = []string{"skill:wait"}
	_, err := r.Submit(ctx, second)
	ep := protocol.NewErrorPayload(err)
	fmt.Println(errors.Is(err, router.ErrCapacity), ep.Code, ep.Retryable, ep.Details["retry_after_sec"])

	close(release)
	out, _ := h.Wait(ctx)
	fmt.Println("first:", out.Type)
	// Output:
	// true CAPACITY true 1
	// first: task.result
}

// A gateway admits a decoded envelope: the router verifies its signature
// with the sender's keys in the registry before anything is stored.
func ExampleRouter_Admit() {
	ctx := context.Background()
	ui := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	st, _ := memstore.New(nil)
	defer st.Close()
	reg, _ := registry.Open(ctx, st, &registry.Options{
		Keys: map[string][]protocol.CardKey{"agent:ui": {protocol.NewCardKey("key_ui_01", ui.Public().(ed25519.PublicKey))}},
	})
	schemas, _ := schema.New(nil)
	r, _ := router.New(st, reg, &router.Options{Validator: schemas, Logger: slog.New(slog.DiscardHandler)})
	defer r.Close()
	ken := router.Card("agent:ken", "skill:research")
	if err := r.Register(ctx, ken, researcher("ken")); err != nil {
		panic(err)
	}

	// What arrives: the UI's request, as bytes.
	req, _ := r.NewRequest("agent:ui", "research.query.v1", schema.ResearchQuery{Query: "rails"})
	req.Requires = []string{"skill:research"}
	unsigned, _ := protocol.Encode(req.Clone())
	if err := protocol.Sign(req, "key_ui_01", ui); err != nil {
		panic(err)
	}
	for _, wire := range [][]byte{unsigned, req.Raw()} {
		in, err := protocol.Decode(wire)
		if err != nil {
			panic(err)
		}
		h, err := r.Admit(ctx, in)
		if err != nil {
			fmt.Println("refused:", protocol.CodeOf(err), errors.Is(err, registry.ErrSignature))
			continue
		}
		out, _ := h.Wait(ctx)
		fmt.Println("admitted:", out.Type, "from", out.Message.From.AgentID)
	}
	// Output:
	// refused: BAD_SIGNATURE true
	// admitted: task.result from agent:ken
}

// A handler asks a person and the task waits; the answer runs it on.
func ExampleTask_Ask() {
	ctx := context.Background()
	r, st := newRouter()
	defer st.Close()
	defer r.Close()

	card := router.Card("agent:writer", "skill:write")
	r.Register(ctx, card, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		market, err := router.AskAs[string](ctx, t, protocol.Question{Text: "Which market?", Choices: []string{"fintech", "health"}})
		if err != nil {
			return nil, err // the task waits for the answer
		}
		return &router.Result{Payload: map[string]string{"draft": "a note on " + market}}, nil
	})

	req, _ := r.NewRequest("agent:alice", "", nil)
	req.Requires = []string{"skill:write"}
	h, _ := r.Submit(ctx, req)
	out, err := h.Wait(ctx)
	fmt.Println(out.Question.Text, out.Question.Choices, errors.Is(err, protocol.CodeInputRequired))

	h, err = r.Answer(ctx, out.Question.ID, router.Answerer{AgentID: "agent:alice"}, []byte(`"fintech"`))
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ = h.Wait(ctx)
	fmt.Println(string(out.Message.Payload))
	// Output:
	// Which market? [fintech health] true
	// {"draft":"a note on fintech"}
}
