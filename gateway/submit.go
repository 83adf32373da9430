package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/internal/httpjson"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

// SurfaceName is the surface name of the gateway in auth.Deriver.RunID: the
// run of a task.request posted with an idempotency_key and no run_id.
const SurfaceName = "gateway"

// cancelWait bounds how long POST /v1/messages waits for a cancelled
// task's terminal event before it answers without it.
const cancelWait = 10 * time.Second

// Submission is the body of POST /v1/messages. Its members are envelope
// fields of the same JSON names and meaning (docs/protocol.md §1.2).
// There is no "from": the sender is always the authenticated caller.
type Submission struct {
	Type           protocol.Type          `json:"type"`
	RunID          string                 `json:"run_id,omitzero"`
	ThreadID       string                 `json:"thread_id,omitzero"`
	TaskID         string                 `json:"task_id,omitzero"`
	ParentTaskID   string                 `json:"parent_task_id,omitzero"`
	To             []protocol.Participant `json:"to,omitzero"`
	PayloadType    string                 `json:"payload_type,omitzero"`
	Payload        jsontext.Value         `json:"payload,omitzero"`
	Requires       []string               `json:"requires,omitzero"`
	Prefers        []string               `json:"prefers,omitzero"`
	Domain         string                 `json:"domain,omitzero"`
	Meta           jsontext.Value         `json:"meta,omitzero"`
	IdempotencyKey string                 `json:"idempotency_key,omitzero"`
}

// Accepted is the answer of POST /v1/messages (202).
type Accepted struct {
	// ID is the stored message: the request, the chat message, or for a
	// cancel the task's terminal event ("" when it did not come in time).
	ID       string `json:"id"`
	Seq      uint64 `json:"seq"`
	RunID    string `json:"run_id"`
	ThreadID string `json:"thread_id"`
	TaskID   string `json:"task_id"`
	// Type is the type of the stored message (a cancel answers with the
	// task's terminal event, which may be a result that won the race).
	Type protocol.Type `json:"type,omitempty"`
	// Duplicate is set when the message was already stored (same id or
	// same run_id and idempotency_key): ID and Seq are the stored one's.
	Duplicate bool `json:"duplicate,omitempty"`
}

// DecodeSubmission decodes a POST /v1/messages body strictly: one JSON
// object with the members of Submission only, no duplicate member, valid
// UTF-8, ids within protocol.MaxIDLength, payload and meta JSON objects.
// A "from" member is refused: the sender is the authenticated caller.
// A member Submission does not define is refused with ErrUnknownField
// naming it, and so is, for a task.cancel, any member but type, task_id
// and payload, and a payload other than a CancelPayload; other defects
// give ErrBadRequest.
func DecodeSubmission(body []byte) (*Submission, error) {
	var probe struct {
		From jsontext.Value `json:"from,omitzero"`
	}
	// The probe reads "from" alone, so that its refusal is not reported as
	// an unknown member.
	if err := jsonv2.Unmarshal(body, &probe); err == nil && probe.From != nil {
		return nil, coded.Wrap(ErrBadRequest, `"from" is not accepted: the sender is the authenticated caller`, nil)
	}
	var s Submission
	if err := jsonv2.Unmarshal(body, &s, jsonv2.RejectUnknownMembers(true)); err != nil {
		var se *jsonv2.SemanticError
		if errors.As(err, &se) && errors.Is(se.Err, jsonv2.ErrUnknownName) {
			return nil, coded.Wrap(ErrUnknownField, "a submission has no member "+strconv.Quote(pointerName(se.JSONPointer))+
				" (it has type, run_id, thread_id, task_id, parent_task_id, to, payload_type, payload, requires, prefers, domain, meta and idempotency_key)", nil)
		}
		return nil, coded.Wrap(ErrBadRequest, "the body is not a submission: "+jsonErrorText(err), nil)
	}
	switch s.Type {
	case protocol.TypeTaskRequest, protocol.TypeChatMessage, protocol.TypeTaskCancel:
	default:
		return nil, coded.Wrap(ErrBadRequest, `"type" must be "task.request", "chat.message" or "task.cancel"`, nil)
	}
	if s.Type == protocol.TypeTaskCancel {
		if err := checkCancel(&s); err != nil {
			return nil, err
		}
	}
	for _, f := range []struct{ name, v string }{
		{"run_id", s.RunID}, {"thread_id", s.ThreadID}, {"task_id", s.TaskID}, {"parent_task_id", s.ParentTaskID},
		{"idempotency_key", s.IdempotencyKey}, {"domain", s.Domain}, {"payload_type", s.PayloadType},
	} {
		if len(f.v) > protocol.MaxIDLength {
			return nil, coded.Wrap(ErrBadRequest, f.name+" is longer than "+strconv.Itoa(protocol.MaxIDLength)+" bytes", nil)
		}
	}
	for _, f := range []struct {
		name string
		v    jsontext.Value
	}{{"payload", s.Payload}, {"meta", s.Meta}} {
		if f.v != nil && f.v.Kind() != '{' {
			return nil, coded.Wrap(ErrBadRequest, f.name+" must be a JSON object", nil)
		}
	}
	if s.Type == protocol.TypeTaskCancel && s.TaskID == "" {
		return nil, coded.Wrap(ErrBadRequest, "a task.cancel needs task_id", nil)
	}
	return &s, nil
}

