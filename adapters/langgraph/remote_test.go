package langgraph_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/adapters/langgraph"
	"github.com/clutchprotocol/clutch/egress"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// loopback lets the Remote reach test servers on 127.0.0.1 (the default
// egress policy refuses loopback, docs/protocol.md §6).
var loopback = func() *egress.Policy {
	p, err := egress.New(&egress.Options{Allow: []string{"127.0.0.1"}})
	if err != nil {
		panic(err)
	}
	return p
}()

// fake is an Agent Server double that answers with recorded captures of
// the real one (testdata/recorded): POST /threads, the run stream, the run's
// status, its join stream and the thread state.
type fake struct {
	t       *testing.T
	mu      sync.Mutex
	streams []string          // the recorded .sse bodies of the next runs, in order
	status  []string          // the run statuses GET answers, in order (last repeats)
	thread  string            // the Thread JSON POST /threads answers
	threads []string          // when set, the Thread JSONs POST /threads answers, in order (last repeats), before thread
	failOn  map[string]int    // path prefix -> HTTP status to answer
	cutAt   int               // when > 0, the first run stream is cut after this many frames
	rest    string            // what the join stream serves after a cut
	seen    []string          // "METHOD path" of each request
	bodies  map[string]string // last body per "METHOD path"
	block   chan struct{}     // when set, the run stream blocks after its first frame until closed
	lastID  atomic.Value
	cancels chan string // receives the path of each cancel request
	state   string      // the thread state GET answers; a finished thread when ""
	states  []string    // when set, the thread states GET answers, in order (last repeats), before state
}

func newFake(t *testing.T, streams ...string) (*fake, *httptest.Server) {
	f := &fake{t: t, thread: `{"thread_id":"x","status":"idle","metadata":{}}`, status: []string{"success"}, failOn: map[string]int{}, bodies: map[string]string{}}
	for _, s := range streams {
		b, err := os.ReadFile("testdata/recorded/" + s + ".sse")
		require.NoError(t, err)
		f.streams = append(f.streams, string(b))
	}
	hs := httptest.NewServer(f)
	t.Cleanup(hs.Close)
	return f, hs
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	key := r.Method + " " + r.URL.Path
	f.seen = append(f.seen, key)
	f.bodies[key] = string(body)
	for p, code := range f.failOn {
		if strings.HasPrefix(r.URL.Path, p) {
			f.mu.Unlock()
			http.Error(w, `{"detail":"injected"}`, code)
			return
		}
	}
	f.mu.Unlock()
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.Method == "POST" && r.URL.Path == "/threads":
		f.mu.Lock()
		th := f.thread
		if len(f.threads) > 0 {
			th = f.threads[0]
			if len(f.threads) > 1 {
				f.threads = f.threads[1:]
			}
		}
		f.mu.Unlock()
		io.WriteString(w, th)
	case r.Method == "POST" && len(parts) == 4 && parts[3] == "stream":
		f.mu.Lock()
		s := f.streams[0]
		f.streams = f.streams[1:]
		f.mu.Unlock()
		w.Header().Set("Content-Location", "/threads/"+parts[1]+"/runs/run-1")
		w.Header().Set("Content-Type", "text/event-stream")
		frames := strings.SplitAfter(s, "\n\n")
		if f.block != nil {
			io.WriteString(w, frames[0])
			w.(http.Flusher).Flush()
			select {
			case <-f.block:
			case <-r.Context().Done():
			}
			return
		}
		if f.cutAt > 0 {
			io.WriteString(w, strings.Join(frames[:f.cutAt], ""))
			f.rest = strings.Join(frames[f.cutAt:], "")
			w.(http.Flusher).Flush()
			// Drop the connection mid-stream.
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		io.WriteString(w, s)
	case r.Method == "GET" && len(parts) == 4 && parts[2] == "runs":
		f.mu.Lock()
		st := f.status[0]
		if len(f.status) > 1 {
			f.status = f.status[1:]
		}
		f.mu.Unlock()
		io.WriteString(w, `{"run_id":"run-1","status":"`+st+`"}`)
	case r.Method == "GET" && len(parts) == 5 && parts[4] == "stream":
		f.lastID.Store(r.Header.Get("Last-Event-ID"))
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, f.rest)
	case r.Method == "GET" && len(parts) == 3 && parts[2] == "state":
		f.mu.Lock()
		st := f.state
		if len(f.states) > 0 {
			st = f.states[0]
			if len(f.states) > 1 {
				f.states = f.states[1:]
			}
		}
		f.mu.Unlock()
		if st != "" {
			io.WriteString(w, st)
			return
		}
		io.WriteString(w, `{"values":{"messages":[{"type":"ai","content":"from state"}]}}`)
	case r.Method == "POST" && len(parts) == 5 && parts[4] == "cancel":
		w.WriteHeader(http.StatusNoContent)
		if f.cancels != nil {
			f.cancels <- r.URL.Path
		}
	default:
		http.NotFound(w, r)
	}
}

