// Command langgraph puts a LangGraph agent and a Go agent in one Clutch
// team and prints the run as one event stream. The LangGraph agent is the
// tool-calling graph "agent" of adapters/langgraph/testdata/server (a
// deterministic fake model that calls the tool add, then answers), served
// by the LangGraph.js Agent Server (`langgraphjs dev`); adapters/langgraph
// registers it as agent:langgraph-agent. The Go agent agent:writer takes
// the user's task, delegates the arithmetic to the LangGraph agent, and
// writes the answer up.
//
// It needs node: by default it starts the Agent Server that `make deps`
// installs under adapters/langgraph/testdata/server on a free 127.0.0.1
// port (about 5–20 s); -url uses an Agent Server that already runs.
//
//	make deps && go run ./examples/langgraph
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"strings"

	"github.com/clutchprotocol/clutch/adapters/langgraph"
	"github.com/clutchprotocol/clutch/egress"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// defaultServerDir holds the Agent Server and its graphs, relative to the
// repository root.
const defaultServerDir = "adapters/langgraph/testdata/server"

func main() {
	url := flag.String("url", "", "base URL of a running LangGraph Agent Server serving the graph \"agent\" (default: start one)")
	dir := flag.String("server", defaultServerDir, "directory of the Agent Server to start (langgraph.json, node_modules)")
	flag.Parse()
	ctx := context.Background()
	var srv *server
	if *url == "" {
		var err error
		if srv, err = startServer(ctx, *dir); err != nil {
			log.Fatal(err)
		}
		*url = srv.url
	}
	err := run(ctx, os.Stdout, *url)
	if srv != nil {
		srv.stop() // before log.Fatal, which skips deferred calls
	}
	if err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, w io.Writer, url string) error {
	quiet := slog.New(slog.DiscardHandler)
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
	r, err := router.New(st, reg, &router.Options{Validator: schemas, Logger: quiet})
	if err != nil {
		return err
	}
	defer r.Close()

	// The LangGraph agent. The server listens on 127.0.0.1, which the
	// default egress policy refuses (docs/protocol.md §6): allow it.
	allow, err := egress.New(&egress.Options{Allow: []string{"127.0.0.1", "::1"}})
	if err != nil {
		return err
	}
	rm, err := langgraph.Register(ctx, r, url, "agent", &langgraph.RemoteOptions{Egress: allow, Logger: quiet,
		// The result: the last message of the graph's state.
		Result: func(values json.RawMessage) (any, error) {
			var st struct {
				Messages []struct {
					Content any `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(values, &st); err != nil || len(st.Messages) == 0 {
				return nil, fmt.Errorf("no messages in the state %s", values)
			}
			return st.Messages[len(st.Messages)-1].Content, nil
		}})
	if err != nil {
		return err
	}
	defer rm.Close()

	// The Go agent: delegates to whoever has skill:langgraph-agent.
	writer := &protocol.AgentCard{AgentID: "agent:writer",
		Display: &protocol.Display{Name: "Writer"}, Capabilities: []protocol.Capability{{ID: "skill:write"}}}
	if err := r.Register(ctx, writer, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		var ask string
		if err := json.Unmarshal(t.Request().Payload, &ask); err != nil {
			return nil, router.Fail(protocol.CodeValidation, "the writer takes a string", false, nil)
		}
		if err := t.Progress(ctx, map[string]any{"note": "asking the LangGraph agent"}); err != nil {
			return nil, err
		}
		sub, err := t.NewSubtask("", "add please")
		if err != nil {
			return nil, err
		}
		sub.Requires = []string{rm.Card().Capabilities[0].ID}
		out, err := t.Delegate(ctx, sub)
		if err != nil {
			return nil, err
		}
		var answer string
		json.Unmarshal(out.Message.Payload, &answer)
		return &router.Result{Payload: map[string]any{"text": "You asked: " + ask + ". " + answer + ", says the LangGraph agent."}}, nil
	}); err != nil {
		return err
	}

	req, err := r.NewRequest("agent:ui", "", "what is 2 + 3?")
	if err != nil {
		return err
	}
	req.Requires = []string{"skill:write"}
	h, err := r.Submit(ctx, req)
	if err != nil {
		return err
	}
	out, err := h.Wait(ctx)
	if err != nil {
		return err
	}

	// The whole run, both agents, as one event stream.
	fmt.Fprintf(w, "%-4s %-16s %-22s %-8s %s\n", "seq", "type", "from", "task", "payload")
	tasks := map[string]string{}
	for ev, err := range st.Read(ctx, store.Query{RunID: out.Message.RunID}) {
		if err != nil {
			return err
		}
		m, err := ev.Message()
		if err != nil {
			return err
		}
		if _, ok := tasks[m.TaskID]; !ok {
			tasks[m.TaskID] = fmt.Sprintf("task#%d", len(tasks)+1)
		}
		p := string(m.Payload)
		if m.PayloadType != "" {
			p = m.PayloadType + " " + p
		}
		if len(p) > 90 {
			p = p[:87] + "..."
		}
		fmt.Fprintf(w, "%-4d %-16s %-22s %-8s %s\n", ev.Seq, m.Type, m.From.AgentID, tasks[m.TaskID], strings.ReplaceAll(p, "\n", " "))
	}
	fmt.Fprintf(w, "\nresult: %s\n", out.Message.Payload)
	return nil
}
