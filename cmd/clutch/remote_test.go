package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
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

const testKey = "test-key-0123456789abcdef"

// served is a team behind a real gateway in an httptest server.
type served struct {
	*team
	srv *httptest.Server
	url string
}

func newServed(t *testing.T) *served {
	t.Helper()
	tm := newTeam(t, filepath.Join(t.TempDir(), "events.db"))
	keys, err := auth.APIKeys(map[string]auth.Caller{testKey: {AgentID: "agent:operator", Scopes: []string{auth.ScopeAdmin}}})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(tm.r, &gateway.Options{Auth: keys})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	s := &served{team: tm, srv: srv, url: srv.URL}
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		tm.close(t)
	})
	return s
}

func (s *served) args(args ...string) []string {
	return append(args, "--url", s.url, "--key", testKey)
}

// Every read command works through the gateway and agrees with the file.
func TestRemoteReads(t *testing.T) {
	s := newServed(t)
	outs := s.rounds(t, 0, 5)
	run := outs[0].Message.RunID
	var want []store.Event
	for ev, err := range s.st.Read(t.Context(), store.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, ev)
	}

	code, stdout, errs := clutch(t, s.args("runs")...)
	if code != exitOK || !strings.Contains(stdout, outs[4].Message.RunID+"  failed ("+string(outs[4].Err.Code)+")") || !strings.Contains(stdout, run+"  completed") {
		t.Fatalf("runs --url: %d\n%s%s", code, stdout, errs)
	}
	code, stdout, _ = clutch(t, s.args("runs", "--threads", "--json")...)
	if code != exitOK || !strings.Contains(stdout, `"threads"`) || !strings.Contains(stdout, outs[1].Message.ThreadID) {
		t.Fatalf("runs --threads --url: %d\n%s", code, stdout)
	}
	// A run's bytes, through the gateway: its events' stored size.
	var size int64
	for _, ev := range want {
		if m, err := ev.Message(); err == nil && m.RunID == run {
			size += int64(len(ev.Raw))
		}
	}
	type sized struct {
		ID    string `json:"id"`
		Bytes int64  `json:"bytes"`
	}
	code, stdout, _ = clutch(t, s.args("runs", "--json")...)
	var listed struct {
		Runs []sized `json:"runs"`
	}
	if code != exitOK || json.Unmarshal([]byte(stdout), &listed) != nil || !slices.Contains(listed.Runs, sized{run, size}) || size == 0 {
		t.Fatalf("runs --json --url: want run %s of %d bytes: %d\n%s", run, size, code, stdout)
	}
	code, local, _ := clutch(t, "tree", "--db", "unused.db", "--url", s.url, "--key", testKey, run)
	if code != exitOK || !strings.Contains(local, "completed  "+demo.Lead) || strings.Count(local, "research.query.v1") != 3 {
		t.Fatalf("tree --url: %d\n%s", code, local)
	}
	code, stdout, _ = clutch(t, s.args("replay", run)...)
	if code != exitOK || !strings.Contains(stdout, "tool.call") || !strings.Contains(stdout, "run "+run) {
		t.Fatalf("replay --url: %d\n%s", code, stdout)
	}
	code, stdout, _ = clutch(t, s.args("stats", "--json")...)
	var st stats
	if code != exitOK || json.Unmarshal([]byte(stdout), &st) != nil || st.Runs != 5 || st.Events != len(want)-reserved(t, want) {
		t.Fatalf("stats --url: %d %+v\n%s", code, st, stdout)
	}
	code, stdout, _ = clutch(t, s.args("check")...)
	if code != exitOK || !strings.Contains(stdout, "ok: "+s.url+", "+strconv.Itoa(len(want))+" events") {
		t.Fatalf("check --url: %d\n%s", code, stdout)
	}
	code, stdout, _ = clutch(t, s.args("verify", "--keys", s.keyFile(t))...)
	if code != exitOK || !strings.Contains(stdout, itoa(signed(t, want))+" signatures valid, 0 failed") {
		t.Fatalf("verify --url: %d\n%s", code, stdout)
	}
	// export through the gateway, import into a file: the same bytes.
	dir := t.TempDir()
	code, _, errs = clutch(t, s.args("export", "--format", "cloudevents", "--out", filepath.Join(dir, "ce.jsonl"))...)
	if code != exitOK {
		t.Fatalf("export --url: %d %s", code, errs)
	}
	code, stdout, errs = clutch(t, "import", "--db", filepath.Join(dir, "copy.db"), filepath.Join(dir, "ce.jsonl"))
	if code != exitOK {
		t.Fatalf("import: %d %s %s", code, stdout, errs)
	}
	got := readAll(t, filepath.Join(dir, "copy.db"))
	if len(got) != len(want) {
		t.Fatalf("%d events through the gateway, %d in the file", len(got), len(want))
	}
	for i := range want {
		if !bytes.Equal(got[i].Raw, want[i].Raw) {
			t.Fatalf("event %d: bytes differ", i+1)
		}
	}
	// A filtered export pages the run's events: Dara's tool call and
	// result, Ken's call and error, then his call and result.
	code, stdout, _ = clutch(t, s.args("export", "--run", run, "--type", "tool.")...)
	if code != exitOK || strings.Count(stdout, "\n") != 6 {
		t.Fatalf("export --url --run --type: %d\n%s", code, stdout)
	}
}

