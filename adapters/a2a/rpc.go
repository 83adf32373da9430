package a2a

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"iter"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2asrv"

	"github.com/clutchprotocol/clutch/adapters"
	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

// rpc implements a2asrv.RequestHandler over the Clutch router and store,
// for the team endpoint (agent == "") or one agent's.
type rpc struct {
	s     *Server
	agent string
}

var _ a2asrv.RequestHandler = (*rpc)(nil)

// internal logs err and returns the A2A internal error, without detail.
func (h *rpc) internal(ctx context.Context, what string, err error) error {
	h.s.opts.Logger.ErrorContext(ctx, "a2a: "+what, "err", err)
	return a2a.NewError(a2a.ErrInternalError, "internal error")
}

// caller is the authenticated caller of the request (the Server's guard
// put it in the context).
func (h *rpc) caller(ctx context.Context) (*auth.Caller, error) {
	c, ok := auth.FromContext(ctx)
	if !ok {
		return nil, a2a.NewError(a2a.ErrUnauthenticated, "unauthenticated")
	}
	return c, nil
}

func (h *rpc) view(ctx context.Context, id a2a.TaskID) (*taskView, uint64, error) {
	c, err := h.caller(ctx)
	if err != nil {
		return nil, 0, err
	}
	if !adapters.ValidForeignID(string(id)) {
		return nil, 0, invalidParams("task id must be at most " + strconv.Itoa(protocol.MaxIDLength) + " bytes without control characters")
	}
	v, last, ok, err := h.s.view(ctx, c, string(id), h.agent)
	if err != nil {
		return nil, 0, h.internal(ctx, "reading task "+string(id), err)
	}
	if !ok {
		return nil, 0, a2a.NewError(a2a.ErrTaskNotFound, "task not found: "+string(id))
	}
	return v, last, nil
}

// SendMessage implements the SendMessage method: it submits the task and,
// unless configuration.returnImmediately is set, waits until it ends
// (COMPLETED, FAILED, CANCELED or INPUT_REQUIRED) before answering with
// the Task. A client that goes away from a blocking send cancels the task.
func (h *rpc) SendMessage(ctx context.Context, req *a2a.SendMessageRequest) (a2a.SendMessageResult, error) {
	hd, err := h.submit(ctx, req)
	if err != nil {
		return nil, err
	}
	if req.Config == nil || !req.Config.ReturnImmediately {
		select {
		case <-hd.Done():
			h.s.forget(hd)
		case <-ctx.Done():
			hd.Cancel("the A2A client went away from a blocking SendMessage")
			return nil, ctx.Err()
		}
	}
	v, _, err := h.view(ctx, a2a.TaskID(hd.TaskID()))
	if err != nil {
		return nil, err
	}
	return v.snapshot(historyLength(req.Config)), nil
}

// SendStreamingMessage implements SendStreamingMessage: the Task, then a
// status or artifact update for every event of the task, in store order,
// until it ends.
func (h *rpc) SendStreamingMessage(ctx context.Context, req *a2a.SendMessageRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if h.s.opts.DisableStreaming {
			yield(nil, a2a.NewError(a2a.ErrUnsupportedOperation, "streaming is not enabled"))
			return
		}
		hd, err := h.submit(ctx, req)
		if err != nil {
			yield(nil, err)
			return
		}
		if id := req.Message.TaskID; id != "" && hd.TaskID() == string(id) {
			// An answer: the task as it is now (the answer stored), then
			// what follows it.
			v, last, err := h.view(ctx, id)
			if err != nil {
				yield(nil, err)
				return
			}
			// The resumed attempt may have ended, or asked again, before the
			// view was read: then the snapshot says it all, and following
			// would wait for an event that never comes.
			if yield(v.snapshot(-1), nil) && !v.terminal && v.question == nil {
				h.follow(ctx, v, string(id), last, yield)
			}
			return
		}
		h.follow(ctx, &taskView{}, hd.TaskID(), 0, yield)
	}
}

