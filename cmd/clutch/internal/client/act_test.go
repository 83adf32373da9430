package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/cmd/clutch/internal/client"
	"github.com/clutchprotocol/clutch/gateway"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

// actors is a gateway over a router with four agents: agent:ok answers
// its payload back, agent:fail fails (TOOL_FAILED, not retryable),
// agent:ask asks which market first, agent:block runs until cancelled.
func actors(t *testing.T) (*client.Client, *boltstore.Store) {
	t.Helper()
	ctx := context.Background()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "events.db"), &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Open(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas, _ := schema.New(nil)
	r, err := router.New(st, reg, &router.Options{Validator: schemas, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	agents := map[string]router.Handler{
		"ok": func(ctx context.Context, t *router.Task) (*router.Result, error) {
			return &router.Result{Payload: json.RawMessage(t.Request().Payload)}, nil
		},
		"fail": func(ctx context.Context, t *router.Task) (*router.Result, error) {
			return nil, router.Fail(protocol.CodeToolFailed, "the search engine is down", false, nil)
		},
		"ask": func(ctx context.Context, t *router.Task) (*router.Result, error) {
			m, err := router.AskAs[string](ctx, t, protocol.Question{Text: "Which market?", Choices: []string{"fintech", "health"}})
			if err != nil {
				return nil, err
			}
			return &router.Result{Payload: map[string]string{"market": m}}, nil
		},
		"block": func(ctx context.Context, t *router.Task) (*router.Result, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}
	for name, h := range agents {
		card := &protocol.AgentCard{V: protocol.Version, AgentID: "agent:" + name, Capabilities: []protocol.Capability{{ID: "skill:" + name}}}
		if err := r.Register(ctx, card, h); err != nil {
			t.Fatal(err)
		}
	}
	keys, _ := auth.APIKeys(map[string]auth.Caller{key: {AgentID: "agent:operator", Scopes: []string{auth.ScopeAdmin}}})
	gw, err := gateway.New(r, &gateway.Options{Auth: keys, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		r.Close()
		st.Close()
	})
	c, err := client.New(srv.URL, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c, st
}

func request(to, payload string) *gateway.Submission {
	return &gateway.Submission{Type: protocol.TypeTaskRequest, To: []protocol.Participant{{AgentID: to}}, Payload: []byte(payload)}
}

func wantAPIError(t *testing.T, what string, err error, status int, code protocol.Code) *client.Error {
	t.Helper()
	var ge *client.Error
	if !errors.As(err, &ge) || ge.Status != status || ge.Code != code {
		t.Fatalf("%s: %v, want %d %s", what, err, status, code)
	}
	return ge
}

// Submit and Wait: a result, an error, a question that is answered and
// then a result.
func TestSubmitAndWait(t *testing.T) {
	c, _ := actors(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	acc, err := c.Submit(ctx, request("agent:ok", `{"q":"nordic"}`))
	if err != nil || acc.TaskID == "" || acc.RunID == "" || acc.ID == "" || acc.Type != protocol.TypeTaskRequest {
		t.Fatalf("Submit: %+v %v", acc, err)
	}
	out, err := c.Wait(ctx, acc.TaskID, acc.Seq)
	if err != nil || !out.OK() || string(out.Payload) != `{"q":"nordic"}` || out.Err != nil || out.Question != nil {
		t.Fatalf("Wait ok: %+v %v", out, err)
	}
	// A task that has ended is answered at once, from any seq before its end.
	again, err := c.Wait(ctx, acc.TaskID, 0)
	if err != nil || again.Event.Seq != out.Event.Seq {
		t.Fatalf("Wait on an ended task: %+v %v", again, err)
	}

	acc, err = c.Submit(ctx, request("agent:fail", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err = c.Wait(ctx, acc.TaskID, acc.Seq)
	if err != nil || out.OK() || out.Type != protocol.TypeTaskError || out.Err == nil ||
		out.Err.Code != protocol.CodeToolFailed || out.Err.Message != "the search engine is down" {
		t.Fatalf("Wait fail: %+v %v", out, err)
	}

	acc, err = c.Submit(ctx, &gateway.Submission{Type: protocol.TypeTaskRequest, Requires: []string{"skill:ask"}})
	if err != nil {
		t.Fatal(err)
	}
	out, err = c.Wait(ctx, acc.TaskID, acc.Seq)
	if err != nil || out.Type != protocol.TypeTaskQuestion || out.Question == nil || out.Question.Text != "Which market?" {
		t.Fatalf("Wait ask: %+v %v", out, err)
	}
	if _, err := c.Answer(ctx, out.Question.ID, json.RawMessage(`"health"`)); err != nil {
		t.Fatal(err)
	}
	// From the request again: the question is answered now, so Wait goes
	// past it to the result.
	out, err = c.Wait(ctx, acc.TaskID, acc.Seq)
	if err != nil || !out.OK() || string(out.Payload) != `{"market":"health"}` {
		t.Fatalf("Wait after the answer: %+v %v", out, err)
	}

	// A chat message is accepted with its ids.
	chat, err := c.Submit(ctx, &gateway.Submission{Type: protocol.TypeChatMessage, Payload: []byte(`{"text":"hello"}`)})
	if err != nil || chat.Type != protocol.TypeChatMessage || chat.ThreadID == "" || chat.Seq == 0 {
		t.Fatalf("Submit chat: %+v %v", chat, err)
	}

	// Wait gives up with ctx.
	acc, err = c.Submit(ctx, request("agent:block", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	short, stop := context.WithCancel(ctx)
	stop()
	if _, err := c.Wait(short, acc.TaskID, acc.Seq); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with a done ctx: %v", err)
	}
	if _, err := c.Cancel(ctx, acc.TaskID, ""); err != nil {
		t.Fatal(err)
	}
}

// Cancel ends a running task once; a second cancel is a CONFLICT that
// retrying does not mend. Retry runs a failed task again, and refuses one
// that completed.
func TestCancelAndRetry(t *testing.T) {
	c, st := actors(t)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()

	acc, err := c.Submit(ctx, request("agent:block", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.Cancel(ctx, acc.TaskID, "not this week")
	if err != nil || got.Type != protocol.TypeTaskCancel || got.TaskID != acc.TaskID || got.ID == "" {
		t.Fatalf("Cancel: %+v %v", got, err)
	}
	ev, err := st.Get(ctx, got.ID)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := ev.Message()
	ep, _ := protocol.DecodePayload[protocol.ErrorPayload](m)
	if ep.Message != "cancelled by agent:operator: not this week" {
		t.Fatalf("the task.cancel says %q", ep.Message)
	}
	_, err = c.Cancel(ctx, acc.TaskID, "")
	if ge := wantAPIError(t, "a second cancel", err, 409, protocol.CodeConflict); ge.Retryable {
		t.Fatalf("a second cancel is retryable: %+v", ge)
	}
	_, err = c.Cancel(ctx, "task_nope", "")
	wantAPIError(t, "cancel an unknown task", err, 404, protocol.CodeNotFound)

	failed, err := c.Submit(ctx, request("agent:fail", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	first, err := c.Wait(ctx, failed.TaskID, failed.Seq)
	if err != nil || first.OK() {
		t.Fatalf("the failing task: %+v %v", first, err)
	}
	re, err := c.Retry(ctx, failed.TaskID)
	if err != nil || re.TaskID != failed.TaskID || re.RunID != failed.RunID {
		t.Fatalf("Retry: %+v %v", re, err)
	}
	// The new attempt runs and fails again: a second task.error.
	second, err := c.Wait(ctx, failed.TaskID, first.Event.Seq)
	if err != nil || second.Type != protocol.TypeTaskError {
		t.Fatalf("the retried task: %+v %v", second, err)
	}
	if m, _ := protocol.Decode(second.Event.Message); m.Attempt != 2 {
		t.Fatalf("the retry's outcome is attempt %d", m.Attempt)
	}

	ok, err := c.Submit(ctx, request("agent:ok", `{}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Wait(ctx, ok.TaskID, ok.Seq); err != nil {
		t.Fatal(err)
	}
	_, err = c.Retry(ctx, ok.TaskID)
	if ge := wantAPIError(t, "retry a completed task", err, 409, protocol.CodeConflict); ge.Retryable {
		t.Fatalf("retrying a completed task is retryable: %+v", ge)
	}
	_, err = c.Retry(ctx, "task_nope")
	wantAPIError(t, "retry an unknown task", err, 404, protocol.CodeNotFound)
}

// Event gets one event by id or by seq, the stored bytes.
func TestEvent(t *testing.T) {
	c, st := actors(t)
	ctx := t.Context()
	acc, err := c.Submit(ctx, request("agent:ok", `{"q":1}`))
	if err != nil {
		t.Fatal(err)
	}
	stored, err := st.Get(ctx, acc.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{acc.ID, strconv.FormatUint(acc.Seq, 10)} {
		ev, err := c.Event(ctx, ref)
		if err != nil || ev.Seq != stored.Seq || string(ev.Message) != string(stored.Raw) || !ev.Time.Equal(stored.Time.Truncate(time.Millisecond)) {
			t.Fatalf("Event(%s): %+v %v", ref, ev, err)
		}
	}
	_, err = c.Event(ctx, "msg_nope")
	wantAPIError(t, "an unknown event", err, 404, protocol.CodeNotFound)
}
