package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/client"
	"github.com/clutchprotocol/clutch/cmd/clutch/internal/demo"
	"github.com/clutchprotocol/clutch/cmd/clutch/internal/keyfile"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	bolt "go.etcd.io/bbolt"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	demoOptions = testDemo // serve --demo
	goleak.VerifyTestMain(m)
}

// testDemo is the demo in tests: a round takes milliseconds, and a
// question waits long enough for a test to answer it.
var testDemo = &demo.Options{TimeScale: 0.001, QuestionDeadline: time.Minute}

// clutch runs the command line in process and returns its exit code,
// stdout and stderr.
func clutch(t testing.TB, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// team is a router over a writable store with the demo team registered.
type team struct {
	st   *boltstore.Store
	r    *router.Router
	demo *demo.Team
	path string
}

func newTeam(t testing.TB, path string) *team {
	t.Helper()
	ctx := context.Background()
	st, err := boltstore.Open(path, &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	d, err := demo.New(testDemo)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Open(ctx, st, &registry.Options{Keys: d.Keys()})
	if err != nil {
		t.Fatal(err)
	}
	schemas, err := schema.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := router.New(st, reg, &router.Options{Validator: schemas, Signers: d.Signers(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Register(ctx, r); err != nil {
		t.Fatal(err)
	}
	return &team{st: st, r: r, demo: d, path: path}
}

// rounds plays demo rounds from..from+n-1 and returns how their runs
// ended: the UI answers a round's question at once (the first choice, or
// approve), so rounds 0–5 complete but for round 4, which fails.
func (tm *team) rounds(t testing.TB, from, n int) []*router.Outcome {
	t.Helper()
	ctx := context.Background()
	var outs []*router.Outcome
	for i := from; i < from+n; i++ {
		out, err := tm.demo.Round(ctx, tm.r, i)
		if err != nil {
			t.Fatal(err)
		}
		if q := out.Question; q != nil {
			value := `{"decision":"approve"}`
			if len(q.Choices) > 0 {
				value = strconv.Quote(q.Choices[0])
			}
			h, err := tm.r.Answer(ctx, q.ID, router.Answerer{AgentID: demo.UI}, json.RawMessage(value))
			if err != nil {
				t.Fatalf("round %d: answering %s: %v", i, q.ID, err)
			}
			if out, _ = h.Wait(ctx); out.Question != nil {
				t.Fatalf("round %d asks again: %s", i, out.Question.Text)
			}
		}
		outs = append(outs, out)
	}
	return outs
}

func (tm *team) close(t testing.TB) {
	t.Helper()
	if err := tm.r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tm.st.Close(); err != nil {
		t.Fatal(err)
	}
}

// keyFile writes the demo's public keys as a key file, as serve does.
func (tm *team) keyFile(t testing.TB) string {
	path := filepath.Join(t.TempDir(), "keys.json")
	if err := keyfile.Add(path, tm.demo.Keys()); err != nil {
		t.Fatal(err)
	}
	return path
}

// demoFile makes a closed store file with n demo rounds; it returns the
// path, the runs' outcomes and the key file.
func demoFile(t testing.TB, n int) (string, []*router.Outcome, string) {
	t.Helper()
	tm := newTeam(t, filepath.Join(t.TempDir(), "events.db"))
	outs := tm.rounds(t, 0, n)
	keys := tm.keyFile(t)
	tm.close(t)
	return tm.path, outs, keys
}

// signed counts the events that carry a signature.
func signed(t testing.TB, evs []store.Event) int {
	t.Helper()
	n := 0
	for _, ev := range evs {
		m, err := ev.Message()
		if err != nil {
			t.Fatal(err)
		}
		if m.Security != nil && m.Security.Auth != nil {
			n++
		}
	}
	return n
}

func readAll(t testing.TB, path string) []store.Event {
	t.Helper()
	st, err := boltstore.Open(path, &boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var evs []store.Event
	for ev, err := range st.Read(context.Background(), store.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	return evs
}

func TestUsage(t *testing.T) {
	for _, c := range []struct {
		args []string
		code int
		in   string // in stdout or stderr
	}{
		{nil, exitUsage, "Commands:"},
		{[]string{"nope"}, exitUsage, `unknown command "nope"`},
		{[]string{"--help"}, exitOK, "3 not found (a run, thread, task or other id named on the command line"},
		{[]string{"help", "export"}, exitOK, "--format cloudevents"},
		{[]string{"tail", "--help"}, exitOK, "Examples:"},
		{[]string{"tail", "-h"}, exitOK, "Examples:"},
		{[]string{"tail", "--bogus"}, exitUsage, "flag provided but not defined: -bogus"},
		{[]string{"tree"}, exitUsage, "want one RUN_ID"},
		{[]string{"export", "--format", "xml"}, exitUsage, "unknown format"},
		{[]string{"import", "--url", "http://x", "f"}, exitUsage, "cannot go through a gateway"},
		{[]string{"import"}, exitUsage, "want one input FILE"},
		{[]string{"verify"}, exitUsage, "--keys FILE is required"},
		{[]string{"runs", "--limit", "0"}, exitUsage, "--limit must be positive"},
		{[]string{"tail", "--url", "ftp://x"}, exitFailure, "invalid gateway URL"},
		{[]string{"stats", "--db", filepath.Join(t.TempDir(), "missing.db")}, exitFailure, "no such file"},
	} {
		code, out, errs := clutch(t, c.args...)
		if code != c.code || !strings.Contains(out+errs, c.in) {
			t.Errorf("clutch %q: exit %d, want %d with %q\nstdout: %s\nstderr: %s", c.args, code, c.code, c.in, out, errs)
		}
	}
	// Every command has help with examples.
	for name := range commands {
		code, out, _ := clutch(t, name, "--help")
		if code != exitOK || !strings.Contains(out, "Usage: clutch "+name) || !strings.Contains(out, "Examples:") {
			t.Errorf("clutch %s --help: %d\n%s", name, code, out)
		}
	}
}

// export → import keeps every message's bytes, in order, so signatures
// still verify; a second import appends nothing.
func TestExportImportRoundTrip(t *testing.T) {
	src, _, keys := demoFile(t, 2)
	want := readAll(t, src)
	for _, format := range []string{"jsonl", "cloudevents"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "events."+format)
			code, _, errs := clutch(t, "export", "--db", src, "--format", format, "--out", out)
			if code != exitOK || !strings.Contains(errs, "exported "+itoa(len(want))+" events") {
				t.Fatalf("export: %d %s", code, errs)
			}
			dst := filepath.Join(dir, "copy.db")
			code, stdout, errs := clutch(t, "import", "--db", dst, out)
			if code != exitOK || !strings.Contains(stdout, "imported "+itoa(len(want))+" events") {
				t.Fatalf("import: %d %s %s", code, stdout, errs)
			}
			got := readAll(t, dst)
			if len(got) != len(want) {
				t.Fatalf("%d events imported, want %d", len(got), len(want))
			}
			for i := range want {
				if !bytes.Equal(got[i].Raw, want[i].Raw) || got[i].Seq != want[i].Seq {
					t.Fatalf("event %d differs after the round trip", i+1)
				}
			}
			code, stdout, _ = clutch(t, "verify", "--db", dst, "--keys", keys)
			if code != exitOK || !strings.Contains(stdout, itoa(signed(t, want))+" signatures valid, 0 failed") {
				t.Fatalf("verify of the copy: %d %s", code, stdout)
			}
			code, stdout, _ = clutch(t, "import", "--db", dst, out)
			if code != exitOK || !strings.Contains(stdout, "imported 0 events") || !strings.Contains(stdout, "("+itoa(len(want))+" duplicates skipped)") {
				t.Fatalf("second import: %d %s", code, stdout)
			}
			if n := len(readAll(t, dst)); n != len(want) {
				t.Fatalf("%d events after a second import", n)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// export to stdout, filtered, piped into import from stdin.
func TestExportFilteredToStdout(t *testing.T) {
	src, outs, _ := demoFile(t, 2)
	run := outs[1].Message.RunID
	code, stdout, _ := clutch(t, "export", "--db", src, "--run", run, "--type", "task.")
	if code != exitOK {
		t.Fatal(code)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) < 6 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		var ev struct {
			Message struct {
				RunID string `json:"run_id"`
				Type  string `json:"type"`
			} `json:"message"`
		}
		if err := json.Unmarshal([]byte(l), &ev); err != nil || ev.Message.RunID != run || !strings.HasPrefix(ev.Message.Type, "task.") {
			t.Fatalf("line %s: %v", l, err)
		}
	}
	var o, e bytes.Buffer
	dst := filepath.Join(t.TempDir(), "part.db")
	code = runContext(context.Background(), []string{"import", "--db", dst, "-"}, strings.NewReader(stdout), &o, &e)
	if code != exitOK || !strings.Contains(o.String(), "imported "+itoa(len(lines))) {
		t.Fatalf("import from stdin: %d %s %s", code, o.String(), e.String())
	}
}

func TestImportBadInput(t *testing.T) {
	src, _, _ := demoFile(t, 1)
	code, stdout, _ := clutch(t, "export", "--db", src)
	if code != exitOK {
		t.Fatal(code)
	}
	lines := strings.Split(stdout, "\n")
	lines[3] = `{"seq":4,"message":{"v":"clutch/0.1"}}`
	in := filepath.Join(t.TempDir(), "bad.jsonl")
	os.WriteFile(in, []byte(strings.Join(lines, "\n")), 0o600)
	code, _, errs := clutch(t, "import", "--db", filepath.Join(t.TempDir(), "x.db"), "--resume", "--batch", "2", in)
	if code != exitFailure || !strings.Contains(errs, "line 4") || !strings.Contains(errs, "3 events appended before it") {
		t.Fatalf("import of a bad line: %d %s", code, errs)
	}
}

// verify fails on a tampered event and names it.
func TestVerifyTampered(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	tm := newTeam(t, path)
	tm.rounds(t, 0, 2)
	keys := tm.keyFile(t)
	var evs []store.Event
	for ev, err := range tm.st.Read(context.Background(), store.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
	valid := signed(t, evs) // every event of the demo's agents
	// A signed message changed after signing, stored as it arrived.
	req, err := tm.r.NewRequest(demo.UI, "research.query.v1", schema.ResearchQuery{Query: "pay 10 EUR"})
	if err != nil {
		t.Fatal(err)
	}
	if err := tm.demo.Sign(req); err != nil {
		t.Fatal(err)
	}
	tampered := bytes.Replace(req.Raw(), []byte("pay 10 EUR"), []byte("pay 99 EUR"), 1)
	m, err := protocol.Decode(tampered)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tm.st.Append(context.Background(), m)
	if err != nil {
		t.Fatal(err)
	}
	tm.close(t)

	code, stdout, _ := clutch(t, "verify", "--db", path, "--keys", keys)
	if code != exitFailure || !strings.Contains(stdout, "FAIL "+itoa(int(res[0].Seq))+" "+m.ID) || !strings.Contains(stdout, "BAD_SIGNATURE") ||
		!strings.Contains(stdout, itoa(valid)+" signatures valid, 1 failed") {
		t.Fatalf("verify: %d\n%s", code, stdout)
	}
	code, stdout, _ = clutch(t, "verify", "--db", path, "--keys", keys, "--run", m.RunID)
	if code != exitFailure || !strings.Contains(stdout, "1 events: 0 signatures valid, 1 failed") {
		t.Fatalf("verify --run: %d\n%s", code, stdout)
	}
	// The agents sign their results; the router's routing decisions are
	// unsigned, and --require-signed fails on them.
	code, stdout, _ = clutch(t, "verify", "--db", path, "--keys", keys, "--type", "task.result", "--require-signed")
	if code != exitOK || !strings.Contains(stdout, ", 0 failed, 0 unsigned") {
		t.Fatalf("verify --type task.result --require-signed: %d\n%s", code, stdout)
	}
	code, stdout, _ = clutch(t, "verify", "--db", path, "--keys", keys, "--type", "routing.", "--require-signed")
	if code != exitFailure || !strings.Contains(stdout, "unsigned") {
		t.Fatalf("verify --require-signed: %d\n%s", code, stdout)
	}
	// A key file naming another agent's key for the UI: UNKNOWN_KEY.
	other := filepath.Join(t.TempDir(), "other.json")
	b, _ := json.Marshal(map[string][]protocol.CardKey{demo.Lead: tm.demo.Keys()[demo.UI]})
	os.WriteFile(other, b, 0o600)
	code, stdout, _ = clutch(t, "verify", "--db", path, "--keys", other)
	if code != exitFailure || !strings.Contains(stdout, "UNKNOWN_KEY") {
		t.Fatalf("verify with another agent's key: %d\n%s", code, stdout)
	}
}

// The demo's key file as serve writes it (keyfile.Add at each start)
// verifies every signed event of demo rounds played by two processes, one
// after the other, on one store, each with keys of its own.
func TestVerifyDemoKeys(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	keys := path + ".demo-keys.json"
	for from := 0; from < 4; from += 2 {
		tm := newTeam(t, path) // a new process: new keys
		if err := keyfile.Add(keys, tm.demo.Keys()); err != nil {
			t.Fatal(err)
		}
		tm.rounds(t, from, 2)
		tm.close(t)
	}
	evs := readAll(t, path)
	n := signed(t, evs)
	code, stdout, _ := clutch(t, "verify", "--db", path, "--keys", keys)
	if code != exitOK || !strings.Contains(stdout, itoa(len(evs))+" events: "+itoa(n)+" signatures valid, 0 failed") || n < 100 {
		t.Fatalf("verify: %d %s", code, stdout)
	}
	// Every event the agents send is signed, and the UI's requests and
	// words (its answers here are the test's, made in Go).
	for _, c := range [][2]string{{demo.UI, "task.request"}, {demo.UI, "chat."}, {demo.Lead, "task."}, {demo.Lead, "chat."},
		{demo.Ken, "t"}, {demo.Ines, "t"}, {demo.Dara, "t"}} {
		code, stdout, _ = clutch(t, "verify", "--db", path, "--keys", keys, "--agent", c[0], "--type", c[1], "--require-signed")
		if code != exitOK || !strings.Contains(stdout, ", 0 failed, 0 unsigned") || strings.HasPrefix(stdout, "0 events") {
			t.Fatalf("verify --agent %s --type %s --require-signed: %d %s", c[0], c[1], code, stdout)
		}
	}
	// The second process's keys alone do not speak for the first's events.
	last := filepath.Join(t.TempDir(), "last.json")
	tm := newTeam(t, filepath.Join(t.TempDir(), "other.db"))
	keyfile.Add(last, tm.demo.Keys())
	tm.close(t)
	if code, stdout, _ := clutch(t, "verify", "--db", path, "--keys", last); code != exitFailure || !strings.Contains(stdout, "UNKNOWN_KEY") {
		t.Fatalf("verify with another process's keys: %d %s", code, stdout)
	}
}

func TestCheck(t *testing.T) {
	path, _, _ := demoFile(t, 2)
	n := len(readAll(t, path))
	code, stdout, _ := clutch(t, "check", "--db", path)
	if code != exitOK || !strings.Contains(stdout, "ok: "+path+", "+itoa(n)+" events") {
		t.Fatalf("check of a good file: %d %s", code, stdout)
	}
	// Damage one record's bytes in place.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	key := []byte{0, 0, 0, 0, 0, 0, 0, 5}
	if err := db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("events"))
		v := bytes.Clone(b.Get(key))
		v[len(v)-2] ^= 0x01
		return b.Put(key, v)
	}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	code, stdout, _ = clutch(t, "check", "--db", path)
	if code != exitFailure || !strings.Contains(stdout, "damaged:") || !strings.Contains(stdout, "event 5") {
		t.Fatalf("check of a damaged file: %d %s", code, stdout)
	}
}

// A file a process holds for writing: a clear error that says to use
// --url, exit 1, after the lock timeout.
func TestHeldFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	tm := newTeam(t, path)
	defer tm.close(t)
	for _, cmd := range []string{"stats", "tail", "export", "check", "runs"} {
		start := time.Now()
		code, _, errs := clutch(t, cmd, "--db", path, "--lock-timeout", "50ms")
		if code != exitFailure || !strings.Contains(errs, path+" is open for writing by another process") || !strings.Contains(errs, "--url") {
			t.Fatalf("%s of a held file: %d %s", cmd, code, errs)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Fatalf("%s took %v", cmd, d)
		}
	}
	code, _, errs := clutch(t, "import", "--db", path, "--lock-timeout", "50ms", "-")
	if code != exitFailure || !strings.Contains(errs, "import needs the file to itself") {
		t.Fatalf("import into a held file: %d %s", code, errs)
	}
}

// Several readers share a file.
func TestReadersShare(t *testing.T) {
	path, _, _ := demoFile(t, 1)
	st, err := boltstore.Open(path, &boltstore.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if code, out, errs := clutch(t, "stats", "--db", path); code != exitOK {
		t.Fatalf("stats while another reader holds the file: %d %s %s", code, out, errs)
	}
}

func TestStats(t *testing.T) {
	path, outs, _ := demoFile(t, 4)
	evs := readAll(t, path)
	code, stdout, _ := clutch(t, "stats", "--db", path, "--json")
	if code != exitOK {
		t.Fatal(code)
	}
	var s stats
	if err := json.Unmarshal([]byte(stdout), &s); err != nil {
		t.Fatal(err)
	}
	// 4 demo runs (the registry's run is left out); 4 requests of the UI,
	// 10 of the lead's subtasks; a retry in each round, and round 2's
	// failed track; the questions of rounds 1 and 3, answered.
	registry := 0
	for _, ev := range evs {
		if m, _ := ev.Message(); protocol.Reserved(m.RunID) {
			registry++
		}
	}
	if s.Events != len(evs)-registry || registry == 0 || s.Runs != 4 || s.Tasks != 14 || s.ByType["agent.register"] != 0 || s.ByType["task.request"] != 14 || s.ByType["task.error"] != 5 ||
		s.ByType["task.question"] != 2 || s.ByType["task.answer"] != 2 ||
		s.ByAgent[demo.UI] == 0 || s.FileBytes == 0 || s.LastSeq != evs[len(evs)-1].Seq {
		t.Fatalf("stats: %+v", s)
	}
	// --system counts the registry's run and its events too.
	code, stdout, _ = clutch(t, "stats", "--db", path, "--json", "--system")
	s = stats{}
	if code != exitOK || json.Unmarshal([]byte(stdout), &s) != nil || s.Events != len(evs) || s.Runs != 5 || s.ByType["agent.register"] == 0 {
		t.Fatalf("stats --system: %d %+v", code, s)
	}
	code, stdout, _ = clutch(t, "stats", "--db", path, "--run", outs[0].Message.RunID)
	if code != exitOK || !strings.Contains(stdout, "runs     1") || !strings.Contains(stdout, "by type:") {
		t.Fatalf("stats --run: %d\n%s", code, stdout)
	}
}

func TestTreeAndReplay(t *testing.T) {
	path, outs, _ := demoFile(t, 5)
	run := outs[0].Message.RunID
	code, stdout, _ := clutch(t, "tree", "--db", path, run)
	if code != exitOK || !strings.Contains(stdout, "run "+run) || !strings.Contains(stdout, "completed  "+demo.Lead) ||
		!strings.Contains(stdout, "└─ ") || strings.Count(stdout, "research.query.v1") != 3 {
		t.Fatalf("tree: %d\n%s", code, stdout)
	}
	code, stdout, _ = clutch(t, "tree", "--db", path, "--json", outs[4].Message.RunID)
	var tree struct {
		Tasks []struct {
			Status   string
			Children []struct {
				Status string
			}
		}
	}
	if code != exitOK || json.Unmarshal([]byte(stdout), &tree) != nil || len(tree.Tasks) != 1 || tree.Tasks[0].Status != "failed" ||
		len(tree.Tasks[0].Children) != 2 {
		t.Fatalf("tree --json of a failed run: %d\n%s", code, stdout)
	}
	// The subtree of the lead's first subtask.
	var sub string
	for _, ev := range readAll(t, path) {
		m, _ := ev.Message()
		if m.RunID == run && m.Type == protocol.TypeTaskRequest && m.ParentTaskID != "" {
			sub = m.TaskID
			break
		}
	}
	code, stdout, _ = clutch(t, "tree", "--db", path, "--task", sub)
	if code != exitOK || !strings.HasPrefix(strings.Split(stdout, "\n")[1], "└─ "+sub) || strings.Count(stdout, "\n") != 2 {
		t.Fatalf("tree --task: %d\n%s", code, stdout)
	}
	code, stdout, _ = clutch(t, "replay", "--db", path, run)
	if code != exitOK || !strings.Contains(stdout, "routing.decision") || !strings.Contains(stdout, "tool.call") ||
		!strings.Contains(stdout, "Who leads real-time payment rails") || !strings.Contains(stdout, "\nrun "+run) {
		t.Fatalf("replay: %d\n%s", code, stdout)
	}
	code, _, errs := clutch(t, "replay", "--db", path, "run_missing")
	if code != exitNotFound || errs != "clutch replay: run \"run_missing\" not found\n" {
		t.Fatalf("replay of a missing run: %d %s", code, errs)
	}
}

func TestTailFile(t *testing.T) {
	path, _, _ := demoFile(t, 2)
	evs := readAll(t, path)
	code, stdout, _ := clutch(t, "tail", "--db", path, "-n", "3")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != exitOK || len(lines) != 3 || !strings.HasPrefix(lines[2], itoa(int(evs[len(evs)-1].Seq))+" ") {
		t.Fatalf("tail -n 3: %d\n%s", code, stdout)
	}
	decisions := 0
	for _, ev := range evs {
		if m, _ := ev.Message(); m.Type == protocol.TypeRoutingDecision {
			decisions++
		}
	}
	code, stdout, _ = clutch(t, "tail", "--db", path, "--type", "routing.decision", "-n", "100", "--json")
	lines = strings.Split(strings.TrimSpace(stdout), "\n")
	if code != exitOK || len(lines) != decisions || decisions < 8 {
		t.Fatalf("tail --type: %d %d lines\n%s", code, len(lines), stdout)
	}
	code, stdout, _ = clutch(t, "tail", "--db", path, "--after", itoa(len(evs)-2))
	if code != exitOK || strings.Count(stdout, "\n") != 2 {
		t.Fatalf("tail --after: %d\n%s", code, stdout)
	}
}

// TestTailDecisionInWords: tail shows a routing.decision's explanation,
// whole, and the reason of a decision that has none.
func TestTailDecisionInWords(t *testing.T) {
	path, _, _ := demoFile(t, 2)
	code, stdout, _ := clutch(t, "tail", "--db", path, "--type", "routing.decision", "-n", "100")
	if code != exitOK {
		t.Fatalf("tail: %d\n%s", code, stdout)
	}
	n := 0
	for _, ev := range readAll(t, path) {
		m, err := ev.Message()
		if err != nil || m.Type != protocol.TypeRoutingDecision {
			continue
		}
		d, err := protocol.DecodePayload[protocol.RoutingDecision](m)
		if err != nil || d.Explanation == "" {
			t.Fatalf("decision %s: %+v %v", m.ID, d, err)
		}
		if want := m.TaskID + " selected " + d.Selected + ": " + d.Explanation + "\n"; !strings.Contains(stdout, want) {
			t.Fatalf("tail does not show %q:\n%s", want, stdout)
		}
		n++
	}
	if n == 0 {
		t.Fatal("the demo stored no routing.decision")
	}

	line := func(d protocol.RoutingDecision) string {
		m := protocol.NewMessage(protocol.TypeRoutingDecision, "agent:orchestrator")
		m.RunID, m.TaskID = "run_1", "task_1"
		if err := m.SetPayload(d); err != nil {
			t.Fatal(err)
		}
		raw, err := protocol.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		return renderEvent(store.Event{Seq: 7, Time: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC), Raw: raw})
	}
	long := "Ken chosen over Research 2 and 1 other: all have skill:research; Ken matches the preferred tag fintech and tool browser, Research 2 the preferred domain health (score 0.667 vs 0.333)."
	if got := line(protocol.RoutingDecision{Selected: "agent:ken", Reason: "matched requires[skill:research], best preference score 0.67", Explanation: long}); !strings.HasSuffix(got, " task_1 selected agent:ken: "+long) {
		t.Errorf("decision with an explanation:\n%s", got)
	}
	if got := line(protocol.RoutingDecision{Selected: "agent:ken", Reason: "explicit recipient, only eligible candidate"}); !strings.HasSuffix(got, " task_1 selected agent:ken: explicit recipient, only eligible candidate") {
		t.Errorf("decision without an explanation:\n%s", got)
	}
}

// Text from events cannot send escape sequences to a terminal.
func TestCleanText(t *testing.T) {
	if got := clean("hi\x1b[31mred\n"); strings.ContainsAny(got, "\x1b\n") {
		t.Fatalf("clean left control characters: %q", got)
	}
	if got := clean("café ok"); got != "café ok" {
		t.Fatalf("clean changed plain text: %q", got)
	}
}

func TestRuns(t *testing.T) {
	path, outs, _ := demoFile(t, 5)
	code, stdout, _ := clutch(t, "runs", "--db", path)
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	// Newest first: the last demo run, then the others; the registry's
	// run is a system run, left out.
	if code != exitOK || len(lines) != 6 || strings.Contains(stdout, "run_registry") || !strings.HasPrefix(lines[1], outs[4].Message.RunID+"  failed ("+string(outs[4].Err.Code)+")") ||
		!strings.HasPrefix(lines[2], outs[3].Message.RunID+"  completed") || !strings.Contains(lines[2], "chat:research") ||
		strings.Join(strings.Fields(lines[0]), " ") != "RUN STATUS EVENTS ENDED/TASKS UPDATED CHANNEL TITLE" {
		t.Fatalf("runs: %d\n%s", code, stdout)
	}
	code, stdout, _ = clutch(t, "runs", "--db", path, "--limit", "2", "--json")
	var page struct {
		Runs []store.Summary `json:"runs"`
		Next uint64          `json:"next_before"`
	}
	if code != exitOK || json.Unmarshal([]byte(stdout), &page) != nil || len(page.Runs) != 2 || page.Next != page.Runs[1].LastSeq {
		t.Fatalf("runs --limit 2 --json: %d\n%s", code, stdout)
	}
	if f := page.Runs[0].Failure; f == nil || f.Code != outs[4].Err.Code || page.Runs[0].Title == "" || len(page.Runs[0].Agents) == 0 || page.Runs[1].Failure != nil {
		t.Fatalf("runs --json: the failed run %+v, then %+v", page.Runs[0], page.Runs[1])
	}
	code, stdout, _ = clutch(t, "runs", "--db", path, "--limit", "2", "--before", itoa(int(page.Next)))
	if code != exitOK || !strings.Contains(stdout, outs[2].Message.RunID) || strings.Contains(stdout, outs[3].Message.RunID) {
		t.Fatalf("runs --before: %d\n%s", code, stdout)
	}
	code, stdout, _ = clutch(t, "runs", "--db", path, "--threads")
	if code != exitOK || !strings.Contains(stdout, "THREAD") || !strings.Contains(stdout, outs[0].Message.ThreadID) || strings.Contains(stdout, "thr_registry") {
		t.Fatalf("runs --threads: %d\n%s", code, stdout)
	}
	code, stdout, _ = clutch(t, "runs", "--db", path, "--system")
	if lines = strings.Split(strings.TrimSpace(stdout), "\n"); code != exitOK || len(lines) != 7 || !strings.HasPrefix(lines[6], "run_registry ") {
		t.Fatalf("runs --system: %d\n%s", code, stdout)
	}
}

func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 987654321, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"2026-03-01T09:00:00Z", time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC), true},
		{"2026-03-01T10:00:00.1239+01:00", time.Date(2026, 3, 1, 9, 0, 0, 123e6, time.UTC), true},
		{"90m", time.Date(2026, 3, 1, 10, 30, 0, 987e6, time.UTC), true},
		{"0s", time.Date(2026, 3, 1, 12, 0, 0, 987e6, time.UTC), true},
		{"-1h", time.Time{}, false},
		{"yesterday", time.Time{}, false},
		{"2026-03-01", time.Time{}, false},
		{"", time.Time{}, false},
	} {
		got, err := parseWhen(c.in, now)
		if (err == nil) != c.ok || !got.Equal(c.want) {
			t.Errorf("parseWhen(%q) = %v, %v; want %v (ok %v)", c.in, got, err, c.want, c.ok)
		}
	}
	code, _, errs := clutch(t, "tail", "--since", "yesterday")
	if code != exitUsage || !strings.Contains(errs, "want an RFC 3339 time") {
		t.Fatalf("tail --since yesterday: %d %s", code, errs)
	}
	code, _, errs = clutch(t, "runs", "--status", "done")
	if code != exitUsage || !strings.Contains(errs, "want one of running, completed") {
		t.Fatalf("runs --status done: %d %s", code, errs)
	}
}

// FuzzParseWhen: any --since or --until value is refused or read as a
// UTC time to the millisecond; an RFC 3339 time is that time.
func FuzzParseWhen(f *testing.F) {
	for _, s := range []string{"2026-03-01T09:00:00Z", "2026-03-01T09:00:00.123456+02:00", "1h", "90m", "1h30m15.5s", "-5m", "0", "", "9999999999h", "2026-13-01T00:00:00Z"} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		got, err := parseWhen(s, now)
		if err != nil {
			if !got.IsZero() || err != errWhen {
				t.Fatalf("%q: %v, %v", s, got, err)
			}
			return
		}
		if got.Location() != time.UTC || got.Nanosecond()%int(time.Millisecond) != 0 {
			t.Fatalf("%q: %v is not UTC to the millisecond", s, got)
		}
		if want, err := time.Parse(time.RFC3339Nano, s); err == nil && !got.Equal(want.Truncate(time.Millisecond)) {
			t.Fatalf("%q: %v, want %v", s, got, want)
		}
	})
}

