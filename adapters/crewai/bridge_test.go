package crewai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/adapters/crewai"
	"github.com/clutchprotocol/clutch/egress"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

const crewToken = "amp-crew-token-0123456789"

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

var loopback = func() *egress.Policy {
	p, err := egress.New(&egress.Options{Allow: []string{"127.0.0.1"}})
	if err != nil {
		panic(err)
	}
	return p
}()

// fakeAMP is a deployed crew's API that answers with the recorded shapes
// of testdata (the OpenAPI examples and the webhook delivery), scripted
// per test. No crewAI runs here.
type fakeAMP struct {
	t   testing.TB
	srv *httptest.Server

	mu       sync.Mutex
	kickoffs []crewai.Kickoff
	resumes  []crewai.Resume
	statuses []json.RawMessage // answered in turn; the last one repeats
	polls    int
	// kickoffStatus, when set, answers /kickoff with it and the body.
	kickoffStatus int
	kickoffBody   []byte
	statusCode    int // answers /status with it (and statusBody) when set
	statusBody    []byte
	// deliveries are webhook bodies POSTed after a kickoff that asked for
	// them, with the execution_id set to the kickoff id.
	deliveries [][]byte
	delivered  chan int // the HTTP status of each delivery
	onResume   []json.RawMessage
	// resumeBodies are the bodies of POST /resume as they came.
	resumeBodies [][]byte
	// dropFirstResume takes the first resume and drops its connection
	// before answering; the resumes after it are answered as AMP answers
	// one for an execution that is not paused.
	dropFirstResume bool
	// redeliverOnResume posts the deliveries again when a resume comes,
	// before answering it, as AMP retrying them late would.
	redeliverOnResume bool
}

func examplesDoc(t testing.TB) (kickoff, status map[string]json.RawMessage, resume map[string]json.RawMessage) {
	var k struct {
		Response json.RawMessage `json:"response_200_example"`
	}
	require.NoError(t, json.Unmarshal(read(t, "amp_kickoff_examples.json"), &k))
	var s struct {
		Status map[string]json.RawMessage
		Resume struct{ Responses map[string]json.RawMessage }
	}
	require.NoError(t, json.Unmarshal(read(t, "amp_status_resume_examples.json"), &s))
	return map[string]json.RawMessage{"response": k.Response}, s.Status, s.Resume.Responses
}

const kickoffID = "abcd1234-5678-90ef-ghij-klmnopqrstuv" // the OpenAPI example's

func newFakeAMP(t testing.TB) *fakeAMP {
	f := &fakeAMP{t: t, delivered: make(chan int, 16)}
	k, _, _ := examplesDoc(t)
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+crewToken {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":"Unauthorized","message":"Invalid or missing bearer token"}`))
			return
		}
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		defer f.mu.Unlock()
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/kickoff":
			var kb crewai.Kickoff
			require.NoError(t, json.Unmarshal(body, &kb))
			f.kickoffs = append(f.kickoffs, kb)
			if f.kickoffStatus != 0 {
				w.WriteHeader(f.kickoffStatus)
				w.Write(f.kickoffBody)
				return
			}
			w.Write(k["response"])
			if kb.Webhooks != nil {
				go f.deliver(kb.Webhooks)
			}
		case r.Method == http.MethodGet && r.URL.Path == "/status/"+kickoffID:
			f.polls++
			if f.statusCode != 0 {
				w.WriteHeader(f.statusCode)
				w.Write(f.statusBody)
				return
			}
			w.Write(f.statuses[0])
			if len(f.statuses) > 1 {
				f.statuses = f.statuses[1:]
			}
		case r.Method == http.MethodPost && r.URL.Path == "/resume":
			var rb crewai.Resume
			require.NoError(t, json.Unmarshal(body, &rb))
			f.resumes = append(f.resumes, rb)
			f.resumeBodies = append(f.resumeBodies, body)
			if f.dropFirstResume && len(f.resumes) > 1 {
				w.WriteHeader(http.StatusBadRequest) // the resume API's documented 400
				w.Write([]byte(`{"error":"Invalid Request","message":"Execution is not in pending human input state"}`))
				return
			}
			f.statuses = f.onResume
			if f.redeliverOnResume {
				f.post(f.kickoffs[0].Webhooks, f.deliveries)
			}
			if f.dropFirstResume {
				panic(http.ErrAbortHandler) // taken, and the connection drops
			}
			_, _, res := examplesDoc(t)
			w.Write(res["resumed"])
		default:
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":"Not Found","message":"The requested resource was not found"}`))
		}
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// deliver posts the webhook bodies as AMP does, with the token the crew
// was given.
func (f *fakeAMP) deliver(h *crewai.Webhooks) {
	f.mu.Lock()
	ds := f.deliveries
	f.mu.Unlock()
	f.post(h, ds)
}

