package agui_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/gateway/agui"
	"github.com/clutchprotocol/clutch/internal/backends"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

func frameSummaries(fs []frame) []string {
	var out []string
	for _, f := range fs {
		out = append(out, summary(f.Event))
	}
	return out
}

func TestPostStreamsRun(t *testing.T) {
	e := newEnv(t, nil)
	resp := e.do(t, "POST", "/", testKey, input("thread-1", "run-1", "nordic payments"))
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || resp.Header.Get("Cache-Control") != "no-cache" {
		t.Fatalf("status %d %v", resp.StatusCode, resp.Header)
	}
	run := resp.Header.Get(agui.HeaderRunID)
	if run != e.runID(&auth.Caller{AgentID: tester}, "run-1") {
		t.Errorf("%s: %q", agui.HeaderRunID, run)
	}
	frames := readSSE(t, resp.Body)
	want := workerEvents("thread-1", "run-1", "nordic payments", runIDs(t, e, run))
	if diff := cmp.Diff(want, frameSummaries(frames)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	// Each Clutch event's last frame carries its seq, in increasing order.
	var last uint64
	for _, f := range frames {
		if f.ID == "" {
			continue
		}
		n, err := strconv.ParseUint(f.ID, 10, 64)
		if err != nil || n <= last {
			t.Errorf("frame id %q after %d", f.ID, last)
		}
		last = n
	}
	if got := len(e.Events(store.Query{RunID: run})); last == 0 || frames[len(frames)-1].ID == "" {
		t.Errorf("last id %d of %d events", last, got)
	}
}

// TestPostSameRunID: posting the same runId again is the same run: the
// store's dedup answers it, nothing runs twice, and the stream replays it.
func TestPostSameRunID(t *testing.T) {
	e := newEnv(t, nil)
	var streams [2][]string
	for i := range streams {
		resp := e.do(t, "POST", "/", testKey, input("thread-1", "run-1", "same"))
		streams[i] = frameSummaries(readSSE(t, resp.Body))
		resp.Body.Close()
	}
	if diff := cmp.Diff(streams[0], streams[1]); diff != "" {
		t.Errorf("second stream (-first +second):\n%s", diff)
	}
	run := e.runID(&auth.Caller{AgentID: tester}, "run-1")
	if n := len(e.Events(store.Query{RunID: run, TypePrefix: "task.request"})); n != 1 {
		t.Errorf("%d task.requests", n)
	}
	// Another caller's same ids are another run.
	resp := e.do(t, "POST", "/", otherKey, input("thread-1", "run-1", "same"))
	defer resp.Body.Close()
	if got := resp.Header.Get(agui.HeaderRunID); got == run || got == "" {
		t.Errorf("other caller's run %q", got)
	}
	readSSE(t, resp.Body)
}

func TestPostDelegation(t *testing.T) {
	e := newEnv(t, nil)
	resp := e.do(t, "POST", "/", testKey, input("th", "rn", "delegate:check"))
	defer resp.Body.Close()
	got := frameSummaries(readSSE(t, resp.Body))
	var root, sub string
	for _, m := range e.Events(store.Query{RunID: resp.Header.Get(agui.HeaderRunID), TypePrefix: "task.request"}) {
		if m.ParentTaskID == "" {
			root = m.TaskID
		} else {
			sub = m.TaskID
		}
	}
	var result, rootResult string
	for _, m := range e.Events(store.Query{TaskID: sub, TypePrefix: "task.result"}) {
		result = m.ID
	}
	for _, m := range e.Events(store.Query{TaskID: root, TypePrefix: "task.result"}) {
		rootResult = m.ID
	}
	types := strings.Join(func() []string {
		var ts []string
		for _, s := range got {
			ts = append(ts, strings.Fields(s)[0])
		}
		return ts
	}(), " ")
	if types != "RUN_STARTED CUSTOM STEP_STARTED TOOL_CALL_START TOOL_CALL_ARGS TOOL_CALL_END CUSTOM STEP_STARTED TOOL_CALL_RESULT STEP_FINISHED TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END STEP_FINISHED RUN_FINISHED" {
		t.Fatalf("types %s\n%s", types, strings.Join(got, "\n"))
	}
	for i, want := range map[int]string{
		2:  "STEP_STARTED stepName=agent:worker/" + root,
		3:  "TOOL_CALL_START toolCallId=" + sub + " toolCallName=agui.input.v1",
		4:  `TOOL_CALL_ARGS delta={"text":"check"} toolCallId=` + sub,
		7:  "STEP_STARTED stepName=agent:helper/" + sub,
		8:  "TOOL_CALL_RESULT messageId=" + result + " role=tool toolCallId=" + sub + " content=helped: check",
		9:  "STEP_FINISHED stepName=agent:helper/" + sub,
		11: "TEXT_MESSAGE_CONTENT messageId=" + rootResult + " delta=helped: check",
	} {
		if got[i] != want {
			t.Errorf("event %d: %s\nwant %s", i, got[i], want)
		}
	}
}

func TestRefusals(t *testing.T) {
	e := newEnv(t, nil)
	big := input("t", "r", strings.Repeat("x", agui.DefaultMaxBodyBytes))
	for _, tc := range []struct {
		name, method, path, key, body string
		status                        int
		code                          protocol.Code
	}{
		{"no credentials", "POST", "/", "", input("t", "r", "x"), 401, ""},
		{"no submit scope", "POST", "/", watcherKey, input("t", "r", "x"), 403, protocol.CodePolicyDenied},
		{"not JSON", "POST", "/", testKey, `{"threadId":`, 400, protocol.CodeInvalidJSON},
		{"not an object", "POST", "/", testKey, `[1]`, 400, protocol.CodeWrongType},
		{"duplicate key", "POST", "/", testKey, `{"threadId":"a","threadId":"b","runId":"r","messages":[{"id":"1","role":"user","content":"x"}]}`, 400, protocol.CodeDuplicateKey},
		{"wrong type", "POST", "/", testKey, `{"threadId":1,"runId":"r","messages":[]}`, 400, protocol.CodeWrongType},
		{"no runId", "POST", "/", testKey, `{"threadId":"t","messages":[{"id":"1","role":"user","content":"x"}]}`, 400, protocol.CodeMissingField},
		{"no user text", "POST", "/", testKey, `{"threadId":"t","runId":"r","messages":[{"id":"1","role":"assistant","content":"x"},{"id":"2","role":"user","content":"  "}]}`, 400, protocol.CodeMissingField},
		{"control characters in an id", "POST", "/", testKey, input("t\u0001", "r", "x"), 400, protocol.CodeInvalidField},
		{"too large", "POST", "/", testKey, big, 413, protocol.CodeTooLarge},
		{"other path", "POST", "/runs", testKey, input("t", "r", "x"), 404, protocol.CodeNotFound},
		{"method", "DELETE", "/", testKey, "", 405, protocol.CodeInvalidField},
		{"watch without run", "GET", "/", testKey, "", 400, protocol.CodeInvalidField},
		{"watch bad after", "GET", "/?run=run_x&after=-1", testKey, "", 400, protocol.CodeInvalidField},
		{"watch unknown run", "GET", "/?run=run_nope", opsKey, "", 404, protocol.CodeNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do(t, tc.method, tc.path, tc.key, tc.body)
			defer resp.Body.Close()
			var body struct{ Error protocol.ErrorPayload }
			_ = json.NewDecoder(resp.Body).Decode(&body)
			if resp.StatusCode != tc.status || (tc.code != "" && body.Error.Code != tc.code) {
				t.Errorf("status %d code %q (%s), want %d %q", resp.StatusCode, body.Error.Code, body.Error.Message, tc.status, tc.code)
			}
		})
	}
	if n := len(e.Events(store.Query{TypePrefix: "task.request"})); n != 0 {
		t.Errorf("refused requests stored %d tasks", n)
	}
}

