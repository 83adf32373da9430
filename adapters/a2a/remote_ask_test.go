package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

// twice asks two questions, then echoes both answers' JSON.
func twice(ctx context.Context, t *router.Task) (*router.Result, error) {
	a, err := t.Ask(ctx, protocol.Question{Text: "First?"})
	if err != nil {
		return nil, err
	}
	b, err := t.Ask(ctx, protocol.Question{Text: "Second?"})
	if err != nil {
		return nil, err
	}
	return &router.Result{Payload: Content{Text: "echo: " + string(a) + ", " + string(b)}}, nil
}

// pick asks for a number (a question with a JSON Schema), then echoes it.
func pick(ctx context.Context, t *router.Task) (*router.Result, error) {
	n, err := t.Ask(ctx, protocol.Question{Text: "Pick a number.", Schema: json.RawMessage(`{"type":"integer","minimum":1}`)})
	if err != nil {
		return nil, err
	}
	return &router.Result{Payload: Content{Text: "echo: " + string(n)}}, nil
}

// newAskEnv is newTestEnv with the twice and pick agents served besides
// echo.
func newAskEnv(t testing.TB, opts *ServerOptions, mw ...func(http.Handler) http.Handler) *testEnv {
	t.Helper()
	env := routertest.New(t, &routertest.Options{Router: router.Options{MaxAttempts: 1}})
	env.Register(card("agent:echo", nil, "skill:echo"), echo)
	env.Register(card("agent:twice", nil, "skill:twice"), twice)
	env.Register(card("agent:pick", nil, "skill:pick"), pick)
	var o ServerOptions
	if opts != nil {
		o = *opts
	}
	o.Expose = []string{"agent:echo", "agent:twice", "agent:pick"}
	return serve(t, env, &o, mw...)
}

// submit submits a Content request to the caller's remote agent in
// thread (new if "").
func (c *caller) submit(t testing.TB, text, thread string) (*protocol.Message, *router.Handle) {
	t.Helper()
	req := c.Request(PayloadContent, Content{Text: text})
	req.To = []protocol.Participant{{AgentID: c.rm.Card().AgentID}}
	if thread != "" {
		req.ThreadID = thread
	}
	h, err := c.Router.Submit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return req, h
}

// waitQuestion waits for h's task to stop on a question and checks that
// it waits.
func (c *caller) waitQuestion(t testing.TB, h *router.Handle) *protocol.Question {
	t.Helper()
	out, err := c.Wait(h)
	require.ErrorIs(t, err, protocol.CodeInputRequired)
	require.NotNil(t, out.Question, "the task asks: %v", err)
	require.Equal(t, protocol.TypeTaskQuestion, out.Type)
	require.Equal(t, 1, c.Router.Waiting())
	return out.Question
}

// answer answers q as req's requester and returns the handle of the task
// run on.
func (c *caller) answer(t testing.TB, req *protocol.Message, q *protocol.Question, value string) *router.Handle {
	t.Helper()
	h, err := c.Router.Answer(context.Background(), q.ID, router.Answerer{AgentID: req.From.AgentID}, json.RawMessage(value))
	require.NoError(t, err)
	return h
}

// remoteAnswers returns the values of the task.answers B stored.
func remoteAnswers(b *testEnv) []string {
	var out []string
	for _, m := range b.Events(store.Query{TypePrefix: string(protocol.TypeTaskAnswer)}) {
		a, _ := protocol.DecodePayload[protocol.Answer](m)
		out = append(out, string(a.Value))
	}
	return out
}

