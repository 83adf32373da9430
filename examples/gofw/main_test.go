package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// TestMain fails the package if a test leaves a goroutine behind. The
// signal watcher genkit.Init starts for the process is Genkit's, not a
// run's.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("os/signal.signal_recv"), goleak.IgnoreTopFunction("os/signal.loop"))
}

// wantEvents is the run, event by event: each task named by the order of
// its request (T1...), a tool event by its tool's name and the index of
// its call (#1...), a model call by its model and tokens, a subtask by
// its parent. Both chains are in it: the writer's tool delegates to the
// researcher (T2 under T1), whose tool delegates to the archive (T3 under
// T2); the archive's own code delegates to the writer (T5 under T4).
var wantEvents = []string{
	"T1 task.request skill:write from agent:user",
	"T1 routing.decision agent:writer",
	"T1 task.accept",
	"T1 x.clutch.model_call writer 5+1 tokens",
	"T1 tool.call research #1",
	"T2 task.request skill:research from agent:writer, parent T1",
	"T2 routing.decision agent:researcher",
	"T2 task.accept",
	"T2 x.clutch.model_call researcher 1+1 tokens",
	"T2 tool.call archive #2",
	"T3 task.request skill:facts from agent:researcher, parent T2",
	"T3 routing.decision agent:archive",
	"T3 task.accept",
	"T3 task.result",
	"T2 tool.result archive #2",
	"T2 x.clutch.model_call researcher 10+11 tokens",
	"T2 task.result",
	"T1 tool.result research #1",
	"T1 x.clutch.model_call writer 17+15 tokens",
	"T1 task.result",
	"T4 task.request skill:digest from agent:user",
	"T4 routing.decision agent:archive",
	"T4 task.accept",
	"T5 task.request skill:write from agent:archive, parent T4",
	"T5 routing.decision agent:writer",
	"T5 task.accept",
	"T5 x.clutch.model_call writer 13+11 tokens",
	"T5 task.result",
	"T4 task.result",
}

// wantTree is what the run prints: the tree of both root tasks.
var wantTree = `run RUN: 5 tasks, 5 model calls (85 tokens), 2 tool calls

task for skill:write from agent:user, run by agent:writer: {"subject":"Bergen"}
├─ model writer (fake): 5 tokens in, 1 out; asks for 1 tool call
├─ tool research {"input":"Bergen"}
│  ├─ task for skill:research, run by agent:researcher: "Bergen"
│  │  ├─ model researcher (fake): 1 token in, 1 out; asks for 1 tool call
│  │  ├─ tool archive {"input":"Bergen"}
│  │  │  ├─ task for skill:facts, run by agent:archive: "Bergen"
│  │  │  │  └─ result "Bergen lies between seven mountains; it rains most days."
│  │  │  └─ returns "Bergen lies between seven mountains; it rains most days."
│  │  ├─ model researcher (fake): 10 tokens in, 11 out; stop
│  │  └─ result "Bergen lies between seven mountains; it rains most days (the archive)."
│  └─ returns "Bergen lies between seven mountains; it rains most days (the archive)."
├─ model writer (fake): 17 tokens in, 15 out; stop
└─ result "A note on Bergen: Bergen lies between seven mountains; it rains most days (the archive)."

task for skill:digest from agent:user, run by agent:archive: "Oslo"
├─ delegates task for skill:write, run by agent:writer: {"subject":"Oslo","facts":"Oslo is Norway's capital, on the Oslofjord."}
│  ├─ model writer (fake): 13 tokens in, 11 out; stop
│  └─ result "A note on Oslo: Oslo is Norway's capital, on the Oslofjord."
└─ result "A note on Oslo: Oslo is Norway's capital, on the Oslofjord."
`