func (f *fake) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...)
}

func newEnv(t testing.TB, url, assistant string, opts *langgraph.RemoteOptions) (*routertest.Env, *langgraph.Remote) {
	t.Helper()
	env := routertest.New(t, nil)
	var o langgraph.RemoteOptions
	if opts != nil {
		o = *opts
	}
	o.Egress, o.Logger = loopback, quiet
	rm, err := langgraph.Register(context.Background(), env.Router, url, assistant, &o)
	require.NoError(t, err)
	t.Cleanup(func() { rm.Close() })
	return env, rm
}

func ask(t testing.TB, env *routertest.Env, rm *langgraph.Remote, payload any, thread string) *router.Outcome {
	t.Helper()
	req := env.Request("", payload)
	req.To = []protocol.Participant{{AgentID: rm.Card().AgentID}}
	if thread != "" {
		req.ThreadID = thread
	}
	out, err := env.Run(req)
	if out == nil {
		require.NoError(t, err)
	}
	return out
}

func typesOf(env *routertest.Env, task string) []string {
	var out []string
	for _, m := range env.Events(store.Query{TaskID: task}) {
		t := string(m.Type)
		if m.PayloadType != "" {
			t += "/" + m.PayloadType
		}
		out = append(out, t)
	}
	return out
}

func schemaRegister(env *routertest.Env) error {
	return schema.RegisterType[answer](env.Schemas, "demo.answer.v1")
}

type answer struct {
	State string `json:"state"`
}

func TestRemoteReplayToolLoop(t *testing.T) {
	f, hs := newFake(t, "agent_all_modes")
	env, rm := newEnv(t, hs.URL, "agent", &langgraph.RemoteOptions{ResultType: "demo.answer.v1",
		Result: func(v json.RawMessage) (any, error) { return answer{State: string(v)}, nil }})
	require.NoError(t, schemaRegister(env))
	out := ask(t, env, rm, "add please", "")
	require.True(t, out.OK(), "%+v", out.Err)
	assert.Equal(t, "demo.answer.v1", out.Message.PayloadType)
	assert.Contains(t, string(out.Message.Payload), "The answer is 5")
	got := typesOf(env, out.TaskID)
	assert.Contains(t, got, "tool.call")
	assert.Contains(t, got, "tool.result")
	assert.Contains(t, got, "chat.message")
	assert.Contains(t, got, "task.progress/langgraph.custom.v1")
	assert.Contains(t, got, "task.progress/langgraph.values.v1")
	assert.Contains(t, got, "task.progress/langgraph.task.v1")
	assert.Contains(t, got, "task.progress/langgraph.checkpoint.v1")
	// The request became a run on the thread of the Clutch thread.
	reqs := f.requests()
	tid := rm.ThreadID(out.Message.ThreadID)
	// The thread's state confirms the run ended (no node left to run).
	assert.Equal(t, []string{"POST /threads", "POST /threads/" + tid + "/runs/stream", "GET /threads/" + tid + "/runs/run-1", "GET /threads/" + tid + "/state"}, reqs)
	assert.Contains(t, f.bodies["POST /threads/"+tid+"/runs/stream"], `"input":{"messages":[{"content":"add please","role":"user"}]}`)
	assert.Contains(t, f.bodies["POST /threads/"+tid+"/runs/stream"], `"stream_mode":["values","updates","messages-tuple","custom","tasks"]`)
}

// asked checks that out is the outcome of a task that stopped to ask —
// Outcome.Question, INPUT_REQUIRED, the task.question stored — and
// returns the question. A task still waiting when the test ends is
// cancelled then (every task must end in the store).
func asked(t testing.TB, env *routertest.Env, out *router.Outcome) *protocol.Question {
	t.Helper()
	require.NotNil(t, out.Question, "the task did not ask: %s %+v", out.Type, out.Err)
	assert.Equal(t, protocol.TypeTaskQuestion, out.Type)
	require.NotNil(t, out.Err)
	assert.Equal(t, protocol.CodeInputRequired, out.Err.Code)
	assert.Equal(t, out.Question.Text, out.Err.Message)
	stored := env.Events(store.Query{TaskID: out.TaskID, TypePrefix: "task.question"})
	require.NotEmpty(t, stored)
	q, err := protocol.DecodePayload[protocol.Question](stored[len(stored)-1])
	require.NoError(t, err)
	assert.Equal(t, out.Question.ID, q.ID)
	t.Cleanup(func() {
		ctx := context.Background()
		if w, err := env.Router.Waiter(ctx, out.TaskID); err == nil && w != nil {
			if h, err := env.Router.Cancel(out.TaskID, "the test is over"); err == nil {
				h.Wait(ctx)
			}
		}
	})
	return out.Question
}