// tail --url follows by default; a run that does not exist ends it at
// once with exit 3 rather than a stream that never prints.
func TestRemoteTailUnknownRun(t *testing.T) {
	s := newServed(t)
	code, stdout, errs := clutch(t, s.args("tail", "--run", "run_missing")...)
	if code != exitNotFound || stdout != "" || errs != "clutch tail: run \"run_missing\" not found\n" {
		t.Fatalf("tail --run run_missing: %d %q %q", code, stdout, errs)
	}
}

func TestRemoteUnauthorized(t *testing.T) {
	s := newServed(t)
	code, _, errs := clutch(t, "runs", "--url", s.url, "--key", "not-the-key-0123456789")
	if code != exitFailure || !strings.Contains(errs, "401 UNAUTHORIZED") {
		t.Fatalf("a wrong key: %d %s", code, errs)
	}
	code, _, errs = clutch(t, "tail", "--url", s.url, "--key", "not-the-key-0123456789")
	if code != exitFailure || !strings.Contains(errs, "401") {
		t.Fatalf("tail with a wrong key: %d %s", code, errs)
	}
}

// lines is an io.Writer that sends each complete line to a channel.
type lines struct {
	mu  sync.Mutex
	buf []byte
	ch  chan string
}

func newLines() *lines { return &lines{ch: make(chan string, 1024)} }

func (l *lines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.ch <- string(l.buf[:i])
		l.buf = l.buf[i+1:]
	}
}

