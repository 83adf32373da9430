package langgraph

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/adapters/internal/rawjson"
	"github.com/clutchprotocol/clutch/egress"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
)

// Defaults of RemoteOptions.
const (
	DefaultMaxRejoins       = 3
	DefaultPollInterval     = 250 * time.Millisecond
	DefaultCancelTimeout    = 5 * time.Second
	DefaultMaxResponseBytes = 16 << 20
)

// DefaultStreamModes are the stream modes a Remote asks for: the state
// after each step (and the final state), each node's update (tool calls
// and results), the LLM tokens, the graph's own custom events, and the
// node tasks.
var DefaultStreamModes = []string{"values", "updates", "messages-tuple", "custom", "tasks"}

// RemoteOptions configures a Remote. Nil or the zero value gives the
// defaults.
type RemoteOptions struct {
	// AgentID is the Clutch agent id of the graph;
	// "agent:langgraph-<assistant>" when empty.
	AgentID string
	// Capabilities of the agent's card; ["skill:langgraph-<assistant>"]
	// when empty.
	Capabilities []protocol.Capability
	// APIKey, when set, is sent as the x-api-key header (LangGraph
	// Platform / LangSmith Deployment authentication).
	APIKey string
	// HTTPClient is the base client (timeouts, TLS); its Transport must be
	// nil or an *http.Transport. Every dial goes through Egress.
	HTTPClient *http.Client
	// Egress decides which addresses the client may reach;
	// egress.Default() when nil (a server on 127.0.0.1 needs an Allow rule).
	Egress *egress.Policy
	// StreamModes requested for each run; DefaultStreamModes when empty.
	StreamModes []string
	// Subgraphs asks for subgraph events (stream_subgraphs). The JS server
	// 2.0.0 fails a run that streams values with subgraphs, so a Remote
	// with Subgraphs drops "values" from StreamModes and reads the final
	// state from GET /threads/{id}/state.
	Subgraphs bool
	// Input maps a task.request to the graph's input. Nil: the payload as
	// it is when it is a JSON object, {"messages": [{"role": "user",
	// "content": s}]} when it is a string s.
	Input func(req *protocol.Message) (any, error)
	// Resume maps a new task.request on a thread that waits for input —
	// not the answer to the task's question, which resumes the graph as it
	// is (see the package doc, "Bridge") — to the resume value of
	// `command: {resume: …}`. Nil: the payload (a string as it is, an
	// object's "resume" member when it has one).
	Resume func(req *protocol.Message) (any, error)
	// ResultType is the payload_type of the task.result ("" untyped).
	ResultType string
	// Result maps the graph's final state (its values) to the result
	// payload. Nil: the state as it is.
	Result func(values json.RawMessage) (any, error)
	// MaxRejoins bounds how often a dropped stream is re-joined
	// (GET /threads/{id}/runs/{run}/stream) before the Remote polls the
	// run; DefaultMaxRejoins when 0, none when negative.
	MaxRejoins int
	// PollInterval is the wait between polls of a run whose stream
	// is gone; DefaultPollInterval when 0.
	PollInterval time.Duration
	// CancelTimeout bounds the cancel call made when a task is cancelled;
	// DefaultCancelTimeout when 0.
	CancelTimeout time.Duration
	// MaxResponseBytes bounds a non-streaming response body;
	// DefaultMaxResponseBytes when 0.
	MaxResponseBytes int64
	// Logger; slog.Default() when nil.
	Logger *slog.Logger
}

// Remote is a graph served by a LangGraph Agent Server, as a Clutch agent:
// its Handle runs each routed task as a run on the Agent Server thread of
// the task's Clutch thread (see the package doc, "Bridge"). It is safe for
// concurrent use.
type Remote struct {
	base      string
	assistant string
	opts      RemoteOptions
	card      *protocol.AgentCard
	hc        *http.Client
	owned     *http.Transport
	tr        *Translator

	mu   sync.Mutex
	runs map[string]string // Clutch task -> LangGraph run in flight
}

