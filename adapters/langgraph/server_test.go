//go:build unix

package langgraph_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/internal/nodepeer"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/adapters/langgraph"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/store"
)

// The real LangGraph.js Agent Server (`langgraphjs dev` of
// @langchain/langgraph-cli 2.0.0, @langchain/langgraph-api 2.0.0,
// @langchain/langgraph 1.7.3, @langchain/core 1.4.0, pinned by
// testdata/server/package-lock.json; `make deps` installs it) serving the
// deterministic graphs of testdata/server/graphs.mjs.
const serverDir = "testdata/server"

var (
	serverOnce sync.Once
	serverURL  string
	serverErr  string
	serverStop func()
)

// TestMain stops the shared server after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	if serverStop != nil {
		serverStop()
	}
	os.Exit(code)
}

// agentServer returns the base URL of the shared Agent Server, starting it
// on a free 127.0.0.1 port the first time; it skips (fails under CI=true)
// when node or the installed server is missing.
func agentServer(t testing.TB) string {
	t.Helper()
	cli, _ := filepath.Abs(filepath.Join(serverDir, "node_modules", "@langchain", "langgraph-cli", "dist", "cli", "cli.mjs"))
	node := nodepeer.Need(t, "the LangGraph Agent Server (@langchain/langgraph-cli)", cli)
	serverOnce.Do(func() { serverURL, serverErr = startServer(t, node, cli) })
	if serverErr != "" {
		t.Fatal(serverErr)
	}
	return serverURL
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;]*m`)

// startServer runs the CLI in a fresh directory (its own .langgraph_api
// state) holding the graphs, with node_modules linked.
func startServer(t testing.TB, node, cli string) (string, string) {
	dir, err := os.MkdirTemp("", "clutch-langgraph-")
	if err != nil {
		return "", err.Error()
	}
	for _, f := range []string{"graphs.mjs", "langgraph.json", "package.json"} {
		b, err := os.ReadFile(filepath.Join(serverDir, f))
		if err != nil {
			return "", err.Error()
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			return "", err.Error()
		}
	}
	nm, _ := filepath.Abs(filepath.Join(serverDir, "node_modules"))
	if err := os.Symlink(nm, filepath.Join(dir, "node_modules")); err != nil {
		return "", err.Error()
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err.Error()
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(node, cli, "dev", "--port", strconv.Itoa(port), "--host", "127.0.0.1", "--no-browser")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NO_COLOR=1", "LANGSMITH_TRACING=false", "LANGCHAIN_TRACING_V2=false")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // the CLI starts children: stop the group
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		return "", err.Error()
	}
	serverStop = func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		pw.Close()
		os.RemoveAll(dir)
	}
	ready := make(chan struct{})
	var logMu sync.Mutex
	var log strings.Builder
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			line := ansi.ReplaceAllString(sc.Text(), "")
			logMu.Lock()
			if log.Len() < 64<<10 {
				log.WriteString(line + "\n")
			}
			logMu.Unlock()
			if strings.Contains(line, "Server running at") {
				once.Do(func() { close(ready) })
			}
		}
	}()
	select {
	case <-ready:
		return "http://127.0.0.1:" + strconv.Itoa(port), ""
	case <-time.After(120 * time.Second):
		logMu.Lock()
		defer logMu.Unlock()
		return "", "langgraphjs dev did not start within 120 s:\n" + log.String()
	}
}

// A tool-calling agent loop over every stream mode the translator claims:
// each step lands under the task, the final state is the result.
func TestServerToolLoopAllModes(t *testing.T) {
	url := agentServer(t)
	env, rm := newEnv(t, url, "agent", &langgraph.RemoteOptions{
		StreamModes: []string{"values", "updates", "messages", "messages-tuple", "custom", "tasks", "checkpoints", "debug", "events"},
		ResultType:  "demo.answer.v1",
		Result: func(v json.RawMessage) (any, error) {
			var st struct {
				Messages []struct {
					Content any `json:"content"`
				} `json:"messages"`
			}
			if err := json.Unmarshal(v, &st); err != nil {
				return nil, err
			}
			last, _ := st.Messages[len(st.Messages)-1].Content.(string)
			return answer{State: last}, nil
		}})
	require.NoError(t, registerAnswer(env))
	out := ask(t, env, rm, "add please", freshThread(t))
	require.True(t, out.OK(), "%+v", out.Err)
	assert.JSONEq(t, `{"state":"The answer is 5"}`, string(out.Message.Payload))
	got := typesOf(env, out.TaskID)
	for _, want := range []string{"tool.call", "tool.result", "chat.message", "task.progress/langgraph.values.v1",
		"task.progress/langgraph.updates.v1", "task.progress/langgraph.custom.v1", "task.progress/langgraph.task.v1",
		"task.progress/langgraph.checkpoint.v1", "task.progress/langgraph.event.v1",
		"task.progress/langgraph.run.v1"} {
		assert.Contains(t, got, want)
	}
	var call map[string]any
	for _, m := range env.Events(store.Query{TaskID: out.TaskID, TypePrefix: "tool.call"}) {
		require.NoError(t, json.Unmarshal(m.Payload, &call))
	}
	assert.Equal(t, "call_add_1", call["call_id"])
	assert.Equal(t, "add", call["name"])
	// No x.langgraph.invalid_frame: every frame translated.
	for _, m := range env.Events(store.Query{TaskID: out.TaskID}) {
		assert.False(t, strings.HasPrefix(string(m.Type), "x.langgraph.invalid"), string(m.Payload))
	}
}

func TestServerToolError(t *testing.T) {
	url := agentServer(t)
	env, rm := newEnv(t, url, "agent", nil)
	out := ask(t, env, rm, "divide please", freshThread(t))
	require.True(t, out.OK(), "%+v", out.Err)
	errs := env.Events(store.Query{TaskID: out.TaskID, TypePrefix: "tool.error"})
	require.Len(t, errs, 1)
	ep, err := protocol.DecodePayload[protocol.ErrorPayload](errs[0])
	require.NoError(t, err)
	assert.Equal(t, "division by zero", ep.Message)
}

// An interrupt() is the Clutch task's question: the task waits, holding
// nothing; the requester's answer resumes the graph on the same LangGraph
// thread (command.resume) and the task ends with the graph's result.
func TestServerInterruptAsksAndTheAnswerResumes(t *testing.T) {
	url := agentServer(t)
	env, rm := newEnv(t, url, "approval", nil)
	req := env.Request("", "order 42")
	req.ThreadID = freshThread(t)
	req.To = []protocol.Participant{{AgentID: rm.Card().AgentID}}
	h, err := env.Router.Submit(context.Background(), req)
	require.NoError(t, err)
	out, _ := env.Wait(h)
	q := asked(t, env, out)
	assert.Equal(t, "Approve the refund for: order 42?", q.Text)
	assert.Equal(t, req.TaskID+".q0", q.ID)
	assert.Equal(t, 1, env.Router.Waiting())
	tid := rm.ThreadID(req.ThreadID)
	assert.Equal(t, tid, q.Details["langgraph_thread_id"])
	st := stateOf(t, url, rm, req.ThreadID)
	require.Len(t, st.Tasks, 1)
	require.Len(t, st.Tasks[0].Interrupts, 1)
	in, _ := q.Details["interrupts"].([]any)
	require.Len(t, in, 1)
	assert.Equal(t, st.Tasks[0].Interrupts[0].ID, in[0].(map[string]any)["id"])
	assert.Equal(t, []any{"ask"}, q.Details["langgraph_next"])
	first := runsOf(t, url, tid)
	require.Len(t, first, 1)
	assert.Equal(t, first[0].RunID, q.Details["langgraph_run_id"])

	h2, err := env.Router.Answer(context.Background(), q.ID, router.Answerer{AgentID: req.From.AgentID}, json.RawMessage(`"yes"`))
	require.NoError(t, err)
	out2, _ := env.Wait(h2)
	require.True(t, out2.OK(), "%+v", out2.Err)
	assert.Equal(t, req.TaskID, out2.TaskID)
	assert.Contains(t, string(out2.Message.Payload), "Human said: yes")
	assert.Equal(t, 0, env.Router.Waiting())
	// The graph ran on on its thread: the answer reached interrupt().
	st = stateOf(t, url, rm, req.ThreadID)
	assert.Empty(t, st.Next)
	assert.Equal(t, "Human said: yes", st.Values.Messages[len(st.Values.Messages)-1].Content)
	assert.Len(t, runsOf(t, url, tid), 2)
	// The task's life: asked in its first attempt, resumed in a second.
	assert.Equal(t, []protocol.Type{protocol.TypeTaskRequest, protocol.TypeRoutingDecision, protocol.TypeTaskAccept,
		protocol.TypeTaskQuestion, protocol.TypeTaskAnswer, protocol.TypeRoutingDecision, protocol.TypeTaskAccept,
		protocol.TypeTaskResult}, lifecycle(env, req.TaskID))
}

// lifecycle is the task's events without its progress and steps.
func lifecycle(env *routertest.Env, taskID string) []protocol.Type {
	var out []protocol.Type
	for _, ty := range env.Types(taskID) {
		switch ty {
		case protocol.TypeTaskProgress, protocol.TypeToolCall, protocol.TypeToolResult, protocol.TypeToolError, protocol.TypeChatMessage:
		default:
			out = append(out, ty)
		}
	}
	return out
}

// A new request on a thread that waits — its question cancelled — is the
// answer: the follow-up resumes the graph (RemoteOptions.Resume).
func TestServerFollowUpResumesAnInterruptedThread(t *testing.T) {
	url := agentServer(t)
	env, rm := newEnv(t, url, "approval", nil)
	out := ask(t, env, rm, "order 42", freshThread(t))
	asked(t, env, out)
	h, err := env.Router.Cancel(out.TaskID, "answered in the thread instead")
	require.NoError(t, err)
	cancelled, _ := env.Wait(h)
	assert.Equal(t, protocol.TypeTaskCancel, cancelled.Type)
	assert.Equal(t, 0, env.Router.Waiting())
	out2 := ask(t, env, rm, "yes", out.Message.ThreadID)
	require.True(t, out2.OK(), "%+v", out2.Err)
	assert.Contains(t, string(out2.Message.Payload), "Human said: yes")
}

// A supervisor handing off to a subgraph, with subgraph events: the final
// state comes from GET /threads/{id}/state (the server cannot stream values
// with subgraphs).
func TestServerSupervisorSubgraph(t *testing.T) {
	url := agentServer(t)
	env, rm := newEnv(t, url, "supervisor", &langgraph.RemoteOptions{Subgraphs: true,
		StreamModes: []string{"updates", "messages-tuple", "tasks", "checkpoints", "debug"}})
	out := ask(t, env, rm, "research this", freshThread(t))
	require.True(t, out.OK(), "%+v", out.Err)
	assert.Contains(t, string(out.Message.Payload), "found 3 papers")
	var texts []string
	for _, m := range env.Events(store.Query{TaskID: out.TaskID, TypePrefix: "chat.message"}) {
		texts = append(texts, string(m.Payload))
	}
	assert.Contains(t, strings.Join(texts, "\n"), "handing off to research")
	assert.Contains(t, strings.Join(texts, "\n"), "found 3 papers") // from inside the subgraph
}

func TestServerGraphThrows(t *testing.T) {
	url := agentServer(t)
	env, rm := newEnv(t, url, "thrower", nil)
	out := ask(t, env, rm, "go", freshThread(t))
	require.False(t, out.OK())
	assert.Equal(t, protocol.CodeToolFailed, out.Err.Code)
	assert.Contains(t, out.Err.Message, "boom: the graph failed on purpose")
}

// Cancelling the task cancels the run on the server.
func TestServerCancel(t *testing.T) {
	url := agentServer(t)
	env, rm := newEnv(t, url, "slow", nil)
	req := env.Request("", "wait")
	req.ThreadID = freshThread(t)
	req.To = []protocol.Participant{{AgentID: rm.Card().AgentID}}
	h, err := env.Router.Submit(context.Background(), req)
	require.NoError(t, err)
	// The node is running (its custom event landed).
	env.Await(store.Query{TaskID: h.TaskID(), TypePrefix: "task.progress"}, func(m *protocol.Message) bool {
		return m.PayloadType == langgraph.PayloadCustom
	})
	h.Cancel("stop waiting")
	out, _ := h.Wait(context.Background())
	require.NotNil(t, out)
	assert.Equal(t, protocol.TypeTaskCancel, out.Type)
	// The server's run ended, not by itself (it would wait a minute).
	tid := rm.ThreadID(req.ThreadID)
	resp, err := http.Get(url + "/threads/" + tid + "/runs")
	require.NoError(t, err)
	defer resp.Body.Close()
	var runs []struct {
		RunID  string `json:"run_id"`
		Status string `json:"status"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&runs))
	require.Len(t, runs, 1)
	join, err := http.Get(url + "/threads/" + tid + "/runs/" + runs[0].RunID + "/join")
	require.NoError(t, err)
	join.Body.Close()
	resp2, err := http.Get(url + "/threads/" + tid + "/runs/" + runs[0].RunID)
	require.NoError(t, err)
	defer resp2.Body.Close()
	var run struct {
		Status string `json:"status"`
	}
	require.NoError(t, json.NewDecoder(resp2.Body).Decode(&run))
	assert.Contains(t, []string{"interrupted", "error"}, run.Status)
}

