package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/cmd/clutch/internal/demo"
	"github.com/clutchprotocol/clutch/gateway"
)

// serve --demo: a live UI and API at once; tail follows the demo through
// it; a question of the demo is answered through it and its run goes on;
// an interrupt stops it cleanly, the file then reads back and the demo's
// key file verifies its signatures.
func TestServeDemo(t *testing.T) {
	db := filepath.Join(t.TempDir(), "demo.db")
	out := newLines()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int)
	var errb bytes.Buffer
	go func() {
		done <- runContext(ctx, []string{"serve", "--db", db, "--addr", "127.0.0.1:0", "--demo", "--demo-every", "5ms"}, nil, out, &errb)
	}()
	var url, key, demoKeys string
	for url == "" || key == "" || demoKeys == "" {
		line := <-out.ch
		if u, ok := strings.CutPrefix(line, "clutch: serving "+db+" on "); ok {
			url = strings.Fields(u)[0]
		}
		if k, ok := strings.CutPrefix(line, "clutch: API key (admin, for the UI and --key): "); ok {
			key = k
		}
		if k, ok := strings.CutPrefix(line, "clutch: demo keys in "); ok {
			demoKeys = strings.Fields(k)[0]
		}
	}
	if demoKeys != db+".demo-keys.json" {
		t.Fatalf("demo keys in %s, want next to the store", demoKeys)
	}
	// The UI page and the API.
	resp, err := http.Get(url + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(page, []byte("<html")) {
		t.Fatalf("GET /: %d", resp.StatusCode)
	}
	// Follow the demo until the lead has answered twice.
	tailed := newLines()
	tctx, stopTail := context.WithCancel(ctx)
	tailDone := make(chan int)
	go func() {
		var e bytes.Buffer
		tailDone <- runContext(tctx, []string{"tail", "--url", url, "--key", key, "--after", "0", "--type", "chat."}, nil, tailed, &e)
	}()
	answers := 0
	for answers < 2 {
		if strings.Contains(<-tailed.ch, demo.Lead) {
			answers++
		}
	}
	// Round 1 waits for the requester's choice of region; the UI's key
	// may answer it, and the run goes on to the lead's answer.
	code, stdout, errs := clutch(t, "waiting", "--mine", "--json", "--url", url, "--key", key)
	var waiting []gateway.WaitingQuestion
	if err := json.Unmarshal([]byte(stdout), &waiting); code != exitOK || err != nil || len(waiting) == 0 {
		t.Fatalf("waiting: %d %v\n%s%s", code, err, stdout, errs)
	}
	q := waiting[0].Question
	if !slices.Equal(q.Choices, []string{"Nordics", "United States", "Both"}) || q.Who == nil || !waiting[0].MayAnswer {
		t.Fatalf("the first question: %+v", waiting[0])
	}
	if code, stdout, errs := clutch(t, "answer", q.ID, "Both", "--url", url, "--key", key); code != exitOK {
		t.Fatalf("answer: %d %s%s", code, stdout, errs)
	}
	for line := <-tailed.ch; !strings.Contains(line, demo.Lead) || !strings.Contains(line, "Telehealth"); line = <-tailed.ch {
	}
	stopTail()
	if code := <-tailDone; code != exitOK {
		t.Fatalf("tail: %d", code)
	}
	code, stdout, _ = clutch(t, "runs", "--url", url, "--key", key)
	if code != exitOK || !strings.Contains(stdout, "chat:research") {
		t.Fatalf("runs through serve: %d\n%s", code, stdout)
	}
	// The rules library is served: import a folder through it, list it.
	rulesDir := t.TempDir()
	os.MkdirAll(filepath.Join(rulesDir, "rules"), 0o755)
	os.WriteFile(filepath.Join(rulesDir, "rules", "REVIEW.md"), []byte("## Checks\n\n- tests pass\n"), 0o644)
	if code, stdout, errs := clutch(t, "rules", "import", rulesDir, "--url", url, "--key", key); code != exitOK || !strings.Contains(stdout, "1 published") {
		t.Fatalf("rules import through serve: %d %s%s", code, stdout, errs)
	}
	if code, stdout, _ := clutch(t, "rules", "list", "--url", url, "--key", key); code != exitOK || !strings.Contains(stdout, "rules/REVIEW.md") {
		t.Fatalf("rules list through serve: %d %s", code, stdout)
	}
	// AG-UI: a run asked of the demo lead streams to its end.
	body := `{"threadId":"t1","runId":"r1","messages":[{"id":"m1","role":"user","content":"Open banking in the EU"}],"tools":[],"context":[]}`
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/agui", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	stream, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(stream, []byte("RUN_STARTED")) || !bytes.Contains(stream, []byte("RUN_FINISHED")) ||
		!bytes.Contains(stream, []byte("TOOL_CALL_START")) {
		t.Fatalf("AG-UI run: %d\n%s", resp.StatusCode, stream)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("serve after interrupt: exit %d\n%s", code, errb.String())
	}
	for line := range drain(out.ch) {
		if line == "clutch: stopped" {
			goto stopped
		}
	}
	t.Fatal("serve did not say it stopped")
stopped:
	// The file is whole and free again.
	if code, stdout, _ := clutch(t, "check", "--db", db); code != exitOK {
		t.Fatalf("check after serve: %d %s", code, stdout)
	}
	// The demo signed what its agents sent, and the key file it wrote
	// verifies it: every result, the AG-UI run's included.
	if code, stdout, _ := clutch(t, "verify", "--db", db, "--keys", demoKeys); code != exitOK || !strings.Contains(stdout, " 0 failed") ||
		strings.Contains(stdout, " 0 signatures valid") {
		t.Fatalf("verify with the demo's keys: %d %s", code, stdout)
	}
	if code, stdout, _ := clutch(t, "verify", "--db", db, "--keys", demoKeys, "--type", "task.result", "--require-signed"); code != exitOK {
		t.Fatalf("verify --require-signed of the results: %d %s", code, stdout)
	}
}

