// Command a2a serves a Clutch research agent over A2A (1.0, JSON-RPC) on
// localhost and calls it through the official A2A Go client, printing the
// events on both sides: the Clutch events as the server stores them, and
// the A2A events as the client receives them.
//
//	go run ./examples/a2a
//
// Everything runs in one process, on 127.0.0.1 with a free port, with an
// in-memory store: no services, no API keys.
package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	sdk "github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"

	"github.com/clutchprotocol/clutch/adapters/a2a"
	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/egress"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// printer serialises the lines of both sides.
type printer struct {
	mu sync.Mutex
	w  io.Writer
}

func (p *printer) printf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format+"\n", args...)
}

func run(ctx context.Context, w io.Writer) error {
	out := &printer{w: w}

	// The Clutch side: a store, a registry, a router and one research agent.
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
	r, err := router.New(st, reg, &router.Options{Validator: schemas, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer r.Close()
	ken := &protocol.AgentCard{
		AgentID:      "agent:ken",
		Display:      &protocol.Display{Name: "Ken", Desc: "Research specialist"},
		Capabilities: []protocol.Capability{{ID: "skill:research", Tags: []string{"market", "fintech"}}},
		Limits:       &protocol.Limits{MaxConcurrency: 2, MaxRuntimeSec: 60},
	}
	if err := r.Register(ctx, ken, research); err != nil {
		return err
	}

	// Serve it over A2A on localhost. Every call is authenticated (here an
	// API key made for this run; an OIDC verifier or client certificates
	// work the same way, see package auth), and only agent:ken is exposed.
	key := rand.Text()
	keys, err := auth.APIKeys(map[string]auth.Caller{
		key: {AgentID: "agent:example-client", Scopes: []string{auth.ScopeSubmit}},
	})
	if err != nil {
		return err
	}
	srv, err := a2a.NewServer(r, &a2a.ServerOptions{Auth: keys, Expose: []string{"agent:ken"}})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	defer hs.Shutdown(context.Background())
	base := "http://" + ln.Addr().String()
	out.printf("serving agent:ken over A2A at %s/agents/ken", base)

	// The server's view: every Clutch event, as it is stored.
	followCtx, stopFollow := context.WithCancel(ctx)
	defer stopFollow()
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		for ev, err := range st.Follow(followCtx, store.Query{TypePrefix: "task."}) {
			if err != nil {
				return
			}
			m, err := ev.Message()
			if err != nil {
				return
			}
			out.printf("  [server] %-13s %s", m.Type, serverLine(m))
			if m.Type.Terminal() {
				return
			}
		}
	}()

	// The client's view: resolve the card, stream a message, read the task.
	// The client dials through an egress policy (package egress,
	// docs/protocol.md §6), as every outbound connection of the SDK does.
	// Its default refuses loopback and private addresses, so this one
	// allows 127.0.0.1, where the server listens.
	policy, err := egress.New(&egress.Options{Allow: []string{"127.0.0.1"}})
	if err != nil {
		return err
	}
	hc, err := policy.HTTPClient(nil)
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	card, err := agentcard.NewResolver(hc).Resolve(ctx, base+"/agents/ken")
	if err != nil {
		return err
	}
	out.printf("  [client] card %q: skill %s, streaming %v", card.Name, card.Skills[0].ID, card.Capabilities.Streaming)
	// The card is public; the calls carry the key.
	withKey := &http.Client{Transport: bearer{key: key, next: hc.Transport}}
	client, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(withKey))
	if err != nil {
		return err
	}
	defer client.Destroy()
	msg := sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("fintech payments in Europe"))
	var taskID sdk.TaskID
	for ev, err := range client.SendStreamingMessage(ctx, &sdk.SendMessageRequest{Message: msg}) {
		if err != nil {
			return err
		}
		out.printf("  [client] %s", clientLine(ev))
		if t, ok := ev.(*sdk.Task); ok {
			taskID = t.ID
		}
	}
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		return errors.New("the server side did not see the task end")
	}
	task, err := client.GetTask(ctx, &sdk.GetTaskRequest{ID: taskID})
	if err != nil {
		return err
	}
	out.printf("GetTask %s: %s, %d artifact(s), context %s", task.ID, task.Status.State, len(task.Artifacts), task.ContextID)
	return nil
}

// bearer sends an API key on every request.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// research answers a research question (the text of an A2A message, or a
// research.query.v1 payload) with a research.summary.v1 result, reporting
// progress on the way.
func research(ctx context.Context, t *router.Task) (*router.Result, error) {
	var query string
	switch t.Request().PayloadType {
	case a2a.PayloadContent:
		c, err := router.Input[a2a.Content](t)
		if err != nil {
			return nil, err
		}
		query = c.Text
	case schema.PayloadResearchQuery:
		q, err := router.Input[schema.ResearchQuery](t)
		if err != nil {
			return nil, err
		}
		query = q.Query
	default:
		return nil, router.Fail(protocol.CodeUnsupportedTask, "ask in text or with research.query.v1", false, nil)
	}
	for _, step := range []string{"searching the web", "reading 3 sources", "writing the summary"} {
		if err := t.Progress(ctx, map[string]any{"text": step}); err != nil {
			return nil, err
		}
		select {
		case <-time.After(30 * time.Millisecond): // the work
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return &router.Result{PayloadType: schema.PayloadResearchSummary, Payload: schema.ResearchSummary{
		Title:     "Market analysis: " + query,
		Findings:  []string{"instant payments are the norm", "open banking drives new entrants"},
		Citations: []string{"https://example.com/report"},
	}}, nil
}

func serverLine(m *protocol.Message) string {
	s := "from " + m.From.AgentID
	if m.Type == protocol.TypeTaskRequest || m.Type == protocol.TypeTaskResult {
		s += ", " + m.PayloadType
	}
	if m.Type != protocol.TypeTaskAccept {
		s += " " + shorten(string(m.Payload))
	}
	return s
}

func clientLine(ev sdk.Event) string {
	switch e := ev.(type) {
	case *sdk.Task:
		return fmt.Sprintf("task     %s %s", e.Status.State, e.ID)
	case *sdk.TaskStatusUpdateEvent:
		s := "status   " + string(e.Status.State)
		if e.Status.Message != nil {
			for _, p := range e.Status.Message.Parts {
				if p.Text() != "" {
					s += ": " + p.Text()
					break
				}
			}
		}
		return s
	case *sdk.TaskArtifactUpdateEvent:
		var parts []string
		for _, p := range e.Artifact.Parts {
			if p.Text() != "" {
				parts = append(parts, "text "+p.Text())
			} else if p.Data() != nil {
				b, _ := json.Marshal(p.Data())
				parts = append(parts, fmt.Sprintf("data (%v) %s", p.Metadata[a2a.MetaPayloadType], shorten(string(b))))
			}
		}
		return fmt.Sprintf("artifact %s: %s", e.Artifact.Name, strings.Join(parts, "; "))
	case *sdk.Message:
		return "message"
	}
	return fmt.Sprintf("%T", ev)
}

func shorten(s string) string {
	if len(s) > 72 {
		return s[:69] + "..."
	}
	return s
}