// serverRun is a run as GET /threads/{id}/runs lists it.
type serverRun struct {
	RunID  string `json:"run_id"`
	Status string `json:"status"`
}

// runsOf lists the runs of a LangGraph thread.
func runsOf(t *testing.T, url, tid string) []serverRun {
	t.Helper()
	resp, err := http.Get(url + "/threads/" + tid + "/runs")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var runs []serverRun
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&runs))
	return runs
}

// freshThread names a Clutch thread no earlier test (or -count run) used:
// the shared server keeps its threads, and the test routers' ids repeat.
func freshThread(t testing.TB) string {
	return "thread:" + t.Name() + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
}

func registerAnswer(env *routertest.Env) error {
	return schemaRegister(env)
}

// BenchmarkServerBridge measures what the bridge adds to a run of the
// tool-loop graph: the p50 of the same run made by a plain HTTP client
// (POST /threads, POST /threads/{id}/runs/stream read to its end) and
// through a Clutch task (routing, the same two calls, translating and
// storing every frame, the status check, the result).
func BenchmarkServerBridge(b *testing.B) {
	url := agentServer(b)
	env, rm := newEnv(b, url, "agent", nil)
	hc := &http.Client{}
	var direct, bridged []time.Duration
	body := `{"assistant_id":"agent","input":{"messages":[{"role":"user","content":"add please"}]},"stream_mode":["values","updates","messages-tuple","custom","tasks"]}`
	for b.Loop() {
		start := time.Now()
		resp, err := hc.Post(url+"/threads", "application/json", strings.NewReader(`{}`))
		require.NoError(b, err)
		var th struct {
			ThreadID string `json:"thread_id"`
		}
		require.NoError(b, json.NewDecoder(resp.Body).Decode(&th))
		resp.Body.Close()
		resp, err = hc.Post(url+"/threads/"+th.ThreadID+"/runs/stream", "application/json", strings.NewReader(body))
		require.NoError(b, err)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(b, err)
		resp.Body.Close()
		direct = append(direct, time.Since(start))

		start = time.Now()
		out := ask(b, env, rm, "add please", freshThread(b))
		require.True(b, out.OK())
		bridged = append(bridged, time.Since(start))
	}
	p50 := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds()) / 1000
	}
	pd, pb := p50(direct), p50(bridged)
	b.ReportMetric(pd, "direct-p50-ms")
	b.ReportMetric(pb, "bridge-p50-ms")
	b.ReportMetric(pb-pd, "added-p50-ms")
}