// answerAs answers the question out stopped on as the task's requester
// and returns the outcome of the task run on.
func answerAs(t testing.TB, env *routertest.Env, out *router.Outcome, value any) *router.Outcome {
	t.Helper()
	o, _ := env.Wait(env.Answer(out, value))
	return o
}

// An interrupt is the task's question; the answer resumes the graph with
// command.resume, in a new attempt of the same task.
func TestRemoteReplayInterruptAsksThenAnswerResumes(t *testing.T) {
	f, hs := newFake(t, "approval_interrupt", "approval_resume")
	env, rm := newEnv(t, hs.URL, "approval", nil)
	out := ask(t, env, rm, "order 42", "")
	q := asked(t, env, out)
	assert.Equal(t, "Approve the refund for: order 42?", q.Text)
	tid := rm.ThreadID(out.Message.ThreadID)
	assert.Equal(t, tid, q.Details["langgraph_thread_id"])
	assert.Equal(t, "run-1", q.Details["langgraph_run_id"])
	assert.Equal(t, 1, env.Router.Waiting())
	const id = "ac75c782bb4f315f6d08c0e442af8c57"
	in, _ := q.Details["interrupts"].([]any)
	require.Len(t, in, 1)
	assert.Equal(t, id, in[0].(map[string]any)["id"])
	// The thread waits on that interrupt; after the resume run it is done.
	f.mu.Lock()
	f.thread = `{"thread_id":"x","status":"interrupted","interrupts":{"t1":[{"value":"Approve?","id":"` + id + `"}]}}`
	f.states = []string{`{"values":{"messages":[]},"next":["ask"],"tasks":[{"id":"t1","name":"ask","interrupts":[{"value":"Approve?","id":"` + id + `"}],"result":null}]}`,
		`{"values":{"messages":[]},"next":[]}`}
	f.mu.Unlock()
	out2 := answerAs(t, env, out, "yes")
	require.True(t, out2.OK(), "%+v", out2.Err)
	assert.Equal(t, out.TaskID, out2.TaskID)
	assert.Contains(t, string(out2.Message.Payload), "Human said: yes")
	assert.Equal(t, 0, env.Router.Waiting())
	assert.Contains(t, f.bodies["POST /threads/"+tid+"/runs/stream"], `"command":{"resume":"yes"}`)
	assert.NotContains(t, f.bodies["POST /threads/"+tid+"/runs/stream"], `"input"`)
}

// A new request on a thread that waits, its question cancelled, is the
// answer: the run resumes the graph with command.resume (RemoteOptions.Resume).
func TestRemoteReplayFollowUpResumes(t *testing.T) {
	f, hs := newFake(t, "approval_interrupt", "approval_resume")
	env, rm := newEnv(t, hs.URL, "approval", nil)
	out := ask(t, env, rm, "order 42", "")
	asked(t, env, out)
	h, err := env.Router.Cancel(out.TaskID, "answered in the thread instead")
	require.NoError(t, err)
	cancelled, _ := env.Wait(h)
	assert.Equal(t, protocol.TypeTaskCancel, cancelled.Type)
	f.mu.Lock()
	f.thread = `{"thread_id":"x","status":"interrupted","interrupts":{"t1":[{"value":"Approve?","id":"ac75"}]}}`
	f.mu.Unlock()
	out2 := ask(t, env, rm, map[string]any{"resume": "yes"}, out.Message.ThreadID)
	require.True(t, out2.OK(), "%+v", out2.Err)
	assert.NotEqual(t, out.TaskID, out2.TaskID)
	assert.Contains(t, string(out2.Message.Payload), "Human said: yes")
	tid := rm.ThreadID(out.Message.ThreadID)
	assert.Contains(t, f.bodies["POST /threads/"+tid+"/runs/stream"], `"command":{"resume":"yes"}`)
	assert.NotContains(t, f.bodies["POST /threads/"+tid+"/runs/stream"], `"input"`)
}

