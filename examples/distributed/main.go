// Command distributed runs one team of agents in three processes over one
// PostgreSQL database: this process submits tasks, and two worker
// processes (this program started again with CLUTCH_ROLE=worker) host
// the agents that run them. Each task prints the worker it ran in.
//
//	go run ./examples/distributed                  # a throwaway PostgreSQL cluster
//	go run ./examples/distributed -dsn postgres://clutch@localhost/clutch
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/clutchprotocol/clutch/internal/pgpeer"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	routerteam "github.com/clutchprotocol/clutch/router/team"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store/pgstore"
)

// The environment of a process this program starts.
const (
	roleEnv   = "CLUTCH_ROLE"   // "worker" or "submitter"
	nameEnv   = "CLUTCH_WORKER" // its name: worker-1, worker-2
	dsnEnv    = "CLUTCH_DSN"
	schemaEnv = "CLUTCH_SCHEMA"
	ttlEnv    = "CLUTCH_TTL" // the heartbeat TTL, a Go duration
	workEnv   = "CLUTCH_WORK"
	tasksEnv  = "CLUTCH_TASKS" // how many tasks a submitter process submits
	// recoveryEnv is "redispatch" for a worker whose router retries the
	// attempts of its subtasks that a dead process held.
	recoveryEnv = "CLUTCH_RECOVERY"
)

func main() {
	if role := os.Getenv(roleEnv); role != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		if err := child(ctx, role, os.Stdin, os.Stdout); err != nil {
			log.Fatal(err)
		}
		return
	}
	dsn := flag.String("dsn", "", "PostgreSQL connection string; empty starts a throwaway cluster")
	tasks := flag.Int("tasks", 8, "tasks to submit")
	flag.Parse()
	ctx := context.Background()
	if *dsn == "" {
		c, err := pgpeer.Start(ctx, nil)
		if err != nil {
			log.Fatal(err)
		}
		defer c.Stop()
		*dsn = c.DSN("")
	}
	if err := run(ctx, os.Stdout, *dsn, "clutch_distributed_"+strconv.Itoa(os.Getpid()), *tasks); err != nil {
		log.Fatal(err)
	}
}

// run starts two workers, submits n tasks and prints where each ran.
func run(ctx context.Context, out io.Writer, dsn, schemaName string, n int) error {
	return runWith(ctx, out, teamConfig{DSN: dsn, Schema: schemaName, TTL: 3 * time.Second}, n, nil)
}

// runWith is run with the team's configuration and the arguments of the
// worker processes (this program, started again).
func runWith(ctx context.Context, out io.Writer, cfg teamConfig, n int, workerArgs []string) error {
	tm, err := openTeam(ctx, cfg, nil)
	if err != nil {
		return err
	}
	defer tm.close()
	var workers []*workerProc
	for i := 1; i <= 2; i++ {
		w, err := startWorker(ctx, os.Args[0], cfg, fmt.Sprintf("worker-%d", i), 0, workerArgs...)
		if err != nil {
			return err
		}
		defer w.stop()
		workers = append(workers, w)
	}
	if err := tm.awaitAgents(ctx, 2); err != nil {
		return err
	}
	fmt.Fprintf(out, "submitter (pid %d) and %d workers share schema %s\n", os.Getpid(), len(workers), cfg.Schema)
	var hs []*router.Handle
	for i := range n {
		h, err := tm.submitEcho(ctx, i)
		if err != nil {
			return err
		}
		hs = append(hs, h)
	}
	for i, h := range hs {
		o, err := h.Wait(ctx)
		if err != nil {
			return err
		}
		res, err := router.ResultAs[ranIn](o)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "task %d ran in %s (pid %d) as %s\n", i, res.Worker, res.PID, o.Message.From.AgentID)
	}
	return nil
}

// delegateFrom: a task with N ≥ it delegates a subtask with N - it,
// which an agent with skill:sub runs.
const delegateFrom = 1000

// echo is the payload of the demo tasks; ranIn the result.
type echo struct {
	N int `json:"n"`
}