// TestNoCaller: without auth in front, the handler serves nobody.
func TestNoCaller(t *testing.T) {
	e := newEnv(t, nil)
	hs := httptest.NewServer(e.h)
	defer hs.Close()
	for _, method := range []string{"POST", "GET"} {
		req, _ := http.NewRequest(method, hs.URL+"/?run=run_x", strings.NewReader(input("t", "r", "x")))
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: %d %v", method, resp.StatusCode, resp.Header)
		}
	}
}

// TestWatchOwnership: a caller watches its own runs; ScopeReadAll watches
// every run; anyone else is told the run does not exist.
func TestWatchOwnership(t *testing.T) {
	backends.Each(t, func(t *testing.T, st store.Store) {
		e := newEnvOn(t, st, router.Options{MaxAttempts: 1}, nil)
		resp := e.do(t, "POST", "/", testKey, input("thread-1", "run-1", "mine"))
		posted := frameSummaries(readSSE(t, resp.Body))
		resp.Body.Close()
		run := resp.Header.Get(agui.HeaderRunID)
		for key, status := range map[string]int{testKey: 200, opsKey: 200, otherKey: 404, watcherKey: 404} {
			resp := e.do(t, "GET", "/?run="+run, key, "")
			if resp.StatusCode != status {
				t.Errorf("%s: status %d, want %d", key[:5], resp.StatusCode, status)
			}
			if status == 200 {
				if diff := cmp.Diff(posted, frameSummaries(readSSE(t, resp.Body))); diff != "" {
					t.Errorf("%s: watched (-posted +watched):\n%s", key[:5], diff)
				}
			}
			resp.Body.Close()
		}
		resp = e.do(t, "HEAD", "/?run="+run, testKey, "")
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Errorf("HEAD %d", resp.StatusCode)
		}
	})
}

