package storetest

import (
	"encoding/json"
	"errors"
	"iter"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

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
// (counts, status, waiting tasks and failures have their own cases).
func summaryModel(t *testing.T, s store.Store, byThread bool) []store.Summary {
	t.Helper()
	sums := map[string]*store.Summary{}
	requested := map[string]bool{}
	agents := map[string][]string{}
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
		sum.Bytes += int64(len(e.Raw))
		sum.LastSeq, sum.Updated = e.Seq, e.Time
		if ch, ok := m.Meta["ui_channel"].(string); ok {
			sum.Channel = ch
		}
		if m.Type == protocol.TypeTaskRequest && !requested[m.TaskID] {
			requested[m.TaskID] = true
			sum.Tasks++
		}
		if sum.Title == "" && (m.Type == protocol.TypeTaskRequest || m.Type == protocol.TypeChatMessage) {
			sum.Title = modelTitle(m)
		}
		if m.Type == protocol.TypeTaskAccept && !slices.Contains(agents[id], m.From.AgentID) {
			agents[id] = append(agents[id], m.From.AgentID)
		}
	}
	var out []store.Summary
	for id, sum := range sums {
		a := agents[id][:min(len(agents[id]), 64)] // a summary remembers 64
		sum.Agents = a[:min(len(a), 8)]            // and names 8
		sum.AgentsMore = len(a) - len(sum.Agents)
		out = append(out, *sum)
	}
	slices.SortFunc(out, func(a, b store.Summary) int { return int(b.LastSeq) - int(a.LastSeq) })
	return out
}

// structural drops the fields summaryModel does not compute.
func structural(in []store.Summary) []store.Summary {
	out := slices.Clone(in)
	for i := range out {
		out[i].Ended, out[i].Status, out[i].Waiting, out[i].Failure = 0, "", 0, nil
	}
	return out
}

// titleMembers are the payload members a title comes from, in order.
var titleMembers = []string{"title", "text", "query", "message", "content", "summary", "prompt", "goal"}

// modelTitle is the title m gives (store.Summary.Title), computed plainly:
// the payload decoded whole by encoding/json.
func modelTitle(m *protocol.Message) string {
	var v any
	_ = json.Unmarshal(m.Payload, &v)
	text := ""
	switch v := v.(type) {
	case string:
		text = v
	case map[string]any:
		for _, k := range titleMembers {
			if s, ok := v[k].(string); ok && strings.TrimSpace(s) != "" {
				text = s
				break
			}
		}
	}
	squeeze := func(s string) string {
		return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	}
	if squeeze(text) == "" {
		text = m.PayloadType
	}
	return clipModel(squeeze(text), 120)
}

// clipModel cuts s to at most max bytes, "…" included, at a rune
// boundary, without a space before the "…".
func clipModel(s string, max int) string {
	if len(s) <= max {
		return s
	}
	out := ""
	for _, r := range s {
		if len(out)+utf8.RuneLen(r)+len("…") > max {
			break
		}
		out += string(r)
	}
	return strings.TrimRight(out, " ") + "…"
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
	CheckLister(t, s)
}

// projected hides every method of a store but those of store.Store, so
// that store.Runs and store.Threads project its summaries from the log.
type projected struct{ store.Store }

