package storetest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/google/go-cmp/cmp"
)

// The cases of store.Remover, for a store that has it (they skip
// otherwise, or fail when Options.Remover says the store must have it):
// ended runs go with a tombstone, running, waiting and active ones stay,
// reads of a removed run say so, followers step over the gap, dedup of
// other runs holds, seqs are not reused, listings are those of the log
// that stays, removal is idempotent and survives a reopen.
func init() {
	cases = append(cases, []struct {
		name string
		run  func(*testing.T, *suite)
	}{
		{"RemoveEndedRun", testRemoveEndedRun},
		{"RemoveRefusesUnended", testRemoveRefusesUnended},
		{"RemoveThrough", testRemoveThrough},
		{"RemovedReadsSaySo", testRemovedReadsSaySo},
		{"RemoveFollowAcross", testRemoveFollowAcross},
		{"RemoveDedup", testRemoveDedup},
		{"RemoveSeqNotReused", testRemoveSeqNotReused},
		{"RemoveSummaries", testRemoveSummaries},
		{"RemoveIdempotent", testRemoveIdempotent},
		{"RemoveReopen", testRemoveReopen},
	}...)
}

// remover opens a fresh store and returns its Remover, or skips.
func (su *suite) remover(t *testing.T) (store.Store, store.Remover) {
	t.Helper()
	s := su.open(t)
	r := store.RemoverOf(s)
	if r == nil {
		if su.opts.Remover {
			t.Fatal("the store has no store.Remover, and Options.Remover says it must")
		}
		t.Skip("the store has no store.Remover")
	}
	return s, r
}

// endedRun returns the events of a run in its own thread whose one task
// is requested, accepted and done.
func endedRun(g *gen) []*protocol.Message {
	l := &life{g: g, run: g.ids.RunID(), thread: g.ids.ThreadID()}
	task := g.ids.TaskID()
	return []*protocol.Message{
		l.ev(task, protocol.TypeTaskRequest, 1, `{"title":"ended run"}`),
		l.ev(task, protocol.TypeTaskAccept, 1, ""),
		l.ev(task, protocol.TypeTaskProgress, 1, ""),
		l.ev(task, protocol.TypeTaskResult, 1, ""),
	}
}

// registryEvent returns an event without a run, as the registry writes.
func registryEvent(g *gen) *protocol.Message {
	return g.msg(key{typ: protocol.TypeChatMessage, agent: "agent:registry"})
}

func removeOK(t *testing.T, r store.Remover, why store.Removal, runs ...string) []store.Tombstone {
	t.Helper()
	ts, err := r.RemoveRuns(t.Context(), runs, why)
	if err != nil {
		t.Fatalf("RemoveRuns(%v): %v", runs, err)
	}
	return ts
}

func tombstones(t *testing.T, r store.Remover, q store.ListQuery) []store.Tombstone {
	t.Helper()
	var out []store.Tombstone
	for ts, err := range r.Tombstones(t.Context(), q) {
		if err != nil {
			t.Fatalf("Tombstones(%+v): %v", q, err)
		}
		out = append(out, ts)
	}
	return out
}

// rawOf returns the events read back, by seq.
func rawOf(evs []store.Event) map[uint64]store.Event {
	out := map[uint64]store.Event{}
	for _, e := range evs {
		out[e.Seq] = e
	}
	return out
}

