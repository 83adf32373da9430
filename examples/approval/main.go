// Command approval is a person in the loop: an agent drafts a note, asks
// a person to approve it before it is published, and the run goes on once
// the person answers — from the CLI or the API.
//
//	go run ./examples/approval            # waits for you to approve
//	go run ./examples/approval -approve   # approves itself, through the API
//
// It serves a gateway on 127.0.0.1 (a free port) over an in-memory store,
// with two API keys it makes for the run: alice's, who asks for the note,
// and the editor's, who approves. It prints the command that approves.
package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/gateway"
	"github.com/clutchprotocol/clutch/gateway/ui"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

func main() {
	approve := flag.Bool("approve", false, "approve the draft through the API instead of waiting for a person")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var answer answerFunc
	if *approve {
		answer = approveByAPI(`{"decision":"approve"}`)
	}
	if err := run(ctx, os.Stdout, answer); err != nil {
		log.Fatal(err)
	}
}

// answerFunc answers the question questionID as the editor, through the
// gateway at base; nil means a person does.
type answerFunc func(ctx context.Context, base, editorKey, questionID string) error

// Note is what the writer publishes.
type Note struct {
	Topic string `json:"topic"`
	Text  string `json:"text"`
}

// writer drafts a note on the requested topic, asks the editor to approve
// it, and publishes what the editor approved — edited, maybe. A reject
// ends the task with the editor's reason.
func writer(ctx context.Context, t *router.Task) (*router.Result, error) {
	var in struct {
		Topic string `json:"topic"`
	}
	if err := json.Unmarshal(t.Request().Payload, &in); err != nil || in.Topic == "" {
		return nil, router.Fail(protocol.CodeInvalidField, `want {"topic": "..."}`, false, nil)
	}
	draft := Note{Topic: in.Topic, Text: "Three things to know about " + in.Topic + "."}
	// The task waits here until the editor answers; then the handler runs
	// again from the start and Approve returns the answer.
	approved, err := router.Approve(ctx, t, "publishing the note", draft, &protocol.Answerers{Agents: []string{"agent:editor"}})
	if err != nil {
		return nil, err
	}
	var note Note
	if err := json.Unmarshal(approved, &note); err != nil {
		return nil, router.Fail(protocol.CodeInvalidField, "the edited note is not a note: "+err.Error(), false, nil)
	}
	return &router.Result{Payload: note}, nil
}

func run(ctx context.Context, w io.Writer, answer answerFunc) error {
	st, err := memstore.New(nil)
	if err != nil {
		return err
	}
	defer st.Close()
	reg, err := registry.Open(ctx, st, nil)
	if err != nil {
		return err
	}
	schemas, err := schema.New(nil)
	if err != nil {
		return err
	}
	r, err := router.New(st, reg, &router.Options{Validator: schemas, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	defer r.Close()
	card := router.Card("agent:writer", "skill:write")
	if err := r.Register(ctx, card, writer); err != nil {
		return err
	}

	aliceKey, editorKey := rand.Text(), rand.Text()
	keys, err := auth.APIKeys(map[string]auth.Caller{
		aliceKey:  {AgentID: "agent:alice", Scopes: []string{auth.ScopeSubmit}},
		editorKey: {AgentID: "agent:editor", Scopes: []string{auth.ScopeSubmit}},
	})
	if err != nil {
		return err
	}
	gw, err := gateway.New(r, &gateway.Options{Auth: keys, UI: ui.Handler(nil), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: gw, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()

	// Alice asks for a note.
	var acc gateway.Accepted
	if err := call(ctx, base, aliceKey, "POST", "/v1/messages",
		`{"type":"task.request","requires":["skill:write"],"payload":{"topic":"Nordic payments"}}`, &acc); err != nil {
		return err
	}
	fmt.Fprintf(w, "alice asked for a note: task %s\n", acc.TaskID)

	// The writer drafts and asks; the question waits for the editor.
	q, err := waitQuestion(ctx, r, acc.TaskID)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "the writer asks: %s\n", q.Text)
	fmt.Fprintf(w, "  draft: %s\n", mustJSON(q.Details["arguments"]))
	fmt.Fprintf(w, "waiting for the editor. Approve, reject or edit with:\n")
	fmt.Fprintf(w, "  go run ./cmd/clutch answer %s --approve --url %s --key %s\n", q.ID, base, editorKey)
	fmt.Fprintf(w, "  go run ./cmd/clutch answer %s --reject \"not now\" --url %s --key %s\n", q.ID, base, editorKey)
	fmt.Fprintf(w, "  curl -H 'Authorization: Bearer %s' -d '{\"value\":{\"decision\":\"approve\"}}' %s/v1/questions/%s/answer\n", editorKey, base, q.ID)
	fmt.Fprintf(w, "  or in the web UI at %s/ (sign in with %s: the question is under \"Waiting for you\")\n", base, editorKey)
	if answer != nil {
		if err := answer(ctx, base, editorKey, q.ID); err != nil {
			return err
		}
	}

	// The run goes on once the editor answered.
	out, err := waitEnd(ctx, st, acc.TaskID)
	if err != nil {
		return err
	}
	switch out.Type {
	case protocol.TypeTaskResult:
		fmt.Fprintf(w, "published: %s\n", out.Payload)
	default:
		var ep protocol.ErrorPayload
		_ = json.Unmarshal(out.Payload, &ep)
		fmt.Fprintf(w, "not published: %s\n", ep.Message)
	}
	return nil
}

// waitQuestion waits until the task asks, and returns the question.
func waitQuestion(ctx context.Context, r *router.Router, taskID string) (*protocol.Question, error) {
	m, err := next(ctx, r.Store(), taskID, "task.question")
	if err != nil {
		return nil, err
	}
	q, err := protocol.DecodePayload[protocol.Question](m)
	return &q, err
}

// waitEnd waits for the task's terminal event.
func waitEnd(ctx context.Context, st store.Store, taskID string) (*protocol.Message, error) {
	for ev, err := range st.Follow(ctx, store.Query{TaskID: taskID, TypePrefix: "task."}) {
		if err != nil {
			return nil, err
		}
		m, err := ev.Message()
		if err != nil {
			return nil, err
		}
		if protocol.EndsTask(m) {
			return m, nil
		}
	}
	return nil, ctx.Err()
}

// next waits for the task's first event of type typ.
func next(ctx context.Context, st store.Store, taskID, typ string) (*protocol.Message, error) {
	for ev, err := range st.Follow(ctx, store.Query{TaskID: taskID, TypePrefix: typ, Limit: 1}) {
		if err != nil {
			return nil, err
		}
		return ev.Message()
	}
	return nil, ctx.Err()
}

// approveByAPI answers as the editor with value, through the gateway.
func approveByAPI(value string) answerFunc {
	return func(ctx context.Context, base, editorKey, questionID string) error {
		var a gateway.Answered
		return call(ctx, base, editorKey, "POST", "/v1/questions/"+questionID+"/answer", `{"value":`+value+`}`, &a)
	}
}

// call makes an API call and decodes its JSON answer into out.
func call(ctx context.Context, base, key, method, path, body string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, base+path, bytes.NewReader([]byte(body)))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return errors.New(method + " " + path + ": " + resp.Status + ": " + string(b))
	}
	return json.Unmarshal(b, out)
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
