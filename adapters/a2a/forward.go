package a2a

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"iter"
	"maps"
	"strconv"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"

	"github.com/clutchprotocol/clutch/adapters/internal/bound"
	"github.com/clutchprotocol/clutch/egress"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
)

// RemoteProgress is the payload of the task.progress events a Remote
// stores for the remote agent's WORKING status updates (unless the update
// carries a Clutch progress payload, which is stored as it is).
type RemoteProgress struct {
	State string            `json:"state"`          // the A2A task state, "TASK_STATE_WORKING"
	Text  string            `json:"text,omitempty"` // the status message's text parts
	Data  []json.RawMessage `json:"data,omitempty"` // its data parts
}

// Handle is the router.Handler of the remote agent: it sends the task's
// request to the agent (streaming when its card declares it), stores the
// agent's status updates as task.progress, and returns its answer as the
// Result, or its failure as a wire error. When the remote task stops in
// INPUT_REQUIRED, the task asks its requester (router.Task.Ask) with the
// remote's question, its Details naming the remote task, and waits;
// answered, the router runs Handle again, which finds the answer with
// router.Task.Resumed and sends it on the same remote task (see
// [Remote.resume]) instead of a new request. ctx ending (cancel, or the
// card's max_runtime_sec) cancels the remote task.
func (rm *Remote) Handle(ctx context.Context, t *router.Task) (*router.Result, error) {
	if rm.closed.Load() {
		return nil, router.Fail(protocol.CodeToolUnavailable, "the A2A remote "+rm.url+" is closed", false, nil)
	}
	if ep := rm.networkDenied(t); ep != nil {
		// Recorded as a tool.error (the forward is the agent's use of the
		// network) before the task fails with it. No tool.call was made:
		// its call id is its own and names no call (docs/protocol.md
		// §2.3.1).
		te := *ep
		te.Details = maps.Clone(ep.Details)
		te.Details["call_id"] = protocol.NewID(protocol.IDPrefixCall)
		if _, err := t.Emit(ctx, protocol.TypeToolError, "", &te); err != nil {
			rm.opts.Logger.DebugContext(ctx, "a2a: tool.error not recorded", "task", t.ID(), "err", err)
		}
		return nil, ep
	}
	q, answer, err := t.Resumed(ctx)
	if err != nil {
		return nil, err
	}
	p, err := rm.pausedBy(q)
	if err != nil {
		return nil, err
	}
	run := &remoteRun{rm: rm, t: t, thread: t.Request().ThreadID}
	ctx = withTraceparent(ctx, t.Trace()) // trace.go
	var res *router.Result
	if p != nil {
		res, err = run.resume(ctx, p, q, answer)
	} else {
		res, err = run.do(ctx, &a2a.SendMessageRequest{Message: rm.outbound(t.Request())})
	}
	if err != nil && ctx.Err() != nil {
		run.cancelRemote(ctx)
		return nil, ctx.Err()
	}
	return res, err
}

// The Details keys of the question a Remote asks for a remote task in
// INPUT_REQUIRED; the same keys are the details of its errors.
const (
	detailRemote    = "remote"                // the Remote's URL
	detailTaskID    = "a2a_task_id"           // the remote task
	detailContextID = "a2a_context_id"        // its contextId
	detailState     = "a2a_state"             // its state
	detailStatusMsg = "a2a_status_message_id" // the status message that asked, when it has an id
)

// pausedTask is a remote task waiting for input, as the Details of the
// question asked for it name it.
type pausedTask struct {
	remote, contextID, statusMsg string
	taskID                       a2a.TaskID
}