// A remote Clutch agent asks (Task.Ask behind A2A INPUT_REQUIRED): the
// caller's task asks its requester the same question — text, choices —
// with Details naming the remote task, and waits. The answer goes to the
// same remote task, which completes; no second remote task is started.
func TestRemoteAsk(t *testing.T) {
	for _, streaming := range []bool{true, false} {
		t.Run(map[bool]string{true: "streaming", false: "blocking"}[streaming], func(t *testing.T) {
			b := newAskEnv(t, &ServerOptions{DisableStreaming: !streaming})
			c := newCaller(t, b.hs.URL+"/agents/echo", nil, 1)
			req, h := c.submit(t, "ask:fintech|health", "thr_ask")
			q := c.waitQuestion(t, h)

			remote := b.Await(store.Query{TypePrefix: string(protocol.TypeTaskQuestion)}, nil)
			assert.Equal(t, "Which one?", q.Text)
			assert.Equal(t, []string{"fintech", "health"}, q.Choices)
			assert.Equal(t, map[string]any{
				"remote": c.rm.url, "a2a_task_id": remote.TaskID, "a2a_context_id": "thr_ask",
				"a2a_state": "TASK_STATE_INPUT_REQUIRED", "a2a_status_message_id": remote.ID,
			}, q.Details)

			// Not a choice: refused here, nothing sent.
			_, err := c.Router.Answer(context.Background(), q.ID, router.Answerer{AgentID: req.From.AgentID}, json.RawMessage(`"retail"`))
			require.ErrorIs(t, err, router.ErrInvalidRequest)
			assert.Empty(t, remoteAnswers(b))

			out, err := c.Wait(c.answer(t, req, q, `"health"`))
			require.NoError(t, err)
			res, err := router.ResultAs[Content](out)
			require.NoError(t, err)
			assert.Equal(t, "echo: answered health", res.Text)
			assert.Equal(t, 0, c.Router.Waiting())

			assert.Equal(t, []string{`"health"`}, remoteAnswers(b))
			ans := b.Events(store.Query{TaskID: remote.TaskID, TypePrefix: string(protocol.TypeTaskAnswer)})
			require.Len(t, ans, 1)
			assert.Equal(t, tester, ans[0].From.AgentID, "answered as the caller the remote knows")
			assert.Len(t, b.Events(store.Query{TypePrefix: "task.request"}), 1, "the answer continues the remote task")
			b.AssertOneTerminal()
		})
	}
}

// The remote asks twice: each of its questions is a new question of the
// caller's task, and each answer goes to the same remote task.
func TestRemoteAskTwice(t *testing.T) {
	b := newAskEnv(t, nil)
	c := newCaller(t, b.hs.URL+"/agents/twice", nil, 1)
	req, h := c.submit(t, "go", "")
	q := c.waitQuestion(t, h)
	assert.Equal(t, "First?", q.Text)
	q2 := c.waitQuestion(t, c.answer(t, req, q, `"one"`))
	assert.Equal(t, "Second?", q2.Text)
	assert.Equal(t, 1, q2.Index)
	assert.Equal(t, q.Details["a2a_task_id"], q2.Details["a2a_task_id"])
	assert.NotEqual(t, q.Details["a2a_status_message_id"], q2.Details["a2a_status_message_id"])
	out, err := c.Wait(c.answer(t, req, q2, `{"n":2}`))
	require.NoError(t, err, "a non-string answer travels as a data part")
	res, _ := router.ResultAs[Content](out)
	assert.Equal(t, `echo: "one", {"n":2}`, res.Text)
	assert.Equal(t, []string{`"one"`, `{"n":2}`}, remoteAnswers(b))
}

// The remote's question has a JSON Schema, which the caller's question
// does not carry: an answer the remote refuses leaves its task waiting,
// and the caller asks again, saying why; the next answer goes on.
func TestRemoteRefusesAnswer(t *testing.T) {
	b := newAskEnv(t, nil)
	c := newCaller(t, b.hs.URL+"/agents/pick", nil, 1)
	req, h := c.submit(t, "go", "")
	q := c.waitQuestion(t, h)
	assert.Equal(t, "Pick a number.", q.Text)
	assert.Empty(t, q.Schema)
	q2 := c.waitQuestion(t, c.answer(t, req, q, `"many"`))
	assert.Equal(t, 1, q2.Index)
	assert.Regexp(t, `^The A2A agent refused the answer \(.+\)\. Pick a number\.$`, q2.Text)
	assert.Equal(t, q.Details, q2.Details, "the same remote task, waiting on the same status")
	assert.Empty(t, remoteAnswers(b))
	out, err := c.Wait(c.answer(t, req, q2, `7`))
	require.NoError(t, err)
	res, _ := router.ResultAs[Content](out)
	assert.Equal(t, "echo: 7", res.Text)
	assert.Equal(t, []string{`7`}, remoteAnswers(b))
}

// A remote Clutch handler that fails with INPUT_REQUIRED instead of
// asking has ended its task (FAILED, the Clutch error in the status): the
// forwarded task fails with that error and asks nothing; nothing could
// answer the remote task.
func TestRemoteInputRequired(t *testing.T) {
	b := newTestEnv(t, nil)
	c := newCaller(t, b.hs.URL+"/agents/echo", nil, 1)
	_, h := c.submit(t, "input:which market?", "thr_conversation")
	out, err := c.Wait(h)
	require.ErrorIs(t, err, protocol.CodeInputRequired)
	assert.Nil(t, out.Question)
	assert.Equal(t, protocol.TypeTaskError, out.Type)
	assert.Equal(t, 0, c.Router.Waiting())
	assert.Len(t, inContext(b, "thr_conversation"), 1)
}

