package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/cmd/clutch/internal/client"
	"github.com/clutchprotocol/clutch/gateway"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

// List a gateway's runs and page one run's events.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "client")
	defer os.RemoveAll(dir)
	st, _ := boltstore.Open(filepath.Join(dir, "events.db"), &boltstore.Options{NoSync: true})
	defer st.Close()
	reg, _ := registry.Open(ctx, st, nil)
	schemas, _ := schema.New(nil)
	r, _ := router.New(st, reg, &router.Options{Validator: schemas, Logger: slog.New(slog.DiscardHandler)})
	defer r.Close()
	keys, _ := auth.APIKeys(map[string]auth.Caller{"example-key-0123456789": {AgentID: "agent:ops", Scopes: []string{auth.ScopeAdmin}}})
	gw, _ := gateway.New(r, &gateway.Options{Auth: keys, Logger: slog.New(slog.DiscardHandler)})
	srv := httptest.NewServer(gw)
	defer srv.Close()

	m := protocol.NewMessage(protocol.TypeChatMessage, "agent:ops")
	m.RunID, m.ThreadID, m.TaskID = "run_example", "thr_example", "task_example"
	m.Payload = json.RawMessage(`{"text":"hello"}`)
	st.Append(ctx, m)

	c, _ := client.New(srv.URL, "example-key-0123456789", nil)
	runs, _, err := c.Runs(ctx, 0, 10)
	if err != nil {
		panic(err)
	}
	fmt.Println(runs[0].ID, runs[0].Events, runs[0].Status)
	for ev, err := range c.AllEvents(ctx, client.RunScope, "run_example", 0, "") {
		if err != nil {
			panic(err)
		}
		fmt.Println(ev.Seq, string(ev.Message) == string(m.Raw()))
	}
	// Output:
	// run_example 1 active
	// 1 true
}