// pausedBy returns the remote task the answered question q was asked
// for: nil when q is nil or was not asked by a Remote (a middleware's
// approval), an error when it names a task of another remote agent.
func (rm *Remote) pausedBy(q *protocol.Question) (*pausedTask, error) {
	if q == nil {
		return nil, nil
	}
	id, _ := q.Details[detailTaskID].(string)
	if id == "" {
		return nil, nil
	}
	p := &pausedTask{taskID: a2a.TaskID(id)}
	p.remote, _ = q.Details[detailRemote].(string)
	p.contextID, _ = q.Details[detailContextID].(string)
	p.statusMsg, _ = q.Details[detailStatusMsg].(string)
	if p.remote != rm.url {
		return nil, router.Fail(protocol.CodeConflict, "question "+q.ID+" was asked for a task of the A2A agent at "+p.remote+", not "+rm.url, false,
			map[string]any{detailRemote: p.remote, detailTaskID: id, "question_id": q.ID})
	}
	return p, nil
}

// networkDenied holds a forward to the security.network of the card the
// task runs under (docs/protocol.md §6.4): the Remote's own card when it
// was registered by Register, or whatever card router.Attach was given. A
// card that states no level, or none, may not forward; egress-restricted
// needs the remote's URL allowed by name (or address) in
// RemoteOptions.Egress. The connections themselves are dialled at the
// Remote's own level.
func (rm *Remote) networkDenied(t *router.Task) *protocol.ErrorPayload {
	level := ""
	if c := t.Card(); c != nil && c.Security != nil {
		level = c.Security.Network
	}
	p, err := rm.opts.Egress.Network(level)
	if err == nil {
		err = p.PrecheckURL(rm.url)
	}
	if err == nil {
		return nil
	}
	details := map[string]any{"remote": rm.url, "network": level}
	var d *egress.DeniedError
	if errors.As(err, &d) {
		details["host"] = d.Host
		details["rule"] = d.Rule
	}
	return &protocol.ErrorPayload{Code: protocol.CodePolicyDenied,
		Message: "the card of " + t.Agent() + " (security.network " + strconv.Quote(level) + ") may not reach the A2A agent " + rm.url + ": " + err.Error(),
		Details: details}
}

// outbound maps a task.request to the A2A message sent for it: a Content
// payload as text and data parts, any other as one data part naming its
// payload_type; url attachments as URL parts. The message id is the
// request's, and the contextId the thread's (or the one the agent chose
// for it). It starts a new remote task: a remote task waiting for input
// is answered through the task's question (Remote.resume), not by a new
// request in the thread.
func (rm *Remote) outbound(req *protocol.Message) *a2a.Message {
	parts := payloadParts(req.PayloadType, req.Payload, "", false)
	for _, at := range req.Attachments {
		if at.Kind == "url" {
			parts = append(parts, &a2a.Part{Content: a2a.URL(at.Ref), MediaType: at.MediaType, Filename: at.Name})
		}
	}
	return &a2a.Message{ID: req.ID, Role: a2a.MessageRoleUser, Parts: parts, ContextID: rm.contextOf(req.ThreadID)}
}

// contextOf is the contextId of a thread: the one the agent gave it, else
// the thread id.
func (rm *Remote) contextOf(thread string) string {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	if c, ok := rm.contexts[thread]; ok {
		return c
	}
	return thread
}

