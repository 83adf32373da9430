package router

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/internal/backends"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
)

const askChildEnv = "CLUTCH_ROUTER_ASK_CHILD" // the store spec the child runs on

// askChild is the child process of TestAskSurvivesKill: it submits a task
// that asks, prints "asked <question id> <requester>" once the question
// waits, and waits to be killed.
func askChild() bool {
	spec := os.Getenv(askChildEnv)
	if spec == "" {
		return false
	}
	fail := func(err error) {
		fmt.Fprintln(os.Stderr, "ask child:", err)
		os.Exit(3)
	}
	ctx := context.Background()
	st, err := backends.Open(ctx, spec)
	if err != nil {
		fail(err)
	}
	r, err := openAsker(ctx, st, new(atomic.Int32))
	if err != nil {
		fail(err)
	}
	req, err := r.NewRequest("agent:ui", "", nil)
	if err != nil {
		fail(err)
	}
	req.Requires = []string{"skill:r"}
	h, err := r.Submit(ctx, req)
	if err != nil {
		fail(err)
	}
	out, _ := h.Wait(ctx)
	if out == nil || out.Question == nil {
		fail(fmt.Errorf("the task did not ask: %+v", out))
	}
	fmt.Printf("asked %s %s\n", out.Question.ID, req.From.AgentID)
	time.Sleep(time.Hour) // until SIGKILL
	return true
}

// openAsker is a router over st with agent:a running asker.
func openAsker(ctx context.Context, st store.Store, runs *atomic.Int32) (*Router, error) {
	reg, err := registry.Open(ctx, st, nil)
	if err != nil {
		return nil, err
	}
	sch, err := schema.New(nil)
	if err != nil {
		return nil, err
	}
	r, err := New(st, reg, &Options{Validator: sch, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	return r, r.Register(ctx, card("agent:a", skill("skill:r")), asker(runs, false))
}

// TestAskSurvivesKill: a process whose task waits for an answer is killed
// with SIGKILL; another process opens the same store, Recover leaves the
// task waiting, the answer runs it on there, and it ends exactly once. On
// boltstore and pgstore.
func TestAskSurvivesKill(t *testing.T) {
	for _, name := range []string{"boltstore", "pgstore"} {
		t.Run(name, func(t *testing.T) {
			spec := backends.Durable(t, name)
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), askChildEnv+"="+spec)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line := make(chan string, 1)
			go func() {
				s, _ := bufio.NewReader(stdout).ReadString('\n')
				line <- s
			}()
			var qid, requester string
			select {
			case s := <-line:
				if _, err := fmt.Sscanf(s, "asked %s %s", &qid, &requester); err != nil {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("child said %q: %s", s, stderr.String())
				}
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the child did not ask within a minute: %s", stderr.String())
			}
			if err := cmd.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			cmd.Wait()

			ctx := context.Background()
			st, err := backends.Open(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var runs atomic.Int32
			r, err := openAsker(ctx, st, &runs)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if n, err := r.Recover(ctx); err != nil || n != 0 || r.Waiting() != 1 {
				t.Fatalf("Recover = %d, %v; %d waiting (want the task waiting, nothing recovered)", n, err, r.Waiting())
			}
			h, err := r.Answer(ctx, qid, Answerer{AgentID: requester}, json.RawMessage(`"fintech"`))
			if err != nil {
				t.Fatal(err)
			}
			out, err := h.Wait(ctx)
			if err != nil || out.Type != protocol.TypeTaskResult {
				t.Fatalf("%v %v", out, err)
			}
			if runs.Load() != 1 {
				t.Errorf("the handler ran %d times here, want 1", runs.Load())
			}
			taskID, _, _ := protocol.ParseQuestionID(qid)
			counts := map[protocol.Type]int{}
			for ev, err := range st.Read(ctx, store.Query{TaskID: taskID}) {
				if err != nil {
					t.Fatal(err)
				}
				m, _ := ev.Message()
				counts[m.Type]++
			}
			want := map[protocol.Type]int{protocol.TypeTaskRequest: 1, protocol.TypeRoutingDecision: 2, protocol.TypeTaskAccept: 2,
				protocol.TypeTaskQuestion: 1, protocol.TypeTaskAnswer: 1, protocol.TypeTaskResult: 1}
			if fmt.Sprint(counts) != fmt.Sprint(want) {
				t.Errorf("events %v, want %v", counts, want)
			}
		})
	}
}