// SubscribeToTask implements SubscribeToTask: the current Task, then every
// later event of the task until it ends. A task that has ended answers
// UnsupportedOperationError (A2A 1.0 §3.1.6).
func (h *rpc) SubscribeToTask(ctx context.Context, req *a2a.SubscribeToTaskRequest) iter.Seq2[a2a.Event, error] {
	return func(yield func(a2a.Event, error) bool) {
		if h.s.opts.DisableStreaming {
			yield(nil, a2a.NewError(a2a.ErrUnsupportedOperation, "streaming is not enabled"))
			return
		}
		v, last, err := h.view(ctx, req.ID)
		if err != nil {
			yield(nil, err)
			return
		}
		if v.terminal {
			yield(nil, a2a.NewError(a2a.ErrUnsupportedOperation, "task "+string(req.ID)+" is "+string(v.task.Status.State)+": a task that ended cannot be subscribed to"))
			return
		}
		// A task waiting for input is interrupted, not ended: the stream
		// gives it as it is and ends, as every stream ends when its task
		// stops for input (the answer's stream carries what follows).
		if !yield(v.snapshot(-1), nil) || v.question != nil {
			return
		}
		h.follow(ctx, v, string(req.ID), last, yield)
	}
}

// follow yields the A2A events of a task's events after seq after, until
// the task ends or ctx is done.
func (h *rpc) follow(ctx context.Context, v *taskView, taskID string, after uint64, yield func(a2a.Event, error) bool) {
	for ev, err := range h.s.st.Follow(ctx, store.Query{TaskID: taskID, AfterSeq: after}) {
		if err != nil {
			if ctx.Err() == nil {
				yield(nil, h.internal(ctx, "following task "+taskID, err))
			}
			return
		}
		m, err := ev.Message()
		if err != nil {
			yield(nil, h.internal(ctx, "decoding an event of task "+taskID, err))
			return
		}
		for _, e := range v.apply(m) {
			if !yield(e, nil) {
				return
			}
		}
		if v.terminal || v.question != nil { // ended, or waits for the caller's answer
			return
		}
	}
}

