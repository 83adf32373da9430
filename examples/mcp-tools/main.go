// Command mcp-tools is the MCP tutorial: an agent calls two tools of the
// reference MCP server @modelcontextprotocol/server-everything (a node
// process over stdio) through the router, and the program prints the
// task's events — tool.call, tool.result, the structured result checked
// against the tool's outputSchema — and what the agent made of them.
//
// It needs node. By default it runs the server-everything that `make deps`
// installs under adapters/mcp/testdata/everything; -server names another
// dist/index.js, and -npx runs `npx @modelcontextprotocol/server-everything`
// instead (which downloads it from the npm registry).
//
//	make deps && go run ./examples/mcp-tools
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/adapters/mcp"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// defaultServer is where `make deps` installs server-everything, relative
// to the repository root.
const defaultServer = "adapters/mcp/testdata/everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

func main() {
	server := flag.String("server", defaultServer, "path of server-everything's dist/index.js")
	npx := flag.Bool("npx", false, "run the server with npx (downloads it) instead of -server")
	flag.Parse()
	cfg, err := everything(*server, *npx)
	if err != nil {
		log.Fatal(err)
	}
	if err := run(context.Background(), os.Stdout, cfg); err != nil {
		log.Fatal(err)
	}
}

// everything returns the stdio configuration of server-everything.
func everything(script string, npx bool) (mcp.ServerConfig, error) {
	if npx {
		return mcp.ServerConfig{Name: "everything", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"}}, nil
	}
	node, err := exec.LookPath("node")
	if err != nil {
		return mcp.ServerConfig{}, errors.New("this example needs node (https://nodejs.org) on PATH")
	}
	if _, err := os.Stat(script); err != nil {
		return mcp.ServerConfig{}, fmt.Errorf("server-everything not found at %s: run `make deps` from the repository root, or pass -server or -npx", script)
	}
	abs, _ := filepath.Abs(script)
	return mcp.ServerConfig{Name: "everything", Command: node, Args: []string{abs, "stdio"}}, nil
}

func run(ctx context.Context, w io.Writer, cfg mcp.ServerConfig) error {
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

	// The MCP client: one server, started on the first call. Its stderr
	// goes to the logger (quiet here).
	tools, err := mcp.NewClient([]mcp.ServerConfig{cfg}, &mcp.ClientOptions{Logger: quiet, Timeout: 20 * time.Second, TerminateDuration: 500 * time.Millisecond})
	if err != nil {
		return err
	}
	defer tools.Close()

	// An agent allowed to use mcp:everything (its card lists the server).
	// A stdio server is a process, not a connection: the card needs no
	// security.network for it. An HTTP server would need one (and
	// ClientOptions.Egress allowing its address; docs/protocol.md §6).
	card := &protocol.AgentCard{AgentID: "agent:weather",
		Display:      &protocol.Display{Name: "Weather desk"},
		Capabilities: []protocol.Capability{{ID: "skill:weather", Tools: []string{"mcp:everything"}}}}
	err = r.Register(ctx, card, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		in, err := router.Input[struct {
			City string `json:"city"`
		}](t)
		if err != nil {
			return nil, err
		}
		tb := tools.Toolbox(t)
		// The names an LLM would see.
		list, err := tb.Tools(ctx)
		if err != nil {
			return nil, err
		}
		names := make([]string, 0, len(list))
		for _, tl := range list {
			if strings.HasPrefix(tl.Name, "echo") || strings.HasPrefix(tl.Name, "get-structured") {
				names = append(names, tl.LLMName)
			}
		}
		fmt.Fprintf(w, "tools for the LLM: %s (and %d more)\n", strings.Join(names, ", "), len(list)-len(names))

		echo, err := tb.CallLLM(ctx, "mcp_everything_echo", map[string]any{"message": "weather for " + in.City}, nil)
		if err != nil {
			return nil, err
		}
		weather, err := tb.Call(ctx, "everything", "get-structured-content", map[string]any{"location": in.City}, nil)
		if err != nil {
			return nil, err
		}
		return &router.Result{Payload: map[string]any{"echo": echo.Text(), "weather": weather.StructuredContent}}, nil
	})
	if err != nil {
		return err
	}

	req, err := r.NewRequest("agent:ui", "", map[string]any{"city": "New York"})
	if err != nil {
		return err
	}
	req.Requires = []string{"skill:weather"}
	h, err := r.Submit(ctx, req)
	if err != nil {
		return err
	}
	out, taskErr := h.Wait(ctx)

	fmt.Fprintf(w, "\n%-4s %-17s %-19s %s\n", "seq", "type", "from", "payload")
	calls := map[string]uint64{} // call id → seq of its tool.call
	for ev, err := range st.Read(ctx, store.Query{TaskID: out.TaskID}) {
		if err != nil {
			return err
		}
		m, err := ev.Message()
		if err != nil {
			return err
		}
		p := string(m.Payload)
		switch m.Type {
		case protocol.TypeRoutingDecision:
			d, _ := protocol.DecodePayload[protocol.RoutingDecision](m)
			p = "selected " + d.Selected + "; reason: " + d.Reason
		case protocol.TypeTaskAccept:
			p = fmt.Sprintf("(takes the task, attempt %d)", m.Attempt)
		case protocol.TypeToolCall:
			cp, _ := protocol.DecodePayload[mcp.CallPayload](m)
			calls[cp.CallID] = ev.Seq
			p = cp.Tool + " " + cp.Name + " args " + string(cp.Args)
		case protocol.TypeToolResult:
			// The call it answers, by call id; the structured result when
			// there is one, else the content.
			rp, _ := protocol.DecodePayload[mcp.ResultPayload](m)
			p = fmt.Sprintf("answers %d: %s %s content %s", calls[rp.CallID], rp.Tool, rp.Name, rp.Content)
			if rp.StructuredContent != nil {
				p = fmt.Sprintf("answers %d: %s %s structuredContent %s", calls[rp.CallID], rp.Tool, rp.Name, rp.StructuredContent)
			}
		}
		if len(p) > 110 {
			p = p[:107] + "..."
		}
		fmt.Fprintf(w, "%-4d %-17s %-19s %s\n", ev.Seq, m.Type, m.From.AgentID, p)
	}
	if taskErr != nil {
		return taskErr
	}
	fmt.Fprintf(w, "\nresult: %s\n", out.Message.Payload)
	return nil
}