// resume answers the remote task p waits on with the answer to q. The
// task is read first (GetTask): still waiting on the status message that
// asked, it gets the answer as a message on the task (id "clutch-answer-"
// and the question id, contextId the task's; a JSON string as a text
// part, any other value as one data part), and is followed as a sent
// request is. Waiting on another status message, it asked again after an
// answer an earlier run sent (whose process died before the outcome was
// stored): that new question is asked. Not waiting any more, the earlier
// run's answer was taken: the task is followed to its end without sending
// the answer again.
func (run *remoteRun) resume(ctx context.Context, p *pausedTask, q *protocol.Question, answer json.RawMessage) (*router.Result, error) {
	run.taskID = p.taskID
	run.learnContext(p.contextID)
	task, err := run.rm.client.GetTask(ctx, &a2a.GetTaskRequest{ID: p.taskID})
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, classify(err, run.rm.url)
	}
	run.absorb(ctx, task)
	switch st := run.status.State; {
	case st == a2a.TaskStateInputRequired && statusMessageID(run.status) == p.statusMsg:
		msg := &a2a.Message{ID: "clutch-answer-" + q.ID, Role: a2a.MessageRoleUser, TaskID: p.taskID,
			ContextID: cmp.Or(task.ContextID, p.contextID, run.rm.contextOf(run.thread)), Parts: answerParts(answer)}
		res, err := run.do(ctx, &a2a.SendMessageRequest{Message: msg})
		var ep *protocol.ErrorPayload
		if errors.As(err, &ep) && ep.Code == protocol.CodeInvalidField && ctx.Err() == nil && run.status.State == a2a.TaskStateInputRequired {
			// The agent refused the answer (it checks what this question
			// did not carry, a schema): the task still waits; ask again.
			run.refused = ep.Message
			return run.outcome(ctx)
		}
		return res, err
	case st.Terminal() || st == a2a.TaskStateInputRequired || st == a2a.TaskStateAuthRequired:
		return run.outcome(ctx)
	case run.rm.a2aCard.Capabilities.Streaming:
		return run.recover(ctx)
	}
	return run.poll(ctx)
}

// statusMessageID is the id of the message of a status, "" without one.
func statusMessageID(st a2a.TaskStatus) string {
	if st.Message == nil {
		return ""
	}
	return st.Message.ID
}

// answerParts are the parts of the message that answers a remote task:
// a JSON string as a text part, any other value as one data part (how a
// Clutch Server reads an answer, and what an agent reading text alone
// understands of a string).
func answerParts(v json.RawMessage) []*a2a.Part {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return []*a2a.Part{a2a.NewTextPart(s)}
	}
	return []*a2a.Part{dataPart(v, nil)}
}

// remoteRun is one forwarded task: what the remote agent said so far.
type remoteRun struct {
	rm        *Remote
	t         *router.Task
	thread    string
	taskID    a2a.TaskID
	contextID string
	status    a2a.TaskStatus
	artifacts []*a2a.Artifact
	direct    *a2a.Message // a bare Message answer
	refused   string       // why the agent refused the answer this run sent
}

// do sends the request and follows the remote task to its end.
func (run *remoteRun) do(ctx context.Context, req *a2a.SendMessageRequest) (*router.Result, error) {
	c := run.rm.client
	if run.rm.a2aCard.Capabilities.Streaming {
		done, err := run.consume(ctx, c.SendStreamingMessage(ctx, req))
		if done {
			return run.outcome(ctx)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			ep := classify(err, run.rm.url)
			if !ep.Retryable || run.taskID == "" {
				return nil, ep
			}
		}
		// The stream ended before the task did: a dropped connection.
		return run.recover(ctx)
	}
	res, err := c.SendMessage(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, classify(err, run.rm.url)
	}
	if run.absorb(ctx, res) {
		return run.outcome(ctx)
	}
	return run.poll(ctx)
}

// consume absorbs stream events until the task ends (done) or the stream
// does (err is why, nil for a clean end).
func (run *remoteRun) consume(ctx context.Context, events iter.Seq2[a2a.Event, error]) (done bool, err error) {
	for ev, err := range events {
		if err != nil {
			return false, err
		}
		if run.absorb(ctx, ev) {
			return true, nil
		}
	}
	return false, nil
}

// recover re-attaches to a task whose stream dropped (SubscribeToTask,
// whose first event is the task as it is now), then falls back to polling.
func (run *remoteRun) recover(ctx context.Context) (*router.Result, error) {
	for i := 0; i < run.rm.opts.MaxResubscribes; i++ {
		if !sleep(ctx, time.Duration(50<<i)*time.Millisecond) {
			return nil, ctx.Err()
		}
		done, err := run.consume(ctx, run.rm.client.SubscribeToTask(ctx, &a2a.SubscribeToTaskRequest{ID: run.taskID}))
		if done {
			return run.outcome(ctx)
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			if errors.Is(err, a2a.ErrUnsupportedOperation) {
				break // it ended meanwhile (or streams are off): GetTask tells how
			}
			if ep := classify(err, run.rm.url); !ep.Retryable {
				return nil, ep
			}
		}
	}
	return run.poll(ctx)
}

