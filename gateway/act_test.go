package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

// lastOf returns the last event of the task of type typ, nil when none.
func (e *env) lastOf(taskID string, typ protocol.Type) *protocol.Message {
	e.t.Helper()
	var last *protocol.Message
	for ev, err := range e.st.Read(context.Background(), store.Query{TaskID: taskID, TypePrefix: string(typ)}) {
		if err != nil {
			e.t.Fatal(err)
		}
		m, _ := ev.Message()
		if m.Type == typ {
			last = m
		}
	}
	return last
}

// TestRetryTask: POST /v1/tasks/{id}/retry runs a failed task of the
// caller again, as a new attempt that completes; a completed task, a
// running one, another caller's and an unknown one are refused, with
// nothing stored.
func TestRetryTask(t *testing.T) {
	e := newEnv(t, nil)
	var tries atomic.Int32
	card := &protocol.AgentCard{V: protocol.Version, AgentID: "agent:flaky", Capabilities: []protocol.Capability{{ID: "skill:flaky"}}}
	if err := e.r.Register(context.Background(), card, func(ctx context.Context, task *router.Task) (*router.Result, error) {
		if tries.Add(1) == 1 {
			return nil, router.Fail(protocol.CodeToolFailed, "the data provider was down", false, nil)
		}
		return &router.Result{Payload: map[string]string{"text": "done"}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	a := e.submit(keyAlice, `{"type":"task.request","requires":["skill:flaky"],"payload":{}}`)
	e.waitEnded(a.TaskID)
	if e.lastOf(a.TaskID, protocol.TypeTaskError) == nil {
		t.Fatal("the first attempt did not fail")
	}
	path := "/v1/tasks/" + a.TaskID + "/retry"
	status, body := e.do("POST", path, keyBob, "")
	wantError(t, "bob retries alice's task", status, body, http.StatusNotFound, "NOT_FOUND")
	status, body = e.do("POST", path, keyAlice, `{"force":true}`)
	wantError(t, "an unknown member", status, body, http.StatusBadRequest, "UNKNOWN_FIELD")
	status, body = e.do("POST", "/v1/tasks/task_01NOPE/retry", keyAlice, "")
	wantError(t, "an unknown task", status, body, http.StatusNotFound, "NOT_FOUND")

	status, body = e.do("POST", path, keyAlice, "")
	if status != http.StatusAccepted {
		t.Fatalf("retry: %d %s", status, body)
	}
	var acc Accepted
	if err := json.Unmarshal(body, &acc); err != nil || acc.TaskID != a.TaskID || acc.RunID != a.RunID {
		t.Fatalf("retry answer %s", body)
	}
	// The new attempt's end: its task.result (the first attempt's end is
	// in the log already).
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ev, err := range e.st.Follow(ctx, store.Query{TaskID: a.TaskID, TypePrefix: string(protocol.TypeTaskResult)}) {
		if err != nil {
			t.Fatal(err)
		}
		_ = ev
		break
	}
	if res := e.lastOf(a.TaskID, protocol.TypeTaskResult); res == nil || res.Attempt != 2 {
		t.Fatalf("the retry did not complete: %v", res)
	}
	status, body = e.do("POST", path, keyAlice, "")
	apiErr := wantError(t, "retry of a completed task", status, body, http.StatusConflict, "CONFLICT")
	if apiErr.Error.Retryable || !strings.Contains(apiErr.Error.Message, "task.result") {
		t.Errorf("a completed task's refusal: %s", body)
	}
	if n := tries.Load(); n != 2 {
		t.Errorf("the handler ran %d times", n)
	}
}

// TestCancelTask: POST /v1/tasks/{id}/cancel ends a running task of the
// caller with its reason; cancelling it again is a CONFLICT that is not
// retryable; another caller's task is not found.
func TestCancelTask(t *testing.T) {
	e := newEnv(t, nil)
	a := e.submit(keyAlice, `{"type":"task.request","requires":["skill:echo"],"payload":{"block":true}}`)
	path := "/v1/tasks/" + a.TaskID + "/cancel"
	status, body := e.do("POST", path, keyBob, `{"reason":"mine now"}`)
	wantError(t, "bob cancels alice's task", status, body, http.StatusNotFound, "NOT_FOUND")
	status, body = e.do("POST", path, keyAlice, `{"message":"wrong member"}`)
	wantError(t, "an unknown member", status, body, http.StatusBadRequest, "UNKNOWN_FIELD")

	status, body = e.do("POST", path, keyAlice, `{"reason":"enough"}`)
	if status != http.StatusOK {
		t.Fatalf("cancel: %d %s", status, body)
	}
	end := e.lastOf(a.TaskID, protocol.TypeTaskCancel)
	if end == nil || !strings.Contains(string(end.Payload), "cancelled by agent:alice: enough") {
		t.Fatalf("the task.cancel: %v", end)
	}
	status, body = e.do("POST", path, keyAlice, "")
	apiErr := wantError(t, "a second cancel", status, body, http.StatusConflict, "CONFLICT")
	if apiErr.Error.Retryable {
		t.Errorf("cancelling an ended task is marked retryable: %s", body)
	}
	// The same through POST /v1/messages: one rule for every 409.
	status, body = e.do("POST", "/v1/messages", keyAlice, `{"type":"task.cancel","task_id":"`+a.TaskID+`"}`)
	if apiErr := wantError(t, "a task.cancel of an ended task", status, body, http.StatusConflict, "CONFLICT"); apiErr.Error.Retryable {
		t.Errorf("a task.cancel of an ended task is marked retryable: %s", body)
	}
	var types []string
	for ev, err := range e.st.Read(context.Background(), store.Query{TaskID: a.TaskID}) {
		if err != nil {
			t.Fatal(err)
		}
		m, _ := ev.Message()
		types = append(types, string(m.Type))
	}
	if n := len(slices.DeleteFunc(types, func(s string) bool { return s != "task.cancel" })); n != 1 {
		t.Errorf("%d task.cancel events", n)
	}
}
