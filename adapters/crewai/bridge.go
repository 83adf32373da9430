package crewai

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/internal/bound"
	"github.com/clutchprotocol/clutch/adapters/internal/rawjson"
	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/egress"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/internal/httpjson"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
)

// Defaults of a zero CrewOptions.
const (
	DefaultCrewPollInterval = 2 * time.Second
	DefaultRequestTimeout   = 30 * time.Second
	DefaultMaxPollFailures  = 5
	DefaultCrewMaxRuntime   = 3600
	DefaultMaxResponseBytes = 16 << 20
	DefaultMaxWebhookBytes  = 8 << 20
	maxEarlyRuns            = 1024 // executions whose webhook events came before their kickoff answer
	maxEarlyEvents          = 256
	maxEarlyBytes           = 16 << 20 // payload bytes of all early events
)

// DefaultWebhookEvents are the event types a Crew asks AMP to stream when
// CrewOptions.WebhookURL is set.
var DefaultWebhookEvents = []string{
	"crew_kickoff_started", "crew_kickoff_completed", "crew_kickoff_failed",
	"task_started", "task_completed", "task_failed",
	"agent_execution_started", "agent_execution_completed", "agent_execution_error",
	"tool_usage_started", "tool_usage_finished", "tool_usage_error",
	"llm_call_started", "llm_call_completed", "llm_call_failed",
	"flow_input_requested",
}

// CrewOptions configures a Crew. Nil means defaults; zero fields take
// defaults.
type CrewOptions struct {
	// AgentID is the Clutch agent id of the crew; "agent:crewai:" and the
	// crew URL's host name when "".
	AgentID string
	// Name is the card's display name; the host name when "".
	Name string
	// BearerToken is the crew's AMP token, sent as "Authorization:
	// Bearer <token>" on every request to the crew.
	BearerToken string
	// HTTPClient makes the requests; its Transport, when set, must be an
	// *http.Transport (cloned to dial through Egress). Nil: a client of
	// its own.
	HTTPClient *http.Client
	// Egress is the policy every connection to the crew is dialled
	// through (package egress, docs/protocol.md §6.6); egress.Default()
	// when nil: public addresses only.
	Egress *egress.Policy
	// Capabilities of the card; [{id: "crewai:kickoff"}] when empty.
	Capabilities []protocol.Capability
	// Limits of the card; nil means {max_runtime_sec: DefaultCrewMaxRuntime}.
	Limits *protocol.Limits
	// Security of the card; nil means {network: "open"}.
	Security *protocol.CardSecurity
	// Inputs maps a task.request to the kickoff's inputs; KickoffInputs
	// when nil.
	Inputs func(*protocol.Message) (map[string]any, error)
	// ResultType is the payload_type of the task.result the crew's output
	// becomes; "" sends an untyped result.
	ResultType string
	// PollInterval is the wait between GET /status calls;
	// DefaultCrewPollInterval when 0.
	PollInterval time.Duration
	// RequestTimeout bounds each HTTP call; DefaultRequestTimeout when 0.
	RequestTimeout time.Duration
	// MaxPollFailures is how many failed status calls in a row end the
	// task (with the last, retryable, error); DefaultMaxPollFailures when 0.
	MaxPollFailures int
	// MaxResponseBytes bounds a response body; DefaultMaxResponseBytes
	// when 0.
	MaxResponseBytes int64
	// WebhookURL, when set, is the public URL at which the host serves
	// WebhookHandler: every kickoff asks AMP to stream WebhookEvents there
	// (realtime), authenticated with a bearer token the Crew makes.
	// Status polling goes on besides, as the fallback.
	WebhookURL string
	// WebhookEvents are the streamed event types; DefaultWebhookEvents
	// when empty.
	WebhookEvents []string
	// Logger receives diagnostics; slog.Default() when nil.
	Logger *slog.Logger
}