// poll follows the task with GetTask until it ends. Five failed polls in a
// row give up with the last (retryable) error.
func (run *remoteRun) poll(ctx context.Context) (*router.Result, error) {
	failures := 0
	for {
		task, err := run.rm.client.GetTask(ctx, &a2a.GetTaskRequest{ID: run.taskID})
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err != nil:
			ep := classify(err, run.rm.url)
			if failures++; !ep.Retryable || failures >= 5 {
				return nil, ep
			}
		default:
			failures = 0
			if run.absorb(ctx, task) {
				return run.outcome(ctx)
			}
		}
		if !sleep(ctx, run.rm.opts.PollInterval) {
			return nil, ctx.Err()
		}
	}
}

func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// absorb folds one event of the remote agent into the run; it reports
// whether the task has ended or stopped for input.
func (run *remoteRun) absorb(ctx context.Context, ev a2a.Event) bool {
	switch e := ev.(type) {
	case *a2a.Message:
		run.direct = e
		run.learnContext(e.ContextID)
		return true
	case *a2a.Task:
		run.taskID = e.ID
		run.learnContext(e.ContextID)
		run.artifacts = append([]*a2a.Artifact(nil), e.Artifacts...)
		run.status = e.Status
	case *a2a.TaskStatusUpdateEvent:
		if run.taskID == "" {
			run.taskID = e.TaskID
		}
		run.status = e.Status
		if e.Status.State == a2a.TaskStateWorking {
			// A progress event that cannot be stored (the task ended
			// meanwhile) changes nothing for the remote task.
			_ = run.t.Progress(ctx, progressPayload(e.Status.Message))
		}
	case *a2a.TaskArtifactUpdateEvent:
		if run.taskID == "" {
			run.taskID = e.TaskID
		}
		run.mergeArtifact(e)
	default:
		return false
	}
	st := run.status.State
	return st.Terminal() || st == a2a.TaskStateInputRequired || st == a2a.TaskStateAuthRequired
}

func (run *remoteRun) mergeArtifact(e *a2a.TaskArtifactUpdateEvent) {
	if e.Artifact == nil {
		return
	}
	for i, a := range run.artifacts {
		if a.ID == e.Artifact.ID {
			if e.Append {
				merged := *a
				merged.Parts = append(append(a2a.ContentParts(nil), a.Parts...), e.Artifact.Parts...)
				run.artifacts[i] = &merged
			} else {
				run.artifacts[i] = e.Artifact
			}
			return
		}
	}
	run.artifacts = append(run.artifacts, e.Artifact)
}

// learnContext remembers the contextId the agent gave the thread, when it
// is not the thread id itself.
func (run *remoteRun) learnContext(id string) {
	if id == "" {
		return
	}
	run.contextID = id
	if id == run.thread {
		return
	}
	rm := run.rm
	rm.mu.Lock()
	if _, ok := rm.contexts[run.thread]; !ok && len(rm.contexts) >= maxRemoteContexts {
		for k := range rm.contexts { // forget one, any
			delete(rm.contexts, k)
			break
		}
	}
	rm.contexts[run.thread] = id
	rm.mu.Unlock()
}

// cancelRemote asks the agent to cancel the task, bounded by
// CancelTimeout, after the Clutch task was cancelled or timed out.
func (run *remoteRun) cancelRemote(ctx context.Context) {
	if run.taskID == "" || run.status.State.Terminal() {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), run.rm.opts.CancelTimeout)
	defer cancel()
	if _, err := run.rm.client.CancelTask(cctx, &a2a.CancelTaskRequest{ID: run.taskID}); err != nil {
		run.rm.opts.Logger.Warn("a2a: cancelling the remote task", "remote", run.rm.url, "task", run.taskID, "err", err)
	}
}

