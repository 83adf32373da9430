package storetest

import (
	"errors"
	"testing"

	"github.com/clutchprotocol/clutch/store"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// loadWorkload appends n interleaved workload messages in batches of
// varying size and returns the model.
func loadWorkload(t *testing.T, s store.Store, seed uint64, n int) model {
	t.Helper()
	msgs := newGen(seed).workload(n)
	var m model
	for i := 0; i < len(msgs); {
		k := min(1+i%7, len(msgs)-i)
		res := appendOK(t, s, msgs[i:i+k]...)
		for j, r := range res {
			if r.Duplicate {
				t.Fatalf("workload message %d reported as a duplicate", i+j)
			}
		}
		m = append(m, msgs[i:i+k]...)
		i += k
	}
	return m
}

func checkRead(t *testing.T, s store.Store, m model, q store.Query) {
	t.Helper()
	got := seqsOf(readAll(t, s, q))
	if diff := cmp.Diff(m.want(q), got, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("Read(%+v) seqs (-want +got):\n%s", q, diff)
	}
}

// indexCase checks one index: every value, in seq order, with limits,
// after-seq and a type prefix on top.
func indexCase(query func(key) store.Query) func(*testing.T, *suite) {
	return func(t *testing.T, su *suite) {
		s := su.open(t)
		m := loadWorkload(t, s, 11, 700) // more than one page of the driver
		seen := map[store.Query]bool{}
		for _, msg := range m {
			q := query(key{run: msg.RunID, thread: msg.ThreadID, task: msg.TaskID, agent: msg.From.AgentID})
			if seen[q] {
				continue
			}
			seen[q] = true
			checkRead(t, s, m, q)
			all := m.want(q)
			for _, limit := range []int{1, 2, 5, len(all)} {
				q2 := q
				q2.Limit = limit
				checkRead(t, s, m, q2)
			}
			for _, after := range []uint64{0, all[0], all[len(all)/2], all[len(all)-1], uint64(len(m))} {
				q2 := q
				q2.AfterSeq = after
				checkRead(t, s, m, q2)
				q2.Limit = 3
				checkRead(t, s, m, q2)
			}
			for _, p := range []string{"task.", "task.result", "x.", "nothing"} {
				q2 := q
				q2.TypePrefix = p
				checkRead(t, s, m, q2)
			}
		}
		none := query(key{run: "run_none", thread: "thr_none", task: "task_none", agent: "agent:none"})
		if evs := readAll(t, s, none); len(evs) != 0 {
			t.Fatalf("Read(%+v) of an unknown value returned %d events", none, len(evs))
		}
	}
}

// A type prefix alone scans the whole log in order.
func testReadByTypePrefix(t *testing.T, su *suite) {
	s := su.open(t)
	m := loadWorkload(t, s, 12, 400)
	for _, p := range []string{"", "task.", "task.request", "routing.", "x.acme.", "t", "zzz"} {
		checkRead(t, s, m, store.Query{TypePrefix: p})
		checkRead(t, s, m, store.Query{TypePrefix: p, AfterSeq: 100, Limit: 17})
	}
}

// Several fields combine with AND.
func testReadCombined(t *testing.T, su *suite) {
	s := su.open(t)
	m := loadWorkload(t, s, 13, 400)
	for _, msg := range m[:40] {
		for _, q := range []store.Query{
			{RunID: msg.RunID, AgentID: msg.From.AgentID},
			{RunID: msg.RunID, ThreadID: msg.ThreadID},
			{ThreadID: msg.ThreadID, TaskID: msg.TaskID, TypePrefix: "task."},
			{RunID: msg.RunID, ThreadID: msg.ThreadID, TaskID: msg.TaskID, AgentID: msg.From.AgentID, TypePrefix: string(msg.Type)},
			{RunID: msg.RunID, TaskID: "task_other"},
		} {
			checkRead(t, s, m, q)
			q.Limit, q.AfterSeq = 2, 50
			checkRead(t, s, m, q)
		}
	}
}

// Paging with Limit and AfterSeq = the last seq seen reads everything once.
func testReadResumeAfterSeq(t *testing.T, su *suite) {
	s := su.open(t)
	m := loadWorkload(t, s, 14, 600)
	for _, q := range []store.Query{{}, {RunID: m[0].RunID}, {AgentID: m[5].From.AgentID, TypePrefix: "task."}} {
		for _, limit := range []int{1, 7, 256, 257} {
			var got []uint64
			after := q.AfterSeq
			for {
				q2 := q
				q2.AfterSeq, q2.Limit = after, limit
				page := seqsOf(readAll(t, s, q2))
				if len(page) > limit {
					t.Fatalf("Read with Limit %d returned %d events", limit, len(page))
				}
				if len(page) == 0 {
					break
				}
				got = append(got, page...)
				after = page[len(page)-1]
			}
			if diff := cmp.Diff(m.want(q), got, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("paged Read(%+v) by %d (-want +got):\n%s", q, limit, diff)
			}
		}
	}
	if evs := readAll(t, s, store.Query{AfterSeq: uint64(len(m)) + 10}); len(evs) != 0 {
		t.Fatalf("Read after the end returned %d events", len(evs))
	}
}

func testReadInvalidQuery(t *testing.T, su *suite) {
	s := su.open(t)
	appendOK(t, s, newGen(15).simple(2)...)
	for name, seq := range map[string]func() (int, error){
		"Read":   func() (int, error) { return drain(s.Read(t.Context(), store.Query{Limit: -1})) },
		"Follow": func() (int, error) { return drain(s.Follow(t.Context(), store.Query{Limit: -1})) },
	} {
		n, err := seq()
		if n != 0 || !errors.Is(err, store.ErrInvalidQuery) {
			t.Fatalf("%s with Limit -1: %d events, %v; want ErrInvalidQuery", name, n, err)
		}
	}
}

// Read stops at the end of the log as it was when the loop started.
func testReadSnapshotEnd(t *testing.T, su *suite) {
	s := su.open(t)
	g := newGen(16)
	appendOK(t, s, g.simple(300)...)
	n := 0
	for e, err := range s.Read(t.Context(), store.Query{}) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Seq == 1 {
			appendOK(t, s, g.simple(5)...)
		}
		n++
	}
	if n != 300 {
		t.Fatalf("Read returned %d events, want the 300 present when it started", n)
	}
}

func drain(seq func(func(store.Event, error) bool)) (n int, err error) {
	for _, e := range seq {
		if e != nil {
			return n, e
		}
		n++
	}
	return n, nil
}
