// Package examples_test runs the README's set-up command and every
// example the way a new user does: from a fresh copy of the repository,
// with `go run` and the flags each README gives, no services and no keys.
// The examples' own tests (main_test.go) check their behaviour in detail;
// this one checks that the documented commands work on what a clone
// holds and print what the READMEs say, a few key lines each.
package examples_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/internal/nodepeer"
	"github.com/clutchprotocol/clutch/internal/pgpeer"
)

// command is one documented command and the lines its output must hold.
type command struct {
	name string
	args []string // after "go"
	// dir is the folder the command runs in, "" for the root: an example
	// that is a module of its own runs from its folder.
	dir  string
	want []string
	// node lists the npm peers (folders with a package-lock.json) the
	// command needs installed, as `make deps` leaves them; pg says it
	// starts a throwaway PostgreSQL cluster.
	node []string
	pg   bool
	// after runs once the command has succeeded, in the copy's folder.
	after func(t *testing.T, dir string)
}

// commands are those of README.md and examples/*/README.md. Left out:
// `approval` without -approve, `observability -serve` and `gofw -serve`
// wait for a person; OTEL_EXPORTER_OTLP_ENDPOINT and `distributed -dsn`
// need a service.
var commands = []command{
	{name: "quickstart", args: []string{"run", "./examples/quickstart"}, want: []string{
		"gateway: verified task.request from agent:ui",
		"The thread's events, as the store records them:",
		"candidates: agent:ken (score 0.67), agent:research-2 (score 0.00)",
		"selected agent:ken; reason: matched requires[skill:research]",
		"calls mcp:browser search with query",
		"returns a research.summary.v1 result",
		"result (research.summary.v1, validated): Market analysis complete",
		"task tree of run_",
	}},
	{name: "quickstart -db", args: []string{"run", "./examples/quickstart", "-db", "quickstart.db"}, want: []string{
		"result (research.summary.v1, validated): Market analysis complete",
	}, after: func(t *testing.T, dir string) {
		if _, err := os.Stat(filepath.Join(dir, "quickstart.db")); err != nil {
			t.Errorf("-db did not keep the store file: %v", err)
		}
	}},
	{name: "first", args: []string{"run", "./examples/first"}, want: []string{
		"task.result",
		"task.request agent:ui",
		"routing.decision",
	}, after: func(t *testing.T, dir string) {
		out := goCmd(t, dir, "run", "./cmd/clutch", "runs", "--db", "events.db")
		if !strings.Contains(out, "run_") {
			t.Errorf("clutch runs --db events.db lists no run:\n%s", out)
		}
	}},
	{name: "testing", args: []string{"test", "./examples/testing"}, want: []string{"ok"}},
	{name: "observability", args: []string{"run", "./examples/observability"}, want: []string{
		"3 research tasks, traced, measured and logged with OpenTelemetry:",
		"span invoke_agent Ken, ",
		"span execute_tool search, ",
		"logs: task accepted, task finished",
		"clutch metrics, as Prometheus reads them:",
		`clutch_task_finished_total{clutch_outcome="result",gen_ai_agent_id="agent:ken"} 3`,
	}},
	{name: "observability -export", args: []string{"run", "./examples/observability", "-export"}, want: []string{
		`"Name": "invoke_agent Ken"`,
		`msg="task accepted"`,
		"3 research tasks, traced, measured and logged with OpenTelemetry:",
	}},
	{name: "a2a", args: []string{"run", "./examples/a2a"}, want: []string{
		"serving agent:ken over A2A at http://127.0.0.1:",
		`[client] card "Ken": skill skill:research`,
		"[server] task.result   from agent:ken, research.summary.v1",
		"TASK_STATE_COMPLETED",
	}},
	{name: "approval -approve", args: []string{"run", "./examples/approval", "-approve"}, want: []string{
		"the writer asks: Approve publishing the note?",
		"go run ./cmd/clutch answer ",
		"published: ",
	}},
	{name: "rules", args: []string{"run", "./examples/rules"}, want: []string{
		"published rules/REVIEW.md (rule) version 1",
		"review task (careful=true) ended with task.result",
		"review task (careful=false) ended with task.error",
		"x.clutch.rules.refer",
	}},
	{name: "mcp-tools", args: []string{"run", "./examples/mcp-tools"}, node: []string{"adapters/mcp/testdata/everything"}, want: []string{
		"tool.call         agent:weather       mcp:everything echo",
		`"echo":"Echo: weather for New York"`,
	}},
	{name: "langgraph", args: []string{"run", "./examples/langgraph"}, node: []string{"adapters/langgraph/testdata/server"}, want: []string{
		"agent:writer",
		"agent:langgraph-agent",
		`result: {"text":"You asked: what is 2 + 3?. The answer is 5, says the LangGraph agent."}`,
	}},
	{name: "gofw", dir: "examples/gofw", args: []string{"run", "."}, want: []string{
		"  agent:researcher  An eino ReAct graph: ",
		"run run_",
		"│  │  │  ├─ task for skill:facts, run by agent:archive: \"Bergen\"",
		"├─ delegates task for skill:write, run by agent:writer: ",
		`└─ result "A note on Oslo: Oslo is Norway's capital, on the Oslofjord."`,
	}},
	{name: "gofw -db", dir: "examples/gofw", args: []string{"run", ".", "-db", "gofw.db"}, want: []string{
		"  go run ./cmd/clutch serve --db ",
	}, after: func(t *testing.T, dir string) {
		out := goCmd(t, dir, "run", "./cmd/clutch", "runs", "--db", "examples/gofw/gofw.db")
		if !strings.Contains(out, "run_") {
			t.Errorf("clutch runs --db examples/gofw/gofw.db lists no run:\n%s", out)
		}
	}},
	{name: "distributed", args: []string{"run", "./examples/distributed"}, pg: true, want: []string{
		" ran in worker-1 (pid ",
		" ran in worker-2 (pid ",
	}},
}

