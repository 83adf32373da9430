package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/cmd/clutch/internal/demo"
	"github.com/clutchprotocol/clutch/gateway"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

// gatewayOver serves the store file at path through a real gateway over a
// router that registers nothing: its registry is the file's, rebuilt from
// its events, as the file mode reads it. It returns the URL and a func
// that stops it and closes the file.
func gatewayOver(t *testing.T, path string) (string, func()) {
	t.Helper()
	ctx := context.Background()
	st, err := boltstore.Open(path, &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Open(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := router.New(st, reg, &router.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	keys, err := auth.APIKeys(map[string]auth.Caller{testKey: {AgentID: "agent:operator", Scopes: []string{auth.ScopeAdmin}}})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(r, &gateway.Options{Auth: keys, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	return srv.URL, func() {
		srv.CloseClientConnections()
		srv.Close()
		r.Close()
		st.Close()
	}
}

type answer struct {
	code           int
	stdout, stderr string
}

// bothModes runs each command line on the file at path (--db), then
// through a gateway over the same file (--url), and returns the answers
// of each mode.
func bothModes(t *testing.T, path string, rows [][]string) (file, gw []answer) {
	t.Helper()
	for _, args := range rows {
		code, out, errs := clutch(t, append(append([]string{}, args...), "--db", path)...)
		file = append(file, answer{code, out, errs})
	}
	url, stop := gatewayOver(t, path)
	defer stop()
	for _, args := range rows {
		code, out, errs := clutch(t, append(append([]string{}, args...), "--url", url, "--key", testKey)...)
		gw = append(gw, answer{code, out, errs})
	}
	return file, gw
}

// agents and get say the same thing, with the same exit code, whether
// they read the file or a gateway over it: the lists, one card, one event
// by id and by seq, and what does not exist (exit 3).
func TestAgentsAndGetBothModes(t *testing.T) {
	path, outs, _ := demoFile(t, 2)
	var req, reg store.Event
	for _, ev := range readAll(t, path) {
		m := mustDecode(t, ev.Raw)
		if req.Seq == 0 && m.Type == protocol.TypeTaskRequest && m.RunID == outs[1].Message.RunID {
			req = ev
		}
		if reg.Seq == 0 && m.RunID == registry.DefaultRunID {
			reg = ev
		}
	}
	reqID := idOf(mustDecode(t, req.Raw))
	seq := strconv.FormatUint(req.Seq, 10)
	rows := []struct {
		args []string
		code int
		in   string // in stdout, or in stderr when the code is not 0
	}{
		{[]string{"agents"}, exitOK, demo.Ken + "   Ken          offline  0/4        skill:research\n"},
		{[]string{"agents", "--json"}, exitOK, `"agent_id": "` + demo.Lead + `"`},
		{[]string{"agents", demo.Ken}, exitOK, "  skill:research"},
		{[]string{"agents", demo.Ken, "--json"}, exitOK, `"name": "Ken"`},
		{[]string{"agents", "agent:nobody"}, exitNotFound, `clutch agents: agent "agent:nobody" not found`},
		{[]string{"get", reqID}, exitOK, reqID},
		{[]string{"get", seq}, exitOK, reqID},
		{[]string{"get", seq, "--json"}, exitOK, `{"seq":` + seq + `,`},
		{[]string{"get", strconv.FormatUint(reg.Seq, 10)}, exitOK, "agent.register"},
		{[]string{"get", "msg_nope"}, exitNotFound, `clutch get: event "msg_nope" not found`},
		{[]string{"get", "0"}, exitNotFound, `clutch get: event "0" not found`},
		{[]string{"get", "99999999"}, exitNotFound, `clutch get: event "99999999" not found`},
		{[]string{"get", "99999999999999999999999"}, exitNotFound, `not found`},
		{[]string{"get", "+1"}, exitNotFound, `clutch get: event "+1" not found`},
	}
	var lines [][]string
	for _, r := range rows {
		lines = append(lines, r.args)
	}
	file, gw := bothModes(t, path, lines)
	for i, r := range rows {
		f, g := file[i], gw[i]
		if f != g {
			t.Errorf("clutch %q: the file and the gateway differ\nfile %d:\n%s%s\ngateway %d:\n%s%s", r.args, f.code, f.stdout, f.stderr, g.code, g.stdout, g.stderr)
			continue
		}
		where := f.stdout
		if r.code != exitOK {
			where = f.stderr
		}
		if f.code != r.code || !strings.Contains(where, r.in) {
			t.Errorf("clutch %q: exit %d, want %d with %q\nstdout: %s\nstderr: %s", r.args, f.code, r.code, r.in, f.stdout, f.stderr)
		}
	}
	// The listed agents are the demo's, offline: their handlers ran in the
	// process that wrote the file.
	if !strings.Contains(file[0].stdout, demo.Lead+"  Mira (lead)  offline") {
		t.Errorf("agents:\n%s", file[0].stdout)
	}
	var got struct {
		Seq     uint64          `json:"seq"`
		Message json.RawMessage `json:"message"`
	}
	if err := json.Unmarshal([]byte(file[7].stdout), &got); err != nil || got.Seq != req.Seq || !bytes.Equal(got.Message, req.Raw) {
		t.Errorf("get --json: %v\n%s", err, file[7].stdout)
	}
}

// An empty store: no agents, in both modes, exit 0.
func TestAgentsEmptyBothModes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.db")
	st, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	file, gw := bothModes(t, path, [][]string{{"agents"}, {"agents", "--json"}})
	for i, want := range []string{"(no agents)\n", "{\n  \"agents\": []\n}\n"} {
		if file[i] != gw[i] || file[i].code != exitOK || file[i].stdout != want {
			t.Errorf("row %d: file %+v, gateway %+v; want %q", i, file[i], gw[i], want)
		}
	}
}

// acting is a served demo team with three more agents: agent:ok answers
// its payload back, agent:fail fails, agent:ask asks which market,
// agent:block runs until cancelled.
func acting(t *testing.T) *served {
	t.Helper()
	s := newServed(t)
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
		if err := s.r.Register(t.Context(), card, h); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// submitted runs a submit --json command line and returns the accepted
// ids.
func submitted(t *testing.T, s *served, args ...string) gateway.Accepted {
	t.Helper()
	code, out, errs := clutch(t, s.args(append([]string{"submit", "--json"}, args...)...)...)
	var acc gateway.Accepted
	if code != exitOK || json.Unmarshal([]byte(out), &acc) != nil || acc.TaskID == "" {
		t.Fatalf("submit %q: %d\n%s%s", args, code, out, errs)
	}
	return acc
}

// submit --wait against an agent that succeeds, one that fails and one
// that asks; submit of a chat message; and what submit refuses.
func TestSubmit(t *testing.T) {
	s := acting(t)

	code, out, errs := clutch(t, s.args("submit", "--to", "agent:ok", `{"q":"nordic"}`, "--wait")...)
	if code != exitOK || !strings.Contains(out, "submitted task task_") || !strings.Contains(out, "completed:\n{\n  \"q\": \"nordic\"\n}\n") {
		t.Fatalf("submit --wait, a success: %d\n%s%s", code, out, errs)
	}

	code, out, errs = clutch(t, s.args("submit", "--capability", "skill:fail", "--wait")...)
	if code != exitFailure || !strings.Contains(out, "submitted task") ||
		!strings.Contains(errs, "failed: TOOL_FAILED: the search engine is down") {
		t.Fatalf("submit --wait, a failure: %d\n%s%s", code, out, errs)
	}

	code, out, errs = clutch(t, s.args("submit", "--to", "agent:ask", "--wait")...)
	acc := strings.Fields(out)[2] // submitted task TASK_ID ...
	if code != exitOK || !strings.Contains(out, "waits on question "+acc+".q0: Which market? [fintech | health]") ||
		!strings.Contains(out, "answer it: clutch answer "+acc+".q0 VALUE") {
		t.Fatalf("submit --wait, a question: %d\n%s%s", code, out, errs)
	}
	if code, _, errs := clutch(t, s.args("answer", acc+".q0", "health")...); code != exitOK {
		t.Fatalf("answer: %d %s", code, errs)
	}
	if res := nthEvent(t, s.st, acc, "task.result", 1); string(res.Payload) != `{"market":"health"}` {
		t.Fatalf("after the answer: %s", res.Payload)
	}

	// The payload from stdin, --json: the accepted ids and the outcome.
	var stdout, stderr bytes.Buffer
	code = runContext(t.Context(), s.args("submit", "--to", "agent:ok", "-", "--wait", "--json"), strings.NewReader(` {"from":"stdin"} `+"\n"), &stdout, &stderr)
	var both struct {
		Accepted gateway.Accepted `json:"accepted"`
		Outcome  wireOutcome      `json:"outcome"`
	}
	if code != exitOK || json.Unmarshal(stdout.Bytes(), &both) != nil || both.Accepted.TaskID == "" ||
		both.Outcome.Type != protocol.TypeTaskResult || compact(both.Outcome.Result) != `{"from":"stdin"}` {
		t.Fatalf("submit - --wait --json: %d %+v\n%s%s", code, both, stdout.String(), stderr.String())
	}
	// From a file; with a payload type the gateway does not know it is
	// refused with the gateway's reason.
	file := filepath.Join(t.TempDir(), "q.json")
	if err := os.WriteFile(file, []byte(`{"query":"x"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if a := submitted(t, s, "--to", "agent:ok", "@"+file); a.RunID == "" {
		t.Fatal("no run")
	}
	code, _, errs = clutch(t, s.args("submit", "--to", "agent:ok", "--payload-type", "research.nope.v9", "@"+file)...)
	if code != exitFailure || !strings.Contains(errs, "VALIDATION") {
		t.Fatalf("an unknown payload type: %d %s", code, errs)
	}

	code, out, errs = clutch(t, s.args("submit", "--text", "Can someone check the Q3 numbers?")...)
	if code != exitOK || !strings.HasPrefix(out, "sent message msg_") || !strings.Contains(out, " in thread thr_") {
		t.Fatalf("submit --text: %d %s%s", code, out, errs)
	}
	thread := strings.Fields(out)[5]
	for ev, err := range s.st.Read(t.Context(), store.Query{ThreadID: thread}) {
		if err != nil {
			t.Fatal(err)
		}
		if m := mustDecode(t, ev.Raw); m.Type != protocol.TypeChatMessage || string(m.Payload) != `{"text":"Can someone check the Q3 numbers?"}` || m.From.AgentID != "agent:operator" {
			t.Fatalf("the chat message: %s", ev.Raw)
		}
	}

	// A run or thread the caller may not write into is not found.
	for _, c := range [][]string{{"--run", "run_registry"}, {"--thread", "thr_registry"}} {
		code, out, errs = clutch(t, s.args("submit", "--text", "squat", c[0], c[1])...)
		if code != exitNotFound || out != "" || errs != "clutch submit: "+c[0][2:]+` "`+c[1]+`" not found`+"\n" {
			t.Errorf("submit into %s: %d\n%s%s", c[1], code, out, errs)
		}
	}

	for _, c := range []struct {
		args []string
		in   string
	}{
		{[]string{"submit", "--to", "agent:ok", "--db", s.path}, "want --url"},
		{[]string{"submit", "--to", "agent:ok", "[1]"}, "must be a JSON object"},
		{[]string{"submit", "--to", "agent:ok", "{"}, "must be a JSON object"},
		{[]string{"submit", "--to", "agent:ok", "@" + filepath.Join(t.TempDir(), "missing.json")}, ""},
		{[]string{"submit", `{}`}, "want --to AGENT or --capability CAP"},
		{[]string{"submit", "--text", "hi", "--wait"}, "--text sends a chat message"},
		{[]string{"submit", "--to", "agent:ok", "{}", "{}"}, "at most one PAYLOAD"},
		{[]string{"submit", "--to", "agent:ok", "--timeout", "-1s", "--wait"}, "--timeout"},
	} {
		args := c.args
		if c.args[len(c.args)-2] != "--db" {
			args = s.args(c.args...)
		}
		code, out, errs := clutch(t, args...)
		want := exitUsage
		if c.in == "" {
			want = exitFailure // a missing @FILE
		}
		if code != want || !strings.Contains(errs, c.in) || out != "" {
			t.Errorf("clutch %q: %d, want %d with %q\n%s%s", c.args, code, want, c.in, out, errs)
		}
	}
}

// cancel and retry: what happened, a CONFLICT with the gateway's reason
// (exit 1), an unknown task (exit 3), and no file mode.
func TestCancelAndRetry(t *testing.T) {
	s := acting(t)

	code, out, errs := clutch(t, s.args("submit", "--to", "agent:block", "--wait", "--timeout", "50ms")...)
	if code != exitFailure || !strings.Contains(errs, "has not ended after 50ms; it runs on") {
		t.Fatalf("submit --wait --timeout: %d\n%s%s", code, out, errs)
	}
	task := strings.Fields(out)[2]
	code, out, errs = clutch(t, s.args("cancel", task, "--reason", "wrong market")...)
	if code != exitOK || out != "cancelled task "+task+" (run "+runOf(t, s, task)+")\n" {
		t.Fatalf("cancel: %d\n%s%s", code, out, errs)
	}
	if m := nthEvent(t, s.st, task, "task.cancel", 1); !strings.Contains(string(m.Payload), "cancelled by agent:operator: wrong market") {
		t.Fatalf("the task.cancel: %s", m.Payload)
	}
	code, out, errs = clutch(t, s.args("cancel", task)...)
	if code != exitFailure || out != "" || errs != "clutch cancel: cannot cancel: task "+task+" has ended\n" {
		t.Fatalf("cancel an ended task: %d\n%s%s", code, out, errs)
	}

	failed := submitted(t, s, "--to", "agent:fail")
	nthEvent(t, s.st, failed.TaskID, "task.error", 1)
	code, out, errs = clutch(t, s.args("retry", failed.TaskID)...)
	if code != exitOK || out != "retrying task "+failed.TaskID+" as a new attempt (run "+failed.RunID+")\n" {
		t.Fatalf("retry: %d\n%s%s", code, out, errs)
	}
	if m := nthEvent(t, s.st, failed.TaskID, "task.error", 2); m.Attempt != 2 {
		t.Fatalf("the retry ran attempt %d", m.Attempt)
	}
	ok := submitted(t, s, "--to", "agent:ok")
	nthEvent(t, s.st, ok.TaskID, "task.result", 1)
	code, out, errs = clutch(t, s.args("retry", ok.TaskID, "--json")...)
	if code != exitFailure || out != "" || !strings.HasPrefix(errs, "clutch retry: cannot retry: ") {
		t.Fatalf("retry a completed task: %d\n%s%s", code, out, errs)
	}

	for _, verb := range []string{"cancel", "retry"} {
		code, out, errs = clutch(t, s.args(verb, "task_nope")...)
		if code != exitNotFound || out != "" || errs != "clutch "+verb+`: task "task_nope" not found`+"\n" {
			t.Errorf("%s an unknown task: %d\n%s%s", verb, code, out, errs)
		}
		code, _, errs = clutch(t, verb, "task_nope", "--db", s.path)
		if code != exitUsage || !strings.Contains(errs, "want --url") {
			t.Errorf("%s on a file: %d %s", verb, code, errs)
		}
		code, _, _ = clutch(t, s.args(verb)...)
		if code != exitUsage {
			t.Errorf("%s without TASK_ID: %d", verb, code)
		}
	}
}

// runOf returns the run of a task, from its request.
func runOf(t *testing.T, s *served, taskID string) string {
	t.Helper()
	for ev, err := range s.st.Read(t.Context(), store.Query{TaskID: taskID, Limit: 1}) {
		if err != nil {
			t.Fatal(err)
		}
		return mustDecode(t, ev.Raw).RunID
	}
	t.Fatalf("no task %s", taskID)
	return ""
}

// FuzzReadPayload: whatever the PAYLOAD argument (or stdin with -),
// submit sends a JSON object or refuses it as a usage error, never
// anything else.
func FuzzReadPayload(f *testing.F) {
	for _, s := range []string{`{"q":"x"}`, ` {"a":[1,2]} `, `[1]`, `{`, `"s"`, ``, `-`, `{} {}`, "{\"a\":\"\xff\"}", `@`, `null`} {
		f.Add(s, `{"from":"stdin"}`)
	}
	f.Fuzz(func(t *testing.T, arg, stdin string) {
		if strings.HasPrefix(arg, "@") {
			return // a file name: not decoded here
		}
		b, err := readPayload(arg, strings.NewReader(stdin))
		if err != nil {
			var ue *usageError
			if !errors.As(err, &ue) {
				t.Fatalf("%q: %v is not a usage error", arg, err)
			}
			return
		}
		var obj map[string]any
		if json.Unmarshal(b, &obj) != nil || obj == nil {
			t.Fatalf("%q gave %q, not a JSON object", arg, b)
		}
	})
}