// TestTeamOnMemstore runs main's logic on an in-memory store: the run's
// events are exactly wantEvents, and the printed tree is wantTree. No
// port is opened without -serve: its address being taken does not matter.
func TestTeamOnMemstore(t *testing.T) {
	st, err := memstore.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var out bytes.Buffer
	runID, err := run(context.Background(), &out, config{st: st, listen: ln.Addr().String()})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	checkRun(t, st, runID)
	text := out.String()
	i := strings.Index(text, "run run_")
	if i < 0 {
		t.Fatalf("no run printed:\n%s", text)
	}
	if got := strings.Replace(text[i:], runID, "RUN", 1); got != wantTree {
		t.Errorf("printed:\n%s\nwant:\n%s", got, wantTree)
	}
	for _, want := range []string{
		"  agent:archive     Plain Go: ",
		"  agent:researcher  An eino ReAct graph: ",
		"  agent:writer      A Genkit flow: ",
	} {
		if !strings.Contains(text[:i], want) {
			t.Errorf("the team's list lacks %q:\n%s", want, text[:i])
		}
	}
	if strings.Contains(text, "serving") || strings.Contains(text, "clutch serve") {
		t.Errorf("without -db and -serve the output speaks of serving:\n%s", text)
	}
}

// TestTeamOnBolt runs main with -db: the run is in the bolt file once the
// program has closed it — the same events — and the output says how to
// see it with clutch serve. A second run on the same file adds a run.
func TestTeamOnBolt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gofw.db")
	var out bytes.Buffer
	runID, err := run(context.Background(), &out, config{db: path})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if want := "  go run ./cmd/clutch serve --db " + path + "\n"; !strings.HasSuffix(out.String(), want) {
		t.Errorf("the output does not end with %q:\n%s", want, out.String())
	}
	again, err := run(context.Background(), io.Discard, config{db: path})
	if err != nil {
		t.Fatal(err)
	}
	st, err := boltstore.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	checkRun(t, st, runID)
	checkRun(t, st, again)
}

