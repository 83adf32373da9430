package a2a

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/internal/nodepeer"
	"github.com/clutchprotocol/clutch/router/routertest"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// The JS peers live in testdata/jspeer (@a2a-js/sdk 1.3.0 and express,
// pinned, lockfile committed); `make test` installs them with npm ci.
const jsPeerDir = "testdata/jspeer"

// needNode returns the node binary, or fails (CI=true) or skips the test
// with the reason when node or the installed peer is missing.
func needNode(t *testing.T) string {
	t.Helper()
	return nodepeer.Need(t, "the A2A JS peer (@a2a-js/sdk)", filepath.Join(jsPeerDir, "node_modules", "@a2a-js", "sdk", "package.json"))
}

// startJSServer starts testdata/jspeer/server.mjs on 127.0.0.1 with an
// OS-chosen port and returns its base URL. The process ends with the test.
func startJSServer(t *testing.T, args ...string) string {
	t.Helper()
	node := needNode(t)
	cmd := exec.Command(node, append([]string{"server.mjs"}, args...)...)
	cmd.Dir = jsPeerDir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "LISTENING "); ok {
				lines <- u
			}
		}
		exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		stdin.Close() // the server exits when its stdin closes
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	select {
	case u := <-lines:
		return u
	case err := <-exited:
		t.Fatalf("server.mjs exited: %v\n%s", err, stderr.String())
	case <-time.After(20 * time.Second):
		t.Fatalf("server.mjs did not start\n%s", stderr.String())
	}
	return ""
}