// CancelPayload is the payload of a task.cancel submission: the reason,
// stored in the task.cancel after "cancelled by <caller>: ". It has no
// other member.
type CancelPayload struct {
	Message string `json:"message,omitzero"`
}

// checkCancel refuses what a task.cancel submission would ignore: the
// members a cancel does not use (it names a task and may give a reason)
// and a payload other than CancelPayload.
func checkCancel(s *Submission) error {
	for _, f := range []struct {
		name  string
		given bool
	}{
		{"run_id", s.RunID != ""}, {"thread_id", s.ThreadID != ""}, {"parent_task_id", s.ParentTaskID != ""},
		{"to", s.To != nil}, {"payload_type", s.PayloadType != ""}, {"requires", s.Requires != nil},
		{"prefers", s.Prefers != nil}, {"domain", s.Domain != ""}, {"meta", s.Meta != nil},
		{"idempotency_key", s.IdempotencyKey != ""},
	} {
		if f.given {
			return coded.Wrap(ErrUnknownField, "a task.cancel has no member \""+f.name+"\": it takes type, task_id and payload {\"message\": reason}", nil)
		}
	}
	if s.Payload == nil {
		return nil
	}
	var p CancelPayload
	if err := jsonv2.Unmarshal(s.Payload, &p, jsonv2.RejectUnknownMembers(true)); err != nil {
		var se *jsonv2.SemanticError
		if errors.As(err, &se) && errors.Is(se.Err, jsonv2.ErrUnknownName) {
			return coded.Wrap(ErrUnknownField, "a task.cancel's payload has no member "+strconv.Quote(pointerName(se.JSONPointer))+
				`: the reason goes in payload.message (or POST /v1/tasks/{id}/cancel {"reason": …})`, nil)
		}
		return coded.Wrap(ErrBadRequest, "a task.cancel's payload must be {\"message\": reason}: "+jsonErrorText(err), nil)
	}
	return nil
}

// pointerName is the last member name of a JSON pointer ("/a/b~1c" → "b/c").
func pointerName(p jsontext.Pointer) string {
	s := string(p)
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
}

// jsonErrorText is the decoder's message without Go names.
func jsonErrorText(err error) string {
	var se *jsonv2.SemanticError
	if errors.As(err, &se) && se.JSONPointer != "" {
		return "at " + string(se.JSONPointer) + ": " + trimJSON(se.Err)
	}
	return trimJSON(err)
}

func trimJSON(err error) string {
	if err == nil {
		return "invalid value"
	}
	s := err.Error()
	for _, p := range []string{"json: ", "jsontext: "} {
		s = string(bytes.TrimPrefix([]byte(s), []byte(p)))
	}
	return s
}