func (o *CrewOptions) setDefaults(base *url.URL) error {
	if o.AgentID == "" {
		o.AgentID = "agent:crewai:" + adapters.Slug(base.Hostname())
	}
	if !strings.HasPrefix(o.AgentID, protocol.PrefixAgent) || len(o.AgentID) == len(protocol.PrefixAgent) {
		return optErr("AgentID " + o.AgentID + " must start with agent:")
	}
	if o.Name == "" {
		o.Name = base.Hostname()
	}
	if o.PollInterval < 0 || o.RequestTimeout < 0 || o.MaxPollFailures < 0 || o.MaxResponseBytes < 0 {
		return optErr("durations and limits must not be negative")
	}
	if o.PollInterval == 0 {
		o.PollInterval = DefaultCrewPollInterval
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	if o.MaxPollFailures == 0 {
		o.MaxPollFailures = DefaultMaxPollFailures
	}
	if o.MaxResponseBytes == 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.Limits == nil {
		o.Limits = &protocol.Limits{MaxRuntimeSec: DefaultCrewMaxRuntime}
	}
	sec := protocol.CardSecurity{Network: "open"}
	if o.Security != nil {
		sec = *o.Security
		if sec.Network == "" {
			sec.Network = "open"
		}
	}
	o.Security = &sec
	if len(o.Capabilities) == 0 {
		o.Capabilities = []protocol.Capability{{ID: "crewai:kickoff"}}
	}
	if o.Inputs == nil {
		o.Inputs = KickoffInputs
	}
	if o.WebhookURL != "" {
		u, err := url.Parse(o.WebhookURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return optErr("WebhookURL " + o.WebhookURL + " is not an absolute http(s) URL")
		}
	}
	if len(o.WebhookEvents) == 0 {
		o.WebhookEvents = DefaultWebhookEvents
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Egress == nil {
		o.Egress = egress.Default()
	}
	return nil
}

func optErr(detail string) error { return coded.Wrap(ErrOptions, detail, nil) }

// Crew is a crew deployed on crewAI AMP (its /kickoff, /status and
// /resume API) seen as a Clutch agent: Card, and Handle, a router.Handler
// that runs each task as a kickoff. Register wires both into a router;
// WebhookHandler receives the crew's event stream. A Crew is safe for
// concurrent use.
type Crew struct {
	base   string
	opts   CrewOptions
	card   *protocol.AgentCard
	hc     *http.Client
	owned  *http.Transport
	token  string // the bearer token AMP's webhook deliveries carry
	tr     *Adapter
	closed atomic.Bool

	mu      sync.Mutex
	watches map[string]chan *protocol.Message // kickoff id -> the task following it
	early   map[string][]*protocol.Message    // webhook events of kickoffs not followed yet
	earlyN  int                               // their payload bytes
}

// Register makes a Crew for the deployed crew at baseURL and registers it
// with r as an in-process agent whose handler kicks the crew off: routable
// like any local agent, without heartbeats. Close the Crew when done.
func Register(ctx context.Context, r *router.Router, baseURL string, opts *CrewOptions) (*Crew, error) {
	if r == nil {
		return nil, optErr("nil router")
	}
	c, err := NewCrew(baseURL, opts)
	if err != nil {
		return nil, err
	}
	if err := r.Register(ctx, c.Card(), c.Handle); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// NewCrew returns a Crew for the deployed crew at baseURL (the crew's own
// URL, under which /kickoff, /status/{id} and /resume are), without
// registering it anywhere. It makes no request.
func NewCrew(baseURL string, opts *CrewOptions) (*Crew, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, optErr("url " + baseURL + " is not an absolute http(s) URL")
	}
	var o CrewOptions
	if opts != nil {
		o = *opts
	}
	if err := o.setDefaults(u); err != nil {
		return nil, err
	}
	policy, err := o.Egress.Network(o.Security.Network)
	if err != nil {
		return nil, optErr("Security.Network: " + err.Error())
	}
	if err := policy.PrecheckURL(baseURL); err != nil {
		return nil, coded.Wrap(ErrPolicy, "the egress policy refuses "+baseURL, err)
	}
	hc, base, err := policy.Client(o.HTTPClient)
	if err != nil {
		return nil, optErr("HTTPClient: " + err.Error())
	}
	var tok [32]byte
	if _, err := rand.Read(tok[:]); err != nil {
		return nil, err
	}
	c := &Crew{base: strings.TrimRight(baseURL, "/"), opts: o, hc: hc, owned: base, token: hex.EncodeToString(tok[:]),
		tr: New(nil), watches: map[string]chan *protocol.Message{}, early: map[string][]*protocol.Message{}}
	c.card = &protocol.AgentCard{V: protocol.Version, AgentID: o.AgentID, Display: &protocol.Display{Name: o.Name, Desc: "crewAI crew at " + c.base},
		Endpoints: map[string]protocol.Endpoint{"crewai": {URL: c.base}}, Capabilities: o.Capabilities, Limits: o.Limits, Security: o.Security}
	if err := c.card.Validate(); err != nil {
		return nil, optErr("the card is not valid: " + err.Error())
	}
	return c, nil
}

// Card returns the crew's Clutch AgentCard. Do not modify it.
func (c *Crew) Card() *protocol.AgentCard { return c.card }

// Close releases the Crew's connections; Handle then fails every task with
// TOOL_UNAVAILABLE. Closing twice is harmless.
func (c *Crew) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	c.owned.CloseIdleConnections()
	return nil
}

// CrewProgress is the payload of the task.progress events a Crew stores:
// a status poll that changed, a streamed crewAI event that is not a tool
// or LLM event, and the bridge's own steps: Status "kicked_off" after the
// kickoff, AMP's answer to a resume ("resumed", "retrying"), or
// "resume_taken" when AMP refused a resume because the execution was not
// paused any more (Payload {"message"} says why).
type CrewProgress struct {
	KickoffID   string          `json:"kickoff_id"`
	Status      string          `json:"status,omitempty"`       // the AMP status (running, resumed, ...)
	CurrentTask string          `json:"current_task,omitempty"` // from the status
	Progress    json.RawMessage `json:"progress,omitempty"`     // from the status
	Event       string          `json:"event,omitempty"`        // the crewAI event type
	Type        protocol.Type   `json:"type,omitempty"`         // what the translator made of it
	CrewTask    string          `json:"crew_task,omitempty"`    // its crewAI task id
	Agent       string          `json:"agent,omitempty"`        // its crewAI agent role
	Payload     json.RawMessage `json:"payload,omitempty"`      // the translated payload
}

// Handle is the router.Handler of the crew. A first run kicks the crew
// off (POST /kickoff with the request's inputs). The execution is then
// followed by status polling and, with WebhookURL, its event stream,
// until it completes (the output is the Result), fails (a wire error),
// or pauses for a person: then the task asks (router.Task.Ask) an
// approval question whose Details name the paused work (crew,
// kickoff_id, crew_task) and waits, holding nothing. When the question
// is answered the router runs Handle again: router.Task.Resumed gives
// the question and its answer, and Handle resumes that execution (POST
// /resume, see ResumeOfApproval) and follows it again, instead of
// kicking off anew. ctx ending stops following: AMP has no cancel call,
// so the crew's own run goes on.
func (c *Crew) Handle(ctx context.Context, t *router.Task) (*router.Result, error) {
	if c.closed.Load() {
		return nil, router.Fail(protocol.CodeToolUnavailable, "the crew bridge for "+c.base+" is closed", false, nil)
	}
	req := t.Request()
	q, answer, err := t.Resumed(ctx)
	if err != nil {
		return nil, err
	}
	p, err := c.pausedBy(q)
	if err != nil {
		return nil, err
	}
	if p != nil {
		// Followed from before the resume, so that no streamed event of
		// the resumed execution is missed; what was streamed while nobody
		// followed is from before the pause.
		f := &follow{c: c, t: t, kid: p.kickoff, seen: map[string]bool{}}
		if p.event != "" {
			f.seen[p.event] = true // a redelivery of the pause is not a new one
		}
		c.forgetEarly(p.kickoff)
		ch := c.watch(p.kickoff)
		defer c.unwatch(p.kickoff)
		if err := c.resume(ctx, t, p, answer); err != nil {
			return nil, err
		}
		return f.run(ctx, ch)
	}
	inputs, err := c.opts.Inputs(req)
	if err != nil {
		return nil, router.Fail(protocol.CodeInvalidField, "crewai: inputs: "+err.Error(), false, nil)
	}
	k := Kickoff{Inputs: inputs, Meta: map[string]any{"clutch_task_id": req.TaskID, "clutch_run_id": req.RunID}}
	if c.opts.WebhookURL != "" {
		k.Webhooks = &Webhooks{Events: c.opts.WebhookEvents, URL: c.opts.WebhookURL, Realtime: true,
			Authentication: &WebhookCredentials{Strategy: "bearer", Token: c.token}}
	}
	var ans KickoffResponse
	if err := c.call(ctx, http.MethodPost, "/kickoff", k, &ans); err != nil {
		return nil, err
	}
	if ans.KickoffID == "" || len(ans.KickoffID) > maxOutsideID {
		return nil, router.Fail(protocol.CodeToolFailed, "crewai: the kickoff answer has no usable kickoff_id", false, map[string]any{"crew": c.base})
	}
	kid := ans.KickoffID
	if err := t.Progress(ctx, CrewProgress{KickoffID: kid, Status: "kicked_off"}); err != nil {
		return nil, err
	}
	f := &follow{c: c, t: t, kid: kid, seen: map[string]bool{}}
	ch := c.watch(kid)
	defer c.unwatch(kid)
	return f.run(ctx, ch)
}

// paused is an execution paused for a person, as the Details of the
// question the task asked name it.
type paused struct{ crew, kickoff, task, event string }

// The Details keys of a Crew's question.
const (
	detailCrew     = "crew"       // the crew's URL
	detailKickoff  = "kickoff_id" // the paused execution
	detailCrewTask = "crew_task"  // the crewAI task that waits
	detailEvent    = "event_id"   // the streamed event that said so, if one did
)

// pausedBy returns the execution the answered question q was asked for:
// nil when q is nil or was not asked by a Crew (a middleware's approval),
// an error when it names another crew's execution.
func (c *Crew) pausedBy(q *protocol.Question) (*paused, error) {
	if q == nil {
		return nil, nil
	}
	kid, _ := q.Details[detailKickoff].(string)
	if kid == "" {
		return nil, nil
	}
	p := &paused{kickoff: kid}
	p.crew, _ = q.Details[detailCrew].(string)
	p.task, _ = q.Details[detailCrewTask].(string)
	p.event, _ = q.Details[detailEvent].(string)
	if p.crew != "" && p.crew != c.base {
		return nil, router.Fail(protocol.CodeConflict, "crewai: question "+q.ID+" was asked for an execution of the crew at "+p.crew+", not "+c.base, false,
			map[string]any{detailCrew: p.crew, detailKickoff: kid, "question_id": q.ID})
	}
	return p, nil
}

// resume sends the answer to the paused execution p (POST /resume). An
// AMP answer that the execution is not waiting for input means an earlier
// run sent this resume already (its process died before the outcome was
// stored): the execution is followed as it is.
func (c *Crew) resume(ctx context.Context, t *router.Task, p *paused, answer json.RawMessage) error {
	r, err := ResumeOfApproval(p.kickoff, p.task, answer)
	if err != nil {
		return err
	}
	var ans Status
	if err := c.call(ctx, http.MethodPost, "/resume", r, &ans); err != nil {
		if !resumeTaken(err) {
			return err
		}
		c.opts.Logger.InfoContext(ctx, "crewai: the execution no longer waits for input: following it", "kickoff_id", p.kickoff, "task", t.ID(), "err", err)
		return t.Progress(ctx, CrewProgress{KickoffID: p.kickoff, Status: "resume_taken", Payload: mustJSON(map[string]any{"message": err.Error()})})
	}
	return t.Progress(ctx, CrewProgress{KickoffID: p.kickoff, Status: ans.Status, Payload: mustJSON(map[string]any{"message": ans.Message})})
}

// resumeTaken reports whether a failed POST /resume is AMP's refusal of
// an execution that is not paused ("Execution is not in pending human
// input state", HTTP 400 or 409).
func resumeTaken(err error) bool {
	var ep *protocol.ErrorPayload
	if !errors.As(err, &ep) {
		return false
	}
	s, _ := ep.Details["http_status"].(int)
	return (s == http.StatusBadRequest || s == http.StatusConflict) && strings.Contains(strings.ToLower(ep.Message), "not in pending")
}

func (c *Crew) watch(kid string) chan *protocol.Message {
	ch := make(chan *protocol.Message, maxEarlyEvents)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, m := range c.early[kid] {
		ch <- m
		c.earlyN -= len(m.Payload)
	}
	delete(c.early, kid)
	c.watches[kid] = ch
	return ch
}

// forgetEarly drops the streamed events of kid that no task followed.
func (c *Crew) forgetEarly(kid string) {
	c.mu.Lock()
	for _, m := range c.early[kid] {
		c.earlyN -= len(m.Payload)
	}
	delete(c.early, kid)
	c.mu.Unlock()
}

func (c *Crew) unwatch(kid string) {
	c.mu.Lock()
	delete(c.watches, kid)
	c.mu.Unlock()
}

// follow is one followed execution.
type follow struct {
	c    *Crew
	t    *router.Task
	kid  string
	last []byte // the last status body stored as progress
	seen map[string]bool
}

func (f *follow) run(ctx context.Context, events <-chan *protocol.Message) (*router.Result, error) {
	tick := time.NewTicker(f.c.opts.PollInterval)
	defer tick.Stop()
	failures := 0
	for {
		// Streamed events that arrived first are recorded before a poll
		// can end the task.
	drain:
		for {
			select {
			case m := <-events:
				if res, done, err := f.absorb(ctx, m); done {
					return res, err
				}
			default:
				break drain
			}
		}
		// Poll at once, then at every tick; streamed events in between.
		res, done, err := f.poll(ctx)
		if done {
			// Events streamed before the end are recorded before it.
			for {
				select {
				case m := <-events:
					_ = f.record(ctx, m) // the task ends with res either way
					continue
				default:
				}
				break
			}
			return res, err
		}
		if err != nil {
			failures++
			if failures >= f.c.opts.MaxPollFailures {
				return nil, err
			}
		} else {
			failures = 0
		}
	wait:
		for {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case m := <-events:
				if res, done, err := f.absorb(ctx, m); done {
					return res, err
				}
			case <-tick.C:
				break wait
			}
		}
	}
}