// TestJSPeerServer: the Go Remote calls the @a2a-js/sdk echo server.
func TestJSPeerServer(t *testing.T) {
	t.Parallel()
	base := startJSServer(t)
	c := newCaller(t, base, nil, 1)

	t.Run("card", func(t *testing.T) {
		cc := c.rm.Card()
		var ids []string
		for _, cp := range cc.Capabilities {
			ids = append(ids, cp.ID)
		}
		if cc.AgentID != "agent:js-echo" || cc.Endpoints["a2a"].URL != base+"/a2a/jsonrpc" || !slices.Equal(ids, []string{"skill:echo", "skill:slow-echo"}) {
			t.Errorf("mapped card: %s", mustJSON(t, cc))
		}
	})
	t.Run("send", func(t *testing.T) {
		req := c.Request(PayloadContent, Content{Text: "hello", Data: []json.RawMessage{json.RawMessage(`{"n":1}`)}}, "skill:echo")
		out, err := c.Run(req)
		if err != nil {
			t.Fatal(err)
		}
		if string(out.Message.Payload) != `{"text":"echo: hello","data":[{"n":1}]}` {
			t.Errorf("result %s", out.Message.Payload)
		}
	})
	t.Run("stream", func(t *testing.T) {
		out, err := c.ask(t, "slow:3:30", "")
		if err != nil {
			t.Fatal(err)
		}
		var progress []string
		for _, m := range c.Events(store.Query{TaskID: out.TaskID, TypePrefix: "task.progress"}) {
			progress = append(progress, string(m.Payload))
		}
		want := []string{`{"state":"TASK_STATE_WORKING"}`,
			`{"state":"TASK_STATE_WORKING","text":"step 1/3"}`, `{"state":"TASK_STATE_WORKING","text":"step 2/3"}`, `{"state":"TASK_STATE_WORKING","text":"step 3/3"}`}
		if !slices.Equal(progress, want) {
			t.Errorf("progress:\n got %v\nwant %v", progress, want)
		}
	})
	t.Run("message answer", func(t *testing.T) {
		out, err := c.ask(t, "message:hi", "")
		if err != nil || string(out.Message.Payload) != `{"text":"echo: hi"}` {
			t.Errorf("%v %s", err, out.Message.Payload)
		}
	})
	t.Run("fail", func(t *testing.T) {
		_, err := c.ask(t, "fail:boom", "")
		var ep *protocol.ErrorPayload
		if !errors.As(err, &ep) || ep.Code != protocol.CodeToolFailed || ep.Message != "boom" || ep.Retryable || ep.Details["a2a_state"] != "TASK_STATE_FAILED" {
			t.Errorf("%v", err)
		}
	})
	t.Run("input required", func(t *testing.T) {
		// The remote's INPUT_REQUIRED is a question of the task; its
		// answer goes to the same JS task (remote_js_ask_test.go has more).
		req, h := c.submit(t, "input:which market?", "thr_js_input")
		q := c.waitQuestion(t, h)
		if q.Text != "which market?" {
			t.Fatalf("question %+v", q)
		}
		out, err := c.Wait(c.answer(t, req, q, `"fintech"`))
		if err != nil || string(out.Message.Payload) != `{"text":"answer: fintech"}` {
			t.Errorf("answer: %v %s", err, out.Message.Payload)
		}
	})
	t.Run("cancel", func(t *testing.T) {
		req := c.Request(PayloadContent, Content{Text: "slow:200:20"}, "skill:echo")
		req.ThreadID = "thr_js_cancel"
		h, err := c.Router.Submit(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		c.Await(store.Query{TaskID: h.TaskID(), TypePrefix: "task.progress"}, routertest.Count(3))
		h.Cancel("stop")
		if out, _ := c.Wait(h); out.Type != protocol.TypeTaskCancel {
			t.Errorf("caller's task ended with %s", out.Type)
		}
		// The JS task is cancelled too (the handle resolves at once; the
		// remote CancelTask follows): ask the JS server.
		cl := newSDKClient(t, base)
		deadline := time.Now().Add(5 * time.Second)
		for {
			list, err := cl.ListTasks(ctxT(t), &a2a.ListTasksRequest{ContextID: "thr_js_cancel"})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Tasks) == 1 && list.Tasks[0].Status.State == a2a.TaskStateCanceled {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("JS task: %s", mustJSON(t, list))
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

// TestJSPeerServerToken: a bearer token reaches the JS server.
func TestJSPeerServerToken(t *testing.T) {
	t.Parallel()
	base := startJSServer(t, "--token", "s3cret", "--no-streaming")
	c := newCaller(t, base, &RemoteOptions{BearerToken: "s3cret"}, 1)
	out, err := c.ask(t, "slow:2:10", "")
	if err != nil || string(out.Message.Payload) != `{"text":"echo: slow:2:10"}` {
		t.Errorf("with the token: %v", err)
	}
	if n := len(c.Events(store.Query{TaskID: out.TaskID, TypePrefix: "task.progress"})); n != 0 {
		t.Errorf("%d progress events from a non-streaming agent", n)
	}
	c2 := newCaller(t, base, &RemoteOptions{AgentID: "agent:no-token"}, 3)
	out, err = c2.ask(t, "hi", "")
	var ep *protocol.ErrorPayload
	if !errors.As(err, &ep) || ep.Code != protocol.CodeUnauthorized || ep.Retryable || out.Message.Attempt != 1 {
		t.Errorf("without the token: %v", err)
	}
}

// TestJSPeerServerDroppedStream: a proxy drops the first stream to the JS
// server; the Remote re-attaches with SubscribeToTask.
func TestJSPeerServerDroppedStream(t *testing.T) {
	t.Parallel()
	base := startJSServer(t)
	target, _ := url.Parse(base)
	d := &dropper{after: 3}
	d.n.Store(1)
	var proxyURL string
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1
	rp.ModifyResponse = func(resp *http.Response) error {
		// The card names the JS server's URL: point it at the proxy.
		if strings.HasSuffix(resp.Request.URL.Path, CardPath) {
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				return err
			}
			b = bytes.ReplaceAll(b, []byte(base), []byte(proxyURL))
			resp.Body = io.NopCloser(bytes.NewReader(b))
			resp.ContentLength = int64(len(b))
			resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
		}
		return nil
	}
	rp.ErrorLog = nil
	proxy := httptest.NewServer(d.middleware(rp))
	t.Cleanup(proxy.Close)
	proxyURL = proxy.URL
	c := newCaller(t, proxy.URL, nil, 1)
	out, err := c.ask(t, "slow:6:60", "")
	if err != nil {
		t.Fatal(err)
	}
	if string(out.Message.Payload) != `{"text":"echo: slow:6:60"}` {
		t.Errorf("result %s", out.Message.Payload)
	}
	if d.subscribes.Load() == 0 {
		t.Error("the dropped stream was not re-subscribed")
	}
}

// TestJSPeerClient: the @a2a-js/sdk client calls the Go Server.
func TestJSPeerClient(t *testing.T) {
	t.Parallel()
	node := needNode(t)
	e := newTestEnv(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "client.mjs", e.hs.URL+"/agents/echo")
	cmd.Dir = jsPeerDir
	cmd.Env = append(os.Environ(), "A2A_API_KEY="+testKey)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("client.mjs: %v\n%s", err, stderr.String())
	}
	var got struct {
		CardStatus      int
		ProtocolVersion string
		Send, Get       json.RawMessage
		Stream          []struct{ Kind, State, Text string }
		Fail, Input     struct{ Task a2a.Task }
		Cancel          struct {
			States []string
			Answer string
		}
		Unknown struct{ Name, Message string }
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	if got.CardStatus != 200 || got.ProtocolVersion != "1.0" {
		t.Errorf("card %d, version %q", got.CardStatus, got.ProtocolVersion)
	}
	var sent struct{ Task a2a.Task }
	if err := json.Unmarshal(got.Send, &sent); err != nil {
		t.Fatal(err)
	}
	st := sent.Task
	if st.Status.State != a2a.TaskStateCompleted || st.ContextID != "js-ctx" || st.History[0].ID != "js-m-1" ||
		st.Artifacts[0].Parts[0].Text() != "echo: hello" || mustJSON(t, st.Artifacts[0].Parts[1].Data()) != `{"n":1}` {
		t.Errorf("send: %s", got.Send)
	}
	var read a2a.Task
	if err := json.Unmarshal(got.Get, &read); err != nil || read.ID != st.ID || read.Status.State != a2a.TaskStateCompleted {
		t.Errorf("get: %s", got.Get)
	}
	var kinds []string
	for _, ev := range got.Stream {
		kinds = append(kinds, ev.Kind+":"+ev.State)
	}
	want := []string{"task:TASK_STATE_SUBMITTED", "statusUpdate:TASK_STATE_WORKING", "statusUpdate:TASK_STATE_WORKING",
		"statusUpdate:TASK_STATE_WORKING", "statusUpdate:TASK_STATE_WORKING", "artifactUpdate:", "statusUpdate:TASK_STATE_COMPLETED"}
	if !slices.Equal(kinds, want) || got.Stream[2].Text != "step 1/3" || got.Stream[5].Text != "echo: slow:3:20" {
		t.Errorf("stream: %+v", got.Stream)
	}
	if got.Fail.Task.Status.State != a2a.TaskStateFailed || textOf(got.Fail.Task.Status.Message.Parts) != "boom" {
		t.Errorf("fail: %s", mustJSON(t, got.Fail))
	}
	// A handler that fails with INPUT_REQUIRED (not Task.Ask) ends its
	// task: only a question keeps it open for the next message (doc.go).
	if got.Input.Task.Status.State != a2a.TaskStateFailed || !strings.Contains(mustJSON(t, got.Input.Task.Status.Message), `"code":"INPUT_REQUIRED"`) {
		t.Errorf("input: %s", mustJSON(t, got.Input))
	}
	if got.Cancel.Answer != "TASK_STATE_CANCELED" || got.Cancel.States[len(got.Cancel.States)-1] != "TASK_STATE_CANCELED" {
		t.Errorf("cancel: %+v", got.Cancel)
	}
	if !strings.Contains(got.Unknown.Message, "task_nope") {
		t.Errorf("unknown task: %+v", got.Unknown)
	}

}

// TestJSPeerAsk: the @a2a-js/sdk client answers a question of a Go task
// (docs/protocol.md §2.7). Its first message makes the agent ask, and the
// blocking send comes back INPUT_REQUIRED with the question as a text and
// a data part; its next message on the same task and context answers it,
// and the same task completes with a result that uses the answer. The
// store holds one question and one answer, the answer the caller's.
func TestJSPeerAsk(t *testing.T) {
	t.Parallel()
	node := needNode(t)
	e := newTestEnv(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "ask.mjs", e.hs.URL+AgentsPath+"/echo", "fintech|health", "health")
	cmd.Dir = jsPeerDir
	cmd.Env = append(os.Environ(), "A2A_API_KEY="+testKey)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("ask.mjs: %v\n%s", err, stderr.String())
	}
	var got struct {
		ContextID   string
		Asked, Done a2a.Task
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	asked, done := got.Asked, got.Done

	// The question, as the JS client decoded it.
	if asked.Status.State != a2a.TaskStateInputRequired || string(asked.ContextID) != got.ContextID {
		t.Fatalf("asked: %s", mustJSON(t, asked))
	}
	if asked.Status.Message == nil || len(asked.Status.Message.Parts) != 2 || asked.Status.Message.Parts[0].Text() != "Which one?" {
		t.Fatalf("question message: %s", mustJSON(t, asked.Status.Message))
	}
	q := statusData(t, asked.Status, kindQuestion)
	qid := protocol.QuestionID(string(asked.ID), 0)
	if q["text"] != "Which one?" || q["question_id"] != qid || mustJSON(t, q["choices"]) != `["fintech","health"]` {
		t.Errorf("question data part: %s", mustJSON(t, q))
	}

	// The answer continued the same task to its result.
	if done.ID != asked.ID || done.ContextID != asked.ContextID || done.Status.State != a2a.TaskStateCompleted {
		t.Fatalf("done: %s", mustJSON(t, done))
	}
	if len(done.Artifacts) != 1 || done.Artifacts[0].Parts[0].Text() != "echo: answered health" {
		t.Errorf("result: %s", mustJSON(t, done.Artifacts))
	}
	if h := done.History; len(h) != 2 || h[1].Role != a2a.MessageRoleUser || h[1].Parts[0].Text() != "health" {
		t.Errorf("history (the request, then the answer): %s", mustJSON(t, h))
	}

	// One question and one answer in the store, the answer the caller's.
	questions := e.Events(store.Query{TaskID: string(asked.ID), TypePrefix: string(protocol.TypeTaskQuestion)})
	answers := e.Events(store.Query{TaskID: string(asked.ID), TypePrefix: string(protocol.TypeTaskAnswer)})
	if len(questions) != 1 || len(answers) != 1 {
		t.Fatalf("%d task.question and %d task.answer events, want 1 and 1", len(questions), len(answers))
	}
	if answers[0].From.AgentID != tester {
		t.Errorf("the answer is from %s, want the caller %s", answers[0].From.AgentID, tester)
	}
	if a, err := protocol.DecodePayload[protocol.Answer](answers[0]); err != nil || a.QuestionID != qid || string(a.Value) != `"health"` {
		t.Errorf("answer %+v %v", a, err)
	}
}