func (g *Gateway) serveSubmit(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	c := caller(ctx)
	if !c.Has(auth.ScopeSubmit) {
		g.writeError(w, r, auth.ErrForbidden)
		return
	}
	body, err := readBody(r)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	s, err := DecodeSubmission(body)
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	var acc *Accepted
	switch s.Type {
	case protocol.TypeTaskRequest:
		acc, err = g.submitRequest(ctx, c, s)
	case protocol.TypeChatMessage:
		acc, err = g.submitChat(ctx, c, s)
	case protocol.TypeTaskCancel:
		acc, err = g.submitCancel(ctx, c, s)
	}
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	httpjson.Write(w, http.StatusAccepted, acc)
}

// readBody reads a request's body: over the limit it is the
// *http.MaxBytesError writeError answers 413, any other failure
// ErrBadRequest.
func readBody(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if !errors.As(err, &tooBig) {
			err = coded.Wrap(ErrBadRequest, "the body could not be read", nil)
		}
		return nil, err
	}
	return body, nil
}

// checkTargets refuses a submission the caller may not write
// (auth.CheckWrite, docs/protocol.md §6.7): into a run, thread or task of
// another caller, under a reserved id, or under a parent task it may not
// see — as if they did not exist (ErrNotFound).
//
// The ids the submission leaves out are made here (random, or derived from
// the caller's idempotency key), so only the ones it names are claimed.
func (g *Gateway) checkTargets(ctx context.Context, c *auth.Caller, m *protocol.Message, s *Submission) error {
	made := make([]auth.Kind, 0, 3)
	for _, t := range [...]struct {
		k     auth.Kind
		named string
	}{{auth.KindRun, s.RunID}, {auth.KindThread, s.ThreadID}, {auth.KindTask, s.TaskID}} {
		if t.named == "" {
			made = append(made, t.k)
		}
	}
	return auth.CheckWrite(ctx, g.st, c, m, made...) // auth.ErrNotFound answers 404 NOT_FOUND
}

// fill sets the submission's optional fields on m.
func fill(m *protocol.Message, s *Submission) error {
	if s.RunID != "" {
		m.RunID = s.RunID
	}
	if s.ThreadID != "" {
		m.ThreadID = s.ThreadID
	}
	if s.TaskID != "" {
		m.TaskID = s.TaskID
	}
	m.ParentTaskID = s.ParentTaskID
	if s.To != nil {
		m.To = s.To
	}
	m.PayloadType = s.PayloadType
	if s.PayloadType != "" {
		m.SchemaRef = protocol.SchemaRefFor(s.PayloadType)
	}
	m.Payload = json.RawMessage(`{}`)
	if s.Payload != nil {
		m.Payload = json.RawMessage(s.Payload)
	}
	m.Requires, m.Prefers, m.Domain = s.Requires, s.Prefers, s.Domain
	m.IdempotencyKey = s.IdempotencyKey
	if s.Meta != nil {
		d := json.NewDecoder(bytes.NewReader(s.Meta))
		d.UseNumber() // as protocol.Decode keeps numbers
		if err := d.Decode(&m.Meta); err != nil {
			return coded.Wrap(ErrBadRequest, "meta", err)
		}
	}
	return nil
}

func (g *Gateway) submitRequest(ctx context.Context, c *auth.Caller, s *Submission) (*Accepted, error) {
	m, err := g.r.NewRequest(c.AgentID, s.PayloadType, json.RawMessage(`{}`))
	if err != nil {
		return nil, err
	}
	if err := fill(m, s); err != nil {
		return nil, err
	}
	if s.IdempotencyKey != "" && s.RunID == "" {
		// The same key from the same caller lands in the same run, where
		// the store's dedup answers it with the first task.
		if m.RunID, err = g.ids.RunID(ctx, c, SurfaceName, s.IdempotencyKey); err != nil {
			return nil, err
		}
	}
	if err := g.checkTargets(ctx, c, m, s); err != nil {
		return nil, err
	}
	h, err := g.r.Submit(ctx, m)
	if err != nil {
		return nil, err
	}
	req := h.Request()
	ev, err := g.st.Get(ctx, req.ID)
	if err != nil {
		return nil, err
	}
	return &Accepted{
		ID: req.ID, Seq: ev.Seq, RunID: req.RunID, ThreadID: req.ThreadID, TaskID: req.TaskID,
		Type: req.Type, Duplicate: req.ID != m.ID,
	}, nil
}

