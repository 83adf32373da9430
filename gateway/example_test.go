package gateway_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/gateway"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// newRouter returns a router with one agent, agent:echo, that answers a
// task with its payload.
func newRouter() *router.Router {
	ctx := context.Background()
	st, _ := memstore.New(nil)
	reg, _ := registry.Open(ctx, st, nil)
	schemas, _ := schema.New(&schema.Options{Permissive: true})
	r, _ := router.New(st, reg, &router.Options{Validator: schemas, Logger: slog.New(slog.DiscardHandler)})
	card := &protocol.AgentCard{V: protocol.Version, AgentID: "agent:echo", Capabilities: []protocol.Capability{{ID: "skill:echo"}}}
	r.Register(ctx, card, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		return &router.Result{Payload: json.RawMessage(t.Request().Payload)}, nil
	})
	return r
}

func call(srv *httptest.Server, method, path, body string) string {
	req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer ui-key-0123456789abcdef")
	resp, err := srv.Client().Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return fmt.Sprint(resp.StatusCode, " ", strings.TrimSpace(string(b)))
}

// Mount the gateway, submit a task as the authenticated caller, and read
// its run.
func Example() {
	r := newRouter()
	defer r.Store().Close()
	defer r.Close()
	keys, _ := auth.APIKeys(map[string]auth.Caller{
		"ui-key-0123456789abcdef": {AgentID: "agent:ui", Scopes: []string{auth.ScopeSubmit}},
	})
	gw, err := gateway.New(r, &gateway.Options{Auth: keys})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(gw)
	defer srv.Close()

	var acc gateway.Accepted
	out := call(srv, "POST", "/v1/messages", `{"type":"task.request","requires":["skill:echo"],"payload":{"text":"hello"}}`)
	json.Unmarshal([]byte(out[4:]), &acc)
	fmt.Println(out[:3], acc.Type, acc.Seq) // seq 1 is the registration of agent:echo

	// Follow the run live until its result.
	req, _ := http.NewRequest("GET", srv.URL+"/v1/stream?run="+acc.RunID, nil)
	req.Header.Set("Authorization", "Bearer ui-key-0123456789abcdef")
	resp, err := srv.Client().Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			fmt.Println(ev)
			if ev == "task.result" {
				break
			}
		}
	}
	var page struct {
		Events []struct {
			Message protocol.Message `json:"message"`
		} `json:"events"`
	}
	json.Unmarshal([]byte(call(srv, "GET", "/v1/runs/"+acc.RunID+"/events?type=task.request", "")[4:]), &page)
	fmt.Println("submitted by", page.Events[0].Message.From.AgentID)

	fmt.Println(call(srv, "POST", "/v1/messages", `{"type":"chat.message","from":{"agent_id":"agent:admin"}}`))
	// Output:
	// 202 task.request 2
	// task.request
	// routing.decision
	// task.accept
	// task.result
	// submitted by agent:ui
	// 400 {"error":{"code":"INVALID_FIELD","message":"\"from\" is not accepted: the sender is the authenticated caller","retryable":false}}
}
