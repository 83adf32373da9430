package driver

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

func TestSignalWakesEveryWaiter(t *testing.T) {
	var s Signal
	s.Notify() // nobody waits: nothing to do
	a, b := s.Wait(), s.Wait()
	if a != b {
		t.Fatal("two waits before a notify got different channels")
	}
	select {
	case <-a:
		t.Fatal("closed before Notify")
	default:
	}
	s.Notify()
	for _, c := range []<-chan struct{}{a, b} {
		select {
		case <-c:
		case <-time.After(time.Second):
			t.Fatal("Notify did not close the channel")
		}
	}
	if c := s.Wait(); c == a {
		t.Fatal("Wait after Notify returned the closed channel")
	}
}

// TestSignalNoLostWakeUp races a notifier against a waiter that follows
// the protocol of Follow (take the channel, then read, then wait): the
// waiter must see every value, however Notify's lock-free check interleaves.
func TestSignalNoLostWakeUp(t *testing.T) {
	var s Signal
	var n atomic.Int64
	const last = 20000
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= last; i++ {
			n.Store(int64(i))
			s.Notify()
		}
	}()
	for seen := int64(0); seen < last; {
		wake := s.Wait()
		if v := n.Load(); v > seen {
			seen = v
			continue
		}
		select {
		case <-wake:
		case <-time.After(5 * time.Second):
			t.Fatalf("lost wake-up: saw %d of %d", seen, last)
		}
	}
	<-done
}

func TestPrepare(t *testing.T) {
	ids := protocol.NewIDs(nil)
	m := ids.NewMessage(protocol.TypeChatMessage, "agent:a")
	entries, err := Prepare(nil, []*protocol.Message{m}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	e := entries[0]
	if string(e.Raw) != string(m.Raw()) || e.ID != m.ID || e.RunID != m.RunID || e.AgentID != "agent:a" || e.Type != protocol.TypeChatMessage {
		t.Fatalf("entry %+v does not match the message", e)
	}
	if _, err := Prepare(nil, []*protocol.Message{m}, len(m.Raw())-1); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("over the limit: %v", err)
	}
}

