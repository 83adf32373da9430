package storetest

import (
	"encoding/json"
	"errors"
	"iter"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// listAll collects a Runs or Threads listing.
func listAll(t *testing.T, seq func(func(store.Summary, error) bool)) []store.Summary {
	t.Helper()
	var out []store.Summary
	for s, err := range seq {
		if err != nil {
			t.Fatalf("listing summaries: %v", err)
		}
		out = append(out, s)
	}
	return out
}

// summaryModel computes the summaries the contract asks for from the
// events as read back, for the fields that need no task lifecycle
// (counts and status have their own cases).
func summaryModel(t *testing.T, s store.Store, byThread bool) []store.Summary {
	t.Helper()
	sums := map[string]*store.Summary{}
	requested := map[string]bool{}
	for _, e := range readAll(t, s, store.Query{}) {
		m, err := e.Message()
		if err != nil {
			t.Fatal(err)
		}
		id := m.RunID
		if byThread {
			id = m.ThreadID
		}
		if id == "" {
			continue
		}
		sum := sums[id]
		if sum == nil {
			sum = &store.Summary{ID: id, RunID: m.RunID, Owner: m.From.AgentID, FirstSeq: e.Seq, Created: e.Time}
			sums[id] = sum
		}
		sum.Events++
		sum.LastSeq, sum.Updated = e.Seq, e.Time
		if ch, ok := m.Meta["ui_channel"].(string); ok {
			sum.Channel = ch
		}
		if m.Type == protocol.TypeTaskRequest && !requested[m.TaskID] {
			requested[m.TaskID] = true
			sum.Tasks++
		}
	}
	var out []store.Summary
	for _, sum := range sums {
		out = append(out, *sum)
	}
	slices.SortFunc(out, func(a, b store.Summary) int { return int(b.LastSeq) - int(a.LastSeq) })
	return out
}

// structural drops the fields summaryModel does not compute.
func structural(in []store.Summary) []store.Summary {
	out := slices.Clone(in)
	for i := range out {
		out[i].Ended, out[i].Status = 0, ""
	}
	return out
}

func checkSummaries(t *testing.T, s store.Store) {
	t.Helper()
	for _, byThread := range []bool{false, true} {
		want := summaryModel(t, s, byThread)
		list := store.Runs
		if byThread {
			list = store.Threads
		}
		got := listAll(t, list(t.Context(), s, store.ListQuery{}))
		if diff := cmp.Diff(want, structural(got)); diff != "" {
			t.Fatalf("summaries (threads: %v) (-want +got):\n%s", byThread, diff)
		}
		for _, sum := range got {
			if sum.Ended < 0 || sum.Ended > sum.Tasks || sum.Status == "" {
				t.Fatalf("summary %s: Tasks %d, Ended %d, Status %q", sum.ID, sum.Tasks, sum.Ended, sum.Status)
			}
		}
	}
	checkLister(t, s)
}

// projected hides every method of a store but those of store.Store, so
// that store.Runs and store.Threads project its summaries from the log.
type projected struct{ store.Store }

// checkLister, for a store that implements store.Lister, compares its own
// listings with the projection of its log (the counts and statuses
// included), whole and in pages. Both must be the same summaries.
func checkLister(t *testing.T, s store.Store) {
	t.Helper()
	l, ok := s.(store.Lister)
	if !ok {
		return
	}
	p := projected{s}
	for _, byThread := range []bool{false, true} {
		own, proj := l.Runs, func(q store.ListQuery) iter.Seq2[store.Summary, error] { return store.Runs(t.Context(), p, q) }
		if byThread {
			own, proj = l.Threads, func(q store.ListQuery) iter.Seq2[store.Summary, error] { return store.Threads(t.Context(), p, q) }
		}
		all := listAll(t, own(t.Context(), store.ListQuery{}))
		queries := []store.ListQuery{{}, {Limit: 1}, {Limit: 7}}
		if len(all) > 2 {
			mid := all[len(all)/2].LastSeq
			queries = append(queries, store.ListQuery{Before: mid}, store.ListQuery{Before: mid + 1, Limit: 3})
		}
		for _, q := range queries {
			want := listAll(t, proj(q))
			got := listAll(t, own(t.Context(), q))
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("threads %v, %+v: the store's own summaries differ from the projection of its log (-projection +own):\n%s", byThread, q, diff)
			}
		}
	}
}