func (g *Gateway) submitChat(ctx context.Context, c *auth.Caller, s *Submission) (*Accepted, error) {
	m := g.r.IDs().NewMessage(protocol.TypeChatMessage, c.AgentID)
	if err := fill(m, s); err != nil {
		return nil, err
	}
	if err := g.checkTargets(ctx, c, m, s); err != nil {
		return nil, err
	}
	if v := g.r.Validator(); v != nil {
		if err := v.ValidateMessage(m); err != nil {
			return nil, coded.Wrap(router.ErrInvalidPayload, "", err)
		}
	}
	res, err := g.st.Append(ctx, m)
	if err != nil {
		return nil, err
	}
	acc := &Accepted{ID: m.ID, Seq: res[0].Seq, RunID: m.RunID, ThreadID: m.ThreadID, TaskID: m.TaskID, Type: m.Type}
	if res[0].Duplicate {
		// A duplicate is answered only to the sender of the original
		// (docs/protocol.md §6.7).
		dm, err := g.first(ctx, store.Query{AfterSeq: res[0].Seq - 1, Limit: 1})
		if err != nil {
			return nil, err
		}
		if dm == nil || dm.From.AgentID != c.AgentID {
			return nil, coded.Wrap(errConflict, "the message duplicates one the caller did not send", nil)
		}
		acc.Duplicate = true
		acc.Seq, acc.ID, acc.ThreadID, acc.TaskID = res[0].Seq, dm.ID, dm.ThreadID, dm.TaskID
	}
	return acc, nil
}

func (g *Gateway) submitCancel(ctx context.Context, c *auth.Caller, s *Submission) (*Accepted, error) {
	if err := g.checkVisible(ctx, c, auth.KindTask, s.TaskID); err != nil {
		return nil, err
	}
	req, err := g.first(ctx, store.Query{TaskID: s.TaskID, TypePrefix: string(protocol.TypeTaskRequest)})
	if err != nil {
		return nil, err
	}
	if req == nil {
		return nil, coded.Wrap(ErrNotFound, "task "+clip(s.TaskID)+" has no task.request here", nil)
	}
	if ended, err := g.ended(ctx, s.TaskID); err != nil {
		return nil, err
	} else if ended {
		return nil, coded.Wrap(errConflict, "task "+clip(s.TaskID)+" has ended", nil)
	}
	var p CancelPayload
	if s.Payload != nil {
		_ = json.Unmarshal(s.Payload, &p) // checked by DecodeSubmission (checkCancel)
	}
	reason := "cancelled by " + c.AgentID
	if p.Message != "" {
		reason += ": " + p.Message
	}
	h, err := g.r.Cancel(s.TaskID, reason)
	if errors.Is(err, router.ErrUnknownTask) {
		return nil, coded.Wrap(errConflict, "task "+clip(s.TaskID)+" is not running here (it has ended, or runs in another process)", nil)
	}
	if err != nil {
		return nil, err
	}
	acc := &Accepted{RunID: req.RunID, ThreadID: req.ThreadID, TaskID: req.TaskID}
	wctx, cancel := context.WithTimeout(ctx, cancelWait)
	defer cancel()
	out, err := h.Wait(wctx)
	if out != nil && out.Message != nil {
		acc.ID, acc.Type = out.Message.ID, out.Message.Type
		if ev, gerr := g.st.Get(ctx, out.Message.ID); gerr == nil {
			acc.Seq = ev.Seq
		}
		return acc, nil
	}
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return acc, nil
}

// ended reports whether the latest attempt of the task has its terminal
// event in the store.
func (g *Gateway) ended(ctx context.Context, taskID string) (bool, error) {
	ended, at := false, 0
	for ev, err := range g.st.Read(ctx, store.Query{TaskID: taskID}) {
		if err != nil {
			return false, err
		}
		m, err := ev.Message()
		if err != nil {
			return false, err
		}
		switch {
		case protocol.EndsTask(m):
			ended, at = true, m.Attempt
		case ended && m.Attempt > at && m.Type.Family() != "tool":
			ended = false // a later attempt (a partial retry)
		}
	}
	return ended, nil
}