func (f *fakeAMP) post(h *crewai.Webhooks, ds [][]byte) {
	for _, d := range ds {
		d = bytes.ReplaceAll(d, []byte(`"crew-run-id"`), []byte(`"`+kickoffID+`"`))
		req, _ := http.NewRequest(http.MethodPost, h.URL, bytes.NewReader(d))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+h.Authentication.Token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			f.delivered <- 0
			continue
		}
		resp.Body.Close()
		f.delivered <- resp.StatusCode
	}
}

type bridgeEnv struct {
	*routertest.Env
	crew *crewai.Crew
	amp  *fakeAMP
}

func newBridge(t *testing.T, amp *fakeAMP, opts *crewai.CrewOptions, hook *hookServer) *bridgeEnv {
	env := routertest.New(t, nil)
	o := crewai.CrewOptions{}
	if opts != nil {
		o = *opts
	}
	o.BearerToken, o.Egress, o.Logger = crewToken, loopback, quiet
	if o.PollInterval == 0 {
		o.PollInterval = time.Millisecond
	}
	if hook != nil {
		o.WebhookURL = hook.srv.URL + "/crewai/events"
	}
	c, err := crewai.Register(context.Background(), env.Router, amp.srv.URL, &o)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	if hook != nil {
		h, err := c.WebhookHandler(nil)
		require.NoError(t, err)
		hook.set(h)
	}
	return &bridgeEnv{Env: env, crew: c, amp: amp}
}

// hookServer is the host's server where the Crew's webhook handler is
// mounted.
type hookServer struct {
	srv *httptest.Server
	mu  sync.Mutex
	h   http.Handler
}

func newHookServer(t testing.TB) *hookServer {
	hs := &hookServer{}
	hs.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hs.mu.Lock()
		h := hs.h
		hs.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.srv.Close)
	return hs
}

func (hs *hookServer) set(h http.Handler) { hs.mu.Lock(); hs.h = h; hs.mu.Unlock() }

func (b *bridgeEnv) ask(t *testing.T, payload any, thread string) (*router.Outcome, error) {
	req := b.Request("", payload)
	req.To = []protocol.Participant{{AgentID: b.crew.Card().AgentID}}
	if thread != "" {
		req.ThreadID = thread
	}
	return b.Run(req)
}

func TestCrewPolledStatus(t *testing.T) {
	amp := newFakeAMP(t)
	_, st, _ := examplesDoc(t)
	amp.statuses = []json.RawMessage{st["running"], st["running"], st["completed"]}
	b := newBridge(t, amp, nil, nil)

	inputs := map[string]any{"budget": "1000 USD", "duration": "7 days"}
	out, err := b.ask(t, inputs, "")
	require.NoError(t, err)
	var res string
	require.NoError(t, json.Unmarshal(out.Message.Payload, &res))
	assert.Equal(t, "Comprehensive travel itinerary for 7 days in Japan focusing on tech culture...", res)

	require.Len(t, amp.kickoffs, 1)
	assert.Equal(t, inputs, amp.kickoffs[0].Inputs)
	assert.Nil(t, amp.kickoffs[0].Webhooks, "no webhook without WebhookURL")
	assert.Equal(t, out.TaskID, amp.kickoffs[0].Meta["clutch_task_id"])

	// kicked off, then one progress for the running status (repeated
	// answers are not stored again), then the result.
	b.AssertTypes(out.TaskID, "task.request", "routing.decision", "task.accept", "task.progress", "task.progress", "task.result")
	prog := b.Events(store.Query{TaskID: out.TaskID, TypePrefix: "task.progress"})
	var p crewai.CrewProgress
	require.NoError(t, json.Unmarshal(prog[1].Payload, &p))
	assert.Equal(t, crewai.CrewProgress{KickoffID: kickoffID, Status: "running", CurrentTask: "research_task", Progress: json.RawMessage(`{"completed_tasks":1,"total_tasks":3}`)}, p)
}