// Register makes a Remote for the assistant (an assistant id or a graph
// id of langgraph.json) of the Agent Server at baseURL and registers it
// with r as an in-process agent. Close the Remote when done with it.
func Register(ctx context.Context, r *router.Router, baseURL, assistant string, opts *RemoteOptions) (*Remote, error) {
	if r == nil {
		return nil, optionsError("nil router")
	}
	rm, err := NewRemote(baseURL, assistant, opts)
	if err != nil {
		return nil, err
	}
	if err := r.Register(ctx, rm.Card(), rm.Handle); err != nil {
		rm.Close()
		return nil, err
	}
	return rm, nil
}

// NewRemote makes a Remote without registering it (see Register, or
// router.Attach for an agent registered by other means). It does not dial:
// the first task finds out whether the server is there.
func NewRemote(baseURL, assistant string, opts *RemoteOptions) (*Remote, error) {
	var o RemoteOptions
	if opts != nil {
		o = *opts
	}
	if !strings.HasPrefix(baseURL, "http://") && !strings.HasPrefix(baseURL, "https://") {
		return nil, optionsError("url " + baseURL + " is not an absolute http(s) URL")
	}
	if assistant == "" {
		return nil, optionsError("no assistant")
	}
	slug := adapters.Slug(assistant)
	if slug == "" {
		slug = "graph"
	}
	if o.AgentID == "" {
		o.AgentID = protocol.PrefixAgent + "langgraph-" + slug
	}
	if len(o.Capabilities) == 0 {
		o.Capabilities = []protocol.Capability{{ID: "skill:langgraph-" + slug}}
	}
	if len(o.StreamModes) == 0 {
		o.StreamModes = DefaultStreamModes
	}
	if o.Subgraphs {
		var modes []string
		for _, m := range o.StreamModes {
			if m != "values" {
				modes = append(modes, m)
			}
		}
		o.StreamModes = modes
	}
	if o.MaxRejoins == 0 {
		o.MaxRejoins = DefaultMaxRejoins
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.CancelTimeout <= 0 {
		o.CancelTimeout = DefaultCancelTimeout
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Egress == nil {
		o.Egress = egress.Default()
	}
	if err := o.Egress.PrecheckURL(baseURL); err != nil {
		return nil, &adapters.Error{Adapter: Name, Code: protocol.CodePolicyDenied, Detail: "the egress policy refuses " + baseURL, Sentinel: ErrOptions, Err: err}
	}
	tr, err := New(&Options{AgentID: o.AgentID})
	if err != nil {
		return nil, err
	}
	rm := &Remote{base: strings.TrimRight(baseURL, "/"), assistant: assistant, opts: o, tr: tr, runs: map[string]string{}}
	rm.card = &protocol.AgentCard{V: protocol.Version, AgentID: o.AgentID,
		Display: &protocol.Display{Name: assistant, Desc: "LangGraph assistant " + assistant + " at " + rm.base}, Capabilities: o.Capabilities}
	if err := rm.card.Validate(); err != nil {
		return nil, &adapters.Error{Adapter: Name, Code: protocol.CodeInvalidField, Detail: "the card is not valid", Sentinel: ErrOptions, Err: err}
	}
	hc, base, err := o.Egress.Client(o.HTTPClient)
	if err != nil {
		return nil, optionsError("HTTPClient: " + err.Error())
	}
	rm.hc, rm.owned = hc, base
	return rm, nil
}

// Card returns the agent's card. Do not modify it.
func (rm *Remote) Card() *protocol.AgentCard { return rm.card }

// Close releases the idle connections of the Remote's client.
func (rm *Remote) Close() error {
	if rm.owned != nil {
		rm.owned.CloseIdleConnections()
	}
	return nil
}

// ThreadID returns the Agent Server thread of a Clutch thread: a UUID
// derived from the assistant and the Clutch thread id, so that the same
// Clutch thread finds its LangGraph thread again after a restart.
func (rm *Remote) ThreadID(clutchThread string) string {
	sum := sha256.Sum256([]byte("clutch/langgraph\x00" + rm.assistant + "\x00" + clutchThread))
	b := sum[:16]
	b[6] = b[6]&0x0f | 0x50 // version 5 layout (name-based, SHA)
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	h := hex.EncodeToString(b)
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// thread is the part of a Thread object the Remote reads.
type thread struct {
	Status     string                     `json:"status"`
	Interrupts map[string]json.RawMessage `json:"interrupts"` // node task -> its pending interrupts
}

// listsInterrupts reports whether the thread lists a pending interrupt.
// The JS server lists the interrupts of the last checkpoint's tasks, those
// an answer resumed and that completed too: the thread state says which
// still wait (threadState.interrupts).
func (th *thread) listsInterrupts() bool {
	for _, l := range th.Interrupts {
		var list []any
		if json.Unmarshal(l, &list) == nil && len(list) > 0 {
			return true
		}
	}
	return false
}

// Handle runs a routed task as a LangGraph run (the router.Handler of
// Register): see the package doc, "Bridge".
func (rm *Remote) Handle(ctx context.Context, t *router.Task) (*router.Result, error) {
	req := t.Request()
	tid := rm.ThreadID(req.ThreadID)
	body, res, err := rm.begin(ctx, t, tid)
	if body == nil {
		return res, err
	}
	resp, err := rm.do(ctx, http.MethodPost, "/threads/"+tid+"/runs/stream", body, nil)
	if err != nil {
		return nil, err
	}
	runID := runOf(resp.Header.Get("Content-Location"))
	s := rm.tr.NewStream(Scope{RunID: t.RunID(), ThreadID: req.ThreadID, TaskID: t.ID(), AgentID: t.Agent(), Attempt: t.Attempt()})
	out := &outcome{}
	lastID, readErr := rm.consume(ctx, t, s, resp.Body, out)
	resp.Body.Close()
	if runID == "" {
		runID = s.RunID()
	}
	if runID != "" {
		rm.mu.Lock()
		rm.runs[t.ID()] = runID
		rm.mu.Unlock()
		defer func() {
			rm.mu.Lock()
			delete(rm.runs, t.ID())
			rm.mu.Unlock()
		}()
	}
	// The stream ended: a cancelled task cancels the run; a stream that
	// ended without the run ending (a dropped connection) is re-joined,
	// then polled.
	for rejoins := 0; ; {
		if ctx.Err() != nil {
			rm.cancel(tid, runID)
			return nil, ctx.Err()
		}
		if out.err != nil || out.asked || runID == "" {
			break
		}
		var run struct {
			Status string `json:"status"`
		}
		if err := rm.call(ctx, http.MethodGet, "/threads/"+tid+"/runs/"+runID, nil, &run); err != nil {
			if ctx.Err() != nil {
				continue
			}
			return nil, err
		}
		out.status = run.Status
		if run.Status != "pending" && run.Status != "running" {
			break
		}
		if rejoins < rm.opts.MaxRejoins {
			rejoins++
			rm.opts.Logger.Info("langgraph: re-joining the run's stream", "run", runID, "after", readErr, "last_event_id", lastID)
			h := http.Header{}
			if lastID != "" {
				h.Set("Last-Event-ID", lastID)
			}
			resp, err := rm.do(ctx, http.MethodGet, "/threads/"+tid+"/runs/"+runID+"/stream", nil, h)
			if err == nil {
				var id string
				id, readErr = rm.consume(ctx, t, s, resp.Body, out)
				if id != "" {
					lastID = id
				}
				resp.Body.Close()
			}
			continue
		}
		select {
		case <-ctx.Done():
		case <-time.After(rm.opts.PollInterval):
		}
	}
	switch {
	case out.err != nil:
		return nil, out.err
	case out.status == "error":
		return nil, router.Fail(protocol.CodeToolFailed, "LangGraph run "+runID+" failed", false, map[string]any{"langgraph_run_id": runID})
	case out.status == "timeout":
		return nil, router.Fail(protocol.CodeTimeout, "LangGraph run "+runID+" timed out", true, map[string]any{"langgraph_run_id": runID})
	case out.status == "interrupted" && !out.asked:
		return nil, router.Fail(protocol.CodeCancelled, "LangGraph run "+runID+" was interrupted on the server", false, map[string]any{"langgraph_run_id": runID})
	}
	// The thread's state is the truth about the run's end: a thread that
	// still has nodes to run (next) waits for a person, whatever the
	// stream said (a static breakpoint, an interrupt deep in a subgraph).
	var state threadState
	if err := rm.call(ctx, http.MethodGet, "/threads/"+tid+"/state", nil, &state); err != nil {
		return nil, err
	}
	if out.asked || len(state.Next) > 0 {
		return rm.wait(ctx, t, tid, runID, &state, out.interrupts)
	}
	if values := s.LastValues(); values != nil {
		return rm.result(jsonOf(values), runID)
	}
	return rm.result(state.Values, runID)
}

// begin finds the thread tid and says what the run does: the body of its
// POST /threads/{id}/runs/stream — the request as the graph's input, or
// the resume of a thread that waits. A nil body ends the attempt with res
// and err, without a run: an answer the graph took before a restart.
func (rm *Remote) begin(ctx context.Context, t *router.Task, tid string) (body map[string]any, res *router.Result, err error) {
	req := t.Request()
	// An attempt after an answer: the graph waits on the LangGraph thread
	// the question names, and goes on where it stopped.
	asked, answer, err := t.Resumed(ctx)
	if err != nil {
		return nil, nil, err
	}
	if asked != nil {
		if id, _ := asked.Details["langgraph_thread_id"].(string); id != tid {
			asked, answer = nil, nil // not a question about this thread
		}
	}
	var th thread
	if err := rm.call(ctx, http.MethodPost, "/threads", map[string]any{
		"thread_id": tid, "if_exists": "do_nothing",
		"metadata": map[string]any{"clutch_thread": req.ThreadID},
	}, &th); err != nil {
		return nil, nil, err
	}
	body = map[string]any{
		"assistant_id": rm.assistant, "stream_mode": rm.opts.StreamModes,
		"stream_subgraphs": rm.opts.Subgraphs, "stream_resumable": true, "on_disconnect": "cancel",
		"metadata": map[string]any{"clutch_task": t.ID(), "clutch_run": t.RunID(), "clutch_thread": req.ThreadID},
	}
	for asked != nil && th.Status == "busy" {
		// A run is going on the thread: the one that took the answer
		// before a restart, or one that has just ended (the server marks
		// the thread a moment after the run). Poll until it is done.
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(rm.opts.PollInterval):
		}
		if err := rm.call(ctx, http.MethodPost, "/threads", map[string]any{"thread_id": tid, "if_exists": "do_nothing"}, &th); err != nil {
			return nil, nil, err
		}
	}
	// The thread waits for input when it is interrupted, or when its state
	// has an interrupt no answer has resumed yet (after a run that took an
	// answer was cancelled, its status is "error").
	waiting := th.Status == "interrupted"
	var state threadState
	if asked != nil || (!waiting && th.listsInterrupts()) {
		if err := rm.call(ctx, http.MethodGet, "/threads/"+tid+"/state", nil, &state); err != nil {
			return nil, nil, err
		}
		waiting = waiting || len(state.interrupts()) > 0
	}
	switch {
	case asked != nil:
		details := map[string]any{"question_id": asked.ID, "langgraph_thread_id": tid}
		switch {
		case waiting && state.waitsFor(asked):
			body["command"] = map[string]any{"resume": resumeWith(asked, answer)}
			return body, nil, nil
		case waiting && (len(state.interrupts()) > 0 || len(state.Next) > 0):
			// The answer went in before a restart and the graph stopped
			// again, on interrupts nobody was asked about yet.
			res, err = rm.wait(ctx, t, tid, "", &state, nil)
		case th.Status == "error":
			err = router.Fail(protocol.CodeToolFailed, "the LangGraph run that took the answer to "+asked.ID+" failed", false, details)
		default:
			// The answer went in and the run ended before a restart: the
			// thread's state is the result; nothing runs again.
			res, err = rm.result(state.Values, "")
		}
		return nil, res, err
	case waiting:
		// A new request on a thread that waits (its question was cancelled
		// or timed out, or nobody asked): the request is the answer.
		v, err := rm.resumeValue(req)
		if err != nil {
			return nil, nil, err
		}
		body["command"] = map[string]any{"resume": v}
	default:
		in, err := rm.input(req)
		if err != nil {
			return nil, nil, err
		}
		body["input"] = in
	}
	return body, nil, nil
}

// result makes the task's result of the graph's final state.
func (rm *Remote) result(raw json.RawMessage, runID string) (*router.Result, error) {
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	if rm.opts.Result == nil {
		return &router.Result{PayloadType: rm.opts.ResultType, Payload: raw}, nil
	}
	p, err := rm.opts.Result(raw)
	if err != nil {
		var details map[string]any
		if runID != "" {
			details = map[string]any{"langgraph_run_id": runID}
		}
		return nil, router.Fail(protocol.CodeValidation, "mapping the LangGraph state to the result: "+err.Error(), false, details)
	}
	return &router.Result{PayloadType: rm.opts.ResultType, Payload: p}, nil
}

// outcome is what the frames of a run said about its end.
type outcome struct {
	err        error // an error frame
	asked      bool  // an interrupt, of any task, at any depth, or static
	interrupts []any // the interrupts of this run, each once
	ids        map[string]bool
	status     string
}

// threadState is the part of GET /threads/{id}/state the Remote reads.
type threadState struct {
	Values json.RawMessage `json:"values"`
	Next   []string        `json:"next"`
	Tasks  []struct {
		Interrupts []any           `json:"interrupts"`
		Result     json.RawMessage `json:"result"` // set once the node task has completed
		Error      json.RawMessage `json:"error"`  // set when it failed
	} `json:"tasks"`
	Checkpoint struct {
		CheckpointID string `json:"checkpoint_id"`
	} `json:"checkpoint"`
}

// consume reads SSE frames until the stream ends, records every step under
// the task and notes the run's end in out. It returns the last SSE id and
// the read error (nil at a clean end).
func (rm *Remote) consume(ctx context.Context, t *router.Task, s *Stream, body io.Reader, out *outcome) (string, error) {
	rd := newSSEReader(body)
	last := ""
	for {
		f, err := rd.next()
		if errors.Is(err, io.EOF) {
			return last, nil
		}
		if err != nil {
			return last, err
		}
		if f.ID != "" {
			last = f.ID
		}
		msgs, terr := s.Frame(ctx, f)
		if terr != nil {
			// Kept, not dropped: the frame as the server sent it, with
			// credentials redacted and its data bounded.
			if _, err := t.Emit(ctx, protocol.Type("x.langgraph.invalid_frame"), "", map[string]any{"event": cut(f.Event), "id": cut(f.ID), "data": invalidData(f.Data), "error": cut(terr.Error())}); err != nil {
				return last, err
			}
			continue
		}
		for _, m := range msgs {
			if err := rm.record(ctx, t, m, out); err != nil {
				return last, err
			}
		}
	}
}

// record stores one translated message under the task (router.Task.Emit)
// or notes what ends the run.
func (rm *Remote) record(ctx context.Context, t *router.Task, m *protocol.Message, out *outcome) error {
	root := m.TaskID == t.ID()
	if m.Type == protocol.TypeTaskError {
		ep, err := protocol.DecodePayload[protocol.ErrorPayload](m)
		if err != nil {
			return err
		}
		switch {
		case ep.Code == protocol.CodeInputRequired:
			// An interrupt of any node task at any depth stops the run:
			// the task asks, it has no result.
			out.asked = true
			list, _ := ep.Details["interrupts"].([]any)
			for _, in := range list {
				io, _ := in.(map[string]any)
				id, _ := io["id"].(string)
				if id != "" && out.ids[id] {
					continue
				}
				if out.ids == nil {
					out.ids = map[string]bool{}
				}
				out.ids[id] = true
				out.interrupts = append(out.interrupts, in)
			}
			if root {
				return nil // the attempt ends with it
			}
			_, err := t.Emit(ctx, protocol.TypeTaskProgress, PayloadTask, m.Payload)
			return err
		case root:
			out.err = router.Fail(ep.Code, "LangGraph: "+ep.Message, ep.Retryable, ep.Details)
			return nil
		}
	}
	switch {
	case m.Type == protocol.TypeTaskResult && root:
		return nil // the end frame: the result is made from the final state
	case m.Type.Family() == "tool", m.Type == protocol.TypeChatMessage, m.Type.Extension():
		_, err := t.Emit(ctx, m.Type, m.PayloadType, m.Payload)
		return err
	}
	// Lifecycle of the run and its node tasks, state, checkpoints,
	// handoffs: progress of the task, under their own payload types.
	pt := m.PayloadType
	if pt == "" {
		pt = PayloadTask
		if root {
			pt = PayloadRun
		}
		if m.Type == protocol.TypeRoutingDecision {
			pt = "langgraph.handoff.v1"
		}
	}
	_, err := t.Emit(ctx, protocol.TypeTaskProgress, pt, m.Payload)
	return err
}

// invalidData is the data of a refused frame as kept: credentials
// redacted when it is JSON, bounded by cut either way.
func invalidData(data []byte) string {
	var v any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if d.Decode(&v) == nil {
		if b, err := rawjson.FromAny(scrub(v)); err == nil {
			return cut(string(b))
		}
	}
	if !utf8.Valid(data) {
		return cut(strings.ToValidUTF8(string(data), "\uFFFD"))
	}
	return cut(string(data))
}

func (rm *Remote) input(req *protocol.Message) (any, error) {
	if rm.opts.Input != nil {
		v, err := rm.opts.Input(req)
		if err != nil {
			return nil, router.Fail(protocol.CodeValidation, "mapping the request to the graph input: "+err.Error(), false, nil)
		}
		return v, nil
	}
	var s string
	if json.Unmarshal(req.Payload, &s) == nil {
		return map[string]any{"messages": []any{map[string]any{"role": "user", "content": s}}}, nil
	}
	if p := bytes.TrimSpace(req.Payload); len(p) > 0 && p[0] == '{' {
		return json.RawMessage(p), nil
	}
	return nil, router.Fail(protocol.CodeValidation, "a LangGraph input is a JSON object or a string", false, nil)
}

func (rm *Remote) resumeValue(req *protocol.Message) (any, error) {
	if rm.opts.Resume != nil {
		v, err := rm.opts.Resume(req)
		if err != nil {
			return nil, router.Fail(protocol.CodeValidation, "mapping the follow-up to the resume value: "+err.Error(), false, nil)
		}
		return v, nil
	}
	var o map[string]json.RawMessage
	if json.Unmarshal(req.Payload, &o) == nil {
		if r, ok := o["resume"]; ok {
			return r, nil
		}
	}
	return json.RawMessage(req.Payload), nil
}

// cancel cancels a run whose task was cancelled, with a context of its own.
func (rm *Remote) cancel(tid, runID string) {
	if runID == "" {
		return
	}
	ctx, stop := context.WithTimeout(context.Background(), rm.opts.CancelTimeout)
	defer stop()
	if err := rm.call(ctx, http.MethodPost, "/threads/"+tid+"/runs/"+runID+"/cancel", nil, nil); err != nil {
		rm.opts.Logger.Warn("langgraph: cancelling the run failed", "run", runID, "err", err)
	}
}

// call makes a JSON request and decodes the bounded response into out.
func (rm *Remote) call(ctx context.Context, method, path string, body, out any) error {
	resp, err := rm.do(ctx, method, path, body, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, rm.opts.MaxResponseBytes+1))
	if err != nil {
		return rm.classify(err, method+" "+path)
	}
	if int64(len(b)) > rm.opts.MaxResponseBytes {
		return router.Fail(protocol.CodeTooLarge, "LangGraph "+method+" "+path+": response over "+fmt.Sprint(rm.opts.MaxResponseBytes)+" bytes", false, nil)
	}
	if out == nil || len(bytes.TrimSpace(b)) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return router.Fail(protocol.CodeToolFailed, "LangGraph "+method+" "+path+": the response is not the expected JSON: "+err.Error(), false, nil)
	}
	return nil
}