// TestServe runs main with -serve: once the run is printed the gateway
// serves the web UI and the API with the printed key — the run's task
// tree among them — until interrupted.
func TestServe(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := memstore.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	w := &untilWriter{until: "serving the web UI at ", ready: make(chan struct{})}
	type result struct {
		runID string
		err   error
	}
	done := make(chan result, 1)
	go func() {
		runID, err := run(ctx, w, config{st: st, serve: true, listen: "127.0.0.1:0"})
		done <- result{runID, err}
	}()
	select {
	case <-w.ready:
	case r := <-done:
		t.Fatalf("run returned before serving: %v\n%s", r.err, w.String())
	}
	m := regexp.MustCompile(`serving the web UI at (http://\S+)/ until Ctrl-C; sign in with the key (\S+)`).FindStringSubmatch(w.String())
	if m == nil {
		t.Fatalf("no address and key printed:\n%s", w.String())
	}
	base, key := m[1], m[2]
	runID := regexp.MustCompile(`run (run_\w+):`).FindStringSubmatch(w.String())[1]

	if body := get(t, base+"/", ""); !strings.Contains(strings.ToLower(body), "<html") {
		t.Errorf("GET / is not the web UI:\n%.300s", body)
	}
	var tree struct {
		Tasks []struct {
			AgentID  string `json:"agent_id"`
			Children []struct {
				AgentID string `json:"agent_id"`
			} `json:"children"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(get(t, base+"/v1/runs/"+runID+"/tree", key)), &tree); err != nil {
		t.Fatal(err)
	}
	if len(tree.Tasks) != 2 || tree.Tasks[0].AgentID != "agent:writer" || tree.Tasks[1].AgentID != "agent:archive" ||
		len(tree.Tasks[0].Children) != 1 || tree.Tasks[0].Children[0].AgentID != "agent:researcher" {
		t.Errorf("the gateway's tree of the run: %+v", tree)
	}

	cancel() // Ctrl-C
	r := <-done
	if r.err != nil || r.runID != runID {
		t.Fatalf("run returned %q, %v", r.runID, r.err)
	}
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("the gateway still serves after the interrupt")
	}
}

// checkRun asserts the events of the run runID in st: wantEvents, and the
// parent_task_id chains of both delegations.
func checkRun(t *testing.T, st store.Store, runID string) {
	t.Helper()
	var msgs []*protocol.Message
	for ev, err := range st.Read(context.Background(), store.Query{RunID: runID}) {
		if err != nil {
			t.Fatal(err)
		}
		m, err := ev.Message()
		if err != nil {
			t.Fatal(err)
		}
		msgs = append(msgs, m)
	}
	got, tasks := sequence(t, msgs)
	if strings.Join(got, "\n") != strings.Join(wantEvents, "\n") {
		t.Fatalf("events of %s:\n%s\nwant:\n%s", runID, strings.Join(got, "\n"), strings.Join(wantEvents, "\n"))
	}
	// The chains, by the requests' own fields: Genkit → eino → Go, and
	// Go → Genkit, all in one run.
	for _, c := range []struct{ child, parent, agent string }{
		{"T2", "T1", "agent:writer"},
		{"T3", "T2", "agent:researcher"},
		{"T5", "T4", "agent:archive"},
	} {
		req := tasks[c.child]
		if req.ParentTaskID != tasks[c.parent].TaskID || req.From.AgentID != c.agent || req.RunID != runID {
			t.Errorf("%s: parent_task_id %s, from %s, run %s; want %s (%s), from %s, run %s",
				c.child, req.ParentTaskID, req.From.AgentID, req.RunID, tasks[c.parent].TaskID, c.parent, c.agent, runID)
		}
	}
	for _, root := range []string{"T1", "T4"} {
		if p := tasks[root].ParentTaskID; p != "" {
			t.Errorf("%s has parent_task_id %s", root, p)
		}
	}
}

// sequence renders the events as wantEvents does, and returns each
// task's request by its name.
func sequence(t *testing.T, msgs []*protocol.Message) ([]string, map[string]*protocol.Message) {
	t.Helper()
	names := map[string]string{}
	tasks := map[string]*protocol.Message{}
	calls := map[string]int{}
	var out []string
	for _, m := range msgs {
		if m.Type == protocol.TypeTaskRequest {
			names[m.TaskID] = fmt.Sprintf("T%d", len(names)+1)
			tasks[names[m.TaskID]] = m
		}
		name, ok := names[m.TaskID]
		if !ok {
			name = "T?"
		}
		s := name + " " + string(m.Type)
		switch m.Type {
		case protocol.TypeTaskRequest:
			s += " " + strings.Join(m.Requires, ",") + " from " + m.From.AgentID
			if m.ParentTaskID != "" {
				s += ", parent " + names[m.ParentTaskID]
			}
		case protocol.TypeRoutingDecision:
			d, err := protocol.DecodePayload[protocol.RoutingDecision](m)
			if err != nil {
				t.Fatal(err)
			}
			s += " " + d.Selected
		case router.TypeModelCall:
			mc, err := protocol.DecodePayload[router.ModelCall](m)
			if err != nil {
				t.Fatal(err)
			}
			s += fmt.Sprintf(" %s %d+%d tokens", mc.Model, mc.InputTokens, mc.OutputTokens)
		case protocol.TypeToolCall, protocol.TypeToolResult, protocol.TypeToolError:
			id, ok := protocol.ToolCallID(m)
			if !ok {
				t.Fatalf("%s %s states no call id", m.Type, m.ID)
			}
			var p struct {
				Name string `json:"name"`
			}
			_ = json.Unmarshal(m.Payload, &p)
			if m.Type == protocol.TypeToolCall {
				calls[id] = len(calls) + 1
			}
			s += fmt.Sprintf(" %s #%d", p.Name, calls[id])
		}
		out = append(out, s)
	}
	return out, tasks
}

// get returns the body of a GET of url, with the API key key when not "".
func get(t *testing.T, url, key string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
	return string(b)
}

// untilWriter closes ready once the text written contains until.
type untilWriter struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	until string
	ready chan struct{}
	fired bool
}

func (w *untilWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.buf.Write(p)
	if !w.fired && strings.Contains(w.buf.String(), w.until) {
		close(w.ready)
		w.fired = true
	}
	return n, err
}

func (w *untilWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
