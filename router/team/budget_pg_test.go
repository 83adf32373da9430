package team

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/internal/pgpeer"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store/pgstore"
)

// The team's run budget in real processes over PostgreSQL: the test
// starts this test binary again with budgetRoleEnv set, and TestMain runs
// budgetChild in it instead of the tests. The child is process "b" of
// budgetAgents, the test process is "a".
const (
	budgetRoleEnv   = "ROUTER_TEST_BUDGET_CHILD"
	budgetDSNEnv    = "ROUTER_TEST_BUDGET_DSN"
	budgetSchemaEnv = "ROUTER_TEST_BUDGET_SCHEMA"
)

// pgTeam is one process's part of a team over pgstore.
type pgTeam struct{ *proc }

func openPgTeam(ctx context.Context, dsn, schemaName string, opts *router.Options) (pgTeam, error) {
	st, err := pgstore.Open(ctx, dsn, &pgstore.Options{Schema: schemaName})
	if err != nil {
		return pgTeam{}, err
	}
	o := *opts
	p, err := joinTeam(ctx, st, 0, &o, nil)
	if err != nil {
		st.Close()
		return pgTeam{}, err
	}
	return pgTeam{p}, nil
}

func (tm pgTeam) close() {
	tm.leave()
	tm.st.Close()
}

// budgetChild is process b: it hosts b's budget agents, says "ready"
// once a's are online, then for each line "submit <run> <thread> <n>"
// of stdin submits n skill:leaf tasks of that run and answers "done <ran>
// <over budget>"; when stdin closes it answers "runs <handlers run>" and
// leaves.
func budgetChild() int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := func() error {
		tm, err := openPgTeam(ctx, os.Getenv(budgetDSNEnv), os.Getenv(budgetSchemaEnv), &router.Options{Budget: router.Budget{MaxTasks: budgetMax}})
		if err != nil {
			return err
		}
		defer tm.close()
		var runs atomic.Int32
		if err := budgetAgents(ctx, tm.r, "b", &runs); err != nil {
			return err
		}
		if err := tm.node.AwaitAgents(ctx, []string{"skill:sub"}, 1); err != nil {
			return err
		}
		fmt.Println("ready")
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			var run, thread string
			var n int
			if _, err := fmt.Sscanf(in.Text(), "submit %s %s %d", &run, &thread, &n); err != nil {
				return fmt.Errorf("command %q: %w", in.Text(), err)
			}
			ok, over, err := submitBudget(ctx, tm.r, run, thread, n)
			if err != nil {
				return err
			}
			fmt.Println("done", ok, over)
		}
		fmt.Println("runs", runs.Load())
		return in.Err()
	}()
	if err != nil {
		fmt.Fprintln(os.Stderr, "budget child:", err)
		return 1
	}
	return 0
}

// budgetProc is the child process, seen from the test.
type budgetProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

func startBudgetChild(t *testing.T, ctx context.Context, dsn, schemaName string) *budgetProc {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), budgetRoleEnv+"=b", budgetDSNEnv+"="+dsn, budgetSchemaEnv+"="+schemaName)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &budgetProc{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	t.Cleanup(func() {
		stdin.Close()
		io.Copy(io.Discard, p.out)
		cmd.Wait()
	})
	if line := p.line(t); line != "ready" {
		t.Fatalf("the child process did not start: %q", line)
	}
	return p
}

// line reads the child's next line, without its newline.
func (p *budgetProc) line(t *testing.T) string {
	t.Helper()
	s, err := p.out.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the child process: %q, %v", s, err)
	}
	return strings.TrimSuffix(s, "\n")
}