// Several interrupts at once: one question; an answer keyed by interrupt
// ids is LangGraph's resume map as it is, any other value goes to each.
func TestRemoteSeveralInterruptsResumeMap(t *testing.T) {
	const two = `[{"value":"Left?","id":"ia"},{"value":"Right?","id":"ib"}]`
	for _, c := range []struct {
		answer any
		resume string
	}{
		{"ok", `"command":{"resume":{"ia":"ok","ib":"ok"}}`},
		{map[string]any{"ia": "L", "ib": "R"}, `"command":{"resume":{"ia":"L","ib":"R"}}`},
		{map[string]any{"ia": "L"}, `"command":{"resume":{"ia":"L"}}`},
		{map[string]any{"other": "x"}, `"command":{"resume":{"ia":{"other":"x"},"ib":{"other":"x"}}}`},
	} {
		f, hs := newFake(t)
		f.streams = []string{"event: metadata\ndata: {\"run_id\":\"run-1\"}\n\n" +
			"event: updates\ndata: {\"__interrupt__\":" + two + "}\n\n",
			"event: metadata\ndata: {\"run_id\":\"run-2\"}\n\nevent: values\ndata: {\"messages\":[]}\n\n"}
		pending := `{"values":{"messages":[]},"next":["left","right"],"tasks":[` +
			`{"id":"t1","name":"left","interrupts":[{"value":"Left?","id":"ia"}],"result":null},` +
			`{"id":"t2","name":"right","interrupts":[{"value":"Right?","id":"ib"}],"result":null}]}`
		f.states = []string{pending, pending, `{"values":{"messages":[]},"next":[]}`}
		env, rm := newEnv(t, hs.URL, "pair", nil)
		out := ask(t, env, rm, "go", "")
		q := asked(t, env, out)
		assert.Equal(t, "Left?\nRight?", q.Text)
		assert.Len(t, q.Details["interrupts"], 2)
		f.mu.Lock()
		f.thread = `{"thread_id":"x","status":"interrupted","interrupts":{"t1":[{"value":"Left?","id":"ia"}],"t2":[{"value":"Right?","id":"ib"}]}}`
		f.mu.Unlock()
		out2 := answerAs(t, env, out, c.answer)
		require.True(t, out2.OK(), "%+v", out2.Err)
		assert.Contains(t, f.bodies["POST /threads/"+rm.ThreadID(out.Message.ThreadID)+"/runs/stream"], c.resume, "answer %v", c.answer)
	}
}

// An answer the graph took before a restart runs nothing again: a thread
// still busy with the run that took it is polled until that run is done,
// then the thread's state is the result; a thread whose run failed fails
// the task with TOOL_FAILED.
func TestRemoteAnswerTakenBeforeARestart(t *testing.T) {
	for _, c := range []struct {
		threads []string
		code    protocol.Code // "" for a result
	}{
		{[]string{`{"thread_id":"x","status":"busy","interrupts":{}}`, `{"thread_id":"x","status":"busy","interrupts":{}}`, `{"thread_id":"x","status":"idle","interrupts":{}}`}, ""},
		{[]string{`{"thread_id":"x","status":"error","interrupts":{"t1":[]}}`}, protocol.CodeToolFailed},
	} {
		f, hs := newFake(t, "approval_interrupt")
		env, rm := newEnv(t, hs.URL, "approval", &langgraph.RemoteOptions{PollInterval: time.Millisecond})
		out := ask(t, env, rm, "order 42", "")
		asked(t, env, out)
		f.mu.Lock()
		f.threads = c.threads
		f.state = `{"values":{"messages":[{"type":"ai","content":"Human said: yes"}]},"next":[]}`
		f.mu.Unlock()
		out2 := answerAs(t, env, out, "yes")
		if c.code == "" {
			require.True(t, out2.OK(), "%+v", out2.Err)
			assert.Contains(t, string(out2.Message.Payload), "Human said: yes")
		} else {
			require.False(t, out2.OK())
			assert.Equal(t, c.code, out2.Err.Code)
			assert.Equal(t, out.Question.ID, out2.Err.Details["question_id"])
		}
		var threads, runs int
		for _, r := range f.requests() {
			switch {
			case r == "POST /threads":
				threads++
			case strings.HasSuffix(r, "/runs/stream"):
				runs++
			}
		}
		assert.Equal(t, 1, runs, "no run after the answer")
		assert.Equal(t, 1+len(c.threads), threads, "the busy thread is polled until it is not")
	}
}