// testSummariesNewestFirst: Runs and Threads list every run and thread,
// newest (largest LastSeq) first, with their seqs, times, counts, the run
// of a thread's first event and the latest meta.ui_channel.
func testSummariesNewestFirst(t *testing.T, su *suite) {
	s := su.open(t)
	m := loadWorkload(t, s, 41, 700)
	g := newGen(42)
	// A thread that spans two runs, with channels set, changed and not cleared.
	thr := g.ids.ThreadID()
	r1, r2 := g.ids.RunID(), g.ids.RunID()
	a := g.msg(key{run: r1, thread: thr, typ: protocol.TypeChatMessage, agent: "agent:starter"})
	a.Meta = map[string]any{"ui_channel": "general"}
	b := g.msg(key{run: r2, thread: thr, typ: protocol.TypeChatMessage})
	c := g.msg(key{run: r2, thread: thr, typ: protocol.TypeChatMessage})
	c.Meta = map[string]any{"ui_channel": "ops"}
	d := g.msg(key{run: r2, thread: thr, typ: protocol.TypeChatMessage})
	d.Meta = map[string]any{"ui_channel": 7} // not a string: ignored
	appendOK(t, s, a)
	appendOK(t, s, b, c, d)
	// Duplicates are not events: they change no summary.
	dup := m[3].Clone()
	dup.Reset()
	appendOK(t, s, dup)
	checkSummaries(t, s)

	threads := listAll(t, store.Threads(t.Context(), s, store.ListQuery{}))
	if threads[0].ID != thr || threads[0].RunID != r1 || threads[0].Channel != "ops" || threads[0].Events != 4 || threads[0].Owner != "agent:starter" {
		t.Fatalf("newest thread = %+v; want %s of run %s, owner agent:starter, channel ops, 4 events", threads[0], thr, r1)
	}
	if threads[0].Status != store.StatusActive || threads[0].Tasks != 0 {
		t.Fatalf("a chat-only thread: status %q, %d tasks; want active, 0", threads[0].Status, threads[0].Tasks)
	}
	runs := listAll(t, store.Runs(t.Context(), s, store.ListQuery{}))
	if runs[0].ID != r2 || runs[1].ID != r1 || runs[0].RunID != r2 || runs[0].Channel != "ops" || runs[1].Channel != "general" {
		t.Fatalf("newest runs = %+v, %+v; want %s (ops) then %s (general)", runs[0], runs[1], r2, r1)
	}
	if len(runs) != 5 || len(threads) != 6 {
		t.Fatalf("%d runs and %d threads; want 5 and 6", len(runs), len(threads))
	}
}