type ranIn struct {
	N      int    `json:"n"`
	Worker string `json:"worker"`
	PID    int    `json:"pid"`
}

// teamConfig is what every process of the team shares.
type teamConfig struct {
	DSN, Schema string
	TTL         time.Duration
}

// team is one process's part: the store, a shared registry, a router
// joined as a node.
type team struct {
	st   *pgstore.Store
	reg  *registry.Registry
	r    *router.Router
	node *routerteam.Node
}

func openTeam(ctx context.Context, cfg teamConfig, ropts *router.Options) (*team, error) {
	st, err := pgstore.Open(ctx, cfg.DSN, &pgstore.Options{Schema: cfg.Schema})
	if err != nil {
		return nil, err
	}
	reg, err := registry.Open(ctx, st, &registry.Options{Shared: true, HeartbeatTTL: cfg.TTL})
	if err != nil {
		st.Close()
		return nil, err
	}
	sch, err := schema.New(&schema.Options{Permissive: true})
	if err != nil {
		st.Close()
		return nil, err
	}
	var o router.Options
	if ropts != nil {
		o = *ropts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Validator == nil {
		o.Validator = sch
	}
	r, err := router.New(st, reg, &o)
	if err != nil {
		st.Close()
		return nil, err
	}
	node, err := routerteam.Join(ctx, r, &routerteam.Options{HeartbeatInterval: cfg.TTL / 4})
	if err != nil {
		r.Close()
		st.Close()
		return nil, err
	}
	return &team{st: st, reg: reg, r: r, node: node}, nil
}

func (tm *team) close() {
	tm.node.Leave()
	tm.r.Close()
	tm.st.Close()
}

// submitEcho submits a demo.echo.v1 task for n to an agent with
// skill:echo.
func (tm *team) submitEcho(ctx context.Context, n int) (*router.Handle, error) {
	req, err := tm.r.NewRequest("agent:submitter", "demo.echo.v1", echo{N: n})
	if err != nil {
		return nil, err
	}
	req.Requires = []string{"skill:echo"}
	return tm.r.Submit(ctx, req)
}

// awaitAgents waits until n agents with skill:echo are online here.
func (tm *team) awaitAgents(ctx context.Context, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return tm.node.AwaitAgents(ctx, []string{"skill:echo"}, n)
}

// workerProc is a worker process this one started.
type workerProc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// startWorker starts bin as a worker named name and waits until its
// agent is registered. work is how long its handler works on a task.
func startWorker(ctx context.Context, bin string, cfg teamConfig, name string, work time.Duration, args ...string) (*workerProc, error) {
	w, err := startChild(ctx, bin, args, roleEnv+"=worker", nameEnv+"="+name, dsnEnv+"="+cfg.DSN,
		schemaEnv+"="+cfg.Schema, ttlEnv+"="+cfg.TTL.String(), workEnv+"="+work.String())
	if err != nil {
		return nil, err
	}
	if line, err := w.out.ReadString('\n'); err != nil || !strings.HasPrefix(line, "ready") {
		w.stop()
		return nil, fmt.Errorf("%s did not start: %q %v", name, line, err)
	}
	return w, nil
}

// startChild starts bin with args and env added to this process's
// environment, its stdin and stdout piped to the returned workerProc.
func startChild(ctx context.Context, bin string, args []string, env ...string) (*workerProc, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &workerProc{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}, nil
}

// stop asks the worker to leave (closing its stdin) and waits for it.
func (w *workerProc) stop() error {
	w.stdin.Close()
	io.Copy(io.Discard, w.out)
	return w.cmd.Wait()
}

// kill ends the worker with SIGKILL: no goodbye, no Leave.
func (w *workerProc) kill() error {
	if err := w.cmd.Process.Kill(); err != nil {
		return err
	}
	w.cmd.Wait()
	return nil
}

// child runs the body of a process this program started: a worker, or
// a submitter (used by the tests to kill the process that routes tasks).
func child(ctx context.Context, role string, stdin io.Reader, stdout io.Writer) error {
	switch role {
	case "worker":
		return worker(ctx, stdin, stdout)
	case "submitter":
		return submitter(ctx, stdin, stdout)
	}
	return fmt.Errorf("%s=%q: want worker or submitter", roleEnv, role)
}

// submitter is the body of a submitting process: it waits for two
// agents with skill:echo, submits CLUTCH_TASKS tasks, prints "submitted
// <task id>" for each and "ready", then waits for stdin to close (it
// does not wait for the tasks: the survivors end them if it dies).
func submitter(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	ttl, err := time.ParseDuration(os.Getenv(ttlEnv))
	if err != nil {
		return fmt.Errorf("%s: %w", ttlEnv, err)
	}
	n, _ := strconv.Atoi(os.Getenv(tasksEnv))
	tm, err := openTeam(ctx, teamConfig{DSN: os.Getenv(dsnEnv), Schema: os.Getenv(schemaEnv), TTL: ttl}, nil)
	if err != nil {
		return err
	}
	defer tm.close()
	if err := tm.awaitAgents(ctx, 2); err != nil {
		return err
	}
	for i := range n {
		h, err := tm.submitEcho(ctx, i)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, "submitted", h.TaskID())
	}
	fmt.Fprintln(stdout, "ready")
	io.Copy(io.Discard, stdin)
	return nil
}