// poll reads the status once: done with the outcome when the execution
// ended or paused; a non-nil error without done is a failed call.
func (f *follow) poll(ctx context.Context) (*router.Result, bool, error) {
	var raw json.RawMessage
	if err := f.c.call(ctx, http.MethodGet, "/status/"+url.PathEscape(f.kid), nil, &raw); err != nil {
		if ctx.Err() != nil {
			return nil, true, ctx.Err()
		}
		var ep *protocol.ErrorPayload
		if errors.As(err, &ep) && !ep.Retryable {
			return nil, true, err
		}
		return nil, false, err
	}
	var st Status
	if err := json.Unmarshal(raw, &st); err != nil || st.Status == "" {
		return nil, true, router.Fail(protocol.CodeToolFailed, "crewai: the status answer is not an AMP status", false, map[string]any{"kickoff_id": f.kid})
	}
	switch {
	case st.Status == "completed":
		var out any
		if st.Result != nil {
			out = st.Result.Output
		}
		return f.result(out)
	case st.Status == "error":
		msg := st.Error
		if msg == "" {
			msg = "the crew failed"
		}
		code := ErrorCode(msg, protocol.CodeToolFailed)
		return nil, true, router.Fail(code, msg, code.Retryable(), map[string]any{"kickoff_id": f.kid, "execution_time": st.ExecutionTime})
	case AwaitingInput(st.Status):
		text := st.Message
		if text == "" {
			text = "the crew waits for human feedback"
		}
		return f.needInput(ctx, st.CurrentTask, text, "", "")
	}
	if !bytes.Equal(f.last, raw) {
		f.last = append(f.last[:0], raw...)
		var prog json.RawMessage
		if st.Progress != nil {
			prog = mustJSON(st.Progress)
		}
		if err := f.t.Progress(ctx, CrewProgress{KickoffID: f.kid, Status: st.Status, CurrentTask: st.CurrentTask, Progress: prog}); err != nil {
			return nil, true, err
		}
	}
	return nil, false, nil
}