// TestWatchResume: after= and Last-Event-ID send RUN_STARTED, then exactly
// the frames past the seq, with no gap and no duplicate.
func TestWatchResume(t *testing.T) {
	e := newEnv(t, nil)
	resp := e.do(t, "POST", "/", testKey, input("thread-1", "run-1", "resume"))
	full := readSSE(t, resp.Body)
	resp.Body.Close()
	run := resp.Header.Get(agui.HeaderRunID)
	for i, f := range full {
		if f.ID == "" || i == len(full)-1 {
			continue
		}
		var want []string
		for _, g := range full[i+1:] {
			want = append(want, summary(g.Event))
		}
		want = append([]string{summary(full[0].Event)}, want...)
		for _, how := range []string{"after", "header"} {
			req, _ := http.NewRequest("GET", e.hs.URL+"/?run="+run, nil)
			if how == "after" {
				req.URL.RawQuery += "&after=" + f.ID
			} else {
				req.Header.Set("Last-Event-ID", f.ID)
			}
			req.Header.Set("Authorization", "Bearer "+testKey)
			r, err := e.hs.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, frameSummaries(readSSE(t, r.Body))); diff != "" {
				t.Errorf("%s=%s (-want +got):\n%s", how, f.ID, diff)
			}
			r.Body.Close()
		}
	}
}

// TestWatchLive: a watcher gets the stored events at once, then the live
// ones as they are stored, then the end; idle streams get heartbeats.
func TestWatchLive(t *testing.T) {
	e := newEnv(t, &agui.Options{Heartbeat: time.Millisecond, Agent: "agent:gated"})
	release := make(chan struct{})
	e.Register(card("agent:gated", "skill:gate"), func(ctx context.Context, t *router.Task) (*router.Result, error) {
		if err := t.Progress(ctx, "waiting"); err != nil {
			return nil, err
		}
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return &router.Result{Payload: "released"}, nil
	})
	req, err := e.Router.NewRequest(tester, "", "go")
	if err != nil {
		t.Fatal(err)
	}
	req.To = []protocol.Participant{{AgentID: "agent:gated"}}
	h, err := e.Router.Submit(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	e.Await(store.Query{TaskID: h.TaskID(), TypePrefix: "task.progress"}, nil)

	resp := e.do(t, "GET", "/?run="+req.RunID, testKey, "")
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	var seen []string
	pings := 0
	for pings < 2 { // the backlog, then heartbeats while the task waits
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case line == ": ping\n":
			pings++
		case strings.HasPrefix(line, "data: "):
			var ev map[string]any
			_ = json.Unmarshal([]byte(line[6:]), &ev)
			seen = append(seen, ev["type"].(string))
		}
	}
	if got := strings.Join(seen, " "); got != "RUN_STARTED CUSTOM STEP_STARTED STATE_SNAPSHOT" {
		t.Errorf("backlog %s", got)
	}
	close(release)
	var rest []string
	for _, f := range readSSE(t, br) {
		rest = append(rest, f.Event["type"].(string))
	}
	if got := strings.Join(rest, " "); got != "TEXT_MESSAGE_START TEXT_MESSAGE_CONTENT TEXT_MESSAGE_END STEP_FINISHED RUN_FINISHED" {
		t.Errorf("live %s", got)
	}
	if _, err := e.Wait(h); err != nil {
		t.Fatal(err)
	}
}

