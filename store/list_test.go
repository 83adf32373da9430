package store_test

import (
	"context"
	"errors"
	"iter"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// plain hides the Lister of the store it holds: store.Runs projects.
type plain struct{ store.Store }

// wrapper hides it too but names the store it wraps.
type wrapper struct{ store.Store }

func (w wrapper) Unwrap() store.Store { return w.Store }

// fixedLister is a Lister whose listing is one fixed summary, to tell
// which path store.Runs took.
type fixedLister struct{ store.Store }

func (fixedLister) Runs(context.Context, store.ListQuery) iter.Seq2[store.Summary, error] {
	return func(yield func(store.Summary, error) bool) { yield(store.Summary{ID: "own run"}, nil) }
}

func (fixedLister) Threads(context.Context, store.ListQuery) iter.Seq2[store.Summary, error] {
	return func(yield func(store.Summary, error) bool) { yield(store.Summary{ID: "own thread"}, nil) }
}

func list(t *testing.T, seq iter.Seq2[store.Summary, error]) []store.Summary {
	t.Helper()
	var out []store.Summary
	for s, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// logStore is a Store whose only working method is Read, over evs.
type logStore struct {
	store.Store
	evs []store.Event
}

func (s logStore) Read(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	return func(yield func(store.Event, error) bool) {
		for _, e := range s.evs {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// TestRunsUsesTheLister: a Lister, found directly or through Unwrap, lists
// its own summaries; a store without one is projected from its log.
func TestRunsUsesTheLister(t *testing.T) {
	ctx := t.Context()
	own := fixedLister{}
	for name, s := range map[string]store.Store{"lister": own, "wrapped lister": wrapper{own}, "wrapper of a wrapper": wrapper{wrapper{own}}} {
		if got := list(t, store.Runs(ctx, s, store.ListQuery{})); len(got) != 1 || got[0].ID != "own run" {
			t.Errorf("%s: Runs = %+v, want the store's own", name, got)
		}
		if got := list(t, store.Threads(ctx, s, store.ListQuery{})); len(got) != 1 || got[0].ID != "own thread" {
			t.Errorf("%s: Threads = %+v, want the store's own", name, got)
		}
	}
}

// TestRunsProjectsTheLog: without a Lister, Runs and Threads fold the
// log: counts, status, owner, channel, newest first, Before and Limit.
func TestRunsProjectsTheLog(t *testing.T) {
	ids := protocol.NewIDs(nil)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var evs []store.Event
	add := func(m *protocol.Message) {
		raw, err := protocol.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, store.Event{Seq: uint64(len(evs) + 1), Time: t0.Add(time.Duration(len(evs)) * time.Second), Raw: raw})
	}
	thread := ids.ThreadID()
	req := ids.NewMessage(protocol.TypeTaskRequest, "agent:alice")
	req.TaskID, req.ThreadID = ids.TaskID(), thread
	req.Meta = map[string]any{"ui_channel": "ops"}
	add(req)
	chat := ids.NewMessage(protocol.TypeChatMessage, "agent:bob")
	chat.RunID, chat.ThreadID = req.RunID, thread
	add(chat)
	res := ids.NewMessage(protocol.TypeTaskResult, "agent:worker")
	res.RunID, res.TaskID, res.ThreadID = req.RunID, req.TaskID, thread
	add(res)
	open := ids.NewMessage(protocol.TypeTaskRequest, "agent:carol")
	open.TaskID = ids.TaskID()
	add(open)

	s := wrapper{logStore{evs: evs}} // a wrapper of a store without a Lister
	runs := list(t, store.Runs(t.Context(), s, store.ListQuery{}))
	size := func(evs ...store.Event) (n int64) {
		for _, e := range evs {
			n += int64(len(e.Raw))
		}
		return n
	}
	want := []store.Summary{
		{ID: open.RunID, RunID: open.RunID, Owner: "agent:carol", FirstSeq: 4, LastSeq: 4, Created: evs[3].Time, Updated: evs[3].Time, Events: 1, Bytes: size(evs[3]), Tasks: 1, Status: store.StatusRunning},
		{ID: req.RunID, RunID: req.RunID, Owner: "agent:alice", Channel: "ops", FirstSeq: 1, LastSeq: 3, Created: evs[0].Time, Updated: evs[2].Time, Events: 3, Bytes: size(evs[:3]...), Tasks: 1, Ended: 1, Status: store.StatusCompleted},
	}
	if diff := cmp.Diff(want, runs); diff != "" {
		t.Fatalf("projected runs (-want +got):\n%s", diff)
	}
	if got := list(t, store.Runs(t.Context(), s, store.ListQuery{Before: 4, Limit: 1})); len(got) != 1 || got[0].ID != want[1].ID {
		t.Fatalf("Before 4, Limit 1: %+v, want %s", got, want[1].ID)
	}
	threads := list(t, store.Threads(t.Context(), s, store.ListQuery{}))
	if len(threads) != 2 || threads[0].ID != open.ThreadID || threads[1].ID != thread || threads[1].RunID != req.RunID || threads[1].Events != 3 || threads[1].Status != store.StatusCompleted || threads[1].Channel != "ops" {
		t.Fatalf("projected threads = %+v", threads)
	}
	n := 0
	for _, err := range store.Threads(t.Context(), s, store.ListQuery{Limit: -1}) {
		n++
		if !errors.Is(err, store.ErrInvalidQuery) {
			t.Fatalf("Limit -1: %v, want ErrInvalidQuery", err)
		}
	}
	if n != 1 {
		t.Fatalf("Limit -1 yielded %d times, want once", n)
	}
}

// TestStatusesMatchTheFold: the status strings the fold sets are the
// ones store.Summary documents.
func TestStatusesMatchTheFold(t *testing.T) {
	for _, typ := range []protocol.Type{protocol.TypeTaskResult, protocol.TypeTaskCancel, protocol.TypeTaskTimeout, protocol.TypeTaskError} {
		switch st := store.EndStatus(typ); st {
		case store.StatusCompleted, store.StatusCancelled, store.StatusTimedOut, store.StatusFailed:
		default:
			t.Errorf("EndStatus(%s) = %q, not a store status", typ, st)
		}
	}
}
