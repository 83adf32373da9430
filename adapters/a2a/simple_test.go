package a2a

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

func TestSimpleAgents(t *testing.T) {
	e := newTestEnv(t, nil)
	status, _, body := httpDo(t, "GET", e.hs.URL+"/agents", "")
	var list struct{ Agents []agentInfo }
	if err := json.Unmarshal([]byte(body), &list); status != 200 || err != nil {
		t.Fatalf("%d %s %v", status, body, err)
	}
	var names []string
	for _, a := range list.Agents {
		names = append(names, a.Name)
	}
	if !slices.Equal(names, []string{"echo", "quick", "research"}) {
		t.Errorf("agents %v", names)
	}
	if a := list.Agents[0]; a.AgentID != "agent:echo" || a.Description != "test agent agent:echo" || !a.Online ||
		!slices.Equal(a.Capabilities, []string{"skill:echo"}) || a.URL != e.hs.URL+"/agents/echo" || a.CardURL != a.URL+CardPath || a.Card != nil {
		t.Errorf("agent: %+v", a)
	}

	status, _, body = httpDo(t, "GET", e.hs.URL+"/agents/echo", "")
	var one agentInfo
	if err := json.Unmarshal([]byte(body), &one); status != 200 || err != nil || one.Card == nil || one.Card.AgentID != "agent:echo" {
		t.Errorf("one agent: %d %s", status, body)
	}
	for _, path := range []string{"/agents/nobody", "/agents/nobody/run"} {
		status, _, body = httpDo(t, "POST", e.hs.URL+path, `{"prompt":"x"}`)
		if path == "/agents/nobody" {
			status, _, body = httpDo(t, "GET", e.hs.URL+path, "")
		}
		if status != 404 || body != `{"error":"agent_not_found","message":"no agent named nobody"}`+"\n" {
			t.Errorf("%s: %d %q", path, status, body)
		}
	}
	// Only exposed agents are there.
	some := serve(t, e.Env, &ServerOptions{Expose: []string{"agent:research"}})
	_, _, body = httpDo(t, "GET", some.hs.URL+"/agents", "")
	if strings.Contains(body, "agent:echo") || !strings.Contains(body, "agent:research") {
		t.Errorf("exposed agents: %s", body)
	}
	if status, _, _ := httpDo(t, "GET", some.hs.URL+"/agents/echo", ""); status != 404 {
		t.Errorf("a hidden agent answered %d", status)
	}
}

func TestSimpleRun(t *testing.T) {
	e := newTestEnv(t, nil)
	status, hdr, body := httpDo(t, "POST", e.hs.URL+"/agents/echo/run", `{"prompt":"hello","sessionId":"sess-1"}`, "Content-Type", "application/json")
	if status != 200 || hdr.Get("Content-Type") != "application/json" {
		t.Fatalf("%d %s", status, body)
	}
	var res runResult
	if err := json.Unmarshal([]byte(body), &res); err != nil {
		t.Fatal(err)
	}
	if string(res.Result) != `{"text":"echo: hello"}` || res.Meta.SessionID != "sess-1" || res.Meta.AgentID != "agent:echo" ||
		!strings.HasPrefix(res.Meta.TaskID, "task_") || res.Meta.Attempt != 1 {
		t.Errorf("run result: %s", body)
	}
	req := e.Events(store.Query{TaskID: res.Meta.TaskID, TypePrefix: "task.request"})[0]
	if req.PayloadType != PayloadContent || string(req.Payload) != `{"text":"hello"}` || req.Meta[metaContextID] != "sess-1" || req.Meta[metaSource] != SourceHTTP {
		t.Errorf("request: %s", req.Raw())
	}
}

