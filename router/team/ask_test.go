package team

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// marketAsker asks which market and answers with it; runs counts its runs.
func marketAsker(runs *atomic.Int32) router.Handler {
	return func(ctx context.Context, tk *router.Task) (*router.Result, error) {
		runs.Add(1)
		v, err := router.AskAs[string](ctx, tk, protocol.Question{Text: "Which market?", Choices: []string{"fintech", "health"}})
		if err != nil {
			return nil, err
		}
		return summary("market " + v), nil
	}
}

func findingOf(t *testing.T, out *router.Outcome) string {
	t.Helper()
	got, err := router.ResultAs[schema.ResearchSummary](out)
	if err != nil || len(got.Findings) != 1 {
		t.Fatalf("result %+v, %v", got, err)
	}
	return got.Findings[0]
}

// An agent hosted in another process asks: the task waits in the process
// that routed it (not in the one that ran the handler), any process of
// the team may answer, and the answer runs the handler on in the hosting
// process. The other processes forget the wait once it is answered.
func TestNodeAskAcrossProcesses(t *testing.T) {
	st, _ := memstore.New(nil)
	a := newProc(t, st, time.Minute, nil)
	b := newProc(t, st, time.Minute, nil)
	var runs atomic.Int32
	b.register(card("agent:ken", skill("skill:research")), marketAsker(&runs))
	waitFor(t, "a sees agent:ken", func() bool { return a.handles("agent:ken") }, a)
	req := a.request("skill:research")
	out, err := a.wait(a.submit(req))
	if out.Question == nil || !errors.Is(err, protocol.CodeInputRequired) {
		t.Fatalf("outcome %+v, %v: want the question", out, err)
	}
	if a.r.Waiting() != 1 || b.r.Waiting() != 0 {
		t.Fatalf("waiting: routing process %d, hosting process %d; want 1, 0", a.r.Waiting(), b.r.Waiting())
	}
	// The hosting process answers (any process may).
	h, err := b.r.Answer(context.Background(), out.Question.ID, router.Answerer{AgentID: "agent:ui"}, json.RawMessage(`"health"`))
	if err != nil {
		t.Fatal(err)
	}
	out, err = b.wait(h)
	if err != nil || findingOf(t, out) != "market health" {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	waitFor(t, "a forgets the answered wait", func() bool { return a.r.Waiting() == 0 }, a)
	if n := runs.Load(); n != 2 {
		t.Errorf("the handler ran %d times, want 2", n)
	}
	types := a.types(req.TaskID)
	for _, typ := range []string{"task.question", "task.answer", "task.result"} {
		if n := countOf(types, typ); n != 1 {
			t.Errorf("%d %s in %v", n, typ, types)
		}
	}
}

// The process that routed a waiting task dies: a survivor adopts it as a
// waiting task (no handler runs, nothing ends it), and an answer given to
// any process runs the handler on in the hosting process.
func TestNodeWaitingTaskAdopted(t *testing.T) {
	st, _ := memstore.New(nil)
	ttl := 300 * time.Millisecond
	a := newProc(t, st, ttl, nil)
	b := newProc(t, st, ttl, nil)
	var runs atomic.Int32
	b.register(card("agent:ken", skill("skill:research")), marketAsker(&runs))
	waitFor(t, "a sees agent:ken", func() bool { return a.handles("agent:ken") }, a)
	req := a.request("skill:research")
	if out, _ := a.wait(a.submit(req)); out.Question == nil {
		t.Fatalf("outcome %+v: want the question", out)
	}
	a.node.cancel() // a "dies": its heartbeats stop
	c := newProc(t, st, ttl, nil)
	waitFor(t, "c sees agent:ken", func() bool { return c.handles("agent:ken") }, c)
	// A survivor adopts it: b, which watched a die, or c, whose Recover
	// finds it (whichever comes first); it waits there, and only there.
	waitFor(t, "a survivor adopts the waiting task", func() bool {
		if _, err := c.r.Recover(context.Background()); err != nil {
			t.Fatal(err)
		}
		return b.r.Waiting()+c.r.Waiting() == 1
	}, b, c)
	if runs.Load() != 1 {
		t.Fatalf("the handler ran %d times while the task waited", runs.Load())
	}
	h, err := c.r.Answer(context.Background(), protocol.QuestionID(req.TaskID, 0), router.Answerer{AgentID: "agent:ui"}, json.RawMessage(`"fintech"`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.wait(h)
	if err != nil || findingOf(t, out) != "market fintech" {
		t.Fatalf("outcome %+v, %v", out, err)
	}
	if n := countOf(c.types(req.TaskID), "task.result"); n != 1 {
		t.Errorf("%d results", n)
	}
	waitFor(t, "the survivors forget the answered wait", func() bool { return b.r.Waiting()+c.r.Waiting() == 0 }, b, c)
}

// A subtask cannot ask, in the process hosting its agent too.
func TestNodeSubtaskCannotAsk(t *testing.T) {
	st, _ := memstore.New(nil)
	a := newProc(t, st, time.Minute, nil)
	b := newProc(t, st, time.Minute, nil)
	var runs atomic.Int32
	b.register(card("agent:ken", skill("skill:research")), marketAsker(&runs))
	a.register(card("agent:lead", skill("skill:lead")), func(ctx context.Context, tk *router.Task) (*router.Result, error) {
		sub, err := tk.NewSubtask("research.query.v1", schema.ResearchQuery{Query: "q"})
		if err != nil {
			return nil, err
		}
		sub.Requires = []string{"skill:research"}
		out, err := tk.Delegate(ctx, sub)
		if err != nil {
			return nil, err
		}
		return &router.Result{PayloadType: out.Message.PayloadType, Payload: json.RawMessage(out.Message.Payload)}, nil
	})
	waitFor(t, "a sees agent:ken", func() bool { return a.handles("agent:ken") }, a)
	out, err := a.wait(a.submit(a.request("skill:lead")))
	if out.Question != nil || err == nil || !strings.Contains(err.Error(), "a subtask cannot ask") {
		t.Fatalf("outcome %+v, %v: want the subtask's refusal", out, err)
	}
	if a.r.Waiting()+b.r.Waiting() != 0 {
		t.Errorf("a subtask waits")
	}
}

func countOf(types []string, typ string) int {
	n := 0
	for _, x := range types {
		if x == typ {
			n++
		}
	}
	return n
}