func (f *follow) result(out any) (*router.Result, bool, error) {
	var p any = out
	if b, ok := out.(json.RawMessage); ok {
		p = b
	}
	return &router.Result{PayloadType: f.c.opts.ResultType, Payload: p}, true, nil
}

// needInput makes the task ask for the paused execution: an approval
// question (is_approve and the feedback of POST /resume) with text, the
// output the person reviews when there is one, and Details naming the
// execution and the crewAI task. A subtask cannot ask (docs/protocol.md
// §2.7): it ends with INPUT_REQUIRED and the same details, for the task
// that delegated it.
func (f *follow) needInput(ctx context.Context, task, text, output, event string) (*router.Result, bool, error) {
	details := map[string]any{detailCrew: f.c.base, detailKickoff: f.kid, detailCrewTask: task}
	if event != "" {
		details[detailEvent] = event
	}
	if f.t.Request().ParentTaskID != "" {
		return nil, true, router.Fail(protocol.CodeInputRequired, text, false, details)
	}
	if output != "" {
		text += "\n\n" + output
	}
	q := protocol.Question{Kind: protocol.QuestionApproval, Text: bound.Clip(text, protocol.MaxQuestionText), Details: details}
	if _, err := f.t.Ask(ctx, q); err != nil {
		return nil, true, err // router.ErrWaiting: the task waits for the answer
	}
	// Handle calls Resumed first, so Ask asks: a recorded answer here is a bug.
	return nil, true, router.Fail(protocol.CodeInternal, "crewai: asking for the paused execution "+f.kid+" returned an earlier answer", false, details)
}

