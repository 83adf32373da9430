// Command tcksut serves a few Clutch agents over package a2a's Server, as
// the system under test of the A2A project's Technology Compatibility Kit
// (github.com/a2aproject/a2a-tck). See README.md next to it for how to run
// the kit against it.
//
// Agents, each at AgentsPath+"/{name}" (its card at
// /agents/{name}/.well-known/agent-card.json):
//
//	echo   answers "echo: " and the text of the message, with its data parts
//	ask    asks "What is your name?" (router.Task.Ask) and answers
//	       "hello, " and the answer: the task waits in INPUT_REQUIRED for
//	       the client's next message on it
//	slow   reports three progress steps, -step apart, then echoes: a task
//	       that is WORKING long enough to be cancelled or subscribed to
//
// -expose names the agents tcksut registers and exposes (default all
// three). The kit reads the card at the host's root, the team card, and
// sends its tasks to the team endpoint, which routes them by capability
// among the exposed agents: a message that requires no capability goes to
// any of them (router tie-breakers, docs/protocol.md §4.2). Run the kit
// with -expose echo so every task is the echo agent's.
//
// Callers are anonymous (auth.Anonymous) and may submit; the store is in
// memory, so every run starts empty.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/adapters/a2a"
	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store/memstore"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9999", "address to listen on")
	step := flag.Duration("step", 500*time.Millisecond, "interval of the slow agent's progress steps")
	expose := flag.String("expose", "echo,ask,slow", "comma-separated agents to expose; the team endpoint routes among them")
	flag.Parse()
	if err := run(*addr, *step, strings.Split(*expose, ",")); err != nil {
		log.Fatal(err)
	}
}

func run(addr string, step time.Duration, expose []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	st, err := memstore.New(nil)
	if err != nil {
		return err
	}
	defer st.Close()
	reg, err := registry.Open(ctx, st, nil)
	if err != nil {
		return err
	}
	schemas, err := schema.New(nil)
	if err != nil {
		return err
	}
	r, err := router.New(st, reg, &router.Options{Validator: schemas, Logger: logger})
	if err != nil {
		return err
	}
	defer r.Close()
	agents := map[string]router.Handler{"echo": echo, "ask": ask, "slow": slow(step)}
	var ids []string
	for _, name := range expose {
		h, ok := agents[name]
		if !ok {
			return fmt.Errorf("-expose: no agent %q (echo, ask, slow)", name)
		}
		id := "agent:" + name
		c := &protocol.AgentCard{V: protocol.Version, AgentID: id,
			Capabilities: []protocol.Capability{{ID: "skill:" + name, Tags: []string{"tck"}}},
			Display:      &protocol.Display{Name: name, Desc: "TCK agent " + name}}
		if err := r.Register(ctx, c, h); err != nil {
			return err
		}
		ids = append(ids, id)
	}
	srv, err := a2a.NewServer(r, &a2a.ServerOptions{
		Auth:   auth.Anonymous(auth.Caller{AgentID: "agent:tck", Scopes: []string{auth.ScopeSubmit, auth.ScopeAgents}}),
		Expose: ids, Logger: logger, Name: "clutch-tck",
	})
	if err != nil {
		return err
	}
	hs := &http.Server{Addr: addr, Handler: rpcAtBase(srv), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	fmt.Fprintf(os.Stderr, "tcksut: team at http://%s%s, agents at %s/{%s}\n", addr, a2a.RPCPath, a2a.AgentsPath, strings.Join(expose, ","))
	if err := hs.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// rpcAtBase serves a POST to an agent's base URL (/agents/{name}) as a
// POST to its JSON-RPC endpoint (/agents/{name}/a2a). The kit posts
// JSON-RPC to the URL it was given, where its card is also looked up;
// an A2A client takes the endpoint from the card's supportedInterfaces.
func rpcAtBase(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rest, ok := strings.CutPrefix(r.URL.Path, a2a.AgentsPath+"/"); ok && r.Method == http.MethodPost && rest != "" && !strings.Contains(rest, "/") {
			r = r.Clone(r.Context())
			r.URL.Path += a2a.RPCPath
		}
		next.ServeHTTP(w, r)
	})
}

// echo answers the text of the message and keeps its data parts.
func echo(_ context.Context, t *router.Task) (*router.Result, error) {
	in, err := router.Input[a2a.Content](t)
	if err != nil {
		return nil, err
	}
	return &router.Result{Payload: a2a.Content{Text: "echo: " + in.Text, Data: in.Data}}, nil
}

// ask asks for a name and greets it.
func ask(ctx context.Context, t *router.Task) (*router.Result, error) {
	name, err := router.AskAs[string](ctx, t, protocol.Question{Text: "What is your name?"})
	if err != nil {
		return nil, err // ErrWaiting: the task waits for the answer
	}
	return &router.Result{Payload: a2a.Content{Text: "hello, " + name}}, nil
}

// slow reports three progress steps, step apart, then echoes.
func slow(step time.Duration) router.Handler {
	return func(ctx context.Context, t *router.Task) (*router.Result, error) {
		for i := 1; i <= 3; i++ {
			select {
			case <-time.After(step):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if err := t.Progress(ctx, map[string]any{"step": i, "of": 3}); err != nil {
				return nil, err
			}
		}
		return echo(ctx, t)
	}
}
