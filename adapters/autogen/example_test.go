package autogen_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/clutchprotocol/clutch/adapters/autogen"
	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// A tool round of an AssistantAgent, as run_stream yields it, translated
// into one run.
func ExampleAdapter_Inbound() {
	raw := `[
	{"source":"user","content":"Find information on AutoGen","type":"TextMessage"},
	{"source":"assistant","content":[{"id":"call_1","arguments":"{\"query\":\"AutoGen\"}","name":"web_search"}],"type":"ToolCallRequestEvent"},
	{"source":"assistant","content":[{"content":"A framework for multi-agent apps.","name":"web_search","call_id":"call_1","is_error":false}],"type":"ToolCallExecutionEvent"},
	{"messages":[],"stop_reason":"Text 'TERMINATE' mentioned"}
	]`
	msgs, err := autogen.New(nil).Inbound(context.Background(), []byte(raw))
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range msgs {
		fmt.Println(m.Type, m.From.AgentID, m.TaskID == msgs[0].TaskID)
	}
	// Output:
	// task.request agent:autogen/user true
	// tool.call agent:autogen/assistant true
	// tool.result agent:autogen/assistant true
	// task.result agent:autogen/assistant true
}

// An AutoGen app posts its stream, one JSON line per message, to the run
// it names in the path.
func ExampleNewHandler() {
	ctx := context.Background()
	st, _ := memstore.New(nil)
	reg, _ := registry.Open(ctx, st, nil)
	schemas, _ := schema.New(nil)
	r, _ := router.New(st, reg, &router.Options{Validator: schemas, Logger: slog.New(slog.DiscardHandler)})
	defer r.Close()

	keys, _ := auth.APIKeys(map[string]auth.Caller{
		"team-key-0123456789abcdef": {AgentID: "agent:research-team", Scopes: []string{auth.ScopeSubmit}},
	})
	h, err := autogen.NewHandler(r, &autogen.HandlerOptions{Auth: keys})
	if err != nil {
		fmt.Println(err)
		return
	}
	mux := http.NewServeMux()
	mux.Handle("POST /autogen/runs/{run}", h)
	srv := httptest.NewServer(mux)
	defer srv.Close()

	body := `{"id":"m1","source":"user","content":"Name two cities","type":"TextMessage"}
{"id":"m2","source":"assistant","content":"Lima and Quito.","type":"TextMessage"}
`
	req, _ := http.NewRequest("POST", srv.URL+"/autogen/runs/run-1", strings.NewReader(body))
	req.Header.Set("X-API-Key", "team-key-0123456789abcdef")
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	var ans autogen.Answer
	_ = json.NewDecoder(resp.Body).Decode(&ans)
	fmt.Println(resp.StatusCode, ans.Stored)
	for ev := range st.Read(ctx, store.Query{RunID: ans.RunID}) {
		m, _ := ev.Message()
		fmt.Println(m.Type, m.From.AgentID)
	}
	// Output:
	// 200 2
	// task.request agent:research-team
	// chat.message agent:research-team/assistant
}