func TestCrewErrors(t *testing.T) {
	_, st, _ := examplesDoc(t)
	cases := []struct {
		name  string
		setup func(*fakeAMP)
		code  protocol.Code
		msg   string
	}{
		{"status error", func(f *fakeAMP) { f.statuses = []json.RawMessage{st["error"]} }, protocol.CodeUnauthorized, "Task execution failed: Invalid API key for external service"},
		{"kickoff 422", func(f *fakeAMP) {
			f.kickoffStatus, f.kickoffBody = 422, []byte(`{"error":"Validation Error","message":"Missing required inputs","details":{"missing_inputs":["budget","interests"]}}`)
		}, protocol.CodeValidation, "Missing required inputs"},
		{"status 404", func(f *fakeAMP) { f.statusCode, f.statusBody = 404, st["not_found_404"] }, protocol.CodeNotFound, "No execution found"},
		{"status 500 five times", func(f *fakeAMP) {
			f.statusCode, f.statusBody = 500, []byte(`{"error":"Internal Server Error","message":"An unexpected error occurred"}`)
		}, protocol.CodeToolUnavailable, "An unexpected error occurred"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			amp := newFakeAMP(t)
			c.setup(amp)
			b := newBridge(t, amp, nil, nil)
			_, err := b.ask(t, map[string]any{"x": "y"}, "")
			var ep *protocol.ErrorPayload
			require.True(t, errors.As(err, &ep), "%v", err)
			assert.Equal(t, c.code, ep.Code)
			assert.Contains(t, ep.Message, c.msg)
			if c.code == protocol.CodeToolUnavailable {
				// Each attempt (the router retries a retryable error) gives
				// up after MaxPollFailures polls.
				assert.Equal(t, crewai.DefaultMaxPollFailures*len(amp.kickoffs), amp.polls)
				assert.Greater(t, len(amp.kickoffs), 1)
			}
		})
	}
}

func TestCrewBadToken(t *testing.T) {
	amp := newFakeAMP(t)
	env := routertest.New(t, nil)
	c, err := crewai.Register(context.Background(), env.Router, amp.srv.URL, &crewai.CrewOptions{BearerToken: "wrong-token", Egress: loopback, Logger: quiet})
	require.NoError(t, err)
	defer c.Close()
	req := env.Request("", "hello")
	req.To = []protocol.Participant{{AgentID: c.Card().AgentID}}
	_, err = env.Run(req)
	require.ErrorIs(t, err, protocol.CodeUnauthorized)
}

func TestCrewEgressDefaultRefusesLoopback(t *testing.T) {
	amp := newFakeAMP(t)
	_, err := crewai.NewCrew(amp.srv.URL, &crewai.CrewOptions{})
	require.ErrorIs(t, err, protocol.CodePolicyDenied)
	require.ErrorIs(t, err, crewai.ErrPolicy)
}

// The webhook stream: AMP posts the recorded delivery shape with the
// token the Crew gave it; the events land under the task, and the end
// comes from the status.
func TestCrewWebhookStream(t *testing.T) {
	amp := newFakeAMP(t)
	_, st, _ := examplesDoc(t)
	amp.deliveries = [][]byte{read(t, "amp_webhook_events_batch.json"), read(t, "amp_webhook_events_batch.json")} // the second is a retry
	hook := newHookServer(t)
	b := newBridge(t, amp, nil, hook)
	amp.statuses = []json.RawMessage{st["running"]}

	h := b.Submitted(t, "write the summary")
	// Both deliveries accepted, then the crew completes.
	assert.Equal(t, http.StatusAccepted, <-amp.delivered)
	assert.Equal(t, http.StatusAccepted, <-amp.delivered)
	amp.mu.Lock()
	amp.statuses = []json.RawMessage{st["completed"]}
	amp.mu.Unlock()
	out, err := b.Wait(h)
	require.NoError(t, err)

	require.NotNil(t, amp.kickoffs[0].Webhooks)
	assert.Equal(t, hook.srv.URL+"/crewai/events", amp.kickoffs[0].Webhooks.URL)
	assert.Equal(t, "bearer", amp.kickoffs[0].Webhooks.Authentication.Strategy)
	llm := b.Events(store.Query{TaskID: out.TaskID, TypePrefix: string(crewai.TypeLLMCall)})
	require.Len(t, llm, 1, "the retried delivery is dropped")
	assert.Contains(t, string(llm[0].Payload), `"model":"gpt-4"`)
}