// absorb records one streamed event under the task: tool events as tool.*,
// LLM calls as x.crewai.llm_call, the rest as progress; the crew's end
// ends the task.
func (f *follow) absorb(ctx context.Context, m *protocol.Message) (*router.Result, bool, error) {
	if f.seen[m.ID] { // AMP retries deliveries
		return nil, false, nil
	}
	root := rootTask(f.kid)
	kind := rawjson.MetaString(m, MetaType)
	switch {
	case m.TaskID == root && m.Type == protocol.TypeTaskResult:
		return f.result(json.RawMessage(m.Payload))
	case m.TaskID == root && m.Type == protocol.TypeTaskError:
		var ep protocol.ErrorPayload
		if json.Unmarshal(m.Payload, &ep) != nil || ep.Code == "" {
			ep = protocol.ErrorPayload{Code: protocol.CodeToolFailed, Message: "the crew failed"}
		}
		return nil, true, router.Fail(ep.Code, ep.Message, ep.Retryable, map[string]any{"kickoff_id": f.kid, "crewai_type": kind})
	case inputRequested(kind):
		task := rawjson.MetaString(m, MetaTaskID)
		if task == "" {
			task = rawjson.MetaString(m, MetaTaskName)
		}
		data := eventData(m)
		if task == "" {
			task, _ = data["method_name"].(string)
		}
		text, _ := data["message"].(string)
		if text == "" {
			text = "the crew asks for human input (" + kind + ")"
		}
		output, _ := data["output"].(string)
		return f.needInput(ctx, task, text, output, m.ID)
	}
	if err := f.record(ctx, m); err != nil {
		return nil, true, err
	}
	return nil, false, nil
}

