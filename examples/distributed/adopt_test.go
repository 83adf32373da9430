package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	routerteam "github.com/clutchprotocol/clutch/router/team"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/storetest"
)

// startSubmitter starts this test binary as a submitter process that
// submits n tasks, and returns it with the ids of its tasks.
func startSubmitter(ctx context.Context, cfg teamConfig, n int) (*workerProc, []string, error) {
	p, err := startChild(ctx, os.Args[0], workerArgs, roleEnv+"=submitter", dsnEnv+"="+cfg.DSN, schemaEnv+"="+cfg.Schema,
		ttlEnv+"="+cfg.TTL.String(), tasksEnv+"="+strconv.Itoa(n))
	if err != nil {
		return nil, nil, err
	}
	var ids []string
	for {
		line, err := p.out.ReadString('\n')
		if err != nil {
			p.kill()
			return nil, nil, fmt.Errorf("submitter: %q %v", line, err)
		}
		if line == "ready\n" {
			return p, ids, nil
		}
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), "submitted "); ok {
			ids = append(ids, id)
		}
	}
}

// The process that routed the tasks is killed with SIGKILL while the
// workers run them: nobody in it will store their ends. The survivors —
// this process and the two workers, each a node of the team — see its
// heartbeats stop, exactly one of them adopts each task, and stores the
// task's end from the outcome its worker stored (or waits for the
// attempt still running). Every task ends once, with a result; no
// attempt is claimed or completed twice; a follower saw no gap. The
// tasks work longer than the TTL ("running": most attempts still run
// when they are adopted, and the adopter waits for them) or a tenth of
// it ("done": the workers stored every outcome before the adoption).
func TestKillSubmitter(t *testing.T) {
	t.Run("running", func(t *testing.T) { testKillSubmitter(t, 3*time.Second/2) })
	t.Run("done", func(t *testing.T) { testKillSubmitter(t, 100*time.Millisecond) })
}

func testKillSubmitter(t *testing.T, work time.Duration) {
	cfg := testConfig(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	tm, err := openTeam(ctx, cfg, &router.Options{Recovery: router.RecoverRedispatch})
	if err != nil {
		t.Fatal(err)
	}
	defer tm.close()
	gaps := followGaps(tm.st)
	for i := 1; i <= 2; i++ {
		w, err := startWorker(ctx, os.Args[0], cfg, fmt.Sprintf("worker-%d", i), work, workerArgs...)
		if err != nil {
			t.Fatal(err)
		}
		defer w.stop()
	}
	const n = 40
	sub, tasks, err := startSubmitter(ctx, cfg, n)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != n {
		t.Fatalf("the submitter submitted %d tasks, want %d", len(tasks), n)
	}
	if err := awaitClaims(ctx, tm.st, "agent:worker-1", 4); err != nil {
		t.Fatal(err)
	}
	if err := sub.kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	t.Log("submitter killed")
	ends := awaitEnds(ctx, t, tm.st, tasks)
	t.Logf("every task ended %v after the kill (TTL %v, work %v)", time.Since(killed).Round(time.Millisecond), cfg.TTL, work)
	for task, m := range ends {
		if m.Type != protocol.TypeTaskResult {
			t.Errorf("task %s ended with %s: %s", task, m.Type, m.Payload)
		}
	}
	if err := gaps.stop(); err != nil {
		t.Fatal(err)
	}
	storetest.AssertOneTerminal(t, tm.st)
	checkAttempts(t, tm.st, n, false)
	if got := adoptedTasks(t, tm.st); got == 0 || got > n {
		t.Errorf("%d tasks adopted, want 1..%d", got, n)
	} else {
		t.Logf("%d tasks adopted", got)
	}
}

// awaitEnds follows the log until every task of tasks has a terminal
// event, and returns them.
func awaitEnds(ctx context.Context, t *testing.T, st store.Store, tasks []string) map[string]*protocol.Message {
	t.Helper()
	want := map[string]bool{}
	for _, id := range tasks {
		want[id] = true
	}
	ends := map[string]*protocol.Message{}
	for ev, err := range st.Follow(ctx, store.Query{TypePrefix: "task."}) {
		if err != nil {
			t.Fatal(err)
		}
		m, _ := ev.Message()
		if want[m.TaskID] && protocol.EndsTask(m) {
			ends[m.TaskID] = m
			if len(ends) == len(want) {
				return ends
			}
		}
	}
	t.Fatalf("%d of %d tasks ended: %v", len(ends), len(tasks), ctx.Err())
	return nil
}

// adoptedTasks counts the tasks with an adoption claim, and fails t when
// one has two.
func adoptedTasks(t *testing.T, st store.Store) int {
	t.Helper()
	per := map[string]int{}
	for ev, err := range st.Read(context.Background(), store.Query{TypePrefix: string(routerteam.TypeOwner)}) {
		if err != nil {
			t.Fatal(err)
		}
		m, _ := ev.Message()
		var p struct {
			From string `json:"from"`
		}
		if json.Unmarshal(m.Payload, &p) == nil && p.From != "" {
			per[m.TaskID]++
		}
	}
	for task, c := range per {
		if c > 1 {
			t.Errorf("task %s adopted %d times", task, c)
		}
	}
	return len(per)
}

// A worker that also routes — its handlers delegate subtasks, which it
// routes — is killed with SIGKILL: the submitter retries the attempts
// that ran there (RecoverRedispatch), and the survivors adopt the
// subtasks it routed, cancelling them (their delegating handlers died
// with it). Every task and subtask ends once; every task with a result;
// no attempt is claimed or completed twice; no task is adopted twice.
func TestKillRoutingWorker(t *testing.T) {
	t.Setenv(recoveryEnv, "redispatch") // the workers retry their subtasks' interrupted attempts
	ctx, tm, gaps, w2 := killTeam(t)
	const n = 30
	hs := submitAll(ctx, t, tm, delegateFrom, n)
	if err := awaitClaims(ctx, tm.st, "agent:worker-2", 6); err != nil {
		t.Fatal(err)
	}
	if err := w2.kill(); err != nil {
		t.Fatal(err)
	}
	for i, h := range hs {
		if _, err := h.Wait(ctx); err != nil {
			t.Fatalf("task %d: %v", i, err)
		}
	}
	// The subtasks end too: wait for every task of the log to end.
	var all []string
	seen := map[string]bool{}
	for ev, err := range tm.st.Read(ctx, store.Query{TypePrefix: string(protocol.TypeTaskRequest)}) {
		if err != nil {
			t.Fatal(err)
		}
		m, _ := ev.Message()
		if !seen[m.TaskID] {
			seen[m.TaskID] = true
			all = append(all, m.TaskID)
		}
	}
	ends := awaitEnds(ctx, t, tm.st, all)
	cancelled := 0
	for _, m := range ends {
		if m.Type == protocol.TypeTaskCancel {
			cancelled++
		}
	}
	if err := gaps.stop(); err != nil {
		t.Fatal(err)
	}
	storetest.AssertOneTerminal(t, tm.st)
	checkAttempts(t, tm.st, -1, true)
	t.Logf("%d tasks and subtasks, %d adopted, %d subtasks cancelled", len(all), adoptedTasks(t, tm.st), cancelled)
}