func (b *bridgeEnv) Submitted(t *testing.T, payload any) *router.Handle {
	req := b.Request("", payload)
	req.To = []protocol.Participant{{AgentID: b.crew.Card().AgentID}}
	h, err := b.Router.Submit(context.Background(), req)
	require.NoError(t, err)
	return h
}

func TestCrewWebhookAuth(t *testing.T) {
	amp := newFakeAMP(t)
	hook := newHookServer(t)
	newBridge(t, amp, nil, hook)
	body := read(t, "amp_webhook_events_batch.json")
	post := func(auth string, b []byte, method string) (int, string) {
		req, _ := http.NewRequest(method, hook.srv.URL+"/crewai/events", bytes.NewReader(b))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		rb, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(rb)
	}
	code, _ := post("", body, http.MethodPost)
	assert.Equal(t, http.StatusUnauthorized, code, "no token")
	code, _ = post("Bearer my-secret-token", body, http.MethodPost)
	assert.Equal(t, http.StatusUnauthorized, code, "the documentation's placeholder token")
	code, _ = post("Bearer "+crewToken, body, http.MethodPost)
	assert.Equal(t, http.StatusUnauthorized, code, "the crew's AMP token is not the webhook's")
}

// The webhook's token is only known to the Crew: read it from a kickoff.
func TestCrewWebhookRefusesBadBody(t *testing.T) {
	amp := newFakeAMP(t)
	_, st, _ := examplesDoc(t)
	amp.statuses = []json.RawMessage{st["completed"]}
	hook := newHookServer(t)
	b := newBridge(t, amp, nil, hook)
	_, err := b.ask(t, "go", "")
	require.NoError(t, err)
	tok := amp.kickoffs[0].Webhooks.Authentication.Token
	for _, c := range []struct {
		body   string
		method string
		status int
		code   string
	}{
		{`{"events":[{"id":"e"}]}`, http.MethodPost, http.StatusBadRequest, "MISSING_FIELD"},
		{`{"events":`, http.MethodPost, http.StatusBadRequest, "INVALID_JSON"},
		{`{}`, http.MethodGet, http.StatusMethodNotAllowed, "UNSUPPORTED_TASK"},
		{string(read(t, "amp_webhook_events_batch.json")), http.MethodPost, http.StatusAccepted, ""},
	} {
		req, _ := http.NewRequest(c.method, hook.srv.URL+"/crewai/events", strings.NewReader(c.body))
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		rb, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, c.status, resp.StatusCode, c.body)
		if c.code != "" {
			assert.Contains(t, string(rb), `"code":"`+c.code+`"`)
		}
	}
}

// waitQuestion submits payload to the crew and waits for the task to stop
// on a question; it checks the task waits (Router.Waiting).
func (b *bridgeEnv) waitQuestion(t *testing.T, payload any) (*protocol.Message, *protocol.Question) {
	t.Helper()
	req := b.Request("", payload)
	req.To = []protocol.Participant{{AgentID: b.crew.Card().AgentID}}
	h, err := b.Router.Submit(context.Background(), req)
	require.NoError(t, err)
	out, err := b.Wait(h)
	require.ErrorIs(t, err, protocol.CodeInputRequired)
	require.NotNil(t, out.Question, "the task asks: %v", err)
	assert.Equal(t, protocol.TypeTaskQuestion, out.Type)
	assert.Equal(t, 1, b.Router.Waiting())
	return req, out.Question
}

// answer answers q as the requester of req and waits for the task's end.
func (b *bridgeEnv) answer(t *testing.T, req *protocol.Message, q *protocol.Question, value string) (*router.Outcome, error) {
	t.Helper()
	h, err := b.Router.Answer(context.Background(), q.ID, router.Answerer{AgentID: req.From.AgentID}, json.RawMessage(value))
	require.NoError(t, err)
	return b.Wait(h)
}