// tail --url follows new appends as they happen, with no gap and no
// duplicate, until it is interrupted.
func TestRemoteTailFollows(t *testing.T) {
	s := newServed(t)
	s.rounds(t, 0, 1)
	from, _ := s.st.LastSeq(t.Context())
	out := newLines()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int)
	go func() {
		var errb bytes.Buffer
		done <- runContext(ctx, s.args("tail", "--json", "--after", strconv.FormatUint(from, 10)), nil, out, &errb)
	}()
	outs := s.rounds(t, 1, 2) // appended while tail follows
	last, _ := s.st.LastSeq(t.Context())
	want := from + 1
	for want <= last {
		line := <-out.ch
		var ev struct {
			Seq     uint64          `json:"seq"`
			Message json.RawMessage `json:"message"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if ev.Seq != want {
			t.Fatalf("followed seq %d, want %d", ev.Seq, want)
		}
		got, err := s.st.Get(t.Context(), idOf(mustDecode(t, ev.Message)))
		if err != nil || !bytes.Equal(got.Raw, ev.Message) {
			t.Fatalf("event %d: not the stored bytes (%v)", ev.Seq, err)
		}
		want++
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("tail after interrupt: exit %d", code)
	}
	if !outs[1].OK() {
		t.Fatal("round 2 failed")
	}
}

// reserved counts the events of system runs, which stats leaves out.
func reserved(t *testing.T, evs []store.Event) int {
	t.Helper()
	n := 0
	for _, ev := range evs {
		if protocol.Reserved(mustDecode(t, ev.Raw).RunID) {
			n++
		}
	}
	return n
}

func mustDecode(t *testing.T, raw []byte) *protocol.Message {
	t.Helper()
	m, err := protocol.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// parityCase is one question asked of a store file (--db) and of a
// gateway over the same file (--url): both must give the same stdout and
// exit code (and, when it is not 0, the same stderr). In args, {run},
// {failed}, {thread}, {task} are a completed run, a failed run, a thread
// and a subtask of the data; {keys} its key file; {since} and {until} the
// created times of two runs in between (RFC 3339, milliseconds); {seq} a
// seq in the middle. A new read command adds its rows to parityCases.
type parityCase struct {
	args []string
	code int
	// norm, when set, removes from stdout what differs by mode on
	// purpose: a file's size, the name of the source, a duration.
	norm func(string) string
}

// parityCases are the questions of TestSameAnswerEitherWay.
var parityCases = []parityCase{
	{args: []string{"runs"}},
	{args: []string{"runs", "--json"}},
	{args: []string{"runs", "--limit", "2", "--json"}},
	{args: []string{"runs", "--threads"}},
	{args: []string{"runs", "--threads", "--json"}},
	{args: []string{"runs", "--system", "--json"}},
	{args: []string{"runs", "--threads", "--system"}},
	{args: []string{"runs", "--status", "failed"}},
	{args: []string{"runs", "--status", "completed", "--limit", "2", "--json"}},
	{args: []string{"runs", "--status", "cancelled"}},
	{args: []string{"runs", "--status", "cancelled", "--json"}},
	{args: []string{"runs", "--agent", demo.Dara}},
	{args: []string{"runs", "--agent", "agent:nobody"}},
	{args: []string{"runs", "--since", "{since}", "--json"}},
	{args: []string{"runs", "--until", "{until}"}},
	{args: []string{"runs", "--since", "{since}", "--until", "{until}", "--status", "completed"}},

	{args: []string{"tree", "{removed}"}, code: exitNotFound},
	{args: []string{"tail", "--no-follow", "--run", "{removed}"}, code: exitNotFound},
	{args: []string{"stats", "--run", "{removed}"}, code: exitNotFound},
	{args: []string{"export", "--run", "{removed}"}, code: exitNotFound},

	{args: []string{"tail", "--no-follow", "-n", "5"}},
	{args: []string{"tail", "--no-follow", "-n", "5", "--json"}},
	{args: []string{"tail", "--no-follow", "--run", "{run}", "-n", "1000"}},
	{args: []string{"tail", "--no-follow", "--thread", "{thread}", "--type", "chat."}},
	{args: []string{"tail", "--no-follow", "--task", "{task}", "--json"}},
	{args: []string{"tail", "--no-follow", "--agent", demo.Ken, "--type", "tool.", "-n", "1000"}},
	{args: []string{"tail", "--no-follow", "--after", "{seq}", "--type", "task.result"}},
	{args: []string{"tail", "--no-follow", "--since", "{since}", "--until", "{until}", "-n", "1000"}},
	{args: []string{"tail", "--no-follow", "--type", "nothing."}},
	{args: []string{"tail", "--no-follow", "--type", "nothing.", "--json"}},
	{args: []string{"tail", "--no-follow", "--run", "{run}", "--agent", "agent:nobody"}},
	{args: []string{"tail", "--no-follow", "--run", "run_missing"}, code: exitNotFound},
	{args: []string{"tail", "--no-follow", "--thread", "thr_missing", "-n", "0"}, code: exitNotFound},
	{args: []string{"tail", "--no-follow", "--run", "{run}", "--task", "task_missing"}, code: exitNotFound},

	{args: []string{"tree", "{run}"}},
	{args: []string{"tree", "{failed}", "--json"}},
	{args: []string{"tree", "--task", "{task}"}},
	{args: []string{"tree", "--task", "{task}", "--json"}},
	{args: []string{"tree", "run_missing"}, code: exitNotFound},
	{args: []string{"tree", "--task", "task_missing", "--json"}, code: exitNotFound},

	{args: []string{"replay", "{run}"}},
	{args: []string{"replay", "{failed}", "--type", "task.", "--json"}},
	{args: []string{"replay", "{run}", "--type", "nothing."}},
	{args: []string{"replay", "run_missing"}, code: exitNotFound},
	{args: []string{"replay", "run_missing", "--json"}, code: exitNotFound},

	{args: []string{"export"}},
	{args: []string{"export", "--run", "{run}", "--type", "tool.", "--format", "cloudevents"}},
	{args: []string{"export", "--since", "{since}", "--until", "{until}"}},
	{args: []string{"export", "--type", "nothing."}},
	{args: []string{"export", "--run", "run_missing"}, code: exitNotFound},
	{args: []string{"export", "--task", "task_missing", "--type", "task."}, code: exitNotFound},

	{args: []string{"stats"}, norm: dropFileSize},
	{args: []string{"stats", "--json"}, norm: dropFileSize},
	{args: []string{"stats", "--system", "--json"}, norm: dropFileSize},
	{args: []string{"stats", "--run", "{failed}"}, norm: dropFileSize},
	{args: []string{"stats", "--run", "run_registry", "--json"}, norm: dropFileSize},
	{args: []string{"stats", "--since", "{since}", "--agent", demo.Lead, "--json"}, norm: dropFileSize},
	{args: []string{"stats", "--agent", "agent:nobody", "--json"}, norm: dropFileSize},
	{args: []string{"stats", "--thread", "thr_missing"}, code: exitNotFound},

	{args: []string{"verify", "--keys", "{keys}"}},
	{args: []string{"verify", "--keys", "{keys}", "--json"}},
	{args: []string{"verify", "--keys", "{keys}", "--run", "{run}", "--type", "routing.", "--require-signed", "--json"}, code: exitFailure},
	{args: []string{"verify", "--keys", "{keys}", "--since", "{since}", "--until", "{until}"}},
	{args: []string{"verify", "--keys", "{keys}", "--type", "nothing."}},
	{args: []string{"verify", "--keys", "{keys}", "--run", "run_missing"}, code: exitNotFound},

	{args: []string{"agents"}},
	{args: []string{"agents", "--json"}},
	{args: []string{"agents", demo.Lead}},
	{args: []string{"agents", demo.Lead, "--json"}},
	{args: []string{"agents", "agent:nobody"}, code: exitNotFound},

	{args: []string{"get", "{seq}"}},
	{args: []string{"get", "{seq}", "--json"}},
	{args: []string{"get", "msg_missing"}, code: exitNotFound},
	{args: []string{"get", "99999999"}, code: exitNotFound},

	{args: []string{"check"}, norm: dropSource},
	{args: []string{"check", "--json"}, norm: dropSource},
}

// dropFileSize removes what stats says of a file alone: its size.
func dropFileSize(s string) string {
	if strings.HasPrefix(s, "{") {
		var m map[string]any
		if json.Unmarshal([]byte(s), &m) != nil {
			return s
		}
		delete(m, "file_bytes")
		b, _ := json.Marshal(m)
		return string(b)
	}
	var out []string
	for _, l := range strings.SplitAfter(s, "\n") {
		if !strings.HasPrefix(l, "file ") {
			out = append(out, l)
		}
	}
	return strings.Join(out, "")
}

// dropSource removes the name of what check read and how long it took.
func dropSource(s string) string {
	s = regexp.MustCompile(`ok: \S+, (\d+ events) \(.*\)`).ReplaceAllString(s, "ok: SOURCE, $1")
	return regexp.MustCompile(`"source": "[^"]*"`).ReplaceAllString(s, `"source": "SOURCE"`)
}