// progressPayload is the task.progress payload of a WORKING status: the
// Clutch progress payload it carries, else a RemoteProgress.
func progressPayload(msg *a2a.Message) any {
	p := RemoteProgress{State: string(a2a.TaskStateWorking)}
	if msg == nil {
		return p
	}
	for _, part := range msg.Parts {
		if part == nil {
			continue
		}
		if d, ok := part.Content.(a2a.Data); ok {
			b, err := json.Marshal(d.Value)
			if err != nil {
				continue
			}
			if k, _ := part.Metadata[MetaKind].(string); k == kindProgress {
				return json.RawMessage(b)
			}
			p.Data = append(p.Data, b)
		}
	}
	p.Text = textOf(msg.Parts)
	return p
}

// outcome turns the remote task's end into the handler's return.
func (run *remoteRun) outcome(ctx context.Context) (*router.Result, error) {
	if run.direct != nil {
		return run.result(ctx, run.direct.Parts)
	}
	st := run.status
	if st.State == a2a.TaskStateCompleted {
		var parts []*a2a.Part
		for _, a := range run.artifacts {
			if a != nil {
				parts = append(parts, a.Parts...)
			}
		}
		if len(parts) == 0 && st.Message != nil {
			parts = st.Message.Parts
		}
		return run.result(ctx, parts)
	}
	details := map[string]any{detailRemote: run.rm.url, detailTaskID: string(run.taskID), detailState: string(st.State)}
	if run.contextID != "" {
		details[detailContextID] = run.contextID
	}
	var text string
	if st.Message != nil {
		text = textOf(st.Message.Parts)
		// A Clutch agent behind A2A sends its §5.4 error along: keep it.
		if ep := clutchError(st.Message.Parts); ep != nil && st.State != a2a.TaskStateInputRequired {
			ep.Details = mergeDetails(ep.Details, details)
			return nil, ep
		}
	}
	code, def := protocol.CodeToolFailed, "the A2A agent failed the task"
	switch st.State {
	case a2a.TaskStateInputRequired:
		return run.ask(ctx, text, details)
	case a2a.TaskStateAuthRequired:
		code, def = protocol.CodeUnauthorized, "the A2A agent needs authentication"
	case a2a.TaskStateRejected:
		code, def = protocol.CodeUnsupportedTask, "the A2A agent rejected the task"
	case a2a.TaskStateCanceled:
		code, def = protocol.CodeCancelled, "the A2A agent cancelled the task"
	}
	if text == "" {
		text = def
	}
	return nil, router.Fail(code, text, false, details)
}

// ask makes the task ask its requester for the remote task that stopped
// in INPUT_REQUIRED: the status message's text (a default without one)
// and, when the message carries a Clutch question (a Server's), its kind
// and choices; details name the remote task and the status message that
// asked. A subtask cannot ask (docs/protocol.md §2.7): it ends with
// INPUT_REQUIRED and the same details, for the task that delegated it.
func (run *remoteRun) ask(ctx context.Context, text string, details map[string]any) (*router.Result, error) {
	if text == "" {
		text = "the A2A agent needs more input"
	}
	if run.refused != "" {
		text = "The A2A agent refused the answer (" + run.refused + "). " + text
	}
	if run.t.Request().ParentTaskID != "" {
		return nil, router.Fail(protocol.CodeInputRequired, text, false, details)
	}
	q := protocol.Question{Text: bound.Clip(text, protocol.MaxQuestionText), Details: details}
	if st := run.status; st.Message != nil {
		if st.Message.ID != "" {
			details[detailStatusMsg] = st.Message.ID
		}
		if rq := remoteQuestion(st.Message.Parts); rq != nil {
			q.Kind, q.Choices = rq.Kind, rq.Choices
			if q.Validate() != nil {
				q.Kind, q.Choices = "", nil // asked as free text
			}
		}
	}
	if _, err := run.t.Ask(ctx, q); err != nil {
		return nil, err // router.ErrWaiting: the task waits for the answer
	}
	// Handle calls Resumed first, so Ask asks: a recorded answer here is a bug.
	return nil, router.Fail(protocol.CodeInternal, "asking for the A2A task "+string(run.taskID)+" returned an earlier answer", false, details)
}

