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