// testSummariesPaging: Before and Limit page through a listing with
// nothing lost or repeated; a negative Limit is refused.
func testSummariesPaging(t *testing.T, su *suite) {
	s := su.open(t)
	g := newGen(43)
	var msgs []*protocol.Message
	for range 300 { // more summaries than a backend page
		msgs = append(msgs, g.simple(2)...)
	}
	for i := 0; i < len(msgs); i += 50 {
		appendOK(t, s, msgs[i:i+50]...)
	}
	all := listAll(t, store.Runs(t.Context(), s, store.ListQuery{}))
	if len(all) != 300 {
		t.Fatalf("%d runs, want 300", len(all))
	}
	checkLister(t, s)
	for _, limit := range []int{1, 7, 256, 299, 300, 1000} {
		var got []store.Summary
		var before uint64
		for {
			page := listAll(t, store.Runs(t.Context(), s, store.ListQuery{Before: before, Limit: limit}))
			if len(page) > limit {
				t.Fatalf("Limit %d: a page of %d", limit, len(page))
			}
			for _, p := range page {
				if before != 0 && p.LastSeq >= before {
					t.Fatalf("Before %d: got a summary with LastSeq %d", before, p.LastSeq)
				}
			}
			got = append(got, page...)
			if len(page) < limit {
				break
			}
			before = page[len(page)-1].LastSeq
		}
		if diff := cmp.Diff(all, got); diff != "" {
			t.Fatalf("pages of %d (-all +pages):\n%s", limit, diff)
		}
	}
	// Before between two LastSeqs: exactly the older ones.
	mid := all[100].LastSeq + 1
	if got := listAll(t, store.Runs(t.Context(), s, store.ListQuery{Before: mid})); len(got) != 200 || got[0].ID != all[100].ID {
		t.Fatalf("Before %d: %d runs starting at %v; want 200 starting at %s", mid, len(got), got[0].ID, all[100].ID)
	}
	for _, seq := range []func(func(store.Summary, error) bool){
		store.Runs(t.Context(), s, store.ListQuery{Limit: -1}),
		store.Threads(t.Context(), s, store.ListQuery{Limit: -1}),
	} {
		n := 0
		for _, err := range seq {
			n++
			wantErr(t, "Limit -1", err, store.ErrInvalidQuery)
		}
		if n != 1 {
			t.Fatalf("a listing with Limit -1 yielded %d times, want one error", n)
		}
	}
	// Breaking out early is fine, and the store stays usable.
	for range store.Runs(t.Context(), s, store.ListQuery{}) {
		break
	}
	appendOK(t, s, g.simple(1)...)
}

// lifeStep is one append of a status case and the run summary after it.
type lifeStep struct {
	msgs   []*protocol.Message
	tasks  int
	ended  int
	status string
}

// life builds the lifecycle events of one run and thread.
type life struct {
	g           *gen
	run, thread string
}

func (l *life) ev(task string, typ protocol.Type, attempt int, payload string) *protocol.Message {
	m := l.g.msg(key{run: l.run, thread: l.thread, task: task, typ: typ, agent: "agent:router"})
	m.Attempt = attempt
	if payload != "" {
		m.Payload = json.RawMessage(payload)
	}
	return m
}

const (
	finalError = `{"code":"INTERNAL","message":"boom","retryable":false}`
	retryError = `{"code":"INTERNAL","message":"boom","retryable":true,"details":{"will_retry":true}}`
)

