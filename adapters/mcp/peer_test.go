package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/internal/nodepeer"

	"github.com/clutchprotocol/clutch/adapters/mcp"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// needPeer returns the path of node and of an npm peer folder under
// testdata (installed by `make deps`: npm ci next to each committed
// package-lock.json). Without them the test fails when CI=true and is
// skipped otherwise.
func needPeer(t testing.TB, peer, module string) (node, dir string) {
	t.Helper()
	dir, _ = filepath.Abs(filepath.Join("testdata", peer))
	node = nodepeer.Need(t, "the MCP peer "+module, filepath.Join(dir, "node_modules", filepath.FromSlash(module), "package.json"))
	return node, dir
}

// logBuffer collects log output for assertions.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// processesWith returns the pids of live processes whose command line
// contains tag (Linux /proc; nil elsewhere).
func processesWith(tag string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(tag)) {
			if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && bytes.Contains(st, []byte(") Z ")) {
				continue // a zombie of some other reaper
			}
			out = append(out, e.Name())
		}
	}
	return out
}

func uniqueTag(t testing.TB) string {
	return fmt.Sprintf("clutch-test-%d-%s", os.Getpid(), strings.NewReplacer("/", "-", " ", "-").Replace(t.Name()))
}

// TestPeerStdio runs the TypeScript peer as a stdio server and goes
// through every failure mode of docs/protocol.md §13.3.5.
func TestPeerStdio(t *testing.T) {
	node, dir := needPeer(t, "peer", "@modelcontextprotocol/sdk")
	tag := uniqueTag(t)
	var logs logBuffer
	c, err := mcp.NewClient([]mcp.ServerConfig{{
		Name: "peer", Command: node, Args: []string{filepath.Join(dir, "server.mjs"), "--transport", "stdio", "--tag", tag},
		Env: map[string]string{"CLUTCH_TEST": "1"},
	}}, &mcp.ClientOptions{Logger: logs.logger(), TerminateDuration: 500 * time.Millisecond, MaxResultBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if ps := processesWith(tag); len(ps) > 0 {
			t.Errorf("server processes left after Close: %v", ps)
		}
	}()
	tr := newTaskRunner(t, "mcp:peer")
	peerBattery(t, c, tr, &logs)

	t.Run("large keeps the connection", func(t *testing.T) {
		starts := strings.Count(logs.String(), "ready")
		_, err, _ := tr.call(c, "peer", "large", map[string]any{"bytes": 3 << 20}, nil)
		if !errors.Is(err, protocol.CodeTooLarge) {
			t.Fatalf("err = %v", err)
		}
		if _, err, _ := tr.call(c, "peer", "echo", map[string]any{"text": "after large"}, nil); err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(logs.String(), "ready"); n != starts {
			t.Errorf("the server restarted (%d starts, was %d)", n, starts)
		}
	})
	t.Run("crash and restart", func(t *testing.T) {
		starts := strings.Count(logs.String(), "ready")
		_, err, _ := tr.call(c, "peer", "crash", nil, nil)
		var te *mcp.ToolError
		if !errors.As(err, &te) || te.Code != protocol.CodeToolUnavailable || !te.Retryable {
			t.Fatalf("err = %#v", err)
		}
		if tail, _ := te.Details["stderr_tail"].([]string); !slices.ContainsFunc(tail, func(s string) bool { return strings.Contains(s, "crash: exiting") }) {
			t.Errorf("stderr_tail %v", te.Details["stderr_tail"])
		}
		res, err, _ := tr.call(c, "peer", "echo", map[string]any{"text": "after crash"}, nil)
		if err != nil || res.Text() != "after crash" {
			t.Fatalf("after crash: %v", err)
		}
		// stderr lines are logged asynchronously, so the count may lag:
		// check that a fresh process started and that only one runs.
		if n := strings.Count(logs.String(), "ready"); n < starts+1 {
			t.Errorf("starts = %d, want at least %d", n, starts+1)
		}
		if ps := processesWith(tag); len(ps) != 1 {
			t.Errorf("%d server processes after the restart, want 1: %v", len(ps), ps)
		}
	})
	if !strings.Contains(logs.String(), "stderr=\"[clutch-peer stdio] ready\"") {
		t.Errorf("stderr not in the log:\n%s", logs.String())
	}
}

// peerBattery exercises the TypeScript peer's tools over either transport.
func peerBattery(t *testing.T, c *mcp.Client, tr *taskRunner, logs *logBuffer) {
	t.Run("echo", func(t *testing.T) {
		res, err, _ := tr.call(c, "peer", "echo", map[string]any{"text": "hello"}, nil)
		if err != nil || res.Text() != "hello" {
			t.Fatalf("%v %v", res, err)
		}
	})
	t.Run("structured", func(t *testing.T) {
		res, err, _ := tr.call(c, "peer", "structured", map[string]any{"city": "Oslo"}, nil)
		if err != nil || !strings.Contains(string(res.StructuredContent), `"tempC":21.5`) {
			t.Fatalf("%v %v", res, err)
		}
	})
	t.Run("fail_tool", func(t *testing.T) {
		_, err, _ := tr.call(c, "peer", "fail_tool", nil, nil)
		var te *mcp.ToolError
		if !errors.As(err, &te) || te.Code != protocol.CodeToolFailed || te.Retryable {
			t.Fatalf("%#v", err)
		}
	})
	t.Run("fail_retryable", func(t *testing.T) {
		_, err, _ := tr.call(c, "peer", "fail_retryable", nil, nil)
		var te *mcp.ToolError
		if !errors.As(err, &te) || te.Code != protocol.CodeToolFailed || !te.Retryable || te.Details["retryAction"] != "call memload again without knownHashes" {
			t.Fatalf("%#v", err)
		}
	})
	t.Run("rate_limited", func(t *testing.T) {
		_, err, _ := tr.call(c, "peer", "rate_limited", nil, nil)
		var te *mcp.ToolError
		if !errors.As(err, &te) || te.Code != protocol.CodeRateLimited || te.RetryAfter() != 3 {
			t.Fatalf("%#v", err)
		}
	})
	t.Run("not found", func(t *testing.T) {
		// TypeScript SDK v1 reports an unknown tool as an isError result.
		_, err, _ := tr.call(c, "peer", "nosuch", nil, nil)
		var te *mcp.ToolError
		if !errors.As(err, &te) || te.Code != protocol.CodeToolNotFound {
			t.Fatalf("%#v", err)
		}
		if avail, _ := te.Details["available_tools"].([]string); !slices.Contains(avail, "hang") {
			t.Errorf("available_tools %v", te.Details["available_tools"])
		}
	})
	t.Run("progress", func(t *testing.T) {
		_, err, evs := tr.call(c, "peer", "slow", map[string]any{"seconds": 0.2, "steps": 2}, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkProgress(t, toolEvents(evs), 2)
	})
	t.Run("hang times out and is cancelled", func(t *testing.T) {
		_, err, _ := tr.call(c, "peer", "hang", nil, &mcp.CallOptions{Timeout: 300 * time.Millisecond})
		if !errors.Is(err, protocol.CodeTimeout) {
			t.Fatalf("err = %v", err)
		}
		if logs != nil {
			waitFor(t, func() bool { return strings.Contains(logs.String(), "hang: cancelled") }, "the peer to log the cancellation")
		}
		if _, err, _ := tr.call(c, "peer", "echo", map[string]any{"text": "still alive"}, nil); err != nil {
			t.Fatalf("after timeout: %v", err)
		}
	})
	t.Run("tools", func(t *testing.T) {
		tools, err := c.Tools(context.Background(), "peer")
		if err != nil || len(tools) < 9 {
			t.Fatalf("%d tools, %v", len(tools), err)
		}
	})
}

// TestPeerHTTP runs the TypeScript peer as a Streamable HTTP server on
// 127.0.0.1.
func TestPeerHTTP(t *testing.T) {
	node, dir := needPeer(t, "peer", "@modelcontextprotocol/sdk")
	var serverLog logBuffer
	url := startHTTPPeer(t, node, filepath.Join(dir, "server.mjs"), &serverLog)
	c := newClient(t, []mcp.ServerConfig{{Name: "peer", URL: url, Headers: map[string]string{"X-Clutch-Test": "1"}}},
		&mcp.ClientOptions{MaxResultBytes: 1 << 20})
	tr := newTaskRunner(t, "mcp:peer")
	peerBattery(t, c, tr, &serverLog)

	t.Run("large keeps the session", func(t *testing.T) {
		_, err, _ := tr.call(c, "peer", "large", map[string]any{"bytes": 3 << 20}, nil)
		if !errors.Is(err, protocol.CodeTooLarge) {
			t.Fatalf("err = %v", err)
		}
		if _, err, _ := tr.call(c, "peer", "echo", map[string]any{"text": "after large"}, nil); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("429", func(t *testing.T) {
		_, err, _ := tr.call(c, "peer", "http_429", nil, nil)
		var te *mcp.ToolError
		if !errors.As(err, &te) || te.Code != protocol.CodeRateLimited || te.RetryAfter() != 7 {
			t.Fatalf("%#v", err)
		}
		if _, err, _ := tr.call(c, "peer", "echo", map[string]any{"text": "after 429"}, nil); err != nil {
			t.Fatal(err)
		}
	})
}

// startHTTPPeer starts server.mjs in HTTP mode and returns its URL; the
// process ends with the test.
func startHTTPPeer(t *testing.T, node, script string, stderr *logBuffer) string {
	t.Helper()
	cmd := exec.Command(node, script, "--transport", "http")
	cmd.Stderr = stderr
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
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-done:
		case <-time.After(3 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "listening "); ok {
				lines <- u
			}
		}
	}()
	select {
	case u := <-lines:
		return u
	case <-done:
		t.Fatalf("the HTTP peer exited: %s", stderr.String())
	case <-time.After(15 * time.Second):
		t.Fatalf("the HTTP peer did not start: %s", stderr.String())
	}
	return ""
}

// TestEverythingStdio calls the reference server
// @modelcontextprotocol/server-everything over stdio.
func TestEverythingStdio(t *testing.T) {
	node, dir := needPeer(t, "everything", "@modelcontextprotocol/server-everything")
	tag := uniqueTag(t)
	t.Cleanup(func() { // runs after the client's Close (cleanups run last first)
		if ps := processesWith(tag); len(ps) > 0 {
			t.Errorf("server processes left after Close: %v", ps)
		}
	})
	t.Setenv("CLUTCH_TEST_SECRET", "do-not-pass")
	c := newClient(t, []mcp.ServerConfig{{
		Name: "everything", Command: node,
		Args: []string{filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js"), "stdio", tag},
		Env:  map[string]string{"CLUTCH_TEST_VAR": "42"},
	}}, &mcp.ClientOptions{TerminateDuration: 300 * time.Millisecond})
	tr := newTaskRunner(t, "mcp:everything")
	ctx := context.Background()

	tools, err := c.LLMTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]mcp.Tool{}
	for _, tl := range tools {
		names[tl.LLMName] = tl
	}
	for _, n := range []string{"mcp_everything_echo", "mcp_everything_get-structured-content", "mcp_everything_get-sum"} {
		if _, ok := names[n]; !ok {
			t.Errorf("missing %s in %v", n, tools)
		}
	}
	if names["mcp_everything_get-structured-content"].OutputSchema == nil {
		t.Errorf("get-structured-content has no outputSchema")
	}

	res, err, _ := tr.call(c, "everything", "echo", map[string]any{"message": "hi"}, nil)
	if err != nil || !strings.Contains(res.Text(), "hi") {
		t.Fatalf("echo: %v %v", res, err)
	}
	res, err, _ = tr.call(c, "everything", "get-structured-content", map[string]any{"location": "New York"}, nil)
	if err != nil || !strings.Contains(string(res.StructuredContent), `"temperature"`) {
		t.Fatalf("get-structured-content: %v %v", res, err)
	}
	res, err, _ = tr.call(c, "everything", "get-env", nil, nil)
	if err != nil || !strings.Contains(res.Text(), "CLUTCH_TEST_VAR") || strings.Contains(res.Text(), "CLUTCH_TEST_SECRET") || !strings.Contains(res.Text(), "PATH") {
		t.Errorf("environment of the server: %v %.300s", err, res.Text())
	}
	_, err, _ = tr.call(c, "everything", "nosuch", nil, nil)
	if !errors.Is(err, protocol.CodeToolNotFound) {
		t.Errorf("nosuch: %v", err)
	}
	_, err, _ = tr.call(c, "everything", "echo", map[string]any{}, nil)
	if !errors.Is(err, protocol.CodeToolFailed) {
		t.Errorf("echo without message: %v", err)
	}
	_, err, evs := tr.call(c, "everything", "trigger-long-running-operation", map[string]any{"duration": 0.4, "steps": 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(fmt.Sprint(types(evs)), "task.progress"); n < 1 {
		t.Errorf("no progress: %v", types(evs))
	}
}

// askReport is what testdata/peer/ask.mjs prints: the elicitations the
// TypeScript host got and the tool calls it made.
type askReport struct {
	ProtocolVersion string
	Elicited        []struct {
		Message string
		Schema  map[string]any
		Action  string
	}
	Calls []askCall
}

// askCall is one tool call of ask.mjs and its result.
type askCall struct {
	Tool       string
	IsError    bool
	Structured map[string]any
}

// messages returns the elicitation messages the host saw, in order.
func (r *askReport) messages() []string {
	var out []string
	for _, e := range r.Elicited {
		out = append(out, e.Message)
	}
	return out
}

// runAskHost runs ask.mjs as the host of ideKey against the server at url.
func runAskHost(t *testing.T, node, dir, url string, args ...string) *askReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{filepath.Join(dir, "ask.mjs"), "--url", url}, args...)...)
	cmd.Env = append(os.Environ(), "MCP_API_KEY="+ideKey)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("ask.mjs: %v %s", err, stderrOf(err))
	}
	var rep askReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("report %s: %v", out, err)
	}
	return &rep
}