// remoteQuestion finds the Clutch question a status message carries (a
// data part of kind question, as a Server sends it), nil without one.
func remoteQuestion(parts []*a2a.Part) *protocol.Question {
	for _, p := range parts {
		if p == nil {
			continue
		}
		d, ok := p.Content.(a2a.Data)
		if k, _ := p.Metadata[MetaKind].(string); !ok || k != kindQuestion {
			continue
		}
		b, err := json.Marshal(d.Value)
		if err != nil {
			continue
		}
		var q protocol.Question
		if json.Unmarshal(b, &q) == nil {
			return &q
		}
	}
	return nil
}

// clutchError finds a §5.4 error in a status message's data parts.
func clutchError(parts []*a2a.Part) *protocol.ErrorPayload {
	for _, p := range parts {
		if p == nil {
			continue
		}
		d, ok := p.Content.(a2a.Data)
		if k, _ := p.Metadata[MetaKind].(string); !ok || k != kindError {
			continue
		}
		b, err := json.Marshal(d.Value)
		if err != nil {
			continue
		}
		m := &protocol.Message{Payload: b}
		ep, err := protocol.DecodePayload[protocol.ErrorPayload](m)
		if err == nil && ep.Code.Known() {
			return &ep
		}
	}
	return nil
}

func mergeDetails(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	return out
}

// result maps the parts of the agent's answer to a Result: the first data
// part naming a recognised payload_type is the payload (typed); else the
// text and data parts make a Content payload without payload_type. Raw
// parts go to the artifact store and URL parts become attachments.
func (run *remoteRun) result(ctx context.Context, parts []*a2a.Part) (*router.Result, error) {
	var texts []string
	var data []json.RawMessage
	res := &router.Result{}
	typed := false
	for _, p := range parts {
		if p == nil {
			continue
		}
		switch c := p.Content.(type) {
		case a2a.Text:
			texts = append(texts, string(c))
		case a2a.Data:
			b, err := json.Marshal(c.Value)
			if err != nil {
				continue
			}
			if pt, _ := p.Metadata[MetaPayloadType].(string); !typed && run.rm.recognised(pt) {
				res.PayloadType, res.Payload, typed = pt, json.RawMessage(b), true
				continue
			}
			data = append(data, b)
		case a2a.Raw:
			ref, err := run.t.PutArtifact(ctx, p.MediaType, []byte(c))
			if err != nil {
				return nil, router.Fail(protocol.CodeToolFailed, "storing a file of the A2A agent's answer: "+err.Error(), false, nil)
			}
			res.Attachments = append(res.Attachments, protocol.Attachment{Kind: "artifact_ref", Ref: ref, MediaType: p.MediaType, Name: p.Filename, Size: int64(len(c))})
		case a2a.URL:
			res.Attachments = append(res.Attachments, protocol.Attachment{Kind: "url", Ref: string(c), MediaType: p.MediaType, Name: p.Filename})
		}
	}
	if !typed {
		c := Content{Data: data}
		for i, t := range texts {
			if i > 0 {
				c.Text += "\n"
			}
			c.Text += t
		}
		res.Payload = c
	}
	return res, nil
}

// recognised reports whether a remote data part may claim payload type pt.
func (rm *Remote) recognised(pt string) bool {
	if pt == "" || !protocol.ValidPayloadType(pt) {
		return false
	}
	if rm.opts.Schemas == nil {
		return true
	}
	_, ok := rm.opts.Schemas.Lookup(pt)
	return ok
}
