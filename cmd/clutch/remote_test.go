package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/cmd/clutch/internal/demo"
	"github.com/clutchprotocol/clutch/gateway"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
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
	if code != exitOK || json.Unmarshal([]byte(stdout), &st) != nil || st.Events != len(want) || st.Runs != 6 {
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

func mustDecode(t *testing.T, raw []byte) *protocol.Message {
	t.Helper()
	m, err := protocol.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