// testRemoveEndedRun: an ended run goes, every event of it, and its
// tombstone says what went; other runs and events without a run stay,
// as they were.
func testRemoveEndedRun(t *testing.T, su *suite) {
	s, r := su.remover(t)
	g := newGen(60)
	gone, kept := endedRun(g), endedRun(g)
	appendOK(t, s, gone[:2]...)
	appendOK(t, s, registryEvent(g))
	appendOK(t, s, kept...)
	appendOK(t, s, gone[2:]...)
	before := readAll(t, s, store.Query{})
	last := lastSeq(t, s)

	why := store.Removal{Policy: "max_age=720h", Note: "nightly", Archive: "runs-2026-02.jsonl"}
	ts := removeOK(t, r, why, gone[0].RunID)
	if len(ts) != 1 {
		t.Fatalf("RemoveRuns returned %d tombstones, want 1", len(ts))
	}
	var want store.Tombstone
	want.RunID, want.Policy, want.Note, want.Archive = gone[0].RunID, why.Policy, why.Note, why.Archive
	for _, e := range before {
		if m, _ := e.Message(); m.RunID == want.RunID {
			if want.FirstSeq == 0 {
				want.FirstSeq = e.Seq
			}
			want.LastSeq = e.Seq
			want.Events++
			want.Bytes += int64(len(e.Raw))
		}
	}
	got := ts[0]
	if got.Removed.IsZero() || got.Removed.Location() != time.UTC {
		t.Errorf("tombstone time %v: want a time in UTC", got.Removed)
	}
	want.Removed = got.Removed
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("tombstone (-want +got):\n%s", diff)
	}
	if got, err := r.Tombstone(t.Context(), want.RunID); err != nil || !tombEqual(got, want) {
		t.Fatalf("Tombstone(%s) = %+v, %v; want %+v", want.RunID, got, err, want)
	}
	if got := tombstones(t, r, store.ListQuery{}); len(got) != 1 || got[0].RunID != want.RunID {
		t.Fatalf("Tombstones = %+v, want the one of %s", got, want.RunID)
	}

	after := readAll(t, s, store.Query{})
	left := rawOf(after)
	for _, e := range before {
		m, _ := e.Message()
		a, ok := left[e.Seq]
		switch {
		case m.RunID == want.RunID && ok:
			t.Errorf("event %d of the removed run is still read", e.Seq)
		case m.RunID != want.RunID && (!ok || string(a.Raw) != string(e.Raw) || !a.Time.Equal(e.Time)):
			t.Errorf("event %d of run %q is gone or changed after removing another run", e.Seq, m.RunID)
		}
	}
	if len(after) != len(before)-want.Events {
		t.Errorf("%d events left of %d, %d removed", len(after), len(before), want.Events)
	}
	for _, m := range gone {
		if _, err := s.Get(t.Context(), m.ID); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get(%s) of a removed event: %v, want ErrNotFound", m.ID, err)
		}
	}
	for _, m := range kept {
		if _, err := s.Get(t.Context(), m.ID); err != nil {
			t.Errorf("Get(%s) of a kept event: %v", m.ID, err)
		}
	}
	if got := seqsOf(readAll(t, s, store.Query{RunID: kept[0].RunID})); len(got) != len(kept) {
		t.Errorf("the kept run reads %v", got)
	}
	if n := lastSeq(t, s); n != last {
		t.Errorf("LastSeq after removal = %d, want %d", n, last)
	}
	if u, err := store.UsageOf(t.Context(), s); err != nil || u.Events != uint64(len(after)) || u.LastSeq != last || u.OldestSeq != after[0].Seq {
		t.Errorf("UsageOf after removal = %+v, %v; want %d events, LastSeq %d, the oldest %d", u, err, len(after), last, after[0].Seq)
	}
	checkSummaries(t, s)
}