// Human input: the crew's stream says it waits for input; the task asks
// an approval question naming the paused execution and waits; the answer
// resumes that execution with POST /resume, and the task ends with the
// crew's output.
func TestCrewHumanInputResume(t *testing.T) {
	amp := newFakeAMP(t)
	_, st, _ := examplesDoc(t)
	amp.statuses = []json.RawMessage{st["running"]}
	amp.onResume = []json.RawMessage{st["running"], st["completed"]}
	amp.deliveries = [][]byte{[]byte(`{"events":[{"id":"ev-1","execution_id":"crew-run-id","timestamp":"2025-02-16T10:58:44.965Z","type":"flow_input_requested","data":{"task_id":"research_task","message":"Approve the research?"}}]}`)}
	hook := newHookServer(t)
	b := newBridge(t, amp, nil, hook)

	req, q := b.waitQuestion(t, map[string]any{"topic": "AI"})
	assert.Equal(t, protocol.QuestionApproval, q.Kind)
	assert.Equal(t, "Approve the research?", q.Text)
	assert.Equal(t, map[string]any{"crew": amp.srv.URL, "kickoff_id": kickoffID, "crew_task": "research_task", "event_id": "ev-1"}, q.Details)
	amp.mu.Lock()
	assert.Empty(t, amp.resumes, "nothing resumed before the answer")
	amp.mu.Unlock()

	out, err := b.answer(t, req, q, `{"decision":"approve","reason":"Excellent research! Proceed to the next task."}`)
	require.NoError(t, err)
	assert.Equal(t, protocol.TypeTaskResult, out.Type)
	assert.Contains(t, string(out.Message.Payload), "Comprehensive travel itinerary")
	assert.Equal(t, 0, b.Router.Waiting())
	require.Len(t, amp.kickoffs, 1, "the answer resumes, it does not kick off again")
	require.Len(t, amp.resumeBodies, 1)
	assert.JSONEq(t, `{"execution_id":"`+kickoffID+`","task_id":"research_task","human_feedback":"Excellent research! Proceed to the next task.","is_approve":true}`, string(amp.resumeBodies[0]))
	answers := b.Events(store.Query{TaskID: out.TaskID, TypePrefix: string(protocol.TypeTaskAnswer)})
	require.Len(t, answers, 1)
	assert.Equal(t, req.From.AgentID, answers[0].From.AgentID)
}

// A flow's @human_feedback request: the question shows the message and
// the output to review, and names the flow method as the crewAI task. A
// waiting task can be cancelled; nothing is resumed then.
func TestCrewFeedbackRequested(t *testing.T) {
	amp := newFakeAMP(t)
	_, st, _ := examplesDoc(t)
	amp.statuses = []json.RawMessage{st["running"]}
	amp.deliveries = [][]byte{[]byte(`{"events":[{"id":"ev-7","execution_id":"crew-run-id","timestamp":"2025-02-16T10:58:44.965Z","type":"human_feedback_requested","data":{"flow_name":"ReviewFlow","method_name":"review","message":"Review this draft:","output":"Draft: AI agents are revolutionizing development..."}}]}`)}
	hook := newHookServer(t)
	b := newBridge(t, amp, nil, hook)

	_, q := b.waitQuestion(t, "go")
	assert.Equal(t, "Review this draft:\n\nDraft: AI agents are revolutionizing development...", q.Text)
	assert.Equal(t, "review", q.Details["crew_task"])
	assert.Equal(t, "ev-7", q.Details["event_id"])
	taskID, _, _ := protocol.ParseQuestionID(q.ID)
	h, err := b.Router.Cancel(taskID, "not needed")
	require.NoError(t, err)
	out, _ := b.Wait(h)
	assert.Equal(t, protocol.TypeTaskCancel, out.Type)
	assert.Equal(t, 0, b.Router.Waiting())
	amp.mu.Lock()
	assert.Empty(t, amp.resumes)
	amp.mu.Unlock()
}