// TestReadmeCommands copies the repository's HEAD (git archive: what a
// clone checks out, nothing else of this checkout) into a temporary
// folder and runs each documented command there, in turn.
//
// The copy is built with -trimpath so that its packages hit the build
// cache of earlier runs (without it the cache is keyed by folder, and
// each run would compile the module again); what the programs print does
// not depend on it. Peers follow the module's one rule (CI=true fails,
// else skip): the npm packages `make deps` installs are taken from this
// checkout when it has them, as if `make deps` had run in the copy.
func TestReadmeCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs every example from a fresh copy; skipped with -short")
	}
	root, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout (%v): nothing to copy", err)
	}
	src := strings.TrimSpace(string(root))
	dir := t.TempDir()
	if err := extractHEAD(src, dir); err != nil {
		t.Fatal(err)
	}
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			for _, peer := range c.node {
				modules := filepath.Join(src, filepath.FromSlash(peer), "node_modules")
				if _, err := os.Stat(modules); err != nil {
					nodepeer.Missing(t, c.name+" needs "+peer+"/node_modules: run `make deps`")
					return
				}
				link := filepath.Join(dir, filepath.FromSlash(peer), "node_modules")
				if err := os.Symlink(modules, link); err != nil && !errors.Is(err, os.ErrExist) {
					t.Fatal(err)
				}
			}
			if _, err := pgpeer.Bin(); c.pg && err != nil {
				pgpeer.Missing(t, c.name+" starts a PostgreSQL cluster ("+err.Error()+"): run `make deps`")
				return
			}
			out := goCmd(t, filepath.Join(dir, filepath.FromSlash(c.dir)), c.args...)
			for _, w := range c.want {
				if !strings.Contains(out, w) {
					t.Errorf("go %s: output lacks %q", strings.Join(c.args, " "), w)
				}
			}
			if t.Failed() {
				t.Logf("output:\n%s", out)
				return
			}
			if c.after != nil {
				c.after(t, dir)
			}
		})
	}
}

// goCmd runs go with args in dir, as a new user's shell would (their
// environment, without the variables that point an example at a
// service), and returns its combined output; it fails the test if the
// command fails.
func goCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "OTEL_") || strings.HasPrefix(k, "CLUTCH_") || k == "GOFLAGS" {
			continue
		}
		env = append(env, kv)
	}
	cmd.Env = append(env, "GOFLAGS=-trimpath")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String()
}

// extractHEAD writes the files of src's HEAD commit into dir.
func extractHEAD(src, dir string) error {
	cmd := exec.Command("git", "-C", src, "archive", "--format=tar", "HEAD")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	tr := tar.NewReader(pipe)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if !strings.HasPrefix(p, dir+string(filepath.Separator)) {
			continue // pax global header and the like
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeSymlink:
			err = os.Symlink(h.Linkname, p)
		case tar.TypeReg:
			err = writeFile(p, tr, os.FileMode(h.Mode)&0o777)
		}
		if err != nil {
			return err
		}
	}
	if err := cmd.Wait(); err != nil {
		return errors.New("git archive: " + err.Error() + ": " + stderr.String())
	}
	return nil
}

func writeFile(p string, r io.Reader, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