// parityData is a closed store file of demo rounds and a gateway that
// serves the same file, opened read-only by both.
type parityData struct {
	path, url string
	vars      map[string]string
}

func newParityData(t *testing.T) *parityData {
	t.Helper()
	tm := newTeam(t, filepath.Join(t.TempDir(), "events.db"))
	outs := tm.rounds(t, 0, 5)
	keys := tm.keyFile(t)
	tm.close(t)

	// One run goes by retention: reading it says what became of it.
	ctx := t.Context()
	removed := outs[2].Message.RunID
	st, err := boltstore.Open(tm.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.RemoveRuns(ctx, []string{removed}, store.Removal{Policy: "manual"}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = boltstore.Open(tm.path, &boltstore.Options{ReadOnly: true})
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
	keyset, err := auth.APIKeys(map[string]auth.Caller{testKey: {AgentID: "agent:operator", Scopes: []string{auth.ScopeAdmin}}})
	if err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(r, &gateway.Options{Auth: keyset})
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

	evs := readAll(t, tm.path)
	var task string
	for _, ev := range evs {
		if m := mustDecode(t, ev.Raw); m.RunID == outs[1].Message.RunID && m.Type == protocol.TypeTaskRequest && m.ParentTaskID != "" {
			task = m.TaskID
			break
		}
	}
	created := func(runID string) string {
		for _, ev := range evs {
			if mustDecode(t, ev.Raw).RunID == runID {
				return ev.Time.UTC().Format("2006-01-02T15:04:05.000Z07:00")
			}
		}
		t.Fatalf("no event of %s", runID)
		return ""
	}
	return &parityData{path: tm.path, url: srv.URL, vars: map[string]string{
		"{run}": outs[0].Message.RunID, "{failed}": outs[4].Message.RunID, "{thread}": outs[1].Message.ThreadID,
		"{task}": task, "{keys}": keys, "{since}": created(outs[1].Message.RunID), "{until}": created(outs[3].Message.RunID),
		"{seq}": strconv.FormatUint(evs[len(evs)/2].Seq, 10), "{removed}": removed,
	}}
}

func (d *parityData) args(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		if v, ok := d.vars[a]; ok {
			a = v
		}
		out[i] = a
	}
	return out
}

// TestSameAnswerEitherWay asks every read command the same questions of
// a file and of a gateway over it: the same stdout and exit code,
// unknown ids (exit 3, the same words on stderr) and empty results
// (exit 0) included.
func TestSameAnswerEitherWay(t *testing.T) {
	d := newParityData(t)
	for _, c := range parityCases {
		args := d.args(c.args)
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			fcode, fout, ferr := clutch(t, append(slices.Clone(args), "--db", d.path)...)
			gcode, gout, gerr := clutch(t, append(slices.Clone(args), "--url", d.url, "--key", testKey)...)
			if c.norm != nil {
				fout, gout = c.norm(fout), c.norm(gout)
			}
			if fcode != c.code || gcode != c.code {
				t.Fatalf("exit %d from the file, %d from the gateway, want %d\nfile: %s%s\ngateway: %s%s", fcode, gcode, c.code, fout, ferr, gout, gerr)
			}
			if fout != gout {
				t.Fatalf("stdout differs\nfile:\n%s\ngateway:\n%s", fout, gout)
			}
			if c.code != exitOK && ferr != gerr {
				t.Fatalf("stderr differs\nfile: %s\ngateway: %s", ferr, gerr)
			}
			if c.code == exitNotFound && !regexp.MustCompile(`^clutch \w+: (run|thread|task|agent|event) "[\w:]+" (not found|was removed at [0-9TZ:-]+ by policy "[^"]+")\n$`).MatchString(ferr) {
				t.Fatalf("not found says %q", ferr)
			}
			if slices.Contains(c.args, "{removed}") && !strings.Contains(ferr, `was removed at `) {
				t.Fatalf("a removed run's read says %q, want what became of it", ferr)
			}
			if c.code == exitOK && strings.TrimSpace(fout) == "" && args[0] != "export" && !slices.Contains(args, "--json") {
				t.Fatalf("an empty answer prints nothing; want a line that says so")
			}
		})
	}
}