func TestRemoteReplayGraphError(t *testing.T) {
	_, hs := newFake(t, "thrower_error")
	env, rm := newEnv(t, hs.URL, "thrower", nil)
	out := ask(t, env, rm, "go", "")
	require.False(t, out.OK())
	assert.Equal(t, protocol.CodeToolFailed, out.Err.Code)
	assert.Contains(t, out.Err.Message, "boom: the graph failed on purpose")
}

// A stream dropped mid-run is re-joined from the last event id; every
// step lands once and the run's result is the task's.
func TestRemoteRejoinsADroppedStream(t *testing.T) {
	f, hs := newFake(t, "agent_all_modes")
	f.cutAt = 10
	f.status = []string{"running", "success"}
	env, rm := newEnv(t, hs.URL, "agent", nil)
	out := ask(t, env, rm, "add please", "")
	require.True(t, out.OK(), "%+v", out.Err)
	assert.Contains(t, string(out.Message.Payload), "The answer is 5")
	assert.Equal(t, "9", f.lastID.Load())
	calls := 0
	for _, m := range env.Events(store.Query{TaskID: out.TaskID}) {
		if m.Type == protocol.TypeToolCall {
			calls++
		}
	}
	assert.Equal(t, 1, calls)
}

func TestRemoteServerErrors(t *testing.T) {
	for _, c := range []struct {
		status    int
		code      protocol.Code
		retryable bool
	}{
		{500, protocol.CodeToolUnavailable, true},
		{409, protocol.CodeConflict, true},
		{404, protocol.CodeNotFound, false},
		{429, protocol.CodeRateLimited, true},
		{422, protocol.CodeInvalidField, false},
	} {
		f, hs := newFake(t, "agent_all_modes")
		f.failOn["/threads"] = c.status
		env, rm := newEnv(t, hs.URL, "agent", nil)
		out := ask(t, env, rm, "add please", "")
		require.False(t, out.OK())
		assert.Equal(t, c.code, out.Err.Code, "HTTP %d", c.status)
		assert.Equal(t, c.retryable, out.Err.Retryable, "HTTP %d", c.status)
	}
	// Nobody listening.
	hs := httptest.NewServer(http.NotFoundHandler())
	url := hs.URL
	hs.Close()
	env, rm := newEnv(t, url, "agent", nil)
	out := ask(t, env, rm, "hi", "")
	assert.Equal(t, protocol.CodeToolUnavailable, out.Err.Code)
	assert.True(t, out.Err.Retryable)
}

// Cancelling the task cancels the run on the server.
func TestRemoteCancelCancelsTheRun(t *testing.T) {
	f, hs := newFake(t, "agent_all_modes")
	f.block = make(chan struct{})
	f.cancels = make(chan string, 1)
	defer close(f.block)
	env, rm := newEnv(t, hs.URL, "agent", nil)
	req := env.Request("", "add please")
	req.To = []protocol.Participant{{AgentID: rm.Card().AgentID}}
	h, err := env.Router.Submit(context.Background(), req)
	require.NoError(t, err)
	_ = err
	// The metadata frame has landed: the run is streaming.
	env.Await(store.Query{TaskID: h.TaskID(), TypePrefix: "task.progress"}, nil)
	h.Cancel("the user changed their mind")
	out, _ := h.Wait(context.Background())
	require.NotNil(t, out)
	assert.Equal(t, protocol.TypeTaskCancel, out.Type)
	tid := rm.ThreadID(req.ThreadID)
	select {
	case p := <-f.cancels:
		assert.Equal(t, "/threads/"+tid+"/runs/run-1/cancel", p)
	case <-time.After(10 * time.Second):
		t.Fatal("the run was not cancelled on the server")
	}
}

// The JS server answers a run on a busy thread with 422 "Thread is
// already running a task": that is CONFLICT, retryable, as a 409 is.
func TestRemoteBusyThread422IsConflict(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/threads" {
			io.WriteString(w, `{"thread_id":"x","status":"busy"}`)
			return
		}
		http.Error(w, `{"message":"Thread is already running a task. Wait for it to finish or choose a different multitask strategy."}`, http.StatusUnprocessableEntity)
	}))
	t.Cleanup(hs.Close)
	env, rm := newEnv(t, hs.URL, "agent", &langgraph.RemoteOptions{})
	out := ask(t, env, rm, "hi", "")
	require.False(t, out.OK())
	assert.Equal(t, protocol.CodeConflict, out.Err.Code)
	assert.True(t, out.Err.Retryable)
}
