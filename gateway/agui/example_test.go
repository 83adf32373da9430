package agui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/gateway/agui"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// A host serves AG-UI behind the one authenticator: an AG-UI client POSTs a
// RunAgentInput and reads the run as server-sent events.
func ExampleNew() {
	ctx := context.Background()
	st, _ := memstore.New(nil)
	defer st.Close()
	reg, _ := registry.Open(ctx, st, nil)
	schemas, _ := schema.New(nil)
	r, _ := router.New(st, reg, &router.Options{Validator: schemas, Logger: slog.New(slog.DiscardHandler)})
	defer r.Close()
	_ = r.Register(ctx, &protocol.AgentCard{V: protocol.Version, AgentID: "agent:assistant", Capabilities: []protocol.Capability{{ID: "skill:chat"}}},
		func(ctx context.Context, t *router.Task) (*router.Result, error) {
			in, err := router.Input[agui.InputPayload](t)
			if err != nil {
				return nil, err
			}
			return &router.Result{Payload: map[string]string{"text": "You said: " + in.Text}}, nil
		})

	h, err := agui.New(r, &agui.Options{Agent: "agent:assistant"})
	if err != nil {
		panic(err)
	}
	keys, _ := auth.APIKeys(map[string]auth.Caller{"ui-key-0123456789abcdef": {AgentID: "agent:ui", Scopes: []string{auth.ScopeSubmit}}})
	srv := httptest.NewServer(auth.Middleware(keys, nil)(h))
	defer srv.Close()

	body := `{"threadId":"thread-1","runId":"run-1","state":{},"tools":[],"context":[],"forwardedProps":{},
	          "messages":[{"id":"u1","role":"user","content":"hello"}]}`
	req, _ := http.NewRequest("POST", srv.URL, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer ui-key-0123456789abcdef")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var ev struct{ Type, Delta string }
			_ = json.Unmarshal([]byte(data), &ev)
			fmt.Println(strings.TrimSpace(ev.Type + " " + ev.Delta))
		}
	}
	// Output:
	// RUN_STARTED
	// CUSTOM
	// STEP_STARTED
	// TEXT_MESSAGE_START
	// TEXT_MESSAGE_CONTENT You said: hello
	// TEXT_MESSAGE_END
	// STEP_FINISHED
	// RUN_FINISHED
}

// A Translator turns a run's stored events into AG-UI events.
func ExampleTranslator() {
	ids := protocol.NewIDs(nil)
	req := ids.NewMessage(protocol.TypeTaskRequest, "agent:ui")
	req.ID, req.TaskID, req.TS = "msg_1", "task_1", "2026-03-14T09:26:53.589Z"
	call := ids.Reply(req, protocol.TypeToolCall, "agent:ken")
	call.ID, call.TS = "msg_2", req.TS
	_ = call.SetPayload(map[string]any{"tool": "mcp:browser", "name": "search", "args": map[string]string{"q": "nordic"}})
	res := ids.Reply(req, protocol.TypeTaskResult, "agent:ken")
	res.ID, res.TS = "msg_3", req.TS
	_ = res.SetPayload("Three sources agree.")

	tr := agui.NewTranslator("thread-1", "run-1", nil)
	for seq, m := range []*protocol.Message{req, call, res} {
		for _, e := range tr.Translate(nil, uint64(seq+1), m) {
			fmt.Printf("%s\n", e.AppendJSON(nil))
		}
	}
	fmt.Println("done:", tr.Done())
	// Output:
	// {"type":"RUN_STARTED","timestamp":1773480413589,"threadId":"thread-1","runId":"run-1"}
	// {"type":"TOOL_CALL_START","timestamp":1773480413589,"toolCallId":"msg_2","toolCallName":"search"}
	// {"type":"TOOL_CALL_ARGS","timestamp":1773480413589,"toolCallId":"msg_2","delta":"{\"q\":\"nordic\"}"}
	// {"type":"TOOL_CALL_END","timestamp":1773480413589,"toolCallId":"msg_2"}
	// {"type":"TEXT_MESSAGE_START","timestamp":1773480413589,"messageId":"msg_3","role":"assistant","name":"agent:ken"}
	// {"type":"TEXT_MESSAGE_CONTENT","timestamp":1773480413589,"messageId":"msg_3","delta":"Three sources agree."}
	// {"type":"TEXT_MESSAGE_END","timestamp":1773480413589,"messageId":"msg_3"}
	// {"type":"RUN_FINISHED","timestamp":1773480413589,"threadId":"thread-1","runId":"run-1","result":"Three sources agree."}
	// done: true
}