// A subtask cannot ask (docs/protocol.md §2.7): the remote's
// INPUT_REQUIRED ends it with that error, naming the remote task, for the
// task that delegated it.
func TestRemoteSubtaskInputRequired(t *testing.T) {
	b := newTestEnv(t, nil)
	c := newCaller(t, b.hs.URL+"/agents/echo", nil, 1)
	var got error
	c.Agent("agent:boss", []string{"skill:boss"}, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		sub, err := t.NewSubtask(PayloadContent, Content{Text: "input:which market?"})
		if err != nil {
			return nil, err
		}
		sub.To = []protocol.Participant{{AgentID: "agent:echo"}}
		_, got = t.Delegate(ctx, sub)
		return &router.Result{Payload: "done"}, nil
	})
	_, err := c.Run(c.Request("", "x", "skill:boss"))
	require.NoError(t, err)
	var ep *protocol.ErrorPayload
	require.True(t, errors.As(got, &ep), "%v", got)
	assert.Equal(t, protocol.CodeInputRequired, ep.Code)
	assert.Equal(t, "which market?", ep.Message)
	assert.NotEmpty(t, ep.Details["a2a_task_id"])
	assert.Equal(t, 0, c.Router.Waiting())
}

// answerTap counts the messages sent on an existing task (answers) and,
// while drop is set, lets the first one reach the Server but loses its
// response, as a connection that breaks after the request was taken.
type answerTap struct {
	mu      sync.Mutex
	drop    bool
	answers int
}

