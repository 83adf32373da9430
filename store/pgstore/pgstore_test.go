package pgstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/pgstore"
	"github.com/clutchprotocol/clutch/store/storetest"
	"github.com/jackc/pgx/v5"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openStore(t, nil) }, storetest.Options{Reopen: reopen, Remover: true, Conditional: true})
}

// Sequence numbers past PostgreSQL's bigint, given by a caller: nothing
// comes after one, everything comes before one.
func TestSeqBeyondBigint(t *testing.T) {
	s := openStore(t, nil)
	if _, err := s.Append(t.Context(), msgs(3)...); err != nil {
		t.Fatal(err)
	}
	for _, after := range []uint64{1<<63 - 1, 1 << 63, 1<<64 - 1} {
		for ev, err := range s.Read(t.Context(), store.Query{AfterSeq: after}) {
			t.Fatalf("Read after %d: seq %d, %v; want nothing", after, ev.Seq, err)
		}
	}
	// Follow would yield the events at once if it read them; nothing within
	// the bound is the pass.
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	for ev, err := range s.Follow(ctx, store.Query{AfterSeq: 1 << 63}) {
		if err != nil {
			break
		}
		t.Fatalf("Follow after 2^63: seq %d; want nothing", ev.Seq)
	}
	for _, before := range []uint64{1 << 63, 1<<64 - 1} {
		n := 0
		for _, err := range s.Runs(t.Context(), store.ListQuery{Before: before}) {
			if err != nil {
				t.Fatal(err)
			}
			n++
		}
		if n != 1 {
			t.Fatalf("Runs before %d: %d runs, want 1", before, n)
		}
	}
}

// The store's sessions run without JIT compilation: its statements touch
// a few rows by index, and a compilation (milliseconds) that the planner
// starts on a high estimate cost more than the statement.
func TestSessionsWithoutJIT(t *testing.T) {
	s := openStore(t, nil)
	if v, err := pgstore.Setting(t.Context(), s, "jit"); err != nil || v != "off" {
		t.Fatalf("jit = %q, %v; want off", v, err)
	}
}

// The append transaction looks summaries up by primary key, also with the
// plan it makes once per connection on a new store, whose tables look too
// small to be worth a probe: a plan that scanned the summaries instead
// would read all of them under the append lock at every commit.
func TestSummaryLookupProbes(t *testing.T) {
	c := cluster.Need(t)
	s := openStore(t, nil)
	if _, err := s.Append(t.Context(), msgs(3)...); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), c.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.Background())
	if _, err := tx.Exec(t.Context(), "SET LOCAL search_path TO "+s.Schema()); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), pgstore.ProbePlans); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), "PREPARE lookup AS "+pgstore.SummaryLookup); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(t.Context(), "EXPLAIN EXECUTE lookup('{run_a}', '{thr_a}')")
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	if strings.Count(plan, "Index Scan using summaries_pkey") != 2 || strings.Count(plan, " on summaries") != 2 {
		t.Fatalf("the lookup does not probe the primary key for each kind:\n%s", plan)
	}
}

// A read of a task's events probes the index of tasks also with the plan
// PostgreSQL keeps for every task (a prepared statement's generic plan),
// once the table has statistics: a plan that walked the log in seq order
// instead would read it from the first event to find a task's.
func TestTaskPageProbes(t *testing.T) {
	c := cluster.Need(t)
	s := openStore(t, nil)
	ms := msgs(3000)
	if _, err := s.Append(t.Context(), ms...); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(t.Context(), c.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), "SET search_path TO "+s.Schema()+"; ANALYZE; SET plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	sql, _ := pgstore.PageSQL(store.Query{TaskID: ms[0].TaskID, TypePrefix: "task."}, 0, 1<<63-1, 7)
	if _, err := conn.Exec(t.Context(), "PREPARE page AS "+sql); err != nil {
		t.Fatal(err)
	}
	rows, err := conn.Query(t.Context(), "EXPLAIN EXECUTE page(0, 9223372036854775807, '"+ms[0].TaskID+"', 'task.%', 7)")
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if plan := strings.Join(lines, "\n"); !strings.Contains(plan, "Index Scan using events_task") {
		t.Fatalf("a task's page does not probe events_task:\n%s", plan)
	}
}