// worker is the body of a worker process: it hosts agent:<name>, with
// skill:echo, and agent:<name>-sub, with skill:sub (for delegated
// subtasks), until stdin closes or ctx ends.
func worker(ctx context.Context, stdin io.Reader, stdout io.Writer) error {
	name := os.Getenv(nameEnv)
	ttl, err := time.ParseDuration(os.Getenv(ttlEnv))
	if err != nil {
		return fmt.Errorf("%s: %w", ttlEnv, err)
	}
	work, _ := time.ParseDuration(os.Getenv(workEnv))
	var ropts router.Options
	if os.Getenv(recoveryEnv) == "redispatch" {
		ropts.Recovery, ropts.MaxAttempts = router.RecoverRedispatch, 5
	}
	tm, err := openTeam(ctx, teamConfig{DSN: os.Getenv(dsnEnv), Schema: os.Getenv(schemaEnv), TTL: ttl}, &ropts)
	if err != nil {
		return err
	}
	defer tm.close()
	var mu sync.Mutex
	say := func(what, task string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintln(stdout, what, task)
	}
	card := router.Card("agent:"+name, "skill:echo")
	handler := func(ctx context.Context, t *router.Task) (*router.Result, error) {
		in, err := router.Input[echo](t)
		if err != nil {
			return nil, err
		}
		if in.N >= delegateFrom { // a task that delegates N-delegateFrom: this process routes it
			sub, err := t.NewSubtask("demo.echo.v1", echo{N: in.N - delegateFrom})
			if err != nil {
				return nil, err
			}
			sub.Requires = []string{"skill:sub"}
			o, err := t.Delegate(ctx, sub)
			if err != nil {
				return nil, err
			}
			var r ranIn
			if err := json.Unmarshal(o.Message.Payload, &r); err != nil {
				return nil, err
			}
			return &router.Result{PayloadType: "demo.ran.v1", Payload: ranIn{N: in.N, Worker: name + " via " + r.Worker, PID: os.Getpid()}}, nil
		}
		if in.N < 0 { // a task that runs until it is cancelled
			say("started", t.ID())
			<-ctx.Done()
			say("cancelled", t.ID())
			return nil, ctx.Err()
		}
		if work > 0 {
			select { // the work the task stands for
			case <-time.After(work):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return &router.Result{PayloadType: "demo.ran.v1", Payload: ranIn{N: in.N, Worker: name, PID: os.Getpid()}}, nil
	}
	if err := tm.r.Register(ctx, card, handler); err != nil {
		return err
	}
	// agent:<name>-sub runs the subtasks delegated with skill:sub.
	sub := router.Card("agent:"+name+"-sub", "skill:sub")
	if err := tm.r.Register(ctx, sub, handler); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "ready", name)
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, stdin); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return nil
}