func TestSimpleErrors(t *testing.T) {
	e := newTestEnv(t, &ServerOptions{MaxBodyBytes: 1024, MaxPromptLength: 10})
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		want                     string // the whole body, or a prefix ending in "*"
	}{
		{"empty prompt", "POST", "/agents/echo/run", `{"prompt":"  "}`, 400, `{"error":"invalid_request","message":"prompt must not be empty"}`},
		{"no prompt", "POST", "/agents/echo/run", `{}`, 400, `{"error":"invalid_request","message":"prompt is required"}`},
		{"prompt not a string", "POST", "/agents/echo/run", `{"prompt":1}`, 400, `{"error":"invalid_request","message":"the body is not a JSON object*`},
		{"unknown member", "POST", "/agents/echo/run", `{"prompt":"x","tools":[]}`, 400, `{"error":"invalid_request","message":"the body is not a JSON object*`},
		{"duplicate member", "POST", "/agents/echo/run", `{"prompt":"x","prompt":"y"}`, 400, `{"error":"invalid_request"*`},
		{"not JSON", "POST", "/agents/echo/run", `prompt=x`, 400, `{"error":"invalid_request"*`},
		{"prompt too long", "POST", "/agents/echo/run", `{"prompt":"12345678901"}`, 400,
			`{"error":"guardrail_violation","message":"prompt is 11 characters, over the input limit of 10","details":{"field":"prompt","length":11,"limit":10}}`},
		{"body too large", "POST", "/agents/echo/run", `{"prompt":"` + strings.Repeat(" ", 2000) + `x"}`, 413, `{"error":"invalid_request","message":"the body is over the limit of 1024 bytes"}`},
		{"wrong method", "GET", "/agents/echo/run", ``, 405, `{"error":"invalid_request","message":"method GET is not allowed; use POST"}`},
		{"panicking agent", "POST", "/agents/echo/run", `{"prompt":"panic:x"}`, 500, `{"error":"internal_error","message":"Unexpected failure"}`},
		{"policy denied", "POST", "/agents/echo/run", `{"prompt":"deny:pii"}`, 400, `{"error":"guardrail_violation","message":"pii","details":{"rule":"no-pii"}}`},
		{"task failed", "POST", "/agents/echo/run", `{"prompt":"fail:boom"}`, 502, `{"error":"tool_failed","message":"boom","details":{"code":"TOOL_FAILED","retryable":false,*`},
		{"input required", "POST", "/agents/echo/run", `{"prompt":"input:wh"}`, 422, `{"error":"input_required","message":"wh"*`},
		{"unknown path", "GET", "/nothing", ``, 404, `{"error":"not_found","message":"no such path: /nothing"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := httpDo(t, tc.method, e.hs.URL+tc.path, tc.body)
			body = strings.TrimSuffix(body, "\n")
			ok := body == tc.want
			if p, found := strings.CutSuffix(tc.want, "*"); found {
				ok = strings.HasPrefix(body, p)
			}
			if status != tc.status || !ok {
				t.Errorf("got %d %s\nwant %d %s", status, body, tc.status, tc.want)
			}
			if strings.Contains(body, "secret") {
				t.Errorf("internal detail leaked: %s", body)
			}
		})
	}
}

// sseEvents reads a text/event-stream into (event, data) pairs.
func sseEvents(t *testing.T, resp *http.Response) [][2]string {
	t.Helper()
	var out [][2]string
	var ev string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			ev = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			out = append(out, [2]string{ev, strings.TrimPrefix(line, "data: ")})
		}
	}
	return out
}

func TestSimpleStream(t *testing.T) {
	e := newTestEnv(t, nil)
	hc := &http.Client{Transport: keyTransport{testKey, http.DefaultTransport}}
	resp, err := hc.Get(e.hs.URL + "/agents/echo/stream?prompt=" + url.QueryEscape("slow:2"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("%d %v", resp.StatusCode, resp.Header)
	}
	evs := sseEvents(t, resp)
	var names []string
	for _, ev := range evs {
		names = append(names, ev[0])
	}
	if !slices.Equal(names, []string{"state", "state", "state", "state", "result"}) {
		t.Fatalf("events %v", evs)
	}
	var st stateEvent
	if err := json.Unmarshal([]byte(evs[2][1]), &st); err != nil || st.State != "working" || st.Type != protocol.TypeTaskProgress || string(st.Payload) != `{"of":2,"step":1,"text":"step 1/2"}` {
		t.Errorf("progress state: %s", evs[2][1])
	}
	var res runResult
	if err := json.Unmarshal([]byte(evs[4][1]), &res); err != nil || string(res.Result) != `{"text":"echo: slow:2"}` {
		t.Errorf("result: %s", evs[4][1])
	}

	// POST with a body; a failure ends with an error event.
	resp2, err := hc.Post(e.hs.URL+"/agents/echo/stream", "application/json", strings.NewReader(`{"prompt":"fail:boom"}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp2.Body.Close()
	evs = sseEvents(t, resp2)
	if last := evs[len(evs)-1]; last[0] != "error" || !strings.HasPrefix(last[1], `{"error":"tool_failed","message":"boom"`) {
		t.Errorf("error event: %v", evs)
	}
	// Bad input is answered before the stream starts.
	if status, _, body := httpDo(t, "GET", e.hs.URL+"/agents/echo/stream", ""); status != 400 || !strings.Contains(body, "prompt is required") {
		t.Errorf("stream without prompt: %d %s", status, body)
	}
	off := newTestEnv(t, &ServerOptions{DisableStreaming: true})
	if status, _, _ := httpDo(t, "GET", off.hs.URL+"/agents/echo/stream?prompt=x", ""); status != 404 {
		t.Errorf("stream when disabled: %d", status)
	}
}