func (a *answerTap) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rpcMethod(r) != "SendMessage" {
			next.ServeHTTP(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			Params struct {
				Message struct {
					TaskID string `json:"taskId"`
				} `json:"message"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &m)
		if m.Params.Message.TaskID == "" {
			next.ServeHTTP(w, r)
			return
		}
		a.mu.Lock()
		a.answers++
		drop := a.drop
		a.drop = false
		a.mu.Unlock()
		if !drop {
			next.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(httptest.NewRecorder(), r) // taken; the answer is lost
		http.Error(w, "bad gateway", http.StatusBadGateway)
	})
}

func (a *answerTap) count() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.answers
}

// The crash window: the answer reached the remote task but its outcome
// did not reach the caller (HTTP 502: retryable), so the router runs the
// task again. The run reads the remote task first and does not send the
// answer again: a task that went on is followed to its end; one that
// asked again asks its new question.
func TestRemoteAnswerNotSentTwice(t *testing.T) {
	t.Run("went on", func(t *testing.T) {
		tap := &answerTap{drop: true}
		b := newAskEnv(t, &ServerOptions{DisableStreaming: true}, tap.middleware)
		c := newCaller(t, b.hs.URL+"/agents/echo", nil, 2)
		req, h := c.submit(t, "ask:", "")
		q := c.waitQuestion(t, h)
		out, err := c.Wait(c.answer(t, req, q, `"fintech"`))
		require.NoError(t, err)
		res, _ := router.ResultAs[Content](out)
		assert.Equal(t, "echo: answered fintech", res.Text)
		assert.Equal(t, 1, tap.count(), "the answer was sent once")
		assert.Equal(t, []string{`"fintech"`}, remoteAnswers(b))
		assert.Equal(t, 3, out.Message.Attempt, "asked, resumed and lost, resumed again")
	})
	t.Run("asked again", func(t *testing.T) {
		tap := &answerTap{drop: true}
		b := newAskEnv(t, &ServerOptions{DisableStreaming: true}, tap.middleware)
		c := newCaller(t, b.hs.URL+"/agents/twice", nil, 2)
		req, h := c.submit(t, "go", "")
		q := c.waitQuestion(t, h)
		q2 := c.waitQuestion(t, c.answer(t, req, q, `"one"`))
		assert.Equal(t, "Second?", q2.Text)
		assert.Equal(t, 1, tap.count(), "the first answer was sent once")
		out, err := c.Wait(c.answer(t, req, q2, `"two"`))
		require.NoError(t, err)
		res, _ := router.ResultAs[Content](out)
		assert.Equal(t, `echo: "one", "two"`, res.Text)
		assert.Equal(t, 2, tap.count())
		assert.Equal(t, []string{`"one"`, `"two"`}, remoteAnswers(b))
	})
}

// callerProcess is one run of a program whose router, on a boltstore
// file, forwards to a remote A2A agent.
type callerProcess struct {
	st *boltstore.Store
	r  *router.Router
	rm *Remote
}

func startCaller(t *testing.T, path, url string) *callerProcess {
	t.Helper()
	ctx := context.Background()
	st, err := boltstore.Open(path, &boltstore.Options{NoSync: true})
	require.NoError(t, err)
	reg, err := registry.Open(ctx, st, nil)
	require.NoError(t, err)
	sch, err := schema.New(nil)
	require.NoError(t, err)
	r, err := router.New(st, reg, &router.Options{Validator: sch, Logger: quiet, MaxAttempts: 1})
	require.NoError(t, err)
	rm, err := Register(ctx, r, url, &RemoteOptions{Logger: quiet, BearerToken: testKey, Egress: loopback})
	require.NoError(t, err)
	p := &callerProcess{st: st, r: r, rm: rm}
	t.Cleanup(p.stop)
	return p
}

func (p *callerProcess) stop() {
	p.r.Close()
	p.rm.Close()
	p.st.Close()
}

// The question outlives the caller's process: a new process on the same
// store, after Recover, takes the answer and sends it to the remote task
// the first process asked for (its Details; nothing in memory).
func TestRemoteAskSurvivesRestart(t *testing.T) {
	b := newAskEnv(t, nil)
	url := b.hs.URL + "/agents/echo"
	path := filepath.Join(t.TempDir(), "caller.db")
	ctx := ctxT(t)

	p1 := startCaller(t, path, url)
	req, err := p1.r.NewRequest("agent:test", PayloadContent, Content{Text: "ask:fintech|health"})
	require.NoError(t, err)
	req.To = []protocol.Participant{{AgentID: "agent:echo"}}
	h, err := p1.r.Submit(ctx, req)
	require.NoError(t, err)
	out, err := h.Wait(ctx)
	require.ErrorIs(t, err, protocol.CodeInputRequired)
	require.NotNil(t, out.Question)
	q := out.Question
	require.Equal(t, 1, p1.r.Waiting())
	p1.stop()

	p2 := startCaller(t, path, url)
	n, err := p2.r.Recover(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "a waiting task stays waiting")
	require.Equal(t, 1, p2.r.Waiting())
	h, err = p2.r.Answer(ctx, q.ID, router.Answerer{AgentID: req.From.AgentID}, json.RawMessage(`"health"`))
	require.NoError(t, err)
	out, err = h.Wait(ctx)
	require.NoError(t, err)
	res, err := router.ResultAs[Content](out)
	require.NoError(t, err)
	assert.Equal(t, "echo: answered health", res.Text)
	assert.Equal(t, 0, p2.r.Waiting())

	remote := b.Events(store.Query{TypePrefix: string(protocol.TypeTaskAnswer)})
	require.Len(t, remote, 1)
	assert.Equal(t, q.Details["a2a_task_id"], remote[0].TaskID)
	assert.Equal(t, []string{`"health"`}, remoteAnswers(b))
	assert.Len(t, b.Events(store.Query{TypePrefix: "task.request"}), 1)
}

// A question asked for another remote agent's task is not sent here.
func TestRemotePausedByOther(t *testing.T) {
	rm := &Remote{url: "http://a.example"}
	for _, q := range []*protocol.Question{nil, {ID: "t.q0", Details: map[string]any{"tool": "x"}}} {
		p, err := rm.pausedBy(q)
		assert.Nil(t, p)
		assert.NoError(t, err)
	}
	_, err := rm.pausedBy(&protocol.Question{ID: "t.q0", Details: map[string]any{"remote": "http://b.example", "a2a_task_id": "r1"}})
	assert.ErrorIs(t, err, protocol.CodeConflict)
	p, err := rm.pausedBy(&protocol.Question{ID: "t.q0", Details: map[string]any{"remote": "http://a.example", "a2a_task_id": "r1", "a2a_context_id": "c1", "a2a_status_message_id": "m1"}})
	require.NoError(t, err)
	assert.Equal(t, &pausedTask{remote: "http://a.example", taskID: a2a.TaskID("r1"), contextID: "c1", statusMsg: "m1"}, p)
}