// TestRequestOption: Options.Request shapes the submitted task; its error
// refuses the POST with its code's status.
func TestRequestOption(t *testing.T) {
	e := newEnv(t, &agui.Options{Request: func(ctx context.Context, c *auth.Caller, in *agui.Input) (*agui.Request, error) {
		m, _ := in.LastUserMessage()
		if m.Text() == "deny" {
			return nil, router.Fail(protocol.CodePolicyDenied, "not that", false, nil)
		}
		return &agui.Request{Payload: agui.InputPayload{Text: m.Text() + " from " + c.AgentID}, Requires: []string{"skill:help"}}, nil
	}})
	resp := e.do(t, "POST", "/", testKey, `{"threadId":"t","runId":"r","messages":[{"id":"u","role":"user","content":[{"type":"text","text":"part one"},{"type":"image","source":{"type":"url","value":"http://x"}},{"type":"text","text":"two"}]}]}`)
	frames := readSSE(t, resp.Body)
	resp.Body.Close()
	req := e.Events(store.Query{RunID: resp.Header.Get(agui.HeaderRunID), TypePrefix: "task.request"})[0]
	if string(req.Payload) != `{"text":"part one\ntwo from agent:tester"}` || req.PayloadType != "" {
		t.Errorf("request %s", req.Raw())
	}
	if last := frames[len(frames)-1].Event; last["type"] != "RUN_FINISHED" {
		t.Errorf("last event %v", last)
	}
	resp = e.do(t, "POST", "/", testKey, input("t", "r2", "deny"))
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("denied: %d", resp.StatusCode)
	}
}

// TestCapacity: a router at its limit refuses with 503, CAPACITY and
// Retry-After before any stream starts, and stores nothing.
func TestCapacity(t *testing.T) {
	e := newEnvWith(t, router.Options{MaxAttempts: 1, MaxInFlight: 1}, nil)
	release := make(chan struct{})
	e.Register(card("agent:gated", "skill:gate"), func(ctx context.Context, t *router.Task) (*router.Result, error) {
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &router.Result{Payload: "ok"}, nil
	})
	req, _ := e.Router.NewRequest(tester, "", "hold")
	req.To = []protocol.Participant{{AgentID: "agent:gated"}}
	h, err := e.Router.Submit(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	resp := e.do(t, "POST", "/", testKey, input("t", "r", "x"))
	var body struct{ Error protocol.ErrorPayload }
	_ = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || body.Error.Code != protocol.CodeCapacity || !body.Error.Retryable {
		t.Errorf("status %d Retry-After %q body %+v", resp.StatusCode, resp.Header.Get("Retry-After"), body.Error)
	}
	close(release)
	if _, err := e.Wait(h); err != nil {
		t.Fatal(err)
	}
	if n := len(e.Events(store.Query{TypePrefix: "task.request"})); n != 1 {
		t.Errorf("%d task.requests stored", n)
	}
}

func TestNewOptions(t *testing.T) {
	e := newEnv(t, nil)
	for _, o := range []*agui.Options{{MaxBodyBytes: -1}, {Agent: "worker"}} {
		if _, err := agui.New(e.Router, o); !errors.Is(err, agui.ErrInvalidOptions) {
			t.Errorf("%+v: %v", o, err)
		}
	}
	if _, err := agui.New(nil, nil); !errors.Is(err, agui.ErrInvalidOptions) {
		t.Errorf("nil router: %v", err)
	}
	if _, err := agui.New(e.Router, nil); err != nil { // PayloadInput registered twice is fine
		t.Error(err)
	}
}

// TestInputShapes: state and forwardedProps of any JSON kind, and the
// members of newer clients, pass the decoder and the payload's schema.
func TestInputShapes(t *testing.T) {
	e := newEnv(t, nil)
	for i, extra := range []string{
		`"state":"text","forwardedProps":[1,2]`,
		`"state":5,"forwardedProps":null`,
		`"state":null,"forwardedProps":{"nested":{"a":[true]}},"protocolVersion":"1.0.0","parentRunId":"p"`,
	} {
		body := `{"threadId":"t","runId":"shape-` + strconv.Itoa(i) + `",` + extra + `,"tools":[],"context":[],"messages":[{"id":"u","role":"user","content":"hi","metadata":{"k":"v"}}]}`
		resp := e.do(t, "POST", "/", testKey, body)
		frames := readSSE(t, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || frames[len(frames)-1].Event["type"] != "RUN_FINISHED" {
			t.Errorf("%s: %d %v", extra, resp.StatusCode, frameSummaries(frames))
		}
	}
}
