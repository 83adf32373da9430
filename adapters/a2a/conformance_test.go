package a2a

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// rpcError posts a JSON-RPC request with raw params to url and returns
// the error's code and message (0, "" for a success).
func rpcError(t *testing.T, url, method, params string) (int, string) {
	t.Helper()
	_, _, body := httpDo(t, "POST", url, `{"jsonrpc":"2.0","id":7,"method":"`+method+`","params":`+params+`}`,
		"Content-Type", "application/json", "A2A-Version", "1.0")
	var resp struct {
		ID    any `json:"id"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if i := strings.Index(body, "data: "); i >= 0 { // a stream: its first event
		body, _, _ = strings.Cut(body[i+len("data: "):], "\n")
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil {
		t.Fatalf("%s: not JSON: %s", method, body)
	}
	if resp.Error == nil {
		return 0, ""
	}
	if resp.ID != float64(7) {
		t.Errorf("%s: error answered with id %v, want the request's", method, resp.ID)
	}
	return resp.Error.Code, resp.Error.Message
}

// TestInputRequiredIsTheSameTask (issue 35, defects 1 and 2): a task that
// asks is INPUT_REQUIRED, not ended: SubscribeToTask gives it, CancelTask
// cancels it, and the client's next message with its taskId continues it
// (A2A 1.0 §3.4.3). A handler that fails with INPUT_REQUIRED instead of
// asking has ended: FAILED, and a reply to it starts nothing.
func TestInputRequiredIsTheSameTask(t *testing.T) {
	e := newTestEnv(t, nil)
	cl := e.client(t, "echo")

	asked := send(t, cl, textMsg("ask:"))
	if asked.Status.State != a2a.TaskStateInputRequired {
		t.Fatalf("asked: %s", asked.Status.State)
	}
	var first a2a.Event
	n := 0
	for ev, err := range cl.SubscribeToTask(ctxT(t), &a2a.SubscribeToTaskRequest{ID: asked.ID}) {
		if err != nil {
			t.Fatalf("subscribing to a task waiting for input: %v", err)
		}
		if first == nil {
			first = ev
		}
		n++
	}
	if task, ok := first.(*a2a.Task); !ok || task.Status.State != a2a.TaskStateInputRequired || n != 1 {
		t.Errorf("subscription: %d events, first %s", n, mustJSON(t, first))
	}
	cancelled, err := cl.CancelTask(ctxT(t), &a2a.CancelTaskRequest{ID: asked.ID})
	if err != nil || cancelled.Status.State != a2a.TaskStateCanceled {
		t.Fatalf("cancelling a task waiting for input: %v %s", err, mustJSON(t, cancelled))
	}

	asked = send(t, cl, textMsg("ask:"))
	reply := textMsg("fintech")
	reply.Message.TaskID, reply.Message.ContextID = asked.ID, asked.ContextID
	done := send(t, cl, reply)
	if done.ID != asked.ID || done.Status.State != a2a.TaskStateCompleted || len(done.History) != 2 {
		t.Fatalf("reply: %s", mustJSON(t, done))
	}
	again := textMsg("more")
	again.Message.TaskID = asked.ID
	if _, err := cl.SendMessage(ctxT(t), again); !errors.Is(err, a2a.ErrUnsupportedOperation) {
		t.Errorf("a message to a completed task: %v", err)
	}

	failed := send(t, cl, textMsg("input:which market?"))
	if failed.Status.State != a2a.TaskStateFailed || statusData(t, failed.Status, kindError)["code"] != string(protocol.CodeInputRequired) {
		t.Fatalf("a handler failing with INPUT_REQUIRED: %s", mustJSON(t, failed.Status))
	}
	before := len(e.Events(store.Query{TypePrefix: string(protocol.TypeTaskRequest)}))
	reply.Message.TaskID, reply.Message.ContextID, reply.Message.ID = failed.ID, "", a2a.NewMessageID()
	if _, err := cl.SendMessage(ctxT(t), reply); !errors.Is(err, a2a.ErrUnsupportedOperation) {
		t.Errorf("a reply to a failed task: %v", err)
	}
	if after := len(e.Events(store.Query{TypePrefix: string(protocol.TypeTaskRequest)})); after != before {
		t.Errorf("a reply to a failed task started %d tasks", after-before)
	}
}

// TestListTasksNewestFirst (issue 35, defects 3 and 4): ListTasks sorts
// by status timestamp, newest first, and totalSize counts every task the
// filter matches, not the page (A2A 1.0 §3.1.4).
func TestListTasksNewestFirst(t *testing.T) {
	e := newTestEnv(t, nil)
	cl := e.client(t, "echo")
	var ids []a2a.TaskID
	for range 5 {
		ids = append(ids, send(t, cl, textMsg("hi")).ID)
	}
	var got []a2a.TaskID
	token := ""
	for page := 0; ; page++ {
		resp, err := cl.ListTasks(ctxT(t), &a2a.ListTasksRequest{PageSize: 2, PageToken: token})
		if err != nil {
			t.Fatal(err)
		}
		if resp.TotalSize != 5 || resp.PageSize != 2 {
			t.Fatalf("page %d: totalSize %d pageSize %d", page, resp.TotalSize, resp.PageSize)
		}
		for _, task := range resp.Tasks {
			got = append(got, task.ID)
		}
		if token = resp.NextPageToken; token == "" {
			break
		}
	}
	want := []a2a.TaskID{ids[4], ids[3], ids[2], ids[1], ids[0]}
	if mustJSON(t, got) != mustJSON(t, want) {
		t.Errorf("order %v, want newest first %v", got, want)
	}
	completed, err := cl.ListTasks(ctxT(t), &a2a.ListTasksRequest{Status: a2a.TaskStateCompleted, PageSize: 1})
	if err != nil || completed.TotalSize != 5 || len(completed.Tasks) != 1 || completed.Tasks[0].ID != ids[4] {
		t.Errorf("completed, one a page: %v %s", err, mustJSON(t, completed))
	}
}

// TestInvalidParams (issue 35, defects 5 and 6): required fields and bad
// values are InvalidParams (-32602) naming the field — also where the SDK
// decides before the handler (pageSize 0, a timestamp that does not
// parse) — never a parse error for valid JSON.
func TestInvalidParams(t *testing.T) {
	e := newTestEnv(t, nil)
	url := e.hs.URL + AgentsPath + "/echo" + RPCPath
	for _, tc := range []struct {
		method, params, field string
	}{
		{"SendMessage", `{"message":{"role":"ROLE_USER","parts":[{"text":"hi"}]}}`, "messageId"},
		{"SendMessage", `{"message":{"messageId":"m-1","parts":[{"text":"hi"}]}}`, "role"},
		{"SendMessage", `{"message":{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"hi"}]},"configuration":{"historyLength":-1}}`, "historyLength"},
		{"SendStreamingMessage", `{"message":{"role":"ROLE_USER","parts":[{"text":"hi"}]}}`, "messageId"},
		{"ListTasks", `{"status":"TASK_STATE_BOGUS"}`, "status"},
		{"ListTasks", `{"historyLength":-1}`, "historyLength"},
		{"ListTasks", `{"pageSize":0}`, "pageSize"},
		{"ListTasks", `{"pageSize":"ten"}`, "pageSize"},
		{"ListTasks", `{"statusTimestampAfter":"-1"}`, "statusTimestampAfter"},
		{"ListTasks", `{"pageToken":"nope"}`, "pageToken"},
		{"GetTask", `{"id":"task_x","historyLength":-1}`, "historyLength"},
		{"GetTask", `{"id":5}`, "id"},
		{"GetTask", `[]`, "params"},
	} {
		code, msg := rpcError(t, url, tc.method, tc.params)
		if code != -32602 || !strings.Contains(msg, tc.field) {
			t.Errorf("%s %s: %d %q, want -32602 naming %s", tc.method, tc.params, code, msg, tc.field)
		}
	}
	// Still well-formed: the defaults hold.
	if code, msg := rpcError(t, url, "ListTasks", `{"statusTimestampAfter":"2020-01-01T00:00:00Z","historyLength":0}`); code != 0 {
		t.Errorf("a valid ListTasks: %d %s", code, msg)
	}
}

// TestCardSecurity (issue 35, defect 7): the card declares what the
// Server's authenticator takes, and nothing for anonymous callers.
func TestCardSecurity(t *testing.T) {
	keys, err := auth.APIKeys(map[string]auth.Caller{testKey: {AgentID: tester}})
	if err != nil {
		t.Fatal(err)
	}
	certs, err := auth.ClientCerts(map[string]auth.Caller{"subject:CN=ken": {AgentID: "agent:ken"}})
	if err != nil {
		t.Fatal(err)
	}
	anon := auth.Anonymous(auth.Caller{AgentID: "agent:anon"})
	for _, tc := range []struct {
		name     string
		a        auth.Authenticator
		schemes  string
		security string
	}{
		{"anonymous", anon, `null`, `null`},
		{"api keys", keys, `{"apiKey":{"apiKeySecurityScheme":{"description":"an API key","location":"header","name":"X-API-Key"}},"bearer":{"httpAuthSecurityScheme":{"description":"an API key or a token","scheme":"Bearer"}}}`,
			`[{"schemes":{"bearer":[]}},{"schemes":{"apiKey":[]}}]`},
		{"client certs or anonymous", auth.Chain(certs, anon), `{"mtls":{"mtlsSecurityScheme":{"description":"a TLS client certificate"}}}`, `null`},
		{"client certs", certs, `{"mtls":{"mtlsSecurityScheme":{"description":"a TLS client certificate"}}}`, `[{"schemes":{"mtls":[]}}]`},
	} {
		e := newTestEnv(t, &ServerOptions{Auth: tc.a})
		for _, path := range []string{CardPath, AgentsPath + "/echo" + CardPath} {
			_, _, body := httpDo(t, "GET", e.hs.URL+path, "")
			var card struct {
				Schemes  json.RawMessage `json:"securitySchemes"`
				Security json.RawMessage `json:"securityRequirements"`
			}
			if err := json.Unmarshal([]byte(body), &card); err != nil {
				t.Fatal(err)
			}
			if s := string(card.Schemes); s != tc.schemes && !(s == "" && tc.schemes == "null") {
				t.Errorf("%s %s: securitySchemes %s, want %s", tc.name, path, s, tc.schemes)
			}
			if s := string(card.Security); s != tc.security && !(s == "" && tc.security == "null") {
				t.Errorf("%s %s: securityRequirements %s, want %s", tc.name, path, s, tc.security)
			}
		}
	}
}

// TestExtendedCardNotDeclared (issue 35, defect 8): the cards declare no
// extended card, so GetExtendedAgentCard is UnsupportedOperationError
// (-32004, A2A 1.0 §3.3.4).
func TestExtendedCardNotDeclared(t *testing.T) {
	e := newTestEnv(t, nil)
	// Raw: the SDK's client answers for the server when the card declares
	// no extended card.
	if code, msg := rpcError(t, e.hs.URL+AgentsPath+"/echo"+RPCPath, "GetExtendedAgentCard", `{}`); code != -32004 {
		t.Errorf("GetExtendedAgentCard: %d %s", code, msg)
	}
}
