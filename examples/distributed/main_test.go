package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/internal/pgpeer"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	routerteam "github.com/clutchprotocol/clutch/router/team"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/storetest"
)

// The tests start one cluster; worker processes are this test binary
// started again with CLUTCH_ROLE=worker (TestMain runs the worker then).
var cluster pgpeer.Shared

func TestMain(m *testing.M) {
	if role := os.Getenv(roleEnv); role != "" {
		if err := child(context.Background(), role, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, role+":", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(pgpeer.Main(m, &cluster))
}

var schemas atomic.Int64

func testConfig(t testing.TB) teamConfig {
	c := cluster.Need(t)
	return teamConfig{DSN: c.DSN(""), Schema: fmt.Sprintf("dist%d_%d", os.Getpid(), schemas.Add(1)), TTL: time.Second}
}

// workerArgs make the re-executed test binary run no tests.
var workerArgs = []string{"-test.run=^$"}

// The example as a user runs it: three processes, every task ran in a
// worker, both workers got work.
func TestExample(t *testing.T) {
	cfg := testConfig(t)
	var out bytes.Buffer
	if err := runWith(t.Context(), &out, cfg, 12, workerArgs); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	text := out.String()
	lines := regexp.MustCompile(`(?m)^task (\d+) ran in (worker-\d) \(pid (\d+)\) as agent:(worker-\d)$`).FindAllStringSubmatch(text, -1)
	if len(lines) != 12 {
		t.Fatalf("%d task lines, want 12:\n%s", len(lines), text)
	}
	ran := map[string]int{}
	for _, l := range lines {
		if l[2] != l[4] || l[3] == fmt.Sprint(os.Getpid()) {
			t.Fatalf("task ran in the submitting process or another agent's: %q", l[0])
		}
		ran[l[2]]++
	}
	if ran["worker-1"] == 0 || ran["worker-2"] == 0 {
		t.Fatalf("work went to one worker only: %v\n%s", ran, text)
	}
}

// gapFollower follows the whole log in its own goroutine and records a
// gap, a reorder or a duplicate.
type gapFollower struct {
	cancel context.CancelFunc
	done   chan struct{}
	seen   atomic.Uint64
	err    error
}

func followGaps(st store.Store) *gapFollower {
	ctx, cancel := context.WithCancel(context.Background())
	f := &gapFollower{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(f.done)
		var last uint64
		ids := map[string]bool{}
		for ev, err := range st.Follow(ctx, store.Query{}) {
			if err != nil {
				f.err = err
				return
			}
			m, err := ev.Message()
			if err != nil {
				f.err = err
				return
			}
			if ev.Seq != last+1 || ids[m.ID] {
				f.err = fmt.Errorf("follower: seq %d (%s) after %d: a gap, a reorder or a duplicate", ev.Seq, m.ID, last)
				return
			}
			ids[m.ID] = true
			last = ev.Seq
			f.seen.Store(last)
		}
	}()
	return f
}

func (f *gapFollower) stop() error {
	f.cancel()
	<-f.done
	return f.err
}

// A worker is killed with SIGKILL while it runs tasks: its agent goes
// offline after the TTL, and the submitter routes the attempts it held
// to the surviving worker (RecoverRedispatch). Every task ends once, with
// a result; no attempt is claimed twice or completes twice; no task ends
// with a result of the dead worker's after it was taken over; a follower
// in the submitting process saw every event once, in order, no gap.
func TestKillWorker(t *testing.T) {
	ctx, tm, gaps, w2 := killTeam(t)
	const n = 60
	hs := submitAll(ctx, t, tm, 0, n)
	// Kill worker-2 once it holds attempts: once a few of its claims are
	// in the log.
	if err := awaitClaims(ctx, tm.st, "agent:worker-2", 4); err != nil {
		t.Fatal(err)
	}
	if err := w2.kill(); err != nil {
		t.Fatal(err)
	}
	t.Log("worker-2 killed")
	byWorker := map[string]int{}
	for i, h := range hs {
		o, err := h.Wait(ctx)
		if err != nil {
			t.Fatalf("task %d: %v", i, err)
		}
		res, err := router.ResultAs[ranIn](o)
		if err != nil {
			t.Fatal(err)
		}
		byWorker[res.Worker]++
	}
	t.Logf("results by worker: %v", byWorker)
	if err := gaps.stop(); err != nil {
		t.Fatal(err)
	}
	storetest.AssertOneTerminal(t, tm.st)
	checkAttempts(t, tm.st, n, true)
}

// killTeam opens the submitting team with RecoverRedispatch (five
// attempts, 10ms backoff), follows its log for gaps, and starts worker-1
// and worker-2 (200ms a task; worker-1 stops when the test ends), and
// waits for both agents. It returns worker-2, for the test to kill, and
// a context that ends after two minutes.
func killTeam(t *testing.T) (context.Context, *team, *gapFollower, *workerProc) {
	t.Helper()
	cfg := testConfig(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	tm, err := openTeam(ctx, cfg, &router.Options{Recovery: router.RecoverRedispatch, MaxAttempts: 5,
		Backoff: func(int) time.Duration { return 10 * time.Millisecond }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tm.close)
	gaps := followGaps(tm.st)
	w1, err := startWorker(ctx, os.Args[0], cfg, "worker-1", 200*time.Millisecond, workerArgs...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w1.stop() })
	w2, err := startWorker(ctx, os.Args[0], cfg, "worker-2", 200*time.Millisecond, workerArgs...)
	if err != nil {
		t.Fatal(err)
	}
	if err := tm.awaitAgents(ctx, 2); err != nil {
		t.Fatal(err)
	}
	return ctx, tm, gaps, w2
}

// submitAll submits n echo tasks, for first..first+n-1.
func submitAll(ctx context.Context, t *testing.T, tm *team, first, n int) []*router.Handle {
	t.Helper()
	var hs []*router.Handle
	for i := range n {
		h, err := tm.submitEcho(ctx, first+i)
		if err != nil {
			t.Fatal(err)
		}
		hs = append(hs, h)
	}
	return hs
}

// awaitClaims waits until agent has k claims in the log.
func awaitClaims(ctx context.Context, st store.Store, agent string, k int) error {
	got := 0
	for ev, err := range st.Follow(ctx, store.Query{AgentID: agent, TypePrefix: string(routerteam.TypeClaim)}) {
		if err != nil {
			return err
		}
		_ = ev
		if got++; got == k {
			return nil
		}
	}
	return ctx.Err()
}

// checkAttempts reads the log: each (task, attempt) is claimed at most
// once and completes (x.clutch.task.done) at most once; a task has at
// most one completed attempt with a result, and it is the one the
// task.result was made from; the interrupted attempts were retried.
func checkAttempts(t *testing.T, st store.Store, tasks int, wantRetries bool) {
	t.Helper()
	type key struct {
		task    string
		attempt int
	}
	claims, dones := map[key]int{}, map[key]int{}
	results := map[string][]key{}
	ended := map[string]int{}
	retried := 0
	for ev, err := range st.Read(context.Background(), store.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		m, _ := ev.Message()
		k := key{m.TaskID, m.Attempt}
		switch m.Type {
		case routerteam.TypeClaim:
			claims[k]++
		case routerteam.TypeDone:
			dones[k]++
			var p struct {
				Result json.RawMessage `json:"result"`
			}
			json.Unmarshal(m.Payload, &p)
			if p.Result != nil {
				results[m.TaskID] = append(results[m.TaskID], k)
			}
		case protocol.TypeTaskResult:
			ended[m.TaskID] = m.Attempt
		case protocol.TypeTaskError:
			if strings.Contains(string(m.Payload), "INTERRUPTED") {
				retried++
			}
		}
	}
	for k, c := range claims {
		if c > 1 {
			t.Errorf("attempt %v claimed %d times", k, c)
		}
	}
	for k, c := range dones {
		if c > 1 {
			t.Errorf("attempt %v completed %d times", k, c)
		}
	}
	if tasks >= 0 && len(ended) != tasks {
		t.Errorf("%d tasks have a task.result, want %d", len(ended), tasks)
	}
	for task, ks := range results {
		if len(ks) > 1 {
			t.Errorf("task %s: attempts %v each ran to a result", task, ks)
		}
		if len(ks) == 1 && ks[0].attempt != ended[task] {
			t.Errorf("task %s: ended with attempt %d, but attempt %d ran to a result", task, ended[task], ks[0].attempt)
		}
	}
	if wantRetries && retried == 0 {
		t.Errorf("no attempt was interrupted: worker-2 was killed before it held any")
	}
	t.Logf("%d attempts claimed, %d interrupted and routed again", len(claims), retried)
}

// Cancelling a task in the submitting process cancels its handler in the
// worker process that runs it.
func TestCancelAcrossProcesses(t *testing.T) {
	cfg := testConfig(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	tm, err := openTeam(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tm.close()
	w, err := startWorker(ctx, os.Args[0], cfg, "worker-1", 0, workerArgs...)
	if err != nil {
		t.Fatal(err)
	}
	defer w.stop()
	if err := tm.awaitAgents(ctx, 1); err != nil {
		t.Fatal(err)
	}
	h, err := tm.submitEcho(ctx, -1)
	if err != nil {
		t.Fatal(err)
	}
	if line, err := w.out.ReadString('\n'); err != nil || line != "started "+h.TaskID()+"\n" {
		t.Fatalf("worker said %q, %v", line, err)
	}
	h.Cancel("the user gave up")
	if line, err := w.out.ReadString('\n'); err != nil || line != "cancelled "+h.TaskID()+"\n" {
		t.Fatalf("worker said %q, %v; want its handler cancelled", line, err)
	}
	o, err := h.Wait(ctx)
	if !errors.Is(err, protocol.CodeCancelled) || o.Type != protocol.TypeTaskCancel {
		t.Fatalf("outcome %+v, %v", o, err)
	}
	storetest.AssertOneTerminal(t, tm.st)
}
