package langgraph_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/clutchprotocol/clutch/adapters/langgraph"
	"github.com/clutchprotocol/clutch/egress"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// A graph served by a LangGraph Agent Server as a Clutch agent. A small
// stand-in answers like `langgraphjs dev` would for a graph whose model
// node calls the tool add and then answers.
func ExampleRegister() {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch {
		case r.URL.Path == "/threads":
			io.WriteString(w, `{"thread_id":"t","status":"idle"}`)
		case strings.HasSuffix(r.URL.Path, "/runs/stream"):
			w.Header().Set("Content-Location", strings.TrimSuffix(r.URL.Path, "/stream")+"/run-1")
			io.WriteString(w, "event: metadata\ndata: {\"run_id\":\"run-1\",\"attempt\":1}\nid: 0\n\n"+
				"event: updates\ndata: {\"model\":{\"messages\":[{\"type\":\"ai\",\"content\":\"\",\"id\":\"m1\",\"tool_calls\":[{\"name\":\"add\",\"args\":{\"a\":2,\"b\":3},\"id\":\"call_1\",\"type\":\"tool_call\"}]}]}}\nid: 1\n\n"+
				"event: updates\ndata: {\"tools\":{\"messages\":[{\"type\":\"tool\",\"content\":\"5\",\"tool_call_id\":\"call_1\",\"name\":\"add\",\"id\":\"m2\"}]}}\nid: 2\n\n"+
				"event: values\ndata: {\"messages\":[{\"type\":\"ai\",\"content\":\"The answer is 5\",\"id\":\"m3\"}]}\nid: 3\n\n")
		default: // GET /threads/{id}/runs/run-1
			io.WriteString(w, `{"run_id":"run-1","status":"success"}`)
		}
	}))
	defer hs.Close()

	ctx := context.Background()
	st, _ := memstore.New(nil)
	defer st.Close()
	reg, _ := registry.Open(ctx, st, nil)
	schemas, _ := schema.New(nil)
	r, _ := router.New(st, reg, &router.Options{Validator: schemas, Logger: slog.New(slog.DiscardHandler)})
	defer r.Close()
	// The server listens on 127.0.0.1, which the default egress policy
	// refuses (docs/protocol.md §6).
	allow, _ := egress.New(&egress.Options{Allow: []string{"127.0.0.1"}})
	rm, err := langgraph.Register(ctx, r, hs.URL, "agent", &langgraph.RemoteOptions{Egress: allow})
	if err != nil {
		panic(err)
	}
	defer rm.Close()
	fmt.Println(rm.Card().AgentID, rm.Card().Capabilities[0].ID)

	req, _ := r.NewRequest("agent:ui", "", "add 2 and 3")
	req.Requires = []string{"skill:langgraph-agent"}
	h, err := r.Submit(ctx, req)
	if err != nil {
		panic(err)
	}
	out, err := h.Wait(ctx)
	if err != nil {
		panic(err)
	}
	for ev, err := range st.Read(ctx, store.Query{TaskID: h.TaskID()}) {
		if err != nil {
			panic(err)
		}
		m, _ := ev.Message()
		fmt.Println(strings.TrimSpace(string(m.Type) + " " + m.PayloadType))
	}
	fmt.Println(string(out.Message.Payload))
	// Output:
	// agent:langgraph-agent skill:langgraph-agent
	// task.request
	// routing.decision
	// task.accept
	// task.progress langgraph.run.v1
	// task.progress langgraph.updates.v1
	// tool.call
	// task.progress langgraph.updates.v1
	// tool.result
	// task.progress langgraph.values.v1
	// task.result
	// {"messages":[{"content":"The answer is 5","id":"m3","type":"ai"}]}
}