// The summary fields of an entry: the payload and its type as they are,
// and a failure only for an error that ends its task.
func TestPrepareSummaryFields(t *testing.T) {
	ids := protocol.NewIDs(nil)
	req := ids.NewMessage(protocol.TypeTaskRequest, "agent:ui")
	req.PayloadType, req.Payload = "research.query.v1", []byte(`{"query":"nordic payments"}`)
	retry := ids.Reply(req, protocol.TypeTaskError, "agent:ken")
	retry.Payload = []byte(`{"code":"INTERNAL","message":"once","retryable":true,"details":{"will_retry":true}}`)
	final := ids.Reply(req, protocol.TypeTaskError, "agent:ken")
	final.Payload = []byte(`{"code":"TOOL_FAILED","message":"the browser crashed","retryable":false}`)
	entries, err := Prepare(nil, []*protocol.Message{req, retry, final}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if e := entries[0]; e.PayloadType != "research.query.v1" || string(e.Payload) != `{"query":"nordic payments"}` || e.Failure != nil {
		t.Fatalf("request entry: %+v", e)
	}
	if e := entries[1]; e.Ends || e.Failure != nil {
		t.Fatalf("an error that announces a retry: ends %v, failure %+v", e.Ends, e.Failure)
	}
	want := store.Failure{TaskID: req.TaskID, AgentID: "agent:ken", Code: protocol.CodeToolFailed, Message: "the browser crashed"}
	if e := entries[2]; !e.Ends || e.Failure == nil || *e.Failure != want {
		t.Fatalf("a final error: ends %v, failure %+v; want %+v", e.Ends, e.Failure, want)
	}
}

// Entry.Title reads the payload once, and only for a type that gives a
// title; Fold uses what it kept for the run and the thread alike.
func TestEntryTitle(t *testing.T) {
	ids := protocol.NewIDs(nil)
	req := ids.NewMessage(protocol.TypeTaskRequest, "agent:ui")
	req.Payload = []byte(`{"prompt":"Draft the launch plan"}`)
	prog := ids.Reply(req, protocol.TypeTaskProgress, "agent:ken")
	prog.Payload = []byte(`{"text":"half way"}`)
	entries, err := Prepare(nil, []*protocol.Message{req, prog}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	e := &entries[0]
	if got := e.Title(); got != "Draft the launch plan" {
		t.Fatalf("Title = %q", got)
	}
	e.Payload = []byte(`{"prompt":"changed"}`) // read once: the title stays
	var run, thread store.Summary
	Fold(&run, req.RunID, e, 1, time.Unix(1, 0), Delta{Tasks: 1})
	Fold(&thread, req.ThreadID, e, 1, time.Unix(1, 0), Delta{Tasks: 1})
	if run.Title != "Draft the launch plan" || thread.Title != run.Title {
		t.Fatalf("titles %q, %q", run.Title, thread.Title)
	}
	if got := entries[1].Title(); got != "" {
		t.Fatalf("a task.progress gives the title %q", got)
	}
}

// Folding an event into a summary that has a title allocates nothing
// unless the event names a new agent or carries a failure: appends that
// cannot change the title never decode a payload.
func TestFoldAllocatesNothingOnPlainEvents(t *testing.T) {
	ids := protocol.NewIDs(nil)
	req := ids.NewMessage(protocol.TypeTaskRequest, "agent:ui")
	req.Payload = []byte(`{"text":"Compare the Nordic payment rails"}`)
	acc := ids.Reply(req, protocol.TypeTaskAccept, "agent:ken")
	prog := ids.Reply(req, protocol.TypeTaskProgress, "agent:ken")
	prog.Payload = []byte(`{"text":"half way"}`)
	req2 := ids.Reply(req, protocol.TypeTaskRequest, "agent:ken")
	req2.TaskID = ids.TaskID()
	req2.Payload = []byte(`{"text":"a subtask"}`)
	res := ids.Reply(req, protocol.TypeTaskResult, "agent:ken")
	res.Payload = []byte(`{"title":"Findings"}`)
	entries, err := Prepare(nil, []*protocol.Message{req, acc, prog, req2, res}, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	var s store.Summary
	t0 := time.Unix(1, 0)
	Fold(&s, req.RunID, &entries[0], 1, t0, Delta{Tasks: 1})
	Fold(&s, req.RunID, &entries[1], 2, t0, Delta{})
	if s.Title != "Compare the Nordic payment rails" || len(s.Agents) != 1 {
		t.Fatalf("summary %+v", s)
	}
	seq := uint64(3)
	for i := 1; i < len(entries); i++ {
		e := &entries[i]
		if n := testing.AllocsPerRun(100, func() { Fold(&s, req.RunID, e, seq, t0, Delta{}); seq++ }); n != 0 {
			t.Errorf("Fold of a %s: %v allocations", e.Type, n)
		}
	}
}

func TestIndexOfPrefersTheMostSelective(t *testing.T) {
	for q, want := range map[store.Query]Index{
		{}:                              NoIndex,
		{TypePrefix: "task."}:           NoIndex,
		{AgentID: "a", RunID: "r"}:      RunIndex,
		{RunID: "r", ThreadID: "t"}:     ThreadIndex,
		{ThreadID: "t", TaskID: "k"}:    TaskIndex,
		{AgentID: "a", TypePrefix: "x"}: AgentIndex,
	} {
		if got, _ := IndexOf(q); got != want {
			t.Errorf("IndexOf(%+v) = %d, want %d", q, got, want)
		}
	}
}

// Read yields the events a page returned before its error, then the error.
func TestReadYieldsEventsBeforeAnError(t *testing.T) {
	boom := errors.New("boom")
	page := func(ctx context.Context, q store.Query, after, upTo uint64, max int) ([]store.Event, uint64, error) {
		return []store.Event{{Seq: after + 1}}, 0, boom
	}
	last := func(context.Context) (uint64, error) { return 10, nil }
	var seqs []uint64
	var errs []error
	for e, err := range Read(context.Background(), store.Query{}, last, page) {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		seqs = append(seqs, e.Seq)
	}
	if len(seqs) != 1 || seqs[0] != 1 || len(errs) != 1 || errs[0] != boom {
		t.Fatalf("got %v %v", seqs, errs)
	}
}