// eventData is the crewAI event data a translated progress event carries
// ({event, data}); nil when it has none.
func eventData(m *protocol.Message) map[string]any {
	var p struct {
		Data map[string]any `json:"data"`
	}
	_ = json.Unmarshal(m.Payload, &p)
	return p.Data
}

// record stores a streamed event that does not end the task: tool events
// as tool.*, LLM calls as x.crewai.llm_call, the rest as progress.
func (f *follow) record(ctx context.Context, m *protocol.Message) error {
	if f.seen[m.ID] {
		return nil
	}
	f.seen[m.ID] = true
	kind := rawjson.MetaString(m, MetaType)
	switch {
	case m.TaskID == rootTask(f.kid) && (m.Type == protocol.TypeTaskResult || m.Type == protocol.TypeTaskError):
		return nil // the end, told by the status
	case m.Type.Family() == "tool" || m.Type == TypeLLMCall:
		_, err := f.t.Emit(ctx, m.Type, "", json.RawMessage(m.Payload))
		return err
	}
	return f.t.Progress(ctx, CrewProgress{KickoffID: f.kid, Event: kind, Type: m.Type, CrewTask: rawjson.MetaString(m, MetaTaskID), Agent: m.From.Role, Payload: json.RawMessage(m.Payload)})
}