// AMP delivers the pause event again, late: while the task waits, and as
// the answer resumes the execution. Neither is a new pause: the task ends
// with the crew's output after one question.
func TestCrewPauseRedelivered(t *testing.T) {
	amp := newFakeAMP(t)
	_, st, _ := examplesDoc(t)
	amp.statuses = []json.RawMessage{st["running"]}
	amp.onResume = []json.RawMessage{st["running"], st["completed"]}
	amp.deliveries = [][]byte{[]byte(`{"events":[{"id":"ev-1","execution_id":"crew-run-id","timestamp":"2025-02-16T10:58:44.965Z","type":"flow_input_requested","data":{"task_id":"research_task","message":"Approve the research?"}}]}`)}
	amp.redeliverOnResume = true
	hook := newHookServer(t)
	b := newBridge(t, amp, nil, hook)

	req, q := b.waitQuestion(t, "go")
	assert.Equal(t, http.StatusAccepted, <-amp.delivered)
	amp.mu.Lock()
	hooks := amp.kickoffs[0].Webhooks
	amp.mu.Unlock()
	amp.deliver(hooks) // while the task waits: nobody follows the execution
	assert.Equal(t, http.StatusAccepted, <-amp.delivered)

	out, err := b.answer(t, req, q, `{"decision":"approve"}`)
	require.NoError(t, err)
	assert.Equal(t, protocol.TypeTaskResult, out.Type)
	assert.Equal(t, http.StatusAccepted, <-amp.delivered)
	require.Len(t, amp.resumeBodies, 1)
	assert.Len(t, b.Events(store.Query{TaskID: out.TaskID, TypePrefix: string(protocol.TypeTaskQuestion)}), 1)
}

// crewProcess is one run of a program whose router, on a boltstore file,
// has the crew registered.
type crewProcess struct {
	st *boltstore.Store
	r  *router.Router
	c  *crewai.Crew
}

func startCrewProcess(t *testing.T, path string, amp *fakeAMP) *crewProcess {
	t.Helper()
	ctx := context.Background()
	st, err := boltstore.Open(path, &boltstore.Options{NoSync: true})
	require.NoError(t, err)
	reg, err := registry.Open(ctx, st, nil)
	require.NoError(t, err)
	r, err := router.New(st, reg, &router.Options{Logger: quiet, MaxAttempts: 1})
	require.NoError(t, err)
	c, err := crewai.Register(ctx, r, amp.srv.URL, &crewai.CrewOptions{BearerToken: crewToken, Egress: loopback, Logger: quiet, PollInterval: time.Millisecond})
	require.NoError(t, err)
	p := &crewProcess{st: st, r: r, c: c}
	t.Cleanup(p.stop)
	return p
}

func (p *crewProcess) stop() {
	p.r.Close()
	p.c.Close()
	p.st.Close()
}

// The question outlives the process: a new process on the same store,
// after Recover, takes the answer and resumes the execution the first
// process asked for (the question's Details; nothing in memory).
func TestCrewAskSurvivesRestart(t *testing.T) {
	amp := newFakeAMP(t)
	_, st, _ := examplesDoc(t)
	amp.statuses = []json.RawMessage{json.RawMessage(`{"status":"pending_human_input","current_task":"research_task"}`)}
	amp.onResume = []json.RawMessage{st["completed"]}
	path := filepath.Join(t.TempDir(), "clutch.db")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	p1 := startCrewProcess(t, path, amp)
	req, err := p1.r.NewRequest("agent:test", "", "go")
	require.NoError(t, err)
	req.To = []protocol.Participant{{AgentID: p1.c.Card().AgentID}}
	h, err := p1.r.Submit(ctx, req)
	require.NoError(t, err)
	out, err := h.Wait(ctx)
	require.ErrorIs(t, err, protocol.CodeInputRequired)
	require.NotNil(t, out.Question)
	q := out.Question
	require.Equal(t, 1, p1.r.Waiting())
	p1.stop()

	p2 := startCrewProcess(t, path, amp)
	n, err := p2.r.Recover(ctx)
	require.NoError(t, err)
	assert.Equal(t, 0, n, "a waiting task stays waiting")
	require.Equal(t, 1, p2.r.Waiting())
	h, err = p2.r.Answer(ctx, q.ID, router.Answerer{AgentID: req.From.AgentID}, json.RawMessage(`{"decision":"approve","reason":"fine"}`))
	require.NoError(t, err)
	out, err = h.Wait(ctx)
	require.NoError(t, err)
	assert.Equal(t, protocol.TypeTaskResult, out.Type)
	assert.Contains(t, string(out.Message.Payload), "Comprehensive travel itinerary")
	amp.mu.Lock()
	defer amp.mu.Unlock()
	require.Len(t, amp.kickoffs, 1)
	require.Len(t, amp.resumeBodies, 1)
	assert.JSONEq(t, `{"execution_id":"`+kickoffID+`","task_id":"research_task","human_feedback":"fine","is_approve":true}`, string(amp.resumeBodies[0]))
}