// testSummaryStatus pins the counting and status rules of store.Summary:
// running while a task is open; otherwise the most recent terminal
// event; retries announced by a task.error do not end a task; a partial
// retry opens it again; cancels and timeouts; a second request of a task
// counts nothing.
func testSummaryStatus(t *testing.T, su *suite) {
	s := su.open(t)
	g := newGen(44)
	newLife := func() *life { return &life{g: g, run: g.ids.RunID(), thread: g.ids.ThreadID()} }
	one := func(m ...*protocol.Message) []*protocol.Message { return m }

	cases := map[string]func(l *life) []lifeStep{
		"completed": func(l *life) []lifeStep {
			t1 := g.ids.TaskID()
			return []lifeStep{
				{one(l.ev(t1, protocol.TypeTaskRequest, 1, "")), 1, 0, store.StatusRunning},
				{one(l.ev(t1, protocol.TypeRoutingDecision, 1, ""), l.ev(t1, protocol.TypeTaskAccept, 1, "")), 1, 0, store.StatusRunning},
				{one(l.ev(t1, protocol.TypeTaskProgress, 1, "")), 1, 0, store.StatusRunning},
				{one(l.ev(t1, protocol.TypeTaskResult, 1, "")), 1, 1, store.StatusCompleted},
				{one(l.ev("", protocol.TypeChatMessage, 1, "")), 1, 1, store.StatusCompleted},
			}
		},
		"request and result in one batch": func(l *life) []lifeStep {
			t1 := g.ids.TaskID()
			return []lifeStep{
				{one(l.ev(t1, protocol.TypeTaskRequest, 1, ""), l.ev(t1, protocol.TypeTaskResult, 1, "")), 1, 1, store.StatusCompleted},
			}
		},
		"retried then failed": func(l *life) []lifeStep {
			t1 := g.ids.TaskID()
			return []lifeStep{
				{one(l.ev(t1, protocol.TypeTaskRequest, 1, "")), 1, 0, store.StatusRunning},
				{one(l.ev(t1, protocol.TypeTaskError, 1, retryError)), 1, 0, store.StatusRunning},
				{one(l.ev(t1, protocol.TypeRoutingDecision, 2, ""), l.ev(t1, protocol.TypeTaskAccept, 2, "")), 1, 0, store.StatusRunning},
				{one(l.ev(t1, protocol.TypeTaskError, 2, finalError)), 1, 1, store.StatusFailed},
			}
		},
		"partial retry": func(l *life) []lifeStep {
			t1 := g.ids.TaskID()
			return []lifeStep{
				{one(l.ev(t1, protocol.TypeTaskRequest, 1, "")), 1, 0, store.StatusRunning},
				{one(l.ev(t1, protocol.TypeTaskTimeout, 1, "")), 1, 1, store.StatusTimedOut},
				{one(l.ev(t1, protocol.TypeRoutingDecision, 2, "")), 1, 0, store.StatusRunning},
				{one(l.ev(t1, protocol.TypeTaskResult, 2, "")), 1, 1, store.StatusCompleted},
				// A stray terminal event of an ended attempt changes no count.
				{one(l.ev(t1, protocol.TypeTaskError, 2, finalError)), 1, 1, store.StatusFailed},
			}
		},
		"cancelled subtree": func(l *life) []lifeStep {
			p, c := g.ids.TaskID(), g.ids.TaskID()
			return []lifeStep{
				{one(l.ev(p, protocol.TypeTaskRequest, 1, "")), 1, 0, store.StatusRunning},
				{one(l.ev(c, protocol.TypeTaskRequest, 1, "")), 2, 0, store.StatusRunning},
				{one(l.ev(c, protocol.TypeTaskCancel, 1, "")), 2, 1, store.StatusRunning},
				{one(l.ev(p, protocol.TypeTaskCancel, 1, "")), 2, 2, store.StatusCancelled},
			}
		},
		"most recent terminal wins": func(l *life) []lifeStep {
			p, c := g.ids.TaskID(), g.ids.TaskID()
			return []lifeStep{
				{one(l.ev(p, protocol.TypeTaskRequest, 1, ""), l.ev(c, protocol.TypeTaskRequest, 1, "")), 2, 0, store.StatusRunning},
				{one(l.ev(c, protocol.TypeTaskError, 1, finalError)), 2, 1, store.StatusRunning},
				{one(l.ev(p, protocol.TypeTaskResult, 1, "")), 2, 2, store.StatusCompleted},
				// A second request of a task is not a second task.
				{one(l.ev(p, protocol.TypeTaskRequest, 1, "")), 2, 2, store.StatusCompleted},
			}
		},
		"terminal of a task without a request": func(l *life) []lifeStep {
			return []lifeStep{
				{one(l.ev("", protocol.TypeChatMessage, 1, "")), 0, 0, store.StatusActive},
				{one(l.ev(g.ids.TaskID(), protocol.TypeTaskCancel, 1, "")), 0, 0, store.StatusCancelled},
			}
		},
	}
	for name, steps := range cases {
		l := newLife()
		for i, st := range steps(l) {
			appendOK(t, s, st.msgs...)
			checkLister(t, s)
			for _, list := range []func(func(store.Summary, error) bool){
				store.Runs(t.Context(), s, store.ListQuery{}), store.Threads(t.Context(), s, store.ListQuery{}),
			} {
				var got *store.Summary
				for _, sum := range listAll(t, list) {
					if sum.ID == l.run || sum.ID == l.thread {
						got = &sum
						break
					}
				}
				if got == nil {
					t.Fatalf("%s, step %d: no summary of %s / %s", name, i, l.run, l.thread)
				}
				if got.Tasks != st.tasks || got.Ended != st.ended || got.Status != st.status {
					t.Errorf("%s, step %d (%s): tasks %d, ended %d, status %q; want %d, %d, %q",
						name, i, got.ID, got.Tasks, got.Ended, got.Status, st.tasks, st.ended, st.status)
				}
			}
		}
	}
}