// call makes one request to the crew and decodes its JSON answer into out
// (a *json.RawMessage takes it as it is). Failures are wire errors
// (classify).
func (c *Crew) call(ctx context.Context, method, path string, in, out any) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return router.Fail(protocol.CodeInvalidField, "crewai: encoding the "+path+" body: "+err.Error(), false, nil)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return router.Fail(protocol.CodeInvalidField, "crewai: "+err.Error(), false, nil)
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.opts.BearerToken != "" {
		req.Header.Set("Authorization", "Bearer "+c.opts.BearerToken)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return c.classify(method+" "+path, 0, nil, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, c.opts.MaxResponseBytes+1))
	if err != nil {
		return c.classify(method+" "+path, 0, nil, err)
	}
	if int64(len(b)) > c.opts.MaxResponseBytes {
		return router.Fail(protocol.CodeTooLarge, "crewai: the answer to "+method+" "+path+" is over "+strconv.FormatInt(c.opts.MaxResponseBytes, 10)+" bytes", false, map[string]any{"crew": c.base})
	}
	if resp.StatusCode >= 300 {
		return c.classify(method+" "+path, resp.StatusCode, b, nil)
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = append((*raw)[:0], b...)
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return router.Fail(protocol.CodeToolFailed, "crewai: the answer to "+method+" "+path+" is not the AMP JSON: "+err.Error(), false, map[string]any{"crew": c.base})
	}
	return nil
}

