package a2a_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

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

// team is a router over an in-memory store.
type team struct {
	st  store.Store
	reg *registry.Registry
	r   *router.Router
}

func newTeam() *team {
	ctx := context.Background()
	st, _ := memstore.New(nil)
	reg, _ := registry.Open(ctx, st, nil)
	schemas, _ := schema.New(nil)
	r, _ := router.New(st, reg, &router.Options{Validator: schemas, Logger: slog.New(slog.DiscardHandler)})
	return &team{st: st, reg: reg, r: r}
}

func (tm *team) close() { tm.r.Close(); tm.st.Close() }

// uiKey is the API key of the examples' one caller, agent:ui.
const uiKey = "ui-key-0123456789abcdef"

// serverOptions exposes agent:echo to agent:ui, who may submit tasks and
// list agents.
func serverOptions() *a2a.ServerOptions {
	keys, err := auth.APIKeys(map[string]auth.Caller{
		uiKey: {AgentID: "agent:ui", Scopes: []string{auth.ScopeSubmit, auth.ScopeAgents}},
	})
	if err != nil {
		panic(err)
	}
	return &a2a.ServerOptions{Auth: keys, Expose: []string{"agent:echo"}}
}

// withKey is an HTTP client that sends uiKey.
var withKey = &http.Client{Transport: keyed{}}

type keyed struct{}

func (keyed) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+uiKey)
	return http.DefaultTransport.RoundTrip(r)
}

// echo answers the text of an A2A message (an a2a.Content payload).
func echo(ctx context.Context, t *router.Task) (*router.Result, error) {
	in, err := router.Input[a2a.Content](t)
	if err != nil {
		return nil, err
	}
	return &router.Result{Payload: a2a.Content{Text: "echo: " + in.Text}}, nil
}

var echoCard = &protocol.AgentCard{V: protocol.Version, AgentID: "agent:echo",
	Capabilities: []protocol.Capability{{ID: "skill:echo", Tags: []string{"demo"}}}}

// Serve a Clutch agent over A2A and call it with the a2a-go client.
func ExampleNewServer() {
	ctx := context.Background()
	tm := newTeam()
	defer tm.close()
	tm.r.Register(ctx, echoCard, echo)

	// Callers authenticate (here with an API key) and see only the
	// agents exposed to them.
	srv, err := a2a.NewServer(tm.r, serverOptions())
	if err != nil {
		panic(err)
	}
	hs := httptest.NewServer(srv) // 127.0.0.1, a free port
	defer hs.Close()

	// Any A2A 1.0 client will do; this is the official Go one. The card is
	// public; the calls carry the key.
	card, err := agentcard.DefaultResolver.Resolve(ctx, hs.URL+"/agents/echo")
	if err != nil {
		panic(err)
	}
	client, err := a2aclient.NewFromCard(ctx, card, a2aclient.WithJSONRPCTransport(withKey))
	if err != nil {
		panic(err)
	}
	res, err := client.SendMessage(ctx, &sdk.SendMessageRequest{Message: sdk.NewMessage(sdk.MessageRoleUser, sdk.NewTextPart("hello"))})
	if err != nil {
		panic(err)
	}
	task := res.(*sdk.Task)
	fmt.Println(card.Skills[0].ID, task.Status.State, task.Artifacts[0].Parts[0].Text())
	// Output: skill:echo TASK_STATE_COMPLETED echo: hello
}

// Register a remote A2A agent and route a Clutch task to it. The remote
// here is another Clutch team served over A2A.
func ExampleRegister() {
	ctx := context.Background()
	remote := newTeam()
	defer remote.close()
	remote.r.Register(ctx, echoCard, echo)
	srv, _ := a2a.NewServer(remote.r, serverOptions())
	hs := httptest.NewServer(srv)
	defer hs.Close()

	local := newTeam()
	defer local.close()
	// The remote listens on 127.0.0.1: the default egress policy refuses
	// loopback, so allow it (docs/protocol.md §6).
	allow, _ := egress.New(&egress.Options{Allow: []string{"127.0.0.1"}})
	rm, err := a2a.Register(ctx, local.r, hs.URL+"/agents/echo", &a2a.RemoteOptions{BearerToken: uiKey, Egress: allow})
	if err != nil {
		panic(err)
	}
	defer rm.Close()
	c := rm.Card()
	fmt.Println(c.AgentID, c.Capabilities[0].ID, strings.TrimPrefix(c.Endpoints["a2a"].URL, hs.URL))

	req, _ := local.r.NewRequest("agent:ui", a2a.PayloadContent, a2a.Content{Text: "hi"})
	req.Requires = []string{"skill:echo"}
	h, err := local.r.Submit(ctx, req)
	if err != nil {
		panic(err)
	}
	out, err := h.Wait(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(string(out.Message.Payload))
	// Output:
	// agent:echo skill:echo /agents/echo/a2a
	// {"text":"echo: hi"}
}

// The simple HTTP surface of docs/protocol.md §13: POST /agents/{name}/run.
func ExampleServer_run() {
	ctx := context.Background()
	tm := newTeam()
	defer tm.close()
	tm.r.Register(ctx, echoCard, echo)
	srv, _ := a2a.NewServer(tm.r, serverOptions())
	hs := httptest.NewServer(srv)
	defer hs.Close()

	resp, err := withKey.Post(hs.URL+"/agents/echo/run", "application/json", strings.NewReader(`{"prompt":"hello"}`))
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var body struct {
		Result json.RawMessage
		Meta   struct {
			AgentID string `json:"agent_id"`
		}
	}
	json.NewDecoder(resp.Body).Decode(&body)
	fmt.Println(resp.StatusCode, string(body.Result), body.Meta.AgentID)

	resp2, err := withKey.Post(hs.URL+"/agents/nobody/run", "application/json", strings.NewReader(`{"prompt":"hello"}`))
	if err != nil {
		panic(err)
	}
	defer resp2.Body.Close()
	var e map[string]string
	json.NewDecoder(resp2.Body).Decode(&e)
	fmt.Println(resp2.StatusCode, e["error"])

	// Without credentials: 401, and nothing else.
	resp3, err := http.Post(hs.URL+"/agents/echo/run", "application/json", strings.NewReader(`{"prompt":"hello"}`))
	if err != nil {
		panic(err)
	}
	resp3.Body.Close()
	fmt.Println(resp3.StatusCode, resp3.Header.Get("WWW-Authenticate"))
	// Output:
	// 200 {"text":"echo: hello"} agent:echo
	// 404 agent_not_found
	// 401 Bearer realm="clutch"
}