// testRemoveRefusesUnended: a running run, a run with a task waiting for
// an answer, an active run (no task, no end) and an unknown run are
// refused with errors that name them, and nothing of the call is
// removed.
func testRemoveRefusesUnended(t *testing.T, su *suite) {
	s, r := su.remover(t)
	g := newGen(61)
	ended := endedRun(g)
	appendOK(t, s, ended...)

	running := &life{g: g, run: g.ids.RunID(), thread: g.ids.ThreadID()}
	rt := g.ids.TaskID()
	appendOK(t, s, running.ev(rt, protocol.TypeTaskRequest, 1, ""), running.ev(rt, protocol.TypeTaskAccept, 1, ""))

	// Waiting: one task done, one asked a question; the run's status is
	// running while the question is open, and Waiting is 1.
	waiting := &life{g: g, run: g.ids.RunID(), thread: g.ids.ThreadID()}
	w1, w2 := g.ids.TaskID(), g.ids.TaskID()
	appendOK(t, s, waiting.ev(w1, protocol.TypeTaskRequest, 1, ""), waiting.ev(w1, protocol.TypeTaskResult, 1, ""),
		waiting.ev(w2, protocol.TypeTaskRequest, 1, ""), waiting.ev(w2, protocol.TypeTaskAccept, 1, ""),
		waiting.ev(w2, protocol.TypeTaskQuestion, 1, `{"question":"which one?"}`))

	active := &life{g: g, run: g.ids.RunID(), thread: g.ids.ThreadID()}
	appendOK(t, s, active.ev("", protocol.TypeChatMessage, 1, `{"text":"hello"}`))

	before := readAll(t, s, store.Query{})
	for _, c := range []struct {
		name, run string
		target    error
		code      protocol.Code
	}{
		{"running", running.run, store.ErrRunActive, protocol.CodeConflict},
		{"waiting", waiting.run, store.ErrRunActive, protocol.CodeConflict},
		{"active", active.run, store.ErrRunActive, protocol.CodeConflict},
		{"unknown", "run_never", store.ErrNotFound, protocol.CodeNotFound},
	} {
		ts, err := r.RemoveRuns(t.Context(), []string{ended[0].RunID, c.run}, store.Removal{Policy: "test"})
		if !errors.Is(err, c.target) || protocol.CodeOf(err) != c.code || ts != nil {
			t.Errorf("%s: RemoveRuns = %v, %v; want no tombstones and an error matching %v with code %s", c.name, ts, err, c.target, c.code)
			continue
		}
		if !strings.Contains(err.Error(), c.run) {
			t.Errorf("%s: error %q does not name the run", c.name, err)
		}
		var active *store.RunActiveError
		if c.target == store.ErrRunActive && (!errors.As(err, &active) || active.RunID != c.run) {
			t.Errorf("%s: error %v is not a *store.RunActiveError naming %s", c.name, err, c.run)
		}
		if c.name == "waiting" && active != nil && active.Waiting != 1 {
			t.Errorf("waiting: RunActiveError.Waiting = %d, want 1", active.Waiting)
		}
	}
	if _, err := r.RemoveRuns(t.Context(), []string{""}, store.Removal{}); !errors.Is(err, store.ErrInvalidQuery) {
		t.Errorf("RemoveRuns of an empty run id: %v, want ErrInvalidQuery", err)
	}
	if ts, err := r.RemoveRuns(t.Context(), nil, store.Removal{}); ts != nil || err != nil {
		t.Errorf("RemoveRuns of no runs = %v, %v; want nil, nil", ts, err)
	}
	if got := readAll(t, s, store.Query{}); !slices.Equal(seqsOf(got), seqsOf(before)) {
		t.Fatalf("refused removals removed events: %v left of %v", seqsOf(got), seqsOf(before))
	}
	if got := tombstones(t, r, store.ListQuery{}); len(got) != 0 {
		t.Fatalf("refused removals left tombstones: %+v", got)
	}
	if _, err := r.Tombstone(t.Context(), ended[0].RunID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Tombstone of a run not removed: %v, want ErrNotFound", err)
	}
	// Once the question is answered and the task done, the run may go.
	appendOK(t, s, waiting.ev(w2, protocol.TypeTaskAnswer, 1, `{"answer":"that one"}`), waiting.ev(w2, protocol.TypeTaskResult, 1, ""))
	removeOK(t, r, store.Removal{Policy: "test"}, waiting.run, ended[0].RunID)
	checkSummaries(t, s)
}