// TestPeerElicitation: a host on the TypeScript SDK (protocol 2025-11-25,
// so the go-sdk sends it elicitation/create requests) declares
// elicitation and submits a task of agent:asker, which asks a choice and
// then an approval, over Streamable HTTP. Each question reaches the host's
// person as a form whose message is the question's text, the person's
// response is the answer of the MCP caller, and the task runs on to its
// result within the same call. A person who declines gets the question as
// the result (status "question") and answers it with answer_question.
// Over the default stateless handler the server cannot send requests, so
// the same host answers both questions with answer_question.
func TestPeerElicitation(t *testing.T) {
	node, dir := needPeer(t, "peer", "@modelcontextprotocol/sdk")
	serve := func(t *testing.T, stateful bool) (*team, string) {
		tm := newTeam(t, func(o *mcp.ServerOptions) {
			o.Expose = []string{"agent:asker"}
			if stateful {
				// Sessions: the server can send elicitation/create on the
				// stream of the tool call.
				o.HTTP = &sdk.StreamableHTTPOptions{Logger: o.Logger}
			}
		})
		registerAsker(tm.env)
		hs := httptest.NewServer(tm.srv.Handler())
		t.Cleanup(hs.Close)
		return tm, hs.URL
	}
	// answers checks the task's questions and answers in the store: two
	// of each, the answers market then approval (JSON), each stamped with
	// the MCP caller's agent id.
	answers := func(t *testing.T, tm *team, rep *askReport, market, approval string) {
		t.Helper()
		taskID, _ := rep.Calls[0].Structured["task_id"].(string)
		evs := tm.env.Events(store.Query{TaskID: taskID, TypePrefix: string(protocol.TypeTaskAnswer)})
		if len(evs) != 2 {
			t.Fatalf("%d task.answer events of task %q, want 2", len(evs), taskID)
		}
		for i, want := range []string{market, approval} {
			a, err := protocol.DecodePayload[protocol.Answer](evs[i])
			if err != nil || a.QuestionID != protocol.QuestionID(taskID, i) || string(a.Value) != want {
				t.Errorf("answer %d: %+v %v, want %s", i, a, err, want)
			}
			if evs[i].From.AgentID != ide.AgentID {
				t.Errorf("answer %d is from %s, want the MCP caller %s", i, evs[i].From.AgentID, ide.AgentID)
			}
		}
		if n := len(tm.env.Events(store.Query{TaskID: taskID, TypePrefix: string(protocol.TypeTaskQuestion)})); n != 2 {
			t.Errorf("%d task.question events, want 2", n)
		}
	}
	// result checks that the call c ended with the task's result want.
	result := func(t *testing.T, c askCall, want map[string]any) {
		t.Helper()
		if c.IsError || c.Structured["status"] != "result" || !reflect.DeepEqual(c.Structured["result"], want) {
			t.Errorf("%s ended with %v, want the result %v", c.Tool, c.Structured, want)
		}
	}

	t.Run("accept", func(t *testing.T) {
		tm, url := serve(t, true)
		rep := runAskHost(t, node, dir, url, "--answer", "health", "--decision", "reject", "--reason", "later")
		if rep.ProtocolVersion >= "2026-07-28" {
			t.Fatalf("the TypeScript host speaks %s: this test is for an elicitation/create host", rep.ProtocolVersion)
		}
		if got := rep.messages(); !slices.Equal(got, []string{"Which market?", "Publish?"}) {
			t.Fatalf("elicited %q", got)
		}
		// The forms: the choice's enum, the approval's decision.
		forms := []string{
			`{"properties":{"answer":{"enum":["fintech","health"],"type":"string"}},"required":["answer"],"type":"object"}`,
			`{"properties":{"decision":{"enum":["approve","reject"],"type":"string"},"reason":{"description":"why, when rejecting","type":"string"}},"required":["decision"],"type":"object"}`,
		}
		for i, e := range rep.Elicited {
			if b, _ := json.Marshal(e.Schema); string(b) != forms[i] || e.Action != "accept" {
				t.Errorf("form %d (%s): %s", i, e.Action, b)
			}
		}
		if len(rep.Calls) != 1 || rep.Calls[0].Tool != mcp.ToolSubmitTask {
			t.Fatalf("calls %+v, want submit_task alone", rep.Calls)
		}
		result(t, rep.Calls[0], map[string]any{"market": "health", "decision": "reject", "reason": "later"})
		answers(t, tm, rep, `"health"`, `{"decision":"reject","reason":"later"}`)
	})
	t.Run("decline then answer_question", func(t *testing.T) {
		tm, url := serve(t, true)
		rep := runAskHost(t, node, dir, url, "--answer", "fintech", "--decline", "1")
		if got := rep.messages(); !slices.Equal(got, []string{"Which market?", "Publish?"}) || rep.Elicited[0].Action != "decline" {
			t.Fatalf("elicited %+v", rep.Elicited)
		}
		if len(rep.Calls) != 2 {
			t.Fatalf("calls %+v, want submit_task and answer_question", rep.Calls)
		}
		sub := rep.Calls[0].Structured
		if q, _ := sub["question"].(map[string]any); rep.Calls[0].IsError || sub["status"] != "question" || sub["next"] != mcp.ActionAnswer || q["text"] != "Which market?" {
			t.Fatalf("declined submit_task: %v", sub)
		}
		// answer_question answers the first; the approval is elicited
		// within that call.
		result(t, rep.Calls[1], map[string]any{"market": "fintech", "decision": "approve", "reason": ""})
		answers(t, tm, rep, `"fintech"`, `{"decision":"approve"}`)
	})
	t.Run("stateless", func(t *testing.T) {
		tm, url := serve(t, false)
		rep := runAskHost(t, node, dir, url, "--answer", "health")
		if len(rep.Elicited) != 0 {
			t.Errorf("elicited %+v over stateless HTTP", rep.Elicited)
		}
		if len(rep.Calls) != 3 || rep.Calls[0].Structured["status"] != "question" || rep.Calls[1].Structured["status"] != "question" {
			t.Fatalf("calls %+v, want submit_task and answer_question twice", rep.Calls)
		}
		result(t, rep.Calls[2], map[string]any{"market": "health", "decision": "approve", "reason": ""})
		answers(t, tm, rep, `"health"`, `{"decision":"approve"}`)
	})
}
