//go:build unix

package langgraph_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/adapters/langgraph"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
)

// resumeOutOfBand resumes a LangGraph thread directly, as the bridge's
// resume run would have before its process died.
func resumeOutOfBand(t *testing.T, url, tid, assistant, value string) {
	t.Helper()
	resp, err := http.Post(url+"/threads/"+tid+"/runs/wait", "application/json",
		strings.NewReader(`{"assistant_id":"`+assistant+`","command":{"resume":"`+value+`"}}`))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
}

// An interrupt value {question, choices} is a question with choices: an
// answer that is not one of them is refused, one that is resumes.
func TestServerQuestionWithChoices(t *testing.T) {
	url := agentServer(t)
	env, rm := newEnv(t, url, "choose", nil)
	out := ask(t, env, rm, "paint", freshThread(t))
	q := asked(t, env, out)
	assert.Equal(t, "Which colour?", q.Text)
	assert.Equal(t, []string{"red", "green"}, q.Choices)
	by := router.Answerer{AgentID: out.Message.To[0].AgentID}
	_, err := env.Router.Answer(context.Background(), q.ID, by, json.RawMessage(`"blue"`))
	require.ErrorIs(t, err, router.ErrInvalidRequest)
	assert.Equal(t, 1, env.Router.Waiting())
	out2 := answerAs(t, env, out, "green")
	require.True(t, out2.OK(), "%+v", out2.Err)
	assert.Contains(t, string(out2.Message.Payload), "chose green")
}

// An interrupt value {message, schema} is a question with that JSON
// Schema: an answer that does not meet it is refused, one that does
// resumes.
func TestServerQuestionWithSchema(t *testing.T) {
	url := agentServer(t)
	env, rm := newEnv(t, url, "count", nil)
	out := ask(t, env, rm, "print", freshThread(t))
	q := asked(t, env, out)
	assert.Equal(t, "How many copies?", q.Text)
	assert.JSONEq(t, `{"type":"integer","minimum":1}`, string(q.Schema))
	by := router.Answerer{AgentID: out.Message.To[0].AgentID}
	_, err := env.Router.Answer(context.Background(), q.ID, by, json.RawMessage(`0`))
	require.ErrorIs(t, err, router.ErrInvalidPayload)
	out2 := answerAs(t, env, out, 3)
	require.True(t, out2.OK(), "%+v", out2.Err)
	assert.Contains(t, string(out2.Message.Payload), "copies: 3")
}

// Two branches interrupting in one step are one question naming both
// interrupts: a plain answer goes to each; an answer keyed by interrupt
// ids gives each its own; an answer for one of them resumes that one and
// the task asks again about the other.
func TestServerParallelInterrupts(t *testing.T) {
	url := agentServer(t)
	env, rm := newEnv(t, url, "pair", nil)
	idsOf := func(q *protocol.Question) map[string]string { // value -> id
		in, _ := q.Details["interrupts"].([]any)
		out := map[string]string{}
		for _, i := range in {
			m := i.(map[string]any)
			out[m["value"].(string)] = m["id"].(string)
		}
		return out
	}
	t.Run("one value for both", func(t *testing.T) {
		out := ask(t, env, rm, "go", freshThread(t))
		q := asked(t, env, out)
		assert.Equal(t, "Left?\nRight?", q.Text)
		assert.Len(t, idsOf(q), 2)
		out2 := answerAs(t, env, out, "ok")
		require.True(t, out2.OK(), "%+v", out2.Err)
		assert.Contains(t, string(out2.Message.Payload), "left got ok")
		assert.Contains(t, string(out2.Message.Payload), "right got ok")
	})
	t.Run("a value each", func(t *testing.T) {
		out := ask(t, env, rm, "go", freshThread(t))
		ids := idsOf(asked(t, env, out))
		out2 := answerAs(t, env, out, map[string]string{ids["Left?"]: "L", ids["Right?"]: "R"})
		require.True(t, out2.OK(), "%+v", out2.Err)
		assert.Contains(t, string(out2.Message.Payload), "left got L")
		assert.Contains(t, string(out2.Message.Payload), "right got R")
	})
	t.Run("one of them, then the other", func(t *testing.T) {
		thread := freshThread(t)
		out := ask(t, env, rm, "go", thread)
		ids := idsOf(asked(t, env, out))
		out = answerAs(t, env, out, map[string]string{ids["Left?"]: "L"})
		q := asked(t, env, out)
		assert.Equal(t, 1, q.Index)
		assert.Equal(t, "Right?", q.Text)
		assert.Equal(t, map[string]string{"Right?": ids["Right?"]}, idsOf(q))
		out = answerAs(t, env, out, "R")
		require.True(t, out.OK(), "%+v", out.Err)
		assert.Contains(t, string(out.Message.Payload), "left got L")
		assert.Contains(t, string(out.Message.Payload), "right got R")
		assert.Len(t, runsOf(t, url, rm.ThreadID(thread)), 3)
	})
}