// testRemoveThrough: a removal with Removal.Through refuses a run that
// has an event past it (appended after its caller chose it, e.g. after
// an archive was written) with a *store.RunActiveError, removing nothing;
// a run with none past it goes.
func testRemoveThrough(t *testing.T, su *suite) {
	s, r := su.remover(t)
	g := newGen(69)
	late, other := endedRun(g), endedRun(g)
	appendOK(t, s, late...)
	appendOK(t, s, other...)
	through, err := s.LastSeq(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// A message after the run's task ended: the run has still ended.
	l := &life{g: g, run: late[0].RunID, thread: late[0].ThreadID}
	appendOK(t, s, l.ev("", protocol.TypeChatMessage, 1, `{"text":"late"}`))
	last, err := s.LastSeq(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	before := readAll(t, s, store.Query{})

	ts, err := r.RemoveRuns(t.Context(), []string{other[0].RunID, l.run}, store.Removal{Policy: "test", Through: through})
	var active *store.RunActiveError
	if !errors.As(err, &active) || !errors.Is(err, store.ErrRunActive) || ts != nil {
		t.Fatalf("RemoveRuns of a run with an event past Through = %v, %v; want a *store.RunActiveError", ts, err)
	}
	if active.RunID != l.run || active.LastSeq != last || active.Through != through {
		t.Errorf("RunActiveError = %+v; want run %s, LastSeq %d, Through %d", *active, l.run, last, through)
	}
	if !strings.Contains(err.Error(), l.run) {
		t.Errorf("error %q does not name the run", err)
	}
	if got := readAll(t, s, store.Query{}); !slices.Equal(seqsOf(got), seqsOf(before)) {
		t.Fatalf("a refused removal removed events: %v left of %v", seqsOf(got), seqsOf(before))
	}
	removeOK(t, r, store.Removal{Policy: "test", Through: through}, other[0].RunID)
	got := removeOK(t, r, store.Removal{Policy: "test", Through: last}, l.run)
	if got[0].Events != len(late)+1 || got[0].LastSeq != last {
		t.Errorf("tombstone %+v; want %d events up to seq %d", got[0], len(late)+1, last)
	}
	checkSummaries(t, s)
}

// testRemovedReadsSaySo: Read and Follow of a removed run yield one
// *store.RemovedError with its tombstone; Runs no longer lists it.
func testRemovedReadsSaySo(t *testing.T, su *suite) {
	s, r := su.remover(t)
	g := newGen(62)
	gone, kept := endedRun(g), endedRun(g)
	appendOK(t, s, gone...)
	appendOK(t, s, kept...)
	ts := removeOK(t, r, store.Removal{Policy: "manual"}, gone[0].RunID)[0]
	for name, seq := range map[string]func(yield func(store.Event, error) bool){
		"Read":                s.Read(t.Context(), store.Query{RunID: ts.RunID}),
		"Read with a type":    s.Read(t.Context(), store.Query{RunID: ts.RunID, TypePrefix: "task."}),
		"Read after a seq":    s.Read(t.Context(), store.Query{RunID: ts.RunID, AfterSeq: 1}),
		"Follow":              s.Follow(t.Context(), store.Query{RunID: ts.RunID}),
		"Read with a task id": s.Read(t.Context(), store.Query{RunID: ts.RunID, TaskID: gone[0].TaskID}),
	} {
		n := 0
		for _, err := range seq {
			n++
			var rem *store.RemovedError
			if !errors.As(err, &rem) || !errors.Is(err, store.ErrRemoved) || protocol.CodeOf(err) != protocol.CodeNotFound {
				t.Errorf("%s of a removed run: %v; want a *store.RemovedError (ErrRemoved, code NOT_FOUND)", name, err)
				continue
			}
			if rem.Tombstone.RunID != ts.RunID || rem.Tombstone.Events != ts.Events || !rem.Tombstone.Removed.Equal(ts.Removed) {
				t.Errorf("%s: RemovedError carries %+v, want %+v", name, rem.Tombstone, ts)
			}
			if !strings.Contains(err.Error(), ts.RunID) || !strings.Contains(err.Error(), "manual") {
				t.Errorf("%s: error %q does not name the run and the policy", name, err)
			}
		}
		if n != 1 {
			t.Errorf("%s of a removed run yielded %d times, want one error", name, n)
		}
	}
	for _, sum := range listAll(t, store.Runs(t.Context(), s, store.ListQuery{})) {
		if sum.ID == ts.RunID {
			t.Fatalf("Runs lists the removed run %s", ts.RunID)
		}
	}
	if got := readAll(t, s, store.Query{ThreadID: gone[0].ThreadID}); len(got) != 0 {
		t.Fatalf("the removed run's thread still reads %v", seqsOf(got))
	}
}

// testRemoveFollowAcross: a follower started before a removal that takes
// the newest events goes on: it sees the appends after it, with the seqs
// after the removed ones, once each, and stalls on no gap; a follower
// started after reads the backlog across the gap.
func testRemoveFollowAcross(t *testing.T, su *suite) {
	s, r := su.remover(t)
	g := newGen(63)
	kept, gone := endedRun(g), endedRun(g)
	appendOK(t, s, kept...)
	appendOK(t, s, gone...) // the newest events
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	f := startFollower(ctx, s, store.Query{})
	f.await(t, len(kept)+len(gone), "backlog before the removal")
	last := lastSeq(t, s)
	removeOK(t, r, store.Removal{Policy: "test"}, gone[0].RunID)
	more := endedRun(g)
	res := appendOK(t, s, more...)
	if res[0].Seq != last+1 {
		t.Fatalf("the first append after removing the newest run got seq %d, want %d", res[0].Seq, last+1)
	}
	f.await(t, len(kept)+len(gone)+len(more), "appends after the removal")
	// A follower from the start reads the gap over, then waits.
	g2 := startFollower(ctx, s, store.Query{})
	g2.await(t, len(kept)+len(more), "backlog across the gap")
	late := endedRun(g)
	appendOK(t, s, late...)
	g2.await(t, len(kept)+len(more)+len(late), "appends after the gap")
	f.await(t, len(kept)+len(gone)+len(more)+len(late), "appends after the gap")
	cancel()
	f.end(t, "the first follower")
	g2.end(t, "the second follower")
	for _, fl := range []*follower{f, g2} {
		if len(fl.errs) != 0 {
			t.Fatalf("follower errors: %v", fl.errs)
		}
		if !slices.IsSorted(fl.seqs) || len(slices.Compact(slices.Clone(fl.seqs))) != len(fl.seqs) {
			t.Fatalf("follower seqs %v: not increasing, or repeated", fl.seqs)
		}
	}
	want := seqsOf(readAll(t, s, store.Query{}))
	if got := g2.seqs; !slices.Equal(got, want) {
		t.Fatalf("follower from the start got %v, the log holds %v", got, want)
	}
}

// testRemoveDedup: after a removal, the ids and idempotency keys of every
// other run still deduplicate, and those of the removed run are
// forgotten: its messages appended again are stored again, and the run
// lives again (its tombstone stays).
func testRemoveDedup(t *testing.T, su *suite) {
	s, r := su.remover(t)
	g := newGen(64)
	gone, kept := endedRun(g), endedRun(g)
	gone[1].IdempotencyKey, kept[1].IdempotencyKey = "k1", "k1"
	appendOK(t, s, gone...)
	res := appendOK(t, s, kept...)
	removeOK(t, r, store.Removal{Policy: "test"}, gone[0].RunID)

	again := g.msg(key{run: kept[0].RunID, thread: kept[0].ThreadID, task: kept[0].TaskID})
	again.IdempotencyKey = "k1"
	for i, c := range []struct {
		msg *protocol.Message
		by  store.DedupRule
		seq uint64
	}{
		{kept[2], store.DedupByID, res[2].Seq},
		{again, store.DedupByIdempotencyKey, res[1].Seq},
	} {
		got := appendOK(t, s, c.msg)[0]
		if !got.Duplicate || got.DuplicateBy != c.by || got.Seq != c.seq {
			t.Errorf("case %d: a duplicate of the kept run gave %+v, want a duplicate by %v of seq %d", i, got, c.by, c.seq)
		}
	}
	last := lastSeq(t, s)
	back := appendOK(t, s, gone[1])[0]
	if back.Duplicate || back.Seq != last+1 {
		t.Fatalf("a removed event appended again gave %+v, want a new event with seq %d", back, last+1)
	}
	if got := readAll(t, s, store.Query{RunID: gone[0].RunID}); len(got) != 1 || got[0].Seq != back.Seq {
		t.Fatalf("the run appended to after its removal reads %v, want [%d]", seqsOf(got), back.Seq)
	}
	if dup := appendOK(t, s, gone[1])[0]; !dup.Duplicate || dup.Seq != back.Seq {
		t.Fatalf("the event appended again does not deduplicate: %+v", dup)
	}
	if _, err := r.Tombstone(t.Context(), gone[0].RunID); err != nil {
		t.Fatalf("the tombstone of a run appended to again: %v", err)
	}
	checkSummaries(t, s)
}

// testRemoveSeqNotReused: removing the newest events leaves LastSeq as it
// was, and the next append gets the seq after it.
func testRemoveSeqNotReused(t *testing.T, su *suite) {
	s, r := su.remover(t)
	g := newGen(65)
	first, second := endedRun(g), endedRun(g)
	appendOK(t, s, first...)
	appendOK(t, s, second...)
	last := lastSeq(t, s)
	removeOK(t, r, store.Removal{Policy: "test"}, first[0].RunID, second[0].RunID)
	if n := lastSeq(t, s); n != last {
		t.Fatalf("LastSeq after removing every run = %d, want %d", n, last)
	}
	if got := readAll(t, s, store.Query{}); len(got) != 0 {
		t.Fatalf("%d events left after removing every run", len(got))
	}
	if res := appendOK(t, s, registryEvent(g)); res[0].Seq != last+1 {
		t.Fatalf("the next append got seq %d, want %d", res[0].Seq, last+1)
	}
}

// testRemoveSummaries: after a removal, Runs and Threads are those of the
// log that stays: a thread shared with another run keeps a summary of
// that run's events, a thread of the removed run alone goes, and a run
// whose task also had events in the removed run is counted again.
func testRemoveSummaries(t *testing.T, su *suite) {
	s, r := su.remover(t)
	g := newGen(66)
	shared := g.ids.ThreadID()
	a := &life{g: g, run: g.ids.RunID(), thread: shared}
	b := &life{g: g, run: g.ids.RunID(), thread: shared}
	ta, tb := g.ids.TaskID(), g.ids.TaskID()
	appendOK(t, s, a.ev(ta, protocol.TypeTaskRequest, 1, `{"title":"first"}`), a.ev(ta, protocol.TypeTaskAccept, 1, ""))
	appendOK(t, s, b.ev(tb, protocol.TypeTaskRequest, 1, `{"title":"second"}`), b.ev(tb, protocol.TypeTaskAccept, 1, ""))
	appendOK(t, s, a.ev(ta, protocol.TypeTaskResult, 1, ""))
	own := endedRun(g) // a run in a thread of its own
	appendOK(t, s, own...)
	appendOK(t, s, b.ev(tb, protocol.TypeTaskError, 1, `{"code":"INTERNAL","message":"boom","retryable":false}`))
	// A task whose events are in two runs: a partial retry recorded
	// under another run id.
	c := &life{g: g, run: g.ids.RunID(), thread: g.ids.ThreadID()}
	d := &life{g: g, run: g.ids.RunID(), thread: c.thread}
	tc := g.ids.TaskID()
	appendOK(t, s, c.ev(tc, protocol.TypeTaskRequest, 1, `{"title":"spanning"}`), c.ev(tc, protocol.TypeTaskError, 1, `{"code":"INTERNAL","message":"boom","retryable":false}`))
	appendOK(t, s, d.ev(tc, protocol.TypeTaskAccept, 2, ""), d.ev(tc, protocol.TypeTaskResult, 2, ""))
	checkSummaries(t, s)

	removeOK(t, r, store.Removal{Policy: "test"}, a.run, own[0].RunID, c.run)
	checkSummaries(t, s)
	_, th := summaryOf(t, s, b.run, shared)
	if th.Title != "second" || th.RunID != b.run || th.Events != 3 || th.Status != store.StatusFailed || th.Tasks != 1 {
		t.Fatalf("the shared thread after removing one of its runs: %+v", th)
	}
	for _, sum := range listAll(t, store.Threads(t.Context(), s, store.ListQuery{})) {
		if sum.ID == own[0].ThreadID {
			t.Fatalf("the thread of the removed run alone is still listed: %+v", sum)
		}
	}
	// Appends after the removal fold into the recomputed summaries.
	appendOK(t, s, b.ev("", protocol.TypeChatMessage, 1, `{"text":"after"}`), d.ev(tc, protocol.TypeTaskProgress, 3, ""))
	checkSummaries(t, s)
}

// testRemoveIdempotent: removing a removed run again returns its
// tombstone as it was, and changes nothing.
func testRemoveIdempotent(t *testing.T, su *suite) {
	s, r := su.remover(t)
	g := newGen(67)
	gone, kept := endedRun(g), endedRun(g)
	appendOK(t, s, gone...)
	appendOK(t, s, kept...)
	first := removeOK(t, r, store.Removal{Policy: "first"}, gone[0].RunID)
	before := readAll(t, s, store.Query{})
	again := removeOK(t, r, store.Removal{Policy: "second"}, gone[0].RunID, gone[0].RunID, kept[0].RunID)
	if len(again) != 2 || !tombEqual(again[0], first[0]) || again[1].RunID != kept[0].RunID {
		t.Fatalf("removing again: %+v; want the first tombstone %+v, then the one of %s", again, first[0], kept[0].RunID)
	}
	if got := tombstones(t, r, store.ListQuery{}); len(got) != 2 || got[0].RunID != kept[0].RunID || !tombEqual(got[1], first[0]) {
		t.Fatalf("Tombstones: %+v", got)
	}
	if got := tombstones(t, r, store.ListQuery{Before: again[1].LastSeq}); len(got) != 1 || got[0].RunID != gone[0].RunID {
		t.Fatalf("Tombstones before %d: %+v", again[1].LastSeq, got)
	}
	if got := tombstones(t, r, store.ListQuery{Limit: 1}); len(got) != 1 || got[0].RunID != kept[0].RunID {
		t.Fatalf("Tombstones, limit 1: %+v", got)
	}
	if got := readAll(t, s, store.Query{}); len(got) != len(before)-len(kept) {
		t.Fatalf("%d events left, want %d", len(got), len(before)-len(kept))
	}
	n := 0
	for _, err := range r.Tombstones(t.Context(), store.ListQuery{Limit: -1}) {
		n++
		wantErr(t, "Tombstones with Limit -1", err, store.ErrInvalidQuery)
	}
	if n != 1 {
		t.Fatalf("Tombstones with Limit -1 yielded %d times", n)
	}
}

// tombEqual compares tombstones, their times by Equal.
func tombEqual(a, b store.Tombstone) bool {
	if !a.Removed.Equal(b.Removed) {
		return false
	}
	a.Removed = b.Removed
	return a == b
}

// testRemoveReopen: a durable store keeps its tombstones, its removed
// runs' reads, its LastSeq and its summaries across a reopen.
func testRemoveReopen(t *testing.T, su *suite) {
	if su.opts.Reopen == nil {
		t.Skip("not durable: Options.Reopen is nil")
	}
	s, r := su.remover(t)
	g := newGen(68)
	kept, gone := endedRun(g), endedRun(g)
	appendOK(t, s, kept...)
	appendOK(t, s, gone...)
	ts := removeOK(t, r, store.Removal{Policy: "test", Archive: "a.jsonl"}, gone[0].RunID)[0]
	last := lastSeq(t, s)
	before := readAll(t, s, store.Query{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = su.reopen(t, s)
	r = store.RemoverOf(s)
	if got, err := r.Tombstone(t.Context(), ts.RunID); err != nil || !tombEqual(got, ts) {
		t.Fatalf("Tombstone after reopen = %+v, %v; want %+v", got, err, ts)
	}
	if n := lastSeq(t, s); n != last {
		t.Fatalf("LastSeq after reopen = %d, want %d", n, last)
	}
	if got := readAll(t, s, store.Query{}); !slices.Equal(seqsOf(got), seqsOf(before)) {
		t.Fatalf("events after reopen %v, before %v", seqsOf(got), seqsOf(before))
	}
	for _, err := range s.Read(t.Context(), store.Query{RunID: ts.RunID}) {
		if !errors.Is(err, store.ErrRemoved) {
			t.Fatalf("Read of the removed run after reopen: %v", err)
		}
	}
	if res := appendOK(t, s, registryEvent(g)); res[0].Seq != last+1 {
		t.Fatalf("the next append after reopen got seq %d, want %d", res[0].Seq, last+1)
	}
	checkSummaries(t, s)
}