// GetTask implements GetTask from the events in the store, so it answers
// for tasks of earlier processes too.
func (h *rpc) GetTask(ctx context.Context, req *a2a.GetTaskRequest) (*a2a.Task, error) {
	v, _, err := h.view(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	hl := -1
	if req.HistoryLength != nil {
		if hl = *req.HistoryLength; hl < 0 {
			return nil, invalidParams("historyLength must not be negative")
		}
	}
	return v.snapshot(hl), nil
}

// CancelTask implements CancelTask for tasks running in this process: it
// cancels the Clutch task (and its subtasks) and answers with the Task once
// its task.cancel is stored.
func (h *rpc) CancelTask(ctx context.Context, req *a2a.CancelTaskRequest) (*a2a.Task, error) {
	v, _, err := h.view(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	if v.terminal {
		return nil, a2a.NewError(a2a.ErrTaskNotCancelable, "task "+string(req.ID)+" is "+string(v.task.Status.State))
	}
	hd := h.s.handle(string(req.ID))
	if hd == nil && v.question != nil {
		// It waits for an answer: the router ends it at once.
		if hd, err = h.s.r.Cancel(string(req.ID), "cancelled by the A2A client"); err != nil {
			return nil, a2a.NewError(a2a.ErrTaskNotCancelable, "task "+string(req.ID)+" is not waiting in this process")
		}
	}
	if hd == nil {
		return nil, a2a.NewError(a2a.ErrTaskNotCancelable, "task "+string(req.ID)+" is not running in this process")
	}
	hd.Cancel("cancelled by the A2A client")
	select {
	case <-hd.Done():
		h.s.forget(hd)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	v, _, err = h.view(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	return v.snapshot(-1), nil
}

// ListTasks implements ListTasks over the task.requests that came in over
// A2A from the caller (every caller's with auth.ScopeReadAll) and, on an
// agent's endpoint, were addressed to it: sorted by status timestamp,
// newest first (A2A 1.0 §3.1.4), with totalSize the number of tasks the
// filters match. Sorting and counting need every matching task, so a page
// reads every task of the caller (of the context, with a contextId) from
// the store's indexes, up to maxListTasks; the page token is the last
// task of the page, so the next page starts after it even when newer
// tasks came meanwhile.
func (h *rpc) ListTasks(ctx context.Context, req *a2a.ListTasksRequest) (*a2a.ListTasksResponse, error) {
	c, err := h.caller(ctx)
	if err != nil {
		return nil, err
	}
	size := req.PageSize
	switch {
	case size == 0: // absent: serveRPC refuses an explicit 0 (checkParams)
		size = 50
	case size < 1 || size > 100:
		return nil, invalidParams("pageSize must be between 1 and 100")
	}
	hl := 0
	if req.HistoryLength != nil {
		if hl = *req.HistoryLength; hl < 0 {
			return nil, invalidParams("historyLength must not be negative")
		}
	}
	if req.Status != a2a.TaskStateUnspecified && !slices.Contains(taskStates, req.Status) {
		return nil, invalidParams("status " + strconv.Quote(string(req.Status)) + " is not a task state")
	}
	var from *listEntry
	if req.PageToken != "" {
		if from = parsePageToken(req.PageToken); from == nil {
			return nil, invalidParams("pageToken is not one this server gave")
		}
	}
	if !adapters.ValidForeignID(req.ContextID) {
		return nil, invalidParams("contextId must be at most " + strconv.Itoa(protocol.MaxIDLength) + " bytes without control characters")
	}
	q := store.Query{TypePrefix: string(protocol.TypeTaskRequest)}
	if req.ContextID != "" {
		// The caller's own context: contextIds are per caller.
		if q.ThreadID, err = h.s.contextThread(ctx, c, SourceA2A, req.ContextID); err != nil {
			return nil, h.internal(ctx, "deriving the context's thread", err)
		}
	}
	if !c.Has(auth.ScopeReadAll) {
		q.AgentID = c.AgentID
	}
	var all []listEntry
	for ev, err := range h.s.st.Read(ctx, q) {
		if err != nil {
			return nil, h.internal(ctx, "listing tasks", err)
		}
		m, err := ev.Message()
		if err != nil {
			return nil, h.internal(ctx, "listing tasks", err)
		}
		if m.Type != protocol.TypeTaskRequest || !h.s.visible(m, c, h.agent) {
			continue
		}
		if len(all) == maxListTasks {
			return nil, a2a.NewError(a2a.ErrServerError, "more than "+strconv.Itoa(maxListTasks)+" tasks to list: narrow the list with contextId")
		}
		v, _, ok, err := h.s.view(ctx, c, m.TaskID, h.agent)
		if err != nil {
			return nil, h.internal(ctx, "listing tasks", err)
		}
		if !ok || v.req.ID != m.ID {
			continue // a redelivery of a request listed already
		}
		st := v.task.Status
		var at time.Time
		if st.Timestamp != nil {
			at = *st.Timestamp
		}
		if req.Status != a2a.TaskStateUnspecified && st.State != req.Status {
			continue
		}
		if req.StatusTimestampAfter != nil && at.Before(*req.StatusTimestampAfter) {
			continue
		}
		all = append(all, listEntry{at: at.UnixNano(), id: m.TaskID})
	}
	slices.SortFunc(all, func(a, b listEntry) int { return b.cmp(a) }) // newest first
	start := 0
	if from != nil {
		start, _ = slices.BinarySearchFunc(all, *from, func(e, t listEntry) int { return t.cmp(e) })
		if start < len(all) && all[start] == *from {
			start++
		}
	}
	page := all[start:min(start+size, len(all))]
	resp := &a2a.ListTasksResponse{Tasks: make([]*a2a.Task, 0, len(page)), PageSize: size, TotalSize: len(all)}
	for _, e := range page {
		v, _, ok, err := h.s.view(ctx, c, e.id, h.agent)
		if err != nil {
			return nil, h.internal(ctx, "listing tasks", err)
		}
		if !ok {
			continue
		}
		t := v.snapshot(hl)
		if !req.IncludeArtifacts {
			t.Artifacts = nil
		}
		resp.Tasks = append(resp.Tasks, t)
	}
	if start+size < len(all) {
		resp.NextPageToken = page[len(page)-1].token()
	}
	return resp, nil
}

// maxListTasks bounds the tasks one ListTasks request sorts.
const maxListTasks = 100_000

// taskStates are the states a task can be in, for ListTasks' status.
var taskStates = []a2a.TaskState{a2a.TaskStateSubmitted, a2a.TaskStateWorking, a2a.TaskStateInputRequired, a2a.TaskStateAuthRequired,
	a2a.TaskStateCompleted, a2a.TaskStateFailed, a2a.TaskStateCanceled, a2a.TaskStateRejected}

// listEntry is a task in ListTasks' order: its status timestamp (Unix
// nanoseconds), then its id.
type listEntry struct {
	at int64
	id string
}

func (e listEntry) cmp(o listEntry) int {
	if e.at != o.at {
		return cmp.Compare(e.at, o.at)
	}
	return strings.Compare(e.id, o.id)
}

// token is the page token of a page that ends with e.
func (e listEntry) token() string { return strconv.FormatInt(e.at, 10) + "." + e.id }

// parsePageToken reads a token of listEntry.token; nil when it is not one.
func parsePageToken(s string) *listEntry {
	at, id, ok := strings.Cut(s, ".")
	n, err := strconv.ParseInt(at, 10, 64)
	if !ok || err != nil || id == "" || !adapters.ValidForeignID(id) {
		return nil
	}
	return &listEntry{at: n, id: id}
}

func invalidParams(msg string) error { return a2a.NewError(a2a.ErrInvalidParams, msg) }

// submit maps an A2A send request to a task.request and submits it.
func (h *rpc) submit(ctx context.Context, req *a2a.SendMessageRequest) (*router.Handle, error) {
	if req == nil || req.Message == nil {
		return nil, invalidParams("message is required")
	}
	c, err := h.caller(ctx)
	if err != nil {
		return nil, err
	}
	if !c.Has(auth.ScopeSubmit) {
		return nil, a2a.NewError(a2a.ErrUnauthorized, "the caller may not submit tasks")
	}
	msg := req.Message
	switch {
	case msg.ID == "":
		return nil, invalidParams("message.messageId is required")
	case msg.Role == a2a.MessageRoleUnspecified:
		return nil, invalidParams("message.role is required (ROLE_USER)")
	case msg.Role != a2a.MessageRoleUser:
		return nil, invalidParams("message.role of a message sent to an agent is ROLE_USER")
	case req.Config != nil && req.Config.HistoryLength != nil && *req.Config.HistoryLength < 0:
		return nil, invalidParams("configuration.historyLength must not be negative")
	}
	if req.Config != nil && req.Config.PushConfig != nil {
		return nil, a2a.NewError(a2a.ErrPushNotificationNotSupported, "push notifications are not supported")
	}
	if !adapters.ValidForeignID(msg.ContextID) || !adapters.ValidForeignID(msg.ID) || !adapters.ValidForeignID(string(msg.TaskID)) {
		return nil, invalidParams("messageId, contextId and taskId are at most " + strconv.Itoa(protocol.MaxIDLength) + " bytes, without control characters")
	}
	if h.s.full() {
		return nil, a2a.NewError(a2a.ErrServerError, "at capacity: "+strconv.Itoa(h.s.opts.MaxRunning)+" tasks running; retry later")
	}
	in, err := mapMessage(msg, req.Metadata)
	if err != nil {
		return nil, invalidParams(err.Error())
	}
	if msg.TaskID != "" {
		// A message on a task answers the question it waits on (A2A 1.0
		// §3.4.3: the same task goes on). A task that runs or has ended
		// takes none: its handler read its input when it started.
		v, _, err := h.view(ctx, msg.TaskID)
		if err != nil {
			return nil, err
		}
		switch st := v.task.Status.State; {
		case v.terminal:
			return nil, a2a.NewError(a2a.ErrUnsupportedOperation, "task "+string(msg.TaskID)+" is "+string(st)+" and takes no more messages")
		case v.question == nil:
			return nil, a2a.NewError(a2a.ErrUnsupportedOperation, "task "+string(msg.TaskID)+" is still running and takes a message only when it asks for input")
		case msg.ContextID != "" && msg.ContextID != v.task.ContextID:
			return nil, invalidParams("contextId does not match the task's")
		}
		return h.answer(ctx, c, v, msg)
	}
	m, err := h.s.r.NewRequest(c.AgentID, in.payloadType, in.payload)
	if err != nil {
		return nil, invalidParams(err.Error())
	}
	m.Meta = map[string]any{metaSource: SourceA2A}
	if err := h.s.setContext(ctx, c, m, SourceA2A, msg.ContextID); err != nil {
		return nil, h.internal(ctx, "deriving the context's thread", err)
	}
	m.Trace = inboundTrace(ctx) // the caller's traceparent (trace.go)
	// The messageId is the idempotency key, scoped to the caller: the
	// same message sent again is the same task (docs/protocol.md §5.2).
	m.Meta[metaMessageID] = msg.ID
	m.IdempotencyKey = msg.ID
	if m.RunID, err = h.s.ids.RunID(ctx, c, SourceA2A+" "+h.agent, msg.ID); err != nil { // per endpoint: the task must be visible there
		return nil, h.internal(ctx, "deriving the run", err)
	}
	if h.agent != "" {
		m.To = []protocol.Participant{{AgentID: h.agent}}
	} else {
		// Routed among the exposed agents only, whatever requires says.
		m.To = make([]protocol.Participant, len(h.s.opts.Expose))
		for i, id := range h.s.opts.Expose {
			m.To[i].AgentID = id
		}
	}
	m.Requires, m.Prefers, m.Domain = in.requires, in.prefers, in.domain
	if m.Attachments, err = h.s.attachments(ctx, in.files); err != nil {
		return nil, err
	}
	// Only into the caller's own context and run (docs/protocol.md §6.7);
	// every id here is random or derived, so nothing is claimed.
	if err := auth.CheckWrite(ctx, h.s.st, c, m, auth.KindRun, auth.KindThread, auth.KindTask); err != nil {
		if errors.Is(err, auth.ErrNotFound) {
			return nil, invalidParams(err.Error())
		}
		return nil, a2a.NewError(a2a.ErrUnauthorized, err.Error())
	}
	hd, err := h.s.r.Submit(ctx, m)
	switch {
	case errors.Is(err, router.ErrInvalidRequest):
		return nil, invalidParams(err.Error())
	case errors.Is(err, protocol.CodeCapacity) || errors.Is(err, protocol.CodeRateLimited):
		return nil, a2a.NewError(a2a.ErrServerError, "at capacity; retry later")
	case err != nil:
		return nil, h.internal(ctx, "submitting a task", err)
	}
	h.s.track(hd)
	return hd, nil
}

// answer answers the question the task of v waits on with the caller's
// message (docs/protocol.md §2.7): one data part is the value, text parts
// are a string. The task runs on under the same id.
func (h *rpc) answer(ctx context.Context, c *auth.Caller, v *taskView, msg *a2a.Message) (*router.Handle, error) {
	value, err := answerValue(msg)
	if err != nil {
		return nil, invalidParams(err.Error())
	}
	hd, err := h.s.r.Answer(ctx, v.question.ID, router.Answerer{AgentID: c.AgentID, Scopes: c.Scopes}, value)
	switch {
	case errors.Is(err, router.ErrInvalidRequest) || errors.Is(err, router.ErrInvalidPayload):
		return nil, invalidParams(err.Error())
	case errors.Is(err, router.ErrUnauthorized):
		return nil, a2a.NewError(a2a.ErrUnauthorized, "the caller may not answer "+v.question.ID)
	case errors.Is(err, router.ErrAnswered) || errors.Is(err, router.ErrTaskEnded) || errors.Is(err, router.ErrNotWaiting):
		return nil, a2a.NewError(a2a.ErrUnsupportedOperation, "task "+string(v.task.ID)+" no longer waits for an answer")
	case errors.Is(err, protocol.CodeCapacity):
		return nil, a2a.NewError(a2a.ErrServerError, "at capacity; retry later")
	case err != nil:
		return nil, h.internal(ctx, "answering a question", err)
	}
	h.s.track(hd)
	return hd, nil
}

// answerValue is the value of an answer given as an A2A message, its
// parts read as mapMessage reads a request's: one data part is the value,
// text parts joined are a JSON string.
func answerValue(msg *a2a.Message) (json.RawMessage, error) {
	in, err := mapMessage(msg, nil)
	if err != nil {
		return nil, err
	}
	if len(in.files) > 0 {
		return nil, errors.New("an answer is text parts or one data part, not files")
	}
	if in.payloadType != PayloadContent {
		return in.payload, nil // one data part, typed
	}
	var c Content
	if err := json.Unmarshal(in.payload, &c); err != nil {
		return nil, err
	}
	switch {
	case c.Text == "" && len(c.Data) == 1:
		return c.Data[0], nil
	case len(c.Data) == 0:
		return json.Marshal(c.Text)
	}
	return nil, errors.New("an answer is text parts or one data part")
}

// attachments stores raw parts in the artifact store and returns the
// attachments of every file part.
func (s *Server) attachments(ctx context.Context, files []filePart) ([]protocol.Attachment, error) {
	var out []protocol.Attachment
	for i, f := range files {
		if f.raw == nil {
			out = append(out, protocol.Attachment{Kind: "url", Ref: f.url, MediaType: f.mediaType, Name: f.name})
			continue
		}
		ref, err := s.st.PutArtifact(ctx, f.mediaType, f.raw)
		switch {
		case errors.Is(err, store.ErrInvalidMediaType) || errors.Is(err, store.ErrTooLarge):
			return nil, invalidParams("file part " + strconv.Itoa(i) + ": " + err.Error())
		case err != nil:
			s.opts.Logger.ErrorContext(ctx, "a2a: storing a file part", "err", err)
			return nil, a2a.NewError(a2a.ErrInternalError, "internal error")
		}
		out = append(out, protocol.Attachment{Kind: "artifact_ref", Ref: ref, MediaType: f.mediaType, Name: f.name, Size: int64(len(f.raw))})
	}
	return out, nil
}

// The push notification methods: not built, so not claimed in the cards.

// GetTaskPushConfig answers PushNotificationNotSupportedError.
func (h *rpc) GetTaskPushConfig(context.Context, *a2a.GetTaskPushConfigRequest) (*a2a.PushConfig, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

// ListTaskPushConfigs answers PushNotificationNotSupportedError.
func (h *rpc) ListTaskPushConfigs(context.Context, *a2a.ListTaskPushConfigRequest) (*a2a.ListTaskPushConfigResponse, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

// CreateTaskPushConfig answers PushNotificationNotSupportedError.
func (h *rpc) CreateTaskPushConfig(context.Context, *a2a.PushConfig) (*a2a.PushConfig, error) {
	return nil, a2a.ErrPushNotificationNotSupported
}

// DeleteTaskPushConfig answers PushNotificationNotSupportedError.
func (h *rpc) DeleteTaskPushConfig(context.Context, *a2a.DeleteTaskPushConfigRequest) error {
	return a2a.ErrPushNotificationNotSupported
}

// GetExtendedAgentCard answers UnsupportedOperationError: the cards do
// not declare an extended card (A2A 1.0 §3.3.4), the public card is the
// only card.
func (h *rpc) GetExtendedAgentCard(context.Context, *a2a.GetExtendedAgentCardRequest) (*a2a.AgentCard, error) {
	return nil, a2a.NewError(a2a.ErrUnsupportedOperation, "this agent has no extended card (capabilities.extendedAgentCard is not declared)")
}

// historyLength is the history bound a send configuration asks for; -1
// for none (submit refused a negative one).
func historyLength(cfg *a2a.SendMessageConfig) int {
	if cfg == nil || cfg.HistoryLength == nil {
		return -1
	}
	return *cfg.HistoryLength
}