// CheckLister, for a store that implements store.Lister, compares its own
// listings of runs and threads with the projection of its log
// ([store.Runs] and [store.Threads] of a store without Lister: the counts
// and statuses included), whole and in pages, and fails t where they
// differ. The suite runs it after each step of its summary cases; a
// backend's own tests run it on a store the suite did not build (one
// restored from a backup, one migrated from an older schema).
func CheckLister(t *testing.T, s store.Store) {
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
	CheckLister(t, s)
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
			CheckLister(t, s)
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

// testSummaryBytes pins store.Summary.Bytes: the sum of the lengths of
// the events' stored bytes (Event.Raw), for every run and thread, after
// appends, after a reopen (a durable store), after the removal of a run
// that shared its thread with another (a store with a Remover), and after
// appends that follow the removal.
func testSummaryBytes(t *testing.T, su *suite) {
	s := su.open(t)
	g := newGen(49)
	shared := g.ids.ThreadID()
	a := &life{g: g, run: g.ids.RunID(), thread: shared}
	b := &life{g: g, run: g.ids.RunID(), thread: shared}
	c := &life{g: g, run: g.ids.RunID(), thread: g.ids.ThreadID()}
	ta, tb, tc := g.ids.TaskID(), g.ids.TaskID(), g.ids.TaskID()
	big := `{"text":"` + strings.Repeat("x", 3000) + `"}`
	appendOK(t, s, a.ev(ta, protocol.TypeTaskRequest, 1, `{"title":"a"}`), b.ev(tb, protocol.TypeTaskRequest, 1, big))
	appendOK(t, s, a.ev(ta, protocol.TypeTaskAccept, 1, ""), c.ev(tc, protocol.TypeTaskRequest, 1, `"c"`))
	appendOK(t, s, b.ev(tb, protocol.TypeTaskProgress, 1, big), a.ev(ta, protocol.TypeTaskResult, 1, big))
	appendOK(t, s, c.ev("", protocol.TypeChatMessage, 1, `{"text":"é"}`))
	check := func(when string) {
		t.Helper()
		for _, byThread := range []bool{false, true} {
			list := store.Runs
			if byThread {
				list = store.Threads
			}
			sums := listAll(t, list(t.Context(), s, store.ListQuery{}))
			if len(sums) == 0 {
				t.Fatalf("%s: no summaries", when)
			}
			for _, sum := range sums {
				q := store.Query{RunID: sum.ID}
				if byThread {
					q = store.Query{ThreadID: sum.ID}
				}
				var want int64
				for _, ev := range readAll(t, s, q) {
					want += int64(len(ev.Raw))
				}
				if sum.Bytes != want || want == 0 {
					t.Fatalf("%s: summary of %s (threads: %v): Bytes %d, its events' bytes %d", when, sum.ID, byThread, sum.Bytes, want)
				}
			}
		}
	}
	check("after appends")
	if su.opts.Reopen != nil {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = su.reopen(t, s)
		check("after a reopen")
	}
	r := store.RemoverOf(s)
	if r == nil {
		return
	}
	_, before := summaryOf(t, s, b.run, shared)
	ts := removeOK(t, r, store.Removal{Policy: "test"}, a.run)
	_, th := summaryOf(t, s, b.run, shared)
	if th.Bytes != before.Bytes-ts[0].Bytes {
		t.Fatalf("the shared thread: %d bytes before, %d removed with run %s, %d after", before.Bytes, ts[0].Bytes, a.run, th.Bytes)
	}
	check("after a removal")
	appendOK(t, s, b.ev(tb, protocol.TypeTaskResult, 1, big), c.ev(tc, protocol.TypeTaskResult, 1, ""))
	check("after appends that follow a removal")
}

// summaryOf returns the summaries of run and of thread, each from its
// listing, failing the test when one is missing.
func summaryOf(t *testing.T, s store.Store, run, thread string) (r, th store.Summary) {
	t.Helper()
	find := func(list iter.Seq2[store.Summary, error], id string) store.Summary {
		for _, sum := range listAll(t, list) {
			if sum.ID == id {
				return sum
			}
		}
		t.Fatalf("no summary of %s", id)
		return store.Summary{}
	}
	return find(store.Runs(t.Context(), s, store.ListQuery{}), run), find(store.Threads(t.Context(), s, store.ListQuery{}), thread)
}

// testSummaryTitles pins store.Summary.Title: the first task.request or
// chat.message that gives one, from a string payload, the first of the
// named members, or the payload type; white space collapsed; cut at a
// rune boundary to 120 bytes with "…"; other types give none.
func testSummaryTitles(t *testing.T, su *suite) {
	s := su.open(t)
	g := newGen(48)
	type ev struct {
		typ         protocol.Type
		payloadType string
		payload     string
	}
	req := func(payloadType, payload string) ev { return ev{protocol.TypeTaskRequest, payloadType, payload} }
	chat := func(payload string) ev { return ev{protocol.TypeChatMessage, "", payload} }
	cases := []struct {
		name string
		evs  []ev
		want string
	}{
		{"string payload, white space collapsed", []ev{req("", `"  Plan   the\n launch\t "`)}, "Plan the launch"},
		{"members in their order, not the object's; blank ones skipped",
			[]ev{req("", `{"goal":"g","prompt":"p","note":"n","text":" \n ","query":"q","input":{"title":"deep"}}`)}, "q"},
		{"a member that is not a string is skipped", []ev{req("acme.x.v1", `{"title":7,"message":"m"}`)}, "m"},
		{"nested members do not count", []ev{req("", `{"input":{"title":"deep"},"summary":"top"}`)}, "top"},
		{"escapes", []ev{req("", `{"text":"line\none\ttwo \u00e9\ud83d\ude00"}`)}, "line one two é😀"},
		{"the payload type when no member has text", []ev{req("research.query.v1", `{"data":[1,2]}`)}, "research.query.v1"},
		{"a blank string payload gives the payload type", []ev{req("acme.notes.v1", `"   "`)}, "acme.notes.v1"},
		{"a request without text or type gives none; a later chat.message does, and stays",
			[]ev{req("", `{"data":1}`), req("", `null`), chat(`{"text":"later"}`), chat(`{"text":"other"}`), req("acme.t.v1", `"third"`)}, "later"},
		{"other types give none", []ev{
			{protocol.TypeTaskResult, "acme.r.v1", `{"title":"result"}`}, {protocol.TypeChatSystem, "", `{"text":"system"}`},
			{protocol.TypeTaskProgress, "", `"progress"`}, chat(`"then this"`)}, "then this"},
		{"cut at a rune boundary", []ev{req("", `"`+strings.Repeat("é", 100)+`"`)}, strings.Repeat("é", 58) + "…"},
		{"no space before the cut", []ev{req("", `"`+strings.Repeat("a", 116)+" "+strings.Repeat("b", 20)+`"`)}, strings.Repeat("a", 116) + "…"},
		{"exactly 120 bytes is not cut", []ev{req("", `"`+strings.Repeat("x", 120)+`"`)}, strings.Repeat("x", 120)},
		{"control characters collapse like white space", []ev{req("", `"a\u0000b\u001b[31mred\u0085c\u007f"`)}, "a b [31mred c"},
		{"a text of control characters gives the payload type", []ev{req("acme.ctl.v1", `{"text":"\u0000\u0001"}`)}, "acme.ctl.v1"},
	}
	for _, c := range cases {
		run, thread := g.ids.RunID(), g.ids.ThreadID()
		for _, e := range c.evs {
			m := g.msg(key{run: run, thread: thread, task: g.ids.TaskID(), typ: e.typ, agent: "agent:ui"})
			m.PayloadType, m.Payload = e.payloadType, json.RawMessage(e.payload)
			appendOK(t, s, m)
		}
		r, th := summaryOf(t, s, run, thread)
		if r.Title != c.want || th.Title != c.want {
			t.Errorf("%s: run title %q, thread title %q; want %q", c.name, r.Title, th.Title, c.want)
		}
		if len(r.Title) > 120 {
			t.Errorf("%s: a title of %d bytes", c.name, len(r.Title))
		}
	}
	checkSummaries(t, s)
}

// testSummaryAgents pins store.Summary.Agents and AgentsMore: the agents
// of task.accept events, each once, in the order of their first
// acceptance; 8 named, the others counted, up to 64 remembered.
func testSummaryAgents(t *testing.T, su *suite) {
	s := su.open(t)
	g := newGen(49)
	agent := func(i int) string { return "agent:a" + strconv.Itoa(i) }
	accepts := func(run, thread string, order ...int) {
		var msgs []*protocol.Message
		for _, i := range order {
			task := g.ids.TaskID()
			msgs = append(msgs,
				g.msg(key{run: run, thread: thread, task: task, typ: protocol.TypeTaskRequest, agent: "agent:ui"}),
				g.msg(key{run: run, thread: thread, task: task, typ: protocol.TypeTaskAccept, agent: agent(i)}),
				// Other types of the agent do not count.
				g.msg(key{run: run, thread: thread, task: task, typ: protocol.TypeTaskResult, agent: agent(100 + i)}))
		}
		appendOK(t, s, msgs...)
	}
	want := func(n int) []string {
		var out []string
		for i := range n {
			out = append(out, agent(i))
		}
		return out
	}

	run, thread := g.ids.RunID(), g.ids.ThreadID()
	accepts(run, thread, 0, 1, 0, 2)
	if r, th := summaryOf(t, s, run, thread); !slices.Equal(r.Agents, want(3)) || r.AgentsMore != 0 || !slices.Equal(th.Agents, want(3)) {
		t.Fatalf("three agents, one twice: run %v +%d, thread %v", r.Agents, r.AgentsMore, th.Agents)
	}
	accepts(run, thread, 3, 4, 5, 1, 6, 7, 8, 2, 9, 10, 9)
	if r, th := summaryOf(t, s, run, thread); !slices.Equal(r.Agents, want(8)) || r.AgentsMore != 3 || !slices.Equal(th.Agents, want(8)) || th.AgentsMore != 3 {
		t.Fatalf("eleven agents: run %v +%d, thread %v +%d; want 8 named and 3 more", r.Agents, r.AgentsMore, th.Agents, th.AgentsMore)
	}

	many, manyThread := g.ids.RunID(), g.ids.ThreadID()
	var order []int
	for i := range 70 {
		order = append(order, i, i/2)
	}
	accepts(many, manyThread, order...)
	if r, _ := summaryOf(t, s, many, manyThread); !slices.Equal(r.Agents, want(8)) || r.AgentsMore != 56 {
		t.Fatalf("seventy agents: %v +%d; want 8 named and 56 more (64 remembered)", r.Agents, r.AgentsMore)
	}

	none, noneThread := g.ids.RunID(), g.ids.ThreadID()
	appendOK(t, s, g.msg(key{run: none, thread: noneThread, typ: protocol.TypeChatMessage}))
	if r, th := summaryOf(t, s, none, noneThread); r.Agents != nil || r.AgentsMore != 0 || th.Agents != nil {
		t.Fatalf("no acceptance: run %#v +%d, thread %#v", r.Agents, r.AgentsMore, th.Agents)
	}
	checkSummaries(t, s)
}

// detailStep is one append of a case of testSummaryWaitingAndFailure and
// the run summary after it.
type detailStep struct {
	msgs    []*protocol.Message
	waiting int
	status  string
	failure *store.Failure
}

// testSummaryWaitingAndFailure pins store.Summary.Waiting and Failure:
// a question makes its task wait until an answer, a later attempt or its
// end; the latest task.error or task.timeout that ends a task is the
// failure, with its task, agent (details.agent first), code and message
// cut to 200 bytes, until the status is completed.
func testSummaryWaitingAndFailure(t *testing.T, su *suite) {
	s := su.open(t)
	g := newGen(50)
	one := func(m ...*protocol.Message) []*protocol.Message { return m }
	from := func(agent string, m *protocol.Message) *protocol.Message {
		m.From.AgentID = agent
		return m
	}
	long := strings.Repeat("é", 150) // 300 bytes
	toolFailed := `{"code":"TOOL_FAILED","message":"` + long + `","retryable":false}`
	timeout := `{"code":"TIMEOUT","message":"ran out of time","retryable":true,"details":{"agent":"agent:slow","max_runtime_sec":5}}`
	deadline := `{"code":"TIMEOUT","message":"no answer by the deadline","retryable":false}`
	question := `{"question_id":"q","index":0,"text":"Which market?"}`

	cases := map[string]func(l *life) []detailStep{
		"asked, answered, resumed": func(l *life) []detailStep {
			t1 := g.ids.TaskID()
			return []detailStep{
				{one(l.ev(t1, protocol.TypeTaskRequest, 1, "")), 0, store.StatusRunning, nil},
				{one(l.ev(t1, protocol.TypeRoutingDecision, 1, ""), l.ev(t1, protocol.TypeTaskAccept, 1, "")), 0, store.StatusRunning, nil},
				{one(l.ev(t1, protocol.TypeTaskQuestion, 1, question)), 1, store.StatusRunning, nil},
				{one(l.ev(t1, protocol.TypeTaskQuestion, 1, question)), 1, store.StatusRunning, nil},
				{one(l.ev(t1, protocol.TypeTaskAnswer, 1, `{"question_id":"q","value":"fintech"}`)), 0, store.StatusRunning, nil},
				{one(l.ev(t1, protocol.TypeRoutingDecision, 2, ""), l.ev(t1, protocol.TypeTaskAccept, 2, "")), 0, store.StatusRunning, nil},
				{one(l.ev(t1, protocol.TypeTaskQuestion, 2, question)), 1, store.StatusRunning, nil},
				// A later attempt runs without an answer: nobody waits.
				{one(l.ev(t1, protocol.TypeRoutingDecision, 3, "")), 0, store.StatusRunning, nil},
				{one(l.ev(t1, protocol.TypeTaskResult, 3, "")), 0, store.StatusCompleted, nil},
			}
		},
		"two waiting, one ends at its deadline": func(l *life) []detailStep {
			t1, t2 := g.ids.TaskID(), g.ids.TaskID()
			return []detailStep{
				{one(l.ev(t1, protocol.TypeTaskRequest, 1, ""), l.ev(t2, protocol.TypeTaskRequest, 1, "")), 0, store.StatusRunning, nil},
				{one(l.ev(t1, protocol.TypeTaskQuestion, 1, question), l.ev(t2, protocol.TypeTaskQuestion, 1, question)), 2, store.StatusRunning, nil},
				{one(l.ev(t1, protocol.TypeTaskError, 1, deadline)), 1, store.StatusRunning,
					&store.Failure{TaskID: t1, AgentID: "agent:router", Code: "TIMEOUT", Message: "no answer by the deadline"}},
				{one(l.ev(t2, protocol.TypeTaskAnswer, 1, "")), 0, store.StatusRunning,
					&store.Failure{TaskID: t1, AgentID: "agent:router", Code: "TIMEOUT", Message: "no answer by the deadline"}},
				{one(l.ev(t2, protocol.TypeTaskResult, 1, "")), 0, store.StatusCompleted, nil},
			}
		},
		"failed, retried, timed out, completed": func(l *life) []detailStep {
			t1 := g.ids.TaskID()
			ken := &store.Failure{TaskID: t1, AgentID: "agent:ken", Code: "TOOL_FAILED", Message: strings.Repeat("é", 98) + "…"}
			slow := &store.Failure{TaskID: t1, AgentID: "agent:slow", Code: "TIMEOUT", Message: "ran out of time"}
			return []detailStep{
				{one(l.ev(t1, protocol.TypeTaskRequest, 1, ""), from("agent:ken", l.ev(t1, protocol.TypeTaskAccept, 1, ""))), 0, store.StatusRunning, nil},
				{one(from("agent:ken", l.ev(t1, protocol.TypeTaskError, 1, retryError))), 0, store.StatusRunning, nil},
				{one(from("agent:ken", l.ev(t1, protocol.TypeTaskError, 2, toolFailed))), 0, store.StatusFailed, ken},
				{one(l.ev(t1, protocol.TypeRoutingDecision, 3, "")), 0, store.StatusRunning, ken},
				{one(l.ev(t1, protocol.TypeTaskTimeout, 3, timeout)), 0, store.StatusTimedOut, slow},
				{one(l.ev(t1, protocol.TypeRoutingDecision, 4, "")), 0, store.StatusRunning, slow},
				{one(l.ev(t1, protocol.TypeTaskResult, 4, "")), 0, store.StatusCompleted, nil},
			}
		},
		"a cancel keeps the failure; an unreadable error payload": func(l *life) []detailStep {
			p, c := g.ids.TaskID(), g.ids.TaskID()
			return []detailStep{
				{one(l.ev(p, protocol.TypeTaskRequest, 1, ""), l.ev(c, protocol.TypeTaskRequest, 1, "")), 0, store.StatusRunning, nil},
				{one(l.ev(c, protocol.TypeTaskError, 1, `"boom"`)), 0, store.StatusRunning, &store.Failure{TaskID: c, AgentID: "agent:router"}},
				{one(l.ev(p, protocol.TypeTaskCancel, 1, "")), 0, store.StatusCancelled, &store.Failure{TaskID: c, AgentID: "agent:router"}},
			}
		},
		"a failure in unusual text is kept as it is": func(l *life) []detailStep {
			t1 := g.ids.TaskID()
			odd := `{"code":"TOOL\u0000FAILED","message":"line 1\nline 2\u0000end","retryable":false,"details":{"agent":"agent:\u0000x"}}`
			return []detailStep{
				{one(l.ev(t1, protocol.TypeTaskRequest, 1, ""), l.ev(t1, protocol.TypeTaskError, 1, odd)), 0, store.StatusFailed,
					&store.Failure{TaskID: t1, AgentID: "agent:\x00x", Code: "TOOL\x00FAILED", Message: "line 1\nline 2\x00end"}},
			}
		},
		"questions and answers that change nothing": func(l *life) []detailStep {
			t1 := g.ids.TaskID()
			return []detailStep{
				// A question of a task whose request is not in the store.
				{one(l.ev(g.ids.TaskID(), protocol.TypeTaskQuestion, 1, question)), 0, store.StatusActive, nil},
				{one(l.ev(t1, protocol.TypeTaskRequest, 1, "")), 0, store.StatusRunning, nil},
				{one(l.ev(t1, protocol.TypeTaskAnswer, 1, "")), 0, store.StatusRunning, nil},
				{one(l.ev(t1, protocol.TypeTaskResult, 1, "")), 0, store.StatusCompleted, nil},
				// After the end: no waiting.
				{one(l.ev(t1, protocol.TypeTaskQuestion, 1, question)), 0, store.StatusCompleted, nil},
			}
		},
	}
	for name, steps := range cases {
		l := &life{g: g, run: g.ids.RunID(), thread: g.ids.ThreadID()}
		for i, st := range steps(l) {
			appendOK(t, s, st.msgs...)
			CheckLister(t, s)
			r, th := summaryOf(t, s, l.run, l.thread)
			for _, got := range []store.Summary{r, th} {
				if got.Waiting != st.waiting || got.Status != st.status || !cmp.Equal(got.Failure, st.failure) {
					t.Errorf("%s, step %d (%s): waiting %d, status %q, failure %+v; want %d, %q, %+v",
						name, i, got.ID, got.Waiting, got.Status, got.Failure, st.waiting, st.status, st.failure)
				}
			}
		}
	}
	checkSummaries(t, s)
}