// A task waiting for an answer survives a restart of the router: the new
// process (a new router and Remote on the same store) finds it waiting,
// and the answer resumes the graph on the LangGraph thread the question
// names.
func TestServerWaitingSurvivesARestart(t *testing.T) {
	url := agentServer(t)
	env1, rm1 := newEnv(t, url, "approval", nil)
	thread := freshThread(t)
	out := ask(t, env1, rm1, "order 9", thread)
	q := asked(t, env1, out)
	require.NoError(t, env1.Router.Close())

	env2 := routertest.New(t, &routertest.Options{Store: env1.Store, Seed: 2})
	rm2, err := langgraph.Register(context.Background(), env2.Router, url, "approval", &langgraph.RemoteOptions{Egress: loopback, Logger: quiet})
	require.NoError(t, err)
	t.Cleanup(func() { rm2.Close() })
	n, err := env2.Router.Recover(context.Background())
	require.NoError(t, err)
	assert.Equal(t, 0, n, "nothing to run on: the task waits")
	assert.Equal(t, 1, env2.Router.Waiting())
	h, err := env2.Router.Answer(context.Background(), q.ID, router.Answerer{AgentID: out.Message.To[0].AgentID}, json.RawMessage(`"approved"`))
	require.NoError(t, err)
	out2, _ := env2.Wait(h)
	require.True(t, out2.OK(), "%+v", out2.Err)
	assert.Contains(t, string(out2.Message.Payload), "Human said: approved")
	assert.Len(t, runsOf(t, url, rm2.ThreadID(thread)), 2)
}

// The graph took the answer before a restart (the resume run went in and
// the run ended, but the task did not end): the attempt after the answer
// runs nothing again; the thread's state is the result.
func TestServerAnswerTakenBeforeARestart(t *testing.T) {
	url := agentServer(t)
	env, rm := newEnv(t, url, "approval", nil)
	thread := freshThread(t)
	out := ask(t, env, rm, "order 5", thread)
	asked(t, env, out)
	tid := rm.ThreadID(thread)
	resumeOutOfBand(t, url, tid, "approval", "yes")
	out2 := answerAs(t, env, out, "yes")
	require.True(t, out2.OK(), "%+v", out2.Err)
	assert.Contains(t, string(out2.Message.Payload), "Human said: yes")
	assert.Len(t, runsOf(t, url, tid), 2, "no run after the answer")
}

// The graph took the answer before a restart and stopped again, on an
// interrupt nobody was asked about: the attempt after the answer asks it,
// without a run, and the next answer resumes the graph.
func TestServerAnswerTakenThenTheGraphAskedAgain(t *testing.T) {
	url := agentServer(t)
	env, rm := newEnv(t, url, "twice", nil)
	thread := freshThread(t)
	out := ask(t, env, rm, "start", thread)
	assert.Equal(t, "First question?", asked(t, env, out).Text)
	tid := rm.ThreadID(thread)
	resumeOutOfBand(t, url, tid, "twice", "one")
	out = answerAs(t, env, out, "one")
	q := asked(t, env, out)
	assert.Equal(t, "Second question?", q.Text)
	assert.Equal(t, 1, q.Index)
	assert.Len(t, runsOf(t, url, tid), 2, "asked without a run")
	out = answerAs(t, env, out, "two")
	require.True(t, out.OK(), "%+v", out.Err)
	assert.Contains(t, string(out.Message.Payload), "answers: one, two")
	assert.Len(t, runsOf(t, url, tid), 3)
}