// do sends a request; an HTTP error status is an error of the error table.
func (rm *Remote) do(ctx context.Context, method, path string, body any, h http.Header) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, rm.base+path, rd)
	if err != nil {
		return nil, optionsError("request: " + err.Error())
	}
	for k, v := range h {
		req.Header[k] = v
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if rm.opts.APIKey != "" {
		req.Header.Set("X-Api-Key", rm.opts.APIKey)
	}
	resp, err := rm.hc.Do(req)
	if err != nil {
		return nil, rm.classify(err, method+" "+path)
	}
	if resp.StatusCode >= 300 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, rm.status(resp.StatusCode, method+" "+path, strings.TrimSpace(string(b)))
	}
	return resp, nil
}

// status maps an HTTP error status of the Agent Server to the error table
// (docs/protocol.md §5.4).
func (rm *Remote) status(code int, what, body string) error {
	details := map[string]any{"http_status": code, "request": what, "server": rm.base}
	if body != "" {
		details["body"] = body
	}
	msg := fmt.Sprintf("LangGraph %s: HTTP %d", what, code)
	switch {
	case code == http.StatusTooManyRequests:
		return router.Fail(protocol.CodeRateLimited, msg, true, details)
	case code == http.StatusConflict, code == http.StatusUnprocessableEntity && strings.Contains(body, "already running"):
		// The JS server answers a busy thread with 422 "Thread is already
		// running a task".
		return router.Fail(protocol.CodeConflict, msg+" (the thread is busy with another run)", true, details)
	case code >= 500:
		return router.Fail(protocol.CodeToolUnavailable, msg, true, details)
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return router.Fail(protocol.CodeUnauthorized, msg, false, details)
	case code == http.StatusNotFound:
		return router.Fail(protocol.CodeNotFound, msg, false, details)
	case code == http.StatusUnprocessableEntity || code == http.StatusBadRequest:
		return router.Fail(protocol.CodeInvalidField, msg, false, details)
	}
	return router.Fail(protocol.CodeToolFailed, msg, false, details)
}

// classify maps a transport error: refused by egress → POLICY_DENIED;
// unreachable, reset or timed out → TOOL_UNAVAILABLE / TIMEOUT, retryable.
func (rm *Remote) classify(err error, what string) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	details := map[string]any{"request": what, "server": rm.base}
	var denied *egress.DeniedError
	if errors.As(err, &denied) {
		details["host"] = denied.Host
		return router.Fail(protocol.CodePolicyDenied, "LangGraph "+what+": "+err.Error(), false, details)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return router.Fail(protocol.CodeTimeout, "LangGraph "+what+": "+err.Error(), true, details)
	}
	// Refused, reset, cut short or any other transport failure: the server
	// is unreachable for now.
	return router.Fail(protocol.CodeToolUnavailable, "LangGraph "+what+": "+err.Error(), true, details)
}

// runOf reads the run id from a Content-Location /threads/{t}/runs/{r}.
func runOf(loc string) string {
	i := strings.LastIndex(loc, "/runs/")
	if i < 0 {
		return ""
	}
	r := loc[i+len("/runs/"):]
	if j := strings.IndexAny(r, "/?"); j >= 0 {
		r = r[:j]
	}
	return r
}