// A status naming a pause (no stream) asks too; a rejection resumes the
// execution with is_approve false and the reason as the feedback (AMP
// retries the task with it).
func TestCrewStatusPauseReject(t *testing.T) {
	amp := newFakeAMP(t)
	_, st, _ := examplesDoc(t)
	amp.statuses = []json.RawMessage{st["running"], json.RawMessage(`{"status":"pending_human_input","current_task":"analysis_task","message":"Review the analysis"}`)}
	amp.onResume = []json.RawMessage{st["completed"]}
	b := newBridge(t, amp, nil, nil)

	req, q := b.waitQuestion(t, "analyse")
	assert.Equal(t, "Review the analysis", q.Text)
	assert.Equal(t, map[string]any{"crew": amp.srv.URL, "kickoff_id": kickoffID, "crew_task": "analysis_task"}, q.Details)

	out, err := b.answer(t, req, q, `{"decision":"reject","reason":"Please include more quantitative data and cite your sources."}`)
	require.NoError(t, err)
	assert.Equal(t, protocol.TypeTaskResult, out.Type)
	require.Len(t, amp.resumeBodies, 1)
	assert.JSONEq(t, `{"execution_id":"`+kickoffID+`","task_id":"analysis_task","human_feedback":"Please include more quantitative data and cite your sources.","is_approve":false}`, string(amp.resumeBodies[0]))
}

// The execution pauses twice: each pause is a new question of the same
// task, and each answer resumes the execution once.
func TestCrewPausesTwice(t *testing.T) {
	amp := newFakeAMP(t)
	_, st, _ := examplesDoc(t)
	pause := func(task string) json.RawMessage {
		return json.RawMessage(`{"status":"pending_human_input","current_task":"` + task + `"}`)
	}
	amp.statuses = []json.RawMessage{pause("research_task")}
	amp.onResume = []json.RawMessage{st["running"], pause("planning_task")}
	b := newBridge(t, amp, nil, nil)

	req, q := b.waitQuestion(t, "plan")
	assert.Equal(t, "research_task", q.Details["crew_task"])
	h, err := b.Router.Answer(context.Background(), q.ID, router.Answerer{AgentID: req.From.AgentID}, json.RawMessage(`{"decision":"approve"}`))
	require.NoError(t, err)
	out, err := b.Wait(h)
	require.ErrorIs(t, err, protocol.CodeInputRequired)
	require.NotNil(t, out.Question)
	q2 := out.Question
	assert.Equal(t, 1, q2.Index, "a new question, not the first one again")
	assert.Equal(t, "the crew waits for human feedback", q2.Text)
	assert.Equal(t, "planning_task", q2.Details["crew_task"])

	amp.mu.Lock()
	amp.onResume = []json.RawMessage{st["completed"]}
	amp.mu.Unlock()
	out, err = b.answer(t, req, q2, `{"decision":"edit","reason":"shorter","arguments":"Two days in Tokyo only."}`)
	require.NoError(t, err)
	assert.Equal(t, protocol.TypeTaskResult, out.Type)
	require.Len(t, amp.kickoffs, 1)
	require.Len(t, amp.resumeBodies, 2)
	assert.JSONEq(t, `{"execution_id":"`+kickoffID+`","task_id":"research_task","human_feedback":"","is_approve":true}`, string(amp.resumeBodies[0]))
	assert.JSONEq(t, `{"execution_id":"`+kickoffID+`","task_id":"planning_task","human_feedback":"shorter\n\nTwo days in Tokyo only.","is_approve":false}`, string(amp.resumeBodies[1]))
}