// classify maps a failed call to the error table (docs/protocol.md §5.4):
// an egress refusal → POLICY_DENIED; HTTP 400 → INVALID_FIELD, 422 (missing
// inputs) → VALIDATION, 401/403 → UNAUTHORIZED, 404 → NOT_FOUND, 409 →
// CONFLICT, 429 → RATE_LIMITED, 5xx → TOOL_UNAVAILABLE (retryable);
// a call past RequestTimeout → TIMEOUT; an unreachable crew or dropped
// connection → TOOL_UNAVAILABLE (retryable). The message keeps AMP's own
// {error, message}.
func (c *Crew) classify(what string, status int, body []byte, err error) error {
	details := map[string]any{"crew": c.base, "call": what}
	var denied *egress.DeniedError
	if errors.As(err, &denied) {
		details["host"], details["rule"] = denied.Host, denied.Rule
		return router.Fail(protocol.CodePolicyDenied, "crewai: "+what+": "+err.Error(), false, details)
	}
	if err != nil {
		var ne net.Error
		if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
			return router.Fail(protocol.CodeTimeout, "crewai: "+what+": no answer within "+c.opts.RequestTimeout.String(), true, details)
		}
		return router.Fail(protocol.CodeToolUnavailable, "crewai: "+what+": "+err.Error(), true, details)
	}
	details["http_status"] = status
	msg := "crewai: " + what + ": HTTP " + strconv.Itoa(status)
	var e struct {
		Error   string         `json:"error"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	}
	if json.Unmarshal(body, &e) == nil {
		if e.Error != "" {
			msg += ": " + e.Error
		}
		if e.Message != "" {
			msg += ": " + e.Message
		}
		if e.Details != nil {
			details["amp_details"] = e.Details
		}
	}
	code := protocol.CodeToolFailed
	switch {
	case status == http.StatusBadRequest:
		code = protocol.CodeInvalidField
	case status == http.StatusUnprocessableEntity:
		code = protocol.CodeValidation
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		code = protocol.CodeUnauthorized
	case status == http.StatusNotFound:
		code = protocol.CodeNotFound
	case status == http.StatusConflict:
		code = protocol.CodeConflict
	case status == http.StatusTooManyRequests:
		code = protocol.CodeRateLimited
	case status >= 500:
		code = protocol.CodeToolUnavailable
	}
	return router.Fail(code, msg, code.Retryable(), details)
}

// WebhookHandler returns the http.Handler at which AMP delivers the event
// stream of the crew's kickoffs ({"events": [...]}, see WebhookURL). It
// accepts only POSTs carrying the bearer token the Crew gave AMP at
// kickoff (auth.APIKeys, compared in constant time), with opts' limits
// (nil: a body limit of DefaultMaxWebhookBytes); each delivery is
// translated and handed to the task following its execution, in order,
// duplicates dropped. Answers: 202 {"accepted": n}; 400/413 with
// {"code", "message"} for a body the translator refuses; 401 without
// the token; 405 for another method.
func (c *Crew) WebhookHandler(opts *auth.Options) (http.Handler, error) {
	keys, err := auth.APIKeys(map[string]auth.Caller{c.token: {AgentID: c.card.AgentID}})
	if err != nil {
		return nil, err
	}
	var o auth.Options
	if opts != nil {
		o = *opts
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxWebhookBytes
	}
	g, err := auth.NewGuard(keys, &o)
	if err != nil {
		return nil, err
	}
	return g.Wrap(http.HandlerFunc(c.serveWebhook)), nil
}

func (c *Crew) serveWebhook(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeErr(w, http.StatusMethodNotAllowed, protocol.CodeUnsupportedTask, "POST only")
		return
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		writeErr(w, http.StatusRequestEntityTooLarge, protocol.CodeTooLarge, "the body is over the limit")
		return
	}
	msgs, err := c.tr.Inbound(r.Context(), b)
	if err != nil {
		code := protocol.CodeOf(err)
		writeErr(w, httpjson.Status(code), code, err.Error())
		return
	}
	for _, m := range msgs {
		kid := strings.TrimPrefix(m.RunID, "run:")
		c.mu.Lock()
		ch, ok := c.watches[kid]
		if !ok {
			// Events may come before the kickoff's answer: keep a few.
			q, known := c.early[kid]
			kept := (known || len(c.early) < maxEarlyRuns) && len(q) < maxEarlyEvents && c.earlyN+len(m.Payload) <= maxEarlyBytes
			if kept {
				c.early[kid] = append(q, m)
				c.earlyN += len(m.Payload)
			}
			c.mu.Unlock()
			if !kept {
				c.opts.Logger.WarnContext(r.Context(), "crewai: webhook event of an execution no task follows, dropped", "kickoff_id", kid, "event", m.ID)
			}
			continue
		}
		c.mu.Unlock()
		select {
		case ch <- m:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = w.Write([]byte(`{"accepted":` + strconv.Itoa(len(msgs)) + `}`))
}

func writeErr(w http.ResponseWriter, status int, code protocol.Code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]any{"code": code, "message": msg})
}