// pagedSource serves summaries two at a time, as a gateway with a small
// page limit does.
type pagedSource struct {
	source
	all   []store.Summary
	pages int
}

func (p *pagedSource) page(_ context.Context, _ bool, q client.ListQuery) ([]client.Summary, uint64, error) {
	p.pages++
	var out []client.Summary
	for _, s := range p.all {
		if (q.Before == 0 || s.LastSeq < q.Before) && (q.System || !system(s)) {
			out = append(out, s)
		}
		if len(out) == 2 {
			return out, s.LastSeq, nil
		}
	}
	return out, 0, nil
}

// listRuns goes on through pages until the filtered page is full.
func TestListRunsPages(t *testing.T) {
	src := &pagedSource{}
	for i, st := range []string{"completed", "failed", "completed", "completed", "running", "failed", "completed"} {
		src.all = append(src.all, store.Summary{ID: "run_" + itoa(i), RunID: "run_" + itoa(i), Status: st, LastSeq: uint64(100 - 2*i)})
	}
	src.all = append(src.all[:3], append([]store.Summary{{ID: "run_registry", RunID: "run_registry", Status: "active", LastSeq: 95}}, src.all[3:]...)...)
	ids := func(l []client.Summary) string {
		var s []string
		for _, x := range l {
			s = append(s, x.ID)
		}
		return strings.Join(s, ",")
	}
	got, next, err := listRuns(t.Context(), src, runsQuery{limit: 3, status: "completed"})
	if err != nil || ids(got) != "run_0,run_2,run_3" || next != 94 {
		t.Fatalf("first page: %s next %d %v", ids(got), next, err)
	}
	got, next, err = listRuns(t.Context(), src, runsQuery{limit: 3, status: "completed", before: next})
	if err != nil || ids(got) != "run_6" || next != 0 {
		t.Fatalf("second page: %s next %d %v", ids(got), next, err)
	}
	got, _, _ = listRuns(t.Context(), src, runsQuery{limit: 4, status: "active"})
	if len(got) != 0 {
		t.Fatalf("the registry's run without --system: %s", ids(got))
	}
	got, _, _ = listRuns(t.Context(), src, runsQuery{limit: 4, status: "active", system: true})
	if ids(got) != "run_registry" {
		t.Fatalf("the registry's run with --system: %s", ids(got))
	}
}