// testSummariesAfterReopen: summaries survive a reopen, and appends after
// it keep counting from where they were.
func testSummariesAfterReopen(t *testing.T, su *suite) {
	if su.opts.Reopen == nil {
		t.Skip("not durable: Options.Reopen is nil")
	}
	s := su.open(t)
	loadWorkload(t, s, 45, 400)
	l := &life{g: newGen(46)}
	l.run, l.thread = l.g.ids.RunID(), l.g.ids.ThreadID()
	task := l.g.ids.TaskID()
	appendOK(t, s, l.ev(task, protocol.TypeTaskRequest, 1, ""))
	runs := listAll(t, store.Runs(t.Context(), s, store.ListQuery{}))
	threads := listAll(t, store.Threads(t.Context(), s, store.ListQuery{}))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = su.reopen(t, s)
	if diff := cmp.Diff(runs, listAll(t, store.Runs(t.Context(), s, store.ListQuery{}))); diff != "" {
		t.Fatalf("runs after reopen (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(threads, listAll(t, store.Threads(t.Context(), s, store.ListQuery{}))); diff != "" {
		t.Fatalf("threads after reopen (-before +after):\n%s", diff)
	}
	appendOK(t, s, l.ev(task, protocol.TypeTaskResult, 1, ""))
	got := listAll(t, store.Runs(t.Context(), s, store.ListQuery{Limit: 1}))
	if len(got) != 1 || got[0].ID != l.run || got[0].Tasks != 1 || got[0].Ended != 1 || got[0].Status != store.StatusCompleted || got[0].Events != 2 {
		t.Fatalf("run after reopen and its result: %+v", got)
	}
	checkSummaries(t, s)
}

// testSummariesClosed: listing a closed store yields ErrClosed.
func testSummariesClosed(t *testing.T, su *suite) {
	s := su.open(t)
	appendOK(t, s, newGen(47).simple(1)...)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for _, err := range store.Runs(t.Context(), s, store.ListQuery{}) {
		if !errors.Is(err, store.ErrClosed) {
			t.Fatalf("Runs after Close: %v, want ErrClosed", err)
		}
	}
	for _, err := range store.Threads(canceledContext(), s, store.ListQuery{}) {
		if err == nil {
			t.Fatal("Threads with a done context yielded a summary")
		}
	}
}

// testSeqBounds: an AfterSeq or Before past any seq a backend can hold
// (beyond int64, where a database column ends) reads nothing and lists
// everything, rather than wrapping around.
func testSeqBounds(t *testing.T, su *suite) {
	s := su.open(t)
	g := newGen(44)
	appendOK(t, s, g.simple(3)...)
	for _, after := range []uint64{1<<63 - 1, 1 << 63, 1<<64 - 1} {
		for _, q := range []store.Query{{AfterSeq: after}, {AfterSeq: after, TypePrefix: "task."}} {
			if evs := readAll(t, s, q); len(evs) != 0 {
				t.Fatalf("Read(%+v): %d events, want none", q, len(evs))
			}
		}
	}
	runs := listAll(t, store.Runs(t.Context(), s, store.ListQuery{}))
	threads := listAll(t, store.Threads(t.Context(), s, store.ListQuery{}))
	for _, before := range []uint64{1 << 63, 1<<64 - 1} {
		if got := listAll(t, store.Runs(t.Context(), s, store.ListQuery{Before: before})); !cmp.Equal(got, runs) {
			t.Fatalf("Runs(Before %d): %d summaries, want all %d", before, len(got), len(runs))
		}
		if got := listAll(t, store.Threads(t.Context(), s, store.ListQuery{Before: before})); !cmp.Equal(got, threads) {
			t.Fatalf("Threads(Before %d): %d summaries, want all %d", before, len(got), len(threads))
		}
	}
}