// The crash window: the resume reached AMP but its answer did not reach
// the bridge (a dropped connection: retryable). The router runs the task
// again; AMP refuses the second resume (the execution is not paused any
// more), and the bridge follows the execution to its end instead of
// failing.
func TestCrewResumeTakenTwice(t *testing.T) {
	amp := newFakeAMP(t)
	_, st, _ := examplesDoc(t)
	amp.statuses = []json.RawMessage{json.RawMessage(`{"status":"pending_human_input","current_task":"research_task"}`)}
	amp.onResume = []json.RawMessage{st["running"], st["completed"]}
	amp.dropFirstResume = true
	b := newBridge(t, amp, nil, nil)

	req, q := b.waitQuestion(t, "go")
	out, err := b.answer(t, req, q, `{"decision":"approve","reason":"ok"}`)
	require.NoError(t, err)
	assert.Equal(t, protocol.TypeTaskResult, out.Type)
	assert.Contains(t, string(out.Message.Payload), "Comprehensive travel itinerary")
	require.Len(t, amp.resumeBodies, 2, "the retry sent the resume again")
	assert.Equal(t, amp.resumeBodies[0], amp.resumeBodies[1])
	require.Len(t, amp.kickoffs, 1)
	var taken bool
	for _, m := range b.Events(store.Query{TaskID: out.TaskID, TypePrefix: "task.progress"}) {
		var p crewai.CrewProgress
		require.NoError(t, json.Unmarshal(m.Payload, &p))
		taken = taken || p.Status == "resume_taken"
	}
	assert.True(t, taken, "the refused resume is recorded")
}

// A subtask cannot ask (docs/protocol.md §2.7): a pause ends it with
// INPUT_REQUIRED naming the paused execution, for the task that delegated.
func TestCrewSubtaskPause(t *testing.T) {
	amp := newFakeAMP(t)
	amp.statuses = []json.RawMessage{json.RawMessage(`{"status":"pending_human_input","current_task":"research_task"}`)}
	b := newBridge(t, amp, nil, nil)
	crew := b.crew.Card().AgentID
	var got error
	b.Agent("agent:boss", []string{"skill:boss"}, func(ctx context.Context, t *router.Task) (*router.Result, error) {
		sub, err := t.NewSubtask("", "go")
		if err != nil {
			return nil, err
		}
		sub.To = []protocol.Participant{{AgentID: crew}}
		_, got = t.Delegate(ctx, sub)
		return &router.Result{Payload: "done"}, nil
	})
	_, err := b.Run(b.Request("", "x", "skill:boss"))
	require.NoError(t, err)
	var ep *protocol.ErrorPayload
	require.True(t, errors.As(got, &ep), "%v", got)
	assert.Equal(t, protocol.CodeInputRequired, ep.Code)
	assert.Equal(t, map[string]any{"crew": amp.srv.URL, "kickoff_id": kickoffID, "crew_task": "research_task"}, ep.Details)
	assert.Equal(t, 0, b.Router.Waiting())
}

var (
	fuzzOnce  sync.Once
	fuzzCrew  *crewai.Crew
	fuzzHook  http.Handler
	fuzzToken = ""
)

// postWebhook serves body to a Crew's webhook handler with the token AMP
// would carry, in process.
func postWebhook(t *testing.T, body []byte) int {
	fuzzOnce.Do(func() {
		var err error
		fuzzCrew, err = crewai.NewCrew("https://crew.example.com", &crewai.CrewOptions{WebhookURL: "https://host.example.com/hook", Logger: quiet})
		if err != nil {
			panic(err)
		}
		if fuzzHook, err = fuzzCrew.WebhookHandler(nil); err != nil {
			panic(err)
		}
		fuzzToken = crewai.WebhookToken(fuzzCrew)
	})
	req := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+fuzzToken)
	w := httptest.NewRecorder()
	fuzzHook.ServeHTTP(w, req)
	if w.Code != http.StatusAccepted && !json.Valid(w.Body.Bytes()) {
		t.Fatalf("error body is not JSON: %q", w.Body.String())
	}
	return w.Code
}

// A task past the card's max_runtime_sec times out; the bridge stops
// following the execution (AMP has no cancel call): the Env fails the test
// at its end unless the handler has returned.
func TestCrewTimeoutStopsFollowing(t *testing.T) {
	amp := newFakeAMP(t)
	_, st, _ := examplesDoc(t)
	amp.statuses = []json.RawMessage{st["running"]}
	b := newBridge(t, amp, &crewai.CrewOptions{Limits: &protocol.Limits{MaxRuntimeSec: 1}, PollInterval: 10 * time.Millisecond}, nil)
	out, err := b.ask(t, "go", "")
	require.ErrorIs(t, err, protocol.CodeTimeout)
	assert.Equal(t, protocol.TypeTaskTimeout, out.Type)
}