// The resume run that went in before a restart was cancelled with its
// connection (on_disconnect "cancel"): the thread's run failed, but its
// interrupt is still the one the question asked about, so the answer
// resumes the graph again.
func TestServerAnswerAfterACancelledResume(t *testing.T) {
	url := agentServer(t)
	env, rm := newEnv(t, url, "hold", nil)
	thread := freshThread(t)
	out := ask(t, env, rm, "start", thread)
	assert.Equal(t, "Go on?", asked(t, env, out).Text)
	tid := rm.ThreadID(thread)
	// A resume that hangs, its client gone once the node runs.
	ctx, stop := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/threads/"+tid+"/runs/stream",
		strings.NewReader(`{"assistant_id":"hold","stream_mode":["custom"],"on_disconnect":"cancel","command":{"resume":"hang"}}`))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.Contains(sc.Text(), "hanging") {
	}
	stop()
	resp.Body.Close()

	out2 := answerAs(t, env, out, "go")
	require.True(t, out2.OK(), "%+v", out2.Err)
	assert.Contains(t, string(out2.Message.Payload), "went on: go")
	runs := runsOf(t, url, tid)
	require.Len(t, runs, 3)
	cancelled := 0
	for _, r := range runs {
		if r.Status == "error" || r.Status == "interrupted" {
			cancelled++
		}
	}
	assert.Equal(t, 1, cancelled, "the hanging run was cancelled: %+v", runs)
}

// A subtask cannot ask (its parent holds it while it delegates): an
// interrupt ends it with INPUT_REQUIRED and the interrupt's details, as
// before questions, and a follow-up request on the thread resumes it.
func TestServerSubtaskInterruptEndsWithInputRequired(t *testing.T) {
	url := agentServer(t)
	env, rm := newEnv(t, url, "approval", nil)
	var mu sync.Mutex
	var subErr *protocol.ErrorPayload
	env.Agent("agent:boss", []string{"skill:boss"}, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		sub, err := t.NewSubtask("", "order 7")
		if err != nil {
			return nil, err
		}
		sub.To = []protocol.Participant{{AgentID: rm.Card().AgentID}}
		_, err = t.Delegate(ctx, sub)
		var ep *protocol.ErrorPayload
		if !errors.As(err, &ep) {
			return nil, errors.New("the subtask did not fail with an error payload")
		}
		mu.Lock()
		subErr = ep
		mu.Unlock()
		return &router.Result{Payload: map[string]any{"subtask": string(ep.Code)}}, nil
	})
	req := env.Request("", "go", "skill:boss")
	req.ThreadID = freshThread(t)
	out, _ := env.Run(req)
	require.True(t, out.OK(), "%+v", out.Err)
	assert.Equal(t, 0, env.Router.Waiting())
	mu.Lock()
	ep := subErr
	mu.Unlock()
	require.NotNil(t, ep)
	assert.Equal(t, protocol.CodeInputRequired, ep.Code)
	assert.Equal(t, "Approve the refund for: order 7?", ep.Message)
	assert.Equal(t, rm.ThreadID(req.ThreadID), ep.Details["langgraph_thread_id"])
	assert.Len(t, ep.Details["interrupts"], 1)
	assert.Contains(t, ep.Details["not_asked"], "subtask")
	out2 := ask(t, env, rm, "yes", req.ThreadID)
	require.True(t, out2.OK(), "%+v", out2.Err)
	assert.Contains(t, string(out2.Message.Payload), "Human said: yes")
}