// Two processes over one PostgreSQL database, each a router joined to the
// team with router.Budget.MaxTasks 4: ten tasks of one run submitted at once,
// five in each process, run four in all, the first four of the run in
// the log, and the others end with BUDGET whichever process submitted
// them; then a task routed by the test process runs in the child and
// delegates six subtasks there, which run in the test process: the root
// and three subtasks make the run's four.
func TestNodeTaskBudgetInTwoProcesses(t *testing.T) {
	c := pgpeer.StartT(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	schemaName := fmt.Sprintf("budget%d", os.Getpid())
	tm, err := openPgTeam(ctx, c.DSN(""), schemaName, &router.Options{Budget: router.Budget{MaxTasks: budgetMax}})
	if err != nil {
		t.Fatal(err)
	}
	defer tm.close()
	var runs atomic.Int32
	if err := budgetAgents(ctx, tm.r, "a", &runs); err != nil {
		t.Fatal(err)
	}
	b := startBudgetChild(t, ctx, c.DSN(""), schemaName)
	if err := tm.node.AwaitAgents(ctx, []string{"skill:fan"}, 1); err != nil {
		t.Fatal(err)
	}

	// Tasks of one run submitted in both processes at once.
	const each = 5
	run, thread := tm.r.IDs().RunID(), tm.r.IDs().ThreadID()
	fmt.Fprintf(b.stdin, "submit %s %s %d\n", run, thread, each)
	okA, overA, err := submitBudget(ctx, tm.r, run, thread, each)
	if err != nil {
		t.Fatal(err)
	}
	var okB, overB int
	if line := b.line(t); !scan(line, "done %d %d", &okB, &overB) {
		t.Fatalf("child: %q", line)
	}
	ranA := int(runs.Load())
	t.Logf("a: %d ran, %d over budget; b: %d ran, %d over", okA, overA, okB, overB)
	if okA+okB != budgetMax || overA+overB != 2*each-budgetMax {
		t.Fatalf("%d+%d tasks ran, %d+%d over budget: want %d ran in all", okA, okB, overA, overB, budgetMax)
	}
	if n := checkRunBudget(t, tm.st, run, budgetMax); n != 2*each {
		t.Fatalf("the run has %d tasks, want %d", n, 2*each)
	}

	// A root routed here, run in b, whose subtasks b routes to here.
	const subs = 6
	req, err := tm.r.NewRequest("agent:ui", "research.query.v1", schema.ResearchQuery{Query: strconv.Itoa(subs)})
	if err != nil {
		t.Fatal(err)
	}
	req.Requires = []string{"skill:fan"}
	h, err := tm.r.Submit(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	o, err := h.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if by := o.Message.From.AgentID; by != "agent:fan" {
		t.Fatalf("the root ended from %s", by)
	}
	if got := int(runs.Load()) - ranA; got != budgetMax-1 {
		t.Fatalf("%d subtasks ran, want %d (the root and %d subtasks make the budget)", got, budgetMax-1, budgetMax-1)
	}
	if n := checkRunBudget(t, tm.st, req.RunID, budgetMax); n != 1+subs {
		t.Fatalf("the run has %d tasks, want %d", n, 1+subs)
	}

	// The handlers that ran in each process.
	b.stdin.Close()
	var ranB int
	if line := b.line(t); !scan(line, "runs %d", &ranB) {
		t.Fatalf("child: %q", line)
	}
	if ranA+ranB != budgetMax {
		t.Fatalf("leaf handlers ran %d times here and %d in the child, want %d in all", ranA, ranB, budgetMax)
	}
	if err := b.cmd.Wait(); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("child process: %v", err)
	}
}

// scan is fmt.Sscanf that reports whether every value was read.
func scan(s, format string, vals ...any) bool {
	n, err := fmt.Sscanf(s, format, vals...)
	return err == nil && n == len(vals)
}

// BenchmarkTeamBudgetPgstore: a task submitted and awaited in a team of
// one process over PostgreSQL, without router.Budget.MaxTasks (off) and with it,
// each task in a run of its own (new-runs: the count reads the task's
// own request) or all in one run (one-run: it reads the one request it
// has not read yet).
func BenchmarkTeamBudgetPgstore(b *testing.B) {
	c := pgpeer.StartT(b)
	for i, bc := range []struct {
		name   string
		max    int
		oneRun bool
	}{{"off", 0, false}, {"new-runs", 1 << 20, false}, {"one-run", 1 << 20, true}} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := b.Context()
			tm, err := openPgTeam(ctx, c.DSN(""), fmt.Sprintf("bbudget%d_%d_%d", os.Getpid(), i, b.N), &router.Options{Budget: router.Budget{MaxTasks: bc.max}})
			if err != nil {
				b.Fatal(err)
			}
			defer tm.close()
			var runs atomic.Int32
			if err := budgetAgents(ctx, tm.r, "a", &runs); err != nil {
				b.Fatal(err)
			}
			run, thread := tm.r.IDs().RunID(), tm.r.IDs().ThreadID()
			for b.Loop() {
				req, _ := tm.r.NewRequest("agent:ui", "research.query.v1", schema.ResearchQuery{Query: "leaf"})
				if bc.oneRun {
					req.RunID, req.ThreadID = run, thread
				}
				req.Requires = []string{"skill:leaf"}
				h, err := tm.r.Submit(ctx, req)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := h.Wait(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTeamBudgetCount: the count of a task's place in its run over
// PostgreSQL with nothing read before (a process that has not seen the
// run yet), in a run of 256 tasks (a task.request and four other events
// each), for the task that is the run's first, 16th and 256th, with
// router.Budget.MaxTasks that place: the count reads that many requests, the
// most it reads for that budget.
func BenchmarkTeamBudgetCount(b *testing.B) {
	c := pgpeer.StartT(b)
	ctx := b.Context()
	tm, err := openPgTeam(ctx, c.DSN(""), fmt.Sprintf("bbudgetcount%d", os.Getpid()), &router.Options{Budget: router.Budget{MaxTasks: 256}})
	if err != nil {
		b.Fatal(err)
	}
	defer tm.close()
	run, thread := tm.r.IDs().RunID(), tm.r.IDs().ThreadID()
	var reqs []*protocol.Message
	var seqs []uint64
	for range 256 {
		req, _ := tm.r.NewRequest("agent:ui", "research.query.v1", schema.ResearchQuery{Query: "leaf"})
		req.RunID, req.ThreadID = run, thread
		batch := []*protocol.Message{req}
		for range 4 {
			p := tm.r.IDs().Reply(req, protocol.TypeTaskProgress, "agent:leaf-a")
			p.Payload = []byte(`{"step":1}`)
			batch = append(batch, p)
		}
		res, err := tm.st.Append(ctx, batch...)
		if err != nil {
			b.Fatal(err)
		}
		reqs, seqs = append(reqs, req), append(seqs, res[0].Seq)
	}
	for _, place := range []int{1, 16, 256} {
		b.Run(fmt.Sprintf("place=%d", place), func(b *testing.B) {
			t := router.TeamTask{Request: reqs[place-1], Seq: seqs[place-1]}
			for b.Loop() {
				tm.node.cmu.Lock()
				clear(tm.node.counted)
				tm.node.cmu.Unlock()
				if past, err := tm.node.count(ctx, t, place); past || err != nil {
					b.Fatal(past, err)
				}
			}
		})
	}
}