func drain(ch chan string) chan string {
	out := make(chan string, len(ch))
	for {
		select {
		case l := <-ch:
			out <- l
		default:
			close(out)
			return out
		}
	}
}

func TestServeKeys(t *testing.T) {
	keys, err := apiKeys([]string{"key-one-0123456789", "agent:bob=key-two-0123456789"}, "", "")
	if err != nil || len(keys) != 2 || keys["key-one-0123456789"].AgentID != operator || keys["key-two-0123456789"].AgentID != "agent:bob" {
		t.Fatalf("--key: %v %v", keys, err)
	}
	file := filepath.Join(t.TempDir(), "keys.json")
	os.WriteFile(file, []byte(`{"key-three-0123456789":{"agent_id":"agent:carol","scopes":["submit"]}}`), 0o600)
	keys, err = apiKeys(nil, file, "")
	if c := keys["key-three-0123456789"]; err != nil || c.AgentID != "agent:carol" || !c.Has(auth.ScopeSubmit) || c.Has(auth.ScopeReadAll) {
		t.Fatalf("--keys-file: %v %v", keys, err)
	}
	// $CLUTCH_SERVE_KEYS: the --key forms, separated by commas or spaces.
	keys, err = apiKeys(nil, "", " key-four-0123456789,agent:dan=key-five-0123456789\tkey-six-0123456789 ")
	if err != nil || len(keys) != 3 || keys["key-five-0123456789"].AgentID != "agent:dan" || !slices.Contains(keys["key-six-0123456789"].Scopes, auth.ScopeAdmin) {
		t.Fatalf("$CLUTCH_SERVE_KEYS: %v %v", keys, err)
	}
	// None: empty, serve then uses the store's key file.
	if keys, err = apiKeys(nil, "", ""); err != nil || len(keys) != 0 {
		t.Fatalf("no keys: %v %v", keys, err)
	}
	for _, bad := range [][]string{{"bob=key-0123456789abc"}} {
		if _, err := apiKeys(bad, "", ""); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
	if _, err := apiKeys(nil, "", "bob=key-0123456789abc"); err == nil || !strings.Contains(err.Error(), "$CLUTCH_SERVE_KEYS") {
		t.Errorf("a bad $CLUTCH_SERVE_KEYS: %v", err)
	}
	os.WriteFile(file, []byte(`{"k":{"agent_id":"carol"}}`), 0o600)
	if _, err := apiKeys(nil, file, ""); err == nil {
		t.Error("a keys file with a bad agent id: no error")
	}
	code, _, errs := clutch(t, "serve", "--key", "short", "--db", filepath.Join(t.TempDir(), "x.db"))
	if code != exitFailure || !strings.Contains(errs, "16") {
		t.Errorf("a short key: %d %s", code, errs)
	}
}

// serve on a file another process serves: a clear error.
func TestServeHeld(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	tm := newTeam(t, path)
	defer tm.close(t)
	code, _, errs := clutch(t, "serve", "--db", path, "--addr", "127.0.0.1:0")
	if code != exitFailure || !strings.Contains(errs, "another process serves or writes this file") {
		t.Fatalf("serve of a held file: %d %s", code, errs)
	}
}

func FuzzParseKeysFile(f *testing.F) {
	f.Add([]byte(`{"key-three-0123456789":{"agent_id":"agent:carol","scopes":["submit"]}}`))
	f.Add([]byte(`{"k":{"agent_id":"carol"}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`["key-three-0123456789"]`))
	f.Add([]byte(`{"k":{},"k":{}}`))
	f.Add([]byte(`{"k":{"agent_id":"agent:a","scopes":"admin","x":1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		keys, err := parseKeysFile(data)
		if err != nil {
			// In words: no Go types of the decoder.
			if msg := err.Error(); strings.Contains(msg, "map[") || strings.Contains(msg, "struct") || strings.Contains(msg, "keysFileEntry") {
				t.Fatalf("error %q", msg)
			}
			return
		}
		for _, c := range keys {
			if !strings.HasPrefix(c.AgentID, "agent:") {
				t.Fatalf("accepted agent id %q", c.AgentID)
			}
		}
		auth.APIKeys(keys)
	})
}

// serve with OTEL_EXPORTER_OTLP_ENDPOINT: the demo's traces and metrics go
// to that endpoint over OTLP/HTTP (a receiver started by the test), the
// last of them flushed when serve stops.
func TestServeOTLP(t *testing.T) {
	var mu sync.Mutex
	got := map[string]int{}
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		if r.Header.Get("Content-Type") == "application/x-protobuf" && len(b) > 0 {
			got[r.URL.Path]++
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer recv.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", recv.URL)

	db := filepath.Join(t.TempDir(), "demo.db")
	out := newLines()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int)
	var errb bytes.Buffer
	go func() {
		done <- runContext(ctx, []string{"serve", "--db", db, "--addr", "127.0.0.1:0", "--demo", "--demo-every", "5ms", "--no-ui"}, nil, out, &errb)
	}()
	var url, key string
	exporting := false
	for url == "" || key == "" {
		line := <-out.ch
		if u, ok := strings.CutPrefix(line, "clutch: serving "+db+" on "); ok {
			url = strings.Fields(u)[0]
		}
		if k, ok := strings.CutPrefix(line, "clutch: API key (admin, for the UI and --key): "); ok {
			key = k
		}
		exporting = exporting || strings.HasPrefix(line, "clutch: exporting traces and metrics to "+recv.URL)
	}
	if !exporting {
		t.Fatal("serve did not say it exports")
	}
	// Wait for one answer of the demo lead: a task has ended.
	tailed := newLines()
	tctx, stopTail := context.WithCancel(ctx)
	tailDone := make(chan int)
	go func() {
		var e bytes.Buffer
		tailDone <- runContext(tctx, []string{"tail", "--url", url, "--key", key, "--after", "0", "--type", "chat."}, nil, tailed, &e)
	}()
	for !strings.Contains(<-tailed.ch, demo.Lead) {
	}
	stopTail()
	<-tailDone
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("serve: exit %d\n%s", code, errb.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if got["/v1/traces"] == 0 || got["/v1/metrics"] == 0 {
		t.Errorf("the OTLP receiver got %v, want /v1/traces and /v1/metrics", got)
	}
}

// TestServeKeysFileScopes: a keys file with a scope that does not exist
// (read_all for read:all) fails at start, naming it and the real ones.
func TestServeKeysFileScopes(t *testing.T) {
	file := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(file, []byte(`{"key-three-0123456789":{"agent_id":"agent:carol","scopes":["read_all"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := clutch(t, "serve", "--db", filepath.Join(t.TempDir(), "c.db"), "--keys-file", file, "--addr", "127.0.0.1:0")
	if code == 0 || !strings.Contains(stderr, `"read_all"`) || !strings.Contains(stderr, "read:all") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	_, out, errOut := clutch(t, "serve", "--help")
	if help := out + errOut; !strings.Contains(help, "read:all") || strings.Contains(help, "read_all") {
		t.Fatalf("help: %s", help)
	}
}

// TestServeTimeouts: with serve's deadlines a trickled body is cut after
// the read timeout and an idle keep-alive connection is closed after the
// idle timeout, while a stream outlives the write timeout.
func TestServeTimeouts(t *testing.T) {
	lim := limitFlags{read: 200 * time.Millisecond, write: 200 * time.Millisecond, idle: 200 * time.Millisecond}
	streamed := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/stream" {
			<-streamed // held open past the write timeout
			_, err := w.Write([]byte("late"))
			if err != nil {
				t.Errorf("a stream was cut: %v", err)
			}
			return
		}
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, "slow body", http.StatusRequestTimeout)
			return
		}
		w.Write([]byte("ok"))
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := lim.server(h)
	go srv.Serve(ln)
	defer srv.Close()

	// A body that never comes: the server answers or closes, by itself.
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789")
	conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // a guard, far above the timeout
	got, err := io.ReadAll(conn)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("a trickled body was not cut: %q", got)
	}

	// An idle keep-alive connection is closed by the server.
	idle, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	fmt.Fprintf(idle, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	idle.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err = io.ReadAll(idle) // the answer, then EOF when the idle timeout closes it
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("an idle connection stayed open: %q", got)
	}
	if !strings.Contains(string(got), "200 OK") {
		t.Fatalf("idle: %q", got)
	}

	// A stream is not cut by the write timeout.
	done := make(chan string)
	go func() {
		resp, err := http.Get("http://" + ln.Addr().String() + "/v1/stream")
		if err != nil {
			done <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- string(b)
	}()
	time.AfterFunc(3*lim.write, func() { close(streamed) }) // past the write deadline
	if got := <-done; got != "late" {
		t.Fatalf("stream: %q", got)
	}
}

// running is a serve started in process by startServe.
type running struct {
	start  []string // stdout up to the line startServe waited for
	url    string
	out    *lines
	errb   *bytes.Buffer // read only after stop
	cancel context.CancelFunc
	done   chan int
	code   int
	ended  bool
}

// startServe starts serve with args and reads its stdout up to the first
// line starting with until.
func startServe(t *testing.T, until string, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &running{out: newLines(), errb: &bytes.Buffer{}, cancel: cancel, done: make(chan int, 1)}
	go func() {
		s.done <- runContext(ctx, append([]string{"serve", "--addr", "127.0.0.1:0"}, args...), nil, s.out, s.errb)
	}()
	t.Cleanup(func() { s.stop() })
	for {
		var line string
		select {
		case line = <-s.out.ch:
		case code := <-s.done:
			s.ended, s.code = true, code
			t.Fatalf("serve ended with %d before %q:\n%s\n%s", code, until, strings.Join(s.start, "\n"), s.errb)
		}
		s.start = append(s.start, line)
		if u, ok := strings.CutPrefix(line, "clutch: serving "); ok {
			s.url = strings.Fields(u)[2]
		}
		if strings.HasPrefix(line, until) {
			return s
		}
	}
}

// stop interrupts serve and returns its exit code.
func (s *running) stop() int {
	if !s.ended {
		s.cancel()
		s.code, s.ended = <-s.done, true
	}
	return s.code
}

// line returns the start line with prefix, and whether there is one.
func (s *running) line(prefix string) (string, bool) {
	for _, l := range s.start {
		if rest, ok := strings.CutPrefix(l, prefix); ok {
			return rest, true
		}
	}
	return "", false
}

// serve without keys: the first start makes an admin key, prints it and
// keeps it beside the store (0600); a restart uses the same key and does
// not print it again; the demo's signatures of both starts verify with
// its key file.
func TestServeRestartKeepsKeys(t *testing.T) {
	db := filepath.Join(t.TempDir(), "team.db")
	keysFile := db + ".keys.json"
	first := startServe(t, "clutch: demo keys in ", "--db", db, "--demo", "--demo-every", "5ms", "--no-ui")
	key, ok := first.line("clutch: API key (admin, for the UI and --key): ")
	if !ok {
		t.Fatalf("the first start printed no key:\n%s", strings.Join(first.start, "\n"))
	}
	if note, _ := first.line("clutch: the admin key is kept in "); !strings.HasPrefix(note, keysFile+" (mode 0600)") {
		t.Fatalf("the first start says the key is kept in %q, want %s", note, keysFile)
	}
	fi, err := os.Stat(keysFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the key file: %v %v", fi, err)
	}
	kept, err := loadKeysFile(keysFile)
	if c, ok := kept[key]; err != nil || len(kept) != 1 || !ok || c.AgentID != operator || !slices.Contains(c.Scopes, auth.ScopeAdmin) {
		t.Fatalf("the key file holds %v (%v), want the printed key as the admin", kept, err)
	}
	waitLead(t, first.url, key)
	if code := first.stop(); code != exitOK {
		t.Fatalf("the first serve: exit %d\n%s", code, first.errb)
	}

	second := startServe(t, "clutch: demo keys in ", "--db", db, "--demo", "--demo-every", "5ms", "--no-ui")
	if _, printed := second.line("clutch: API key ("); printed {
		t.Fatalf("a restart printed the key again:\n%s", strings.Join(second.start, "\n"))
	}
	if note, ok := second.line("clutch: API keys from "); !ok || !strings.HasPrefix(note, keysFile+" ") {
		t.Fatalf("a restart does not say where the key is:\n%s", strings.Join(second.start, "\n"))
	}
	if code, stdout, errs := clutch(t, "runs", "--url", second.url, "--key", key); code != exitOK {
		t.Fatalf("the first start's key after a restart: %d %s%s", code, stdout, errs)
	}
	if code, _, errs := clutch(t, "runs", "--url", second.url, "--key", "not-the-key-0123456789"); code != exitFailure || !strings.Contains(errs, "401") {
		t.Fatalf("another key: %d %s", code, errs)
	}
	waitLead(t, second.url, key)
	if code := second.stop(); code != exitOK {
		t.Fatalf("the second serve: exit %d\n%s", code, second.errb)
	}
	if again, err := loadKeysFile(keysFile); err != nil || len(again) != 1 || again[key].AgentID != operator {
		t.Fatalf("the key file after a restart: %v %v", again, err)
	}
	// Both starts signed with keys of their own; the demo's key file has
	// them all.
	demoKeys := db + ".demo-keys.json"
	code, stdout, _ := clutch(t, "verify", "--db", db, "--keys", demoKeys)
	if code != exitOK || !strings.Contains(stdout, " 0 failed") || strings.Contains(stdout, " 0 signatures valid") {
		t.Fatalf("verify after a restart: %d %s", code, stdout)
	}
	if code, stdout, _ := clutch(t, "verify", "--db", db, "--keys", demoKeys, "--type", "task.result", "--require-signed"); code != exitOK {
		t.Fatalf("verify --require-signed after a restart: %d %s", code, stdout)
	}
}

// waitLead follows the gateway at url until the demo lead has answered in
// a thread: tasks have ended and signed events are stored.
func waitLead(t *testing.T, url, key string) {
	t.Helper()
	tailed := newLines()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		var e bytes.Buffer
		done <- runContext(ctx, []string{"tail", "--url", url, "--key", key, "--after", "0", "--type", "chat."}, nil, tailed, &e)
	}()
	for {
		select {
		case line := <-tailed.ch:
			if !strings.Contains(line, demo.Lead) {
				continue
			}
		case code := <-done:
			t.Fatalf("tail ended: %d", code)
		}
		break
	}
	cancel()
	<-done
}

// Keys from $CLUTCH_SERVE_KEYS: accepted, no warning, and the store's key
// file is neither read nor made. --key still works, with a warning.
func TestServeEnvKeys(t *testing.T) {
	db := filepath.Join(t.TempDir(), "team.db")
	const ops, bob = "key-ops-0123456789abcdef", "key-bob-0123456789abcdef"
	t.Setenv(envServeKeys, "agent:ops="+ops+", agent:bob="+bob)
	s := startServe(t, "clutch: serving ", "--db", db, "--no-ui")
	for _, k := range []string{ops, bob} {
		if code, stdout, errs := clutch(t, "runs", "--url", s.url, "--key", k); code != exitOK {
			t.Fatalf("runs with a key of $%s: %d %s%s", envServeKeys, code, stdout, errs)
		}
	}
	if code, _, errs := clutch(t, "runs", "--url", s.url, "--key", "not-the-key-0123456789"); code != exitFailure || !strings.Contains(errs, "401") {
		t.Fatalf("another key: %d %s", code, errs)
	}
	if code := s.stop(); code != exitOK || s.errb.Len() != 0 {
		t.Fatalf("serve: exit %d, stderr %q", code, s.errb)
	}
	if _, err := os.Stat(db + ".keys.json"); !os.IsNotExist(err) {
		t.Fatalf("the store's key file with keys given: %v", err)
	}
	for _, l := range s.start {
		if strings.Contains(l, ops) || strings.Contains(l, "API key") {
			t.Fatalf("serve printed %q", l)
		}
	}

	t.Setenv(envServeKeys, "")
	s = startServe(t, "clutch: serving ", "--db", db, "--no-ui", "--key", ops)
	if code, _, errs := clutch(t, "runs", "--url", s.url, "--key", ops); code != exitOK {
		t.Fatalf("runs with --key: %d %s", code, errs)
	}
	if code := s.stop(); code != exitOK || !strings.Contains(s.errb.String(), "warning: other users of this machine can read a --key") ||
		strings.Count(s.errb.String(), "\n") != 1 || strings.Contains(s.errb.String(), ops) {
		t.Fatalf("serve --key: exit %d, stderr %q, want one line of warning", code, s.errb)
	}
}

// A key file other users may read, or that is not a key file, stops serve
// at start with a message that names the file and the fix; the store's
// key file is never replaced by a new key.
func TestServeKeyFileRefused(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "team.db")
	own := db + ".keys.json"
	good := `{"key-ops-0123456789abcdef": {"agent_id": "agent:ops", "scopes": ["admin"]}}`
	for _, c := range []struct {
		name, content string
		mode          os.FileMode
		want          []string
	}{
		{"readable by others", good, 0o644, []string{own, "mode 0644", "chmod 600 " + own, "remove it to make a new key"}},
		{"readable by the group", good, 0o640, []string{"mode 0640"}},
		{"not JSON", "key-ops-0123456789abcdef\n", 0o600, []string{own, "invalid JSON at byte 0", "want a JSON object of API key"}},
		{"a list", `["key-ops-0123456789abcdef"]`, 0o600, []string{"an array at the top level"}},
		{"a bad scope", `{"key-ops-0123456789abcdef": {"agent_id": "agent:ops", "scopes": ["root"]}}`, 0o600, []string{`"root"`}},
	} {
		os.Remove(own)
		if err := os.WriteFile(own, []byte(c.content), c.mode); err != nil {
			t.Fatal(err)
		}
		os.Chmod(own, c.mode) // whatever the umask
		code, stdout, errs := clutch(t, "serve", "--db", db, "--addr", "127.0.0.1:0")
		if code != exitFailure || stdout != "" {
			t.Errorf("%s: exit %d\n%s%s", c.name, code, stdout, errs)
		}
		for _, w := range c.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%s: %q does not say %q", c.name, errs, w)
			}
		}
		if strings.Contains(errs, "map[") || strings.Contains(errs, "struct") || strings.Count(errs, "\n") > 2 {
			t.Errorf("%s: %q", c.name, errs)
		}
		if got, _ := os.ReadFile(own); string(got) != c.content {
			t.Errorf("%s: the key file was changed to %q", c.name, got)
		}
	}
	// --keys-file: the same rule.
	given := filepath.Join(dir, "keys.json")
	os.WriteFile(given, []byte(good), 0o644)
	os.Chmod(given, 0o644)
	code, _, errs := clutch(t, "serve", "--db", db, "--keys-file", given, "--addr", "127.0.0.1:0")
	if code != exitFailure || !strings.Contains(errs, "chmod 600 "+given) {
		t.Errorf("--keys-file of mode 0644: %d %s", code, errs)
	}
}
