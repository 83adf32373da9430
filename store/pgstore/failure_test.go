package pgstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/internal/pgpeer"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/pgstore"
	"github.com/jackc/pgx/v5"
)

func msgs(n int) []*protocol.Message {
	ids := protocol.NewIDs(nil)
	run := ids.RunID()
	out := make([]*protocol.Message, n)
	for i := range out {
		m := ids.NewMessage(protocol.TypeTaskProgress, "agent:a")
		m.RunID = run
		m.To = []protocol.Participant{{AgentID: "agent:b"}}
		m.Payload = json.RawMessage(`{"i":1}`)
		out[i] = m
	}
	return out
}

// A schema of a newer version is refused with a SchemaError and left as
// it is; so is a schema holding other tables.
func TestNewerSchemaRefused(t *testing.T) {
	c := cluster.Need(t)
	s := openStore(t, nil)
	schema := s.Schema()
	s.Close()
	conn := adminConn(t, c)
	if _, err := conn.Exec(t.Context(), "UPDATE "+schema+".schema_version SET version = 99"); err != nil {
		t.Fatal(err)
	}
	_, err := pgstore.Open(t.Context(), c.DSN(""), &pgstore.Options{Schema: schema})
	var se *pgstore.SchemaError
	if !errors.As(err, &se) || se.Version != 99 || se.Supported != pgstore.SchemaVersion || !errors.Is(err, pgstore.ErrSchema) {
		t.Fatalf("Open of a version 99 schema: %v; want a SchemaError", err)
	}
	if protocol.CodeOf(err) != protocol.CodeUnsupportedVersion {
		t.Fatalf("code %s, want UNSUPPORTED_VERSION", protocol.CodeOf(err))
	}
	var v int
	if err := conn.QueryRow(t.Context(), "SELECT version FROM "+schema+".schema_version").Scan(&v); err != nil || v != 99 {
		t.Fatalf("version after the refused Open: %d, %v", v, err)
	}

	other := newSchema()
	if _, err := conn.Exec(t.Context(), "CREATE SCHEMA "+other+"; CREATE TABLE "+other+".users (id int)"); err != nil {
		t.Fatal(err)
	}
	if _, err := pgstore.Open(t.Context(), c.DSN(""), &pgstore.Options{Schema: other}); !errors.Is(err, pgstore.ErrSchema) {
		t.Fatalf("Open of a schema with other tables: %v, want ErrSchema", err)
	}
}

// Processes opening a new store at once create it once.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	c := cluster.Need(t)
	schema := newSchema()
	var wg sync.WaitGroup
	stores := make([]*pgstore.Store, 8)
	errs := make([]error, 8)
	for i := range stores {
		wg.Go(func() {
			stores[i], errs[i] = pgstore.Open(t.Context(), c.DSN(""), &pgstore.Options{Schema: schema})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Open %d: %v", i, err)
		}
		defer stores[i].Close()
	}
	res, err := stores[3].Append(t.Context(), msgs(2)...)
	if err != nil || res[1].Seq != 2 {
		t.Fatalf("Append: %v %v", res, err)
	}
	if n, _ := stores[5].LastSeq(t.Context()); n != 2 {
		t.Fatalf("another store sees LastSeq %d", n)
	}
}

func TestOptionsValidated(t *testing.T) {
	for _, o := range []pgstore.Options{{Schema: "Bad-Name"}, {Schema: "x; DROP"}, {MaxConns: -1}, {MaxBatch: -1}, {StatementTimeout: -1}} {
		if _, err := pgstore.Open(t.Context(), "host=/nonexistent", &o); !errors.Is(err, pgstore.ErrInvalidOptions) {
			t.Errorf("Open(%+v): %v, want ErrInvalidOptions", o, err)
		}
	}
}

// A database that cannot be reached gives a retryable ErrUnavailable.
func TestUnreachable(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, err := pgstore.Open(ctx, "host="+t.TempDir()+" port=5432 user=clutch dbname=postgres connect_timeout=2", nil)
	if !errors.Is(err, pgstore.ErrUnavailable) || !protocol.CodeOf(err).Retryable() {
		t.Fatalf("Open of a missing server: %v (code %s), want a retryable ErrUnavailable", err, protocol.CodeOf(err))
	}
}

// holdAppendLock takes the append lock of s in a transaction of its own
// connection to dsn, which is closed when the test ends.
func holdAppendLock(t *testing.T, dsn string, s *pgstore.Store) pgx.Tx {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(t.Context(), "SELECT seq FROM "+s.Schema()+".head FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	return tx
}

// An append that waits past StatementTimeout for the append lock fails
// with ErrTimeout, stores nothing, and the store works afterwards.
func TestStatementTimeout(t *testing.T) {
	c := cluster.Need(t)
	s := openStore(t, &pgstore.Options{StatementTimeout: 300 * time.Millisecond})
	tx := holdAppendLock(t, c.DSN(""), s)
	_, err := s.Append(t.Context(), msgs(3)...)
	if !errors.Is(err, pgstore.ErrTimeout) || !protocol.CodeOf(err).Retryable() {
		t.Fatalf("Append behind a held lock: %v, want a retryable ErrTimeout", err)
	}
	tx.Rollback(t.Context())
	if n, err := s.LastSeq(t.Context()); n != 0 || err != nil {
		t.Fatalf("LastSeq after the timeout = %d, %v; want nothing stored", n, err)
	}
	if res, err := s.Append(t.Context(), msgs(1)...); err != nil || res[0].Seq != 1 {
		t.Fatalf("Append after the timeout: %v, %v", res, err)
	}
}

// Cancelling an Append that waits for the lock returns at once with the
// context's error.
func TestAppendCancelWhileWaiting(t *testing.T) {
	c := cluster.Need(t)
	s := openStore(t, nil)
	tx := holdAppendLock(t, c.DSN(""), s)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if _, err := s.Append(ctx, msgs(1)...); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Append: %v, want DeadlineExceeded", err)
	}
	tx.Rollback(t.Context())
	// The group it was in may commit once the lock is free; a retry is
	// a duplicate or a fresh append, never a second copy.
	m := msgs(1)
	if _, err := s.Append(t.Context(), m...); err != nil {
		t.Fatal(err)
	}
	if res, err := s.Append(t.Context(), m[0].Clone()); err != nil || !res[0].Duplicate {
		t.Fatalf("retry: %v %v", res, err)
	}
}

// The database restarts under the store: appends during the outage fail
// with a retryable ErrUnavailable and store nothing; a follower keeps
// following and sees every event once; after the restart the store works
// without being reopened.
func TestDatabaseRestart(t *testing.T) {
	c := pgpeer.StartT(t)
	ctx := t.Context()
	s, err := pgstore.Open(ctx, c.DSN(""), &pgstore.Options{PollInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Append(ctx, msgs(5)...); err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan uint64, 100)
	ferr := make(chan error, 1)
	go func() {
		for ev, err := range s.Follow(fctx, store.Query{}) {
			if err != nil {
				ferr <- err
				return
			}
			got <- ev.Seq
		}
		close(got)
	}()
	for want := uint64(1); want <= 5; want++ {
		if seq := <-got; seq != want {
			t.Fatalf("follower: seq %d, want %d", seq, want)
		}
	}
	if err := c.StopServer(ctx); err != nil {
		t.Fatal(err)
	}
	down := msgs(3)
	_, err = s.Append(ctx, down...)
	if !errors.Is(err, pgstore.ErrUnavailable) || !protocol.CodeOf(err).Retryable() {
		t.Fatalf("Append while the server is down: %v, want a retryable ErrUnavailable", err)
	}
	if _, err := s.Get(ctx, "msg_x"); !errors.Is(err, pgstore.ErrUnavailable) {
		t.Fatalf("Get while the server is down: %v", err)
	}
	if err := c.StartServer(ctx); err != nil {
		t.Fatal(err)
	}
	// The pool may hand out a connection that died with the server once;
	// the caller retries a retryable error, as it would after a failover.
	var res []store.AppendResult
	for try := 0; ; try++ {
		res, err = s.Append(ctx, down...)
		if err == nil {
			break
		}
		if !errors.Is(err, pgstore.ErrUnavailable) || try == 5 {
			t.Fatalf("Append after the restart: %v", err)
		}
	}
	if res[0].Seq != 6 || res[0].Duplicate {
		t.Fatalf("Append after the restart: %+v; want seq 6: the failed append stored nothing", res)
	}
	for want := uint64(6); want <= 8; want++ {
		select {
		case seq := <-got:
			if seq != want {
				t.Fatalf("follower after the restart: seq %d, want %d", seq, want)
			}
		case err := <-ferr:
			t.Fatalf("follower ended: %v", err)
		case <-time.After(20 * time.Second):
			t.Fatalf("follower did not see seq %d after the restart", want)
		}
	}
}

// A store of schema version 1 (events, no summaries) is migrated to the
// current version on Open, and the summaries of its events are computed:
// the same as those kept while appending.
func TestMigrationBackfillsSummaries(t *testing.T) {
	c := cluster.Need(t)
	s := openStore(t, nil)
	ids := protocol.NewIDs(nil)
	var all []*protocol.Message
	for i := range 3 {
		req := ids.NewMessage(protocol.TypeTaskRequest, "agent:ui")
		req.To = []protocol.Participant{{AgentID: "agent:orchestrator"}}
		req.Payload = json.RawMessage(`{}`)
		acc := ids.Reply(req, protocol.TypeTaskAccept, "agent:ken")
		res := ids.Reply(req, protocol.TypeTaskResult, "agent:ken")
		res.Payload = json.RawMessage(`{}`)
		if i == 1 {
			res = ids.Reply(req, protocol.TypeTaskError, "agent:ken")
			res.Payload = json.RawMessage(`{"code":"TOOL_FAILED","message":"no","retryable":false}`)
		}
		chat := ids.Reply(req, protocol.TypeChatMessage, "agent:ken")
		chat.Payload = json.RawMessage(`{"text":"hi"}`)
		chat.Meta = map[string]any{"ui_channel": "general"}
		all = append(all, req, acc, chat, res)
	}
	open := ids.NewMessage(protocol.TypeTaskRequest, "agent:ui")
	open.To = []protocol.Participant{{AgentID: "agent:orchestrator"}}
	open.Payload = json.RawMessage(`{}`)
	ask := ids.Reply(open, protocol.TypeTaskQuestion, "agent:ken")
	ask.Payload = json.RawMessage(`{"question_id":"q","index":0,"text":"Which?"}`)
	all = append(all, open, ask)
	if _, err := s.Append(t.Context(), all...); err != nil {
		t.Fatal(err)
	}
	list := func(s *pgstore.Store) (runs, threads []store.Summary) {
		for sum, err := range s.Runs(t.Context(), store.ListQuery{}) {
			if err != nil {
				t.Fatal(err)
			}
			runs = append(runs, sum)
		}
		for sum, err := range s.Threads(t.Context(), store.ListQuery{}) {
			if err != nil {
				t.Fatal(err)
			}
			threads = append(threads, sum)
		}
		return runs, threads
	}
	runs, threads := list(s)
	if len(runs) != 4 || runs[0].Status != store.StatusRunning || runs[0].Waiting != 1 || runs[1].Status != store.StatusCompleted ||
		threads[1].Channel != "general" || runs[1].Title != "hi" || runs[2].Failure == nil || runs[2].Agents[0] != "agent:ken" {
		t.Fatalf("summaries before: %+v %+v", runs, threads)
	}
	s.Close()
	conn := adminConn(t, c)
	q := s.Schema()
	if _, err := conn.Exec(t.Context(), "DROP TABLE "+q+".summaries, "+q+".task_states; UPDATE "+q+".schema_version SET version = 1"); err != nil {
		t.Fatal(err)
	}
	s2, err := pgstore.Open(t.Context(), c.DSN(""), &pgstore.Options{Schema: q})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	runs2, threads2 := list(s2)
	if !reflect.DeepEqual(runs, runs2) || !reflect.DeepEqual(threads, threads2) {
		t.Fatalf("backfilled summaries differ:\nruns    %+v\nbackfill %+v\nthreads  %+v\nbackfill %+v", runs, runs2, threads, threads2)
	}
}

// A store of schema version 2 (summaries without titles, agents,
// failures and waiting tasks) is migrated to the current version on Open:
// its summaries read as having none of them, with no error, and the
// events appended after fold into them. The migration's file runs again
// without harm.
func TestMigrationFromVersion2(t *testing.T) {
	c := cluster.Need(t)
	s := openStore(t, nil)
	ids := protocol.NewIDs(nil)
	req := ids.NewMessage(protocol.TypeTaskRequest, "agent:ui")
	req.To = []protocol.Participant{{AgentID: "agent:orchestrator"}}
	req.Payload = json.RawMessage(`"Compare the rails"`)
	acc := ids.Reply(req, protocol.TypeTaskAccept, "agent:ken")
	ask := ids.Reply(req, protocol.TypeTaskQuestion, "agent:ken")
	ask.Payload = json.RawMessage(`{"question_id":"q","index":0,"text":"Which?"}`)
	if _, err := s.Append(t.Context(), req, acc, ask); err != nil {
		t.Fatal(err)
	}
	s.Close()
	conn := adminConn(t, c)
	q := s.Schema()
	if _, err := conn.Exec(t.Context(), "ALTER TABLE "+q+".summaries DROP COLUMN title, DROP COLUMN waiting, DROP COLUMN agents, DROP COLUMN failure; "+
		"ALTER TABLE "+q+".task_states DROP COLUMN waiting; UPDATE "+q+".schema_version SET version = 2"); err != nil {
		t.Fatal(err)
	}
	s2, err := pgstore.Open(t.Context(), c.DSN(""), &pgstore.Options{Schema: q})
	if err != nil {
		t.Fatalf("Open of a version 2 store: %v", err)
	}
	defer s2.Close()
	var version int
	if err := conn.QueryRow(t.Context(), "SELECT version FROM "+q+".schema_version").Scan(&version); err != nil || version != pgstore.SchemaVersion {
		t.Fatalf("schema version %d, %v; want %d", version, err, pgstore.SchemaVersion)
	}
	runs := collect(t, s2.Runs(t.Context(), store.ListQuery{}))
	if len(runs) != 1 || runs[0].Title != "" || runs[0].Agents != nil || runs[0].Waiting != 0 || runs[0].Failure != nil || runs[0].Events != 3 {
		t.Fatalf("a version 2 summary: %+v", runs)
	}
	fail := ids.Reply(req, protocol.TypeTaskError, "agent:ken")
	fail.Payload = json.RawMessage(`{"code":"TOOL_FAILED","message":"no","retryable":false}`)
	acc2 := ids.Reply(req, protocol.TypeTaskAccept, "agent:ada")
	if _, err := s2.Append(t.Context(), acc2, fail); err != nil {
		t.Fatal(err)
	}
	runs = collect(t, s2.Runs(t.Context(), store.ListQuery{}))
	want := &store.Failure{TaskID: req.TaskID, AgentID: "agent:ken", Code: protocol.CodeToolFailed, Message: "no"}
	if len(runs) != 1 || !reflect.DeepEqual(runs[0].Failure, want) || !reflect.DeepEqual(runs[0].Agents, []string{"agent:ada"}) ||
		runs[0].Waiting != 0 || runs[0].Status != store.StatusFailed {
		t.Fatalf("after more events: %+v", runs)
	}
	sql, err := os.ReadFile("migrations/0003_summary_details.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), "SET search_path TO "+q+"; "+string(sql)); err != nil {
		t.Fatalf("the migration again: %v", err)
	}
	if again := collect(t, s2.Runs(t.Context(), store.ListQuery{})); !reflect.DeepEqual(again, runs) {
		t.Fatalf("after the migration ran again: %+v, want %+v", again, runs)
	}
}

// A store of schema version 5 (summaries without bytes) is migrated to
// the current version on Open: the migration computes every run's and
// thread's Bytes from its events, equal to the ones kept while appending,
// also for a thread whose other run was removed; appends fold on top; the
// migration's file runs again without harm.
func TestMigrationFromVersion5(t *testing.T) {
	c := cluster.Need(t)
	s := openStore(t, nil)
	ids := protocol.NewIDs(nil)
	thread := ids.ThreadID()
	var reqs []*protocol.Message
	for i := range 3 {
		req := ids.NewMessage(protocol.TypeTaskRequest, "agent:ui")
		req.ThreadID = thread
		req.To = []protocol.Participant{{AgentID: "agent:orchestrator"}}
		req.Payload = json.RawMessage(`{"text":"` + strings.Repeat("é", 100*(i+1)) + `"}`)
		res := ids.Reply(req, protocol.TypeTaskResult, "agent:ken")
		res.Payload = json.RawMessage(`{}`)
		if _, err := s.Append(t.Context(), req, res); err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, req)
	}
	if _, err := s.RemoveRuns(t.Context(), []string{reqs[0].RunID}, store.Removal{Policy: "test"}); err != nil {
		t.Fatal(err)
	}
	runs, threads := collect(t, s.Runs(t.Context(), store.ListQuery{})), collect(t, s.Threads(t.Context(), store.ListQuery{}))
	if len(runs) != 2 || len(threads) != 1 || threads[0].Bytes != runs[0].Bytes+runs[1].Bytes || runs[0].Bytes <= runs[1].Bytes {
		t.Fatalf("summaries before: %+v %+v", runs, threads)
	}
	s.Close()
	conn := adminConn(t, c)
	q := s.Schema()
	if _, err := conn.Exec(t.Context(), "ALTER TABLE "+q+".summaries DROP COLUMN bytes; UPDATE "+q+".schema_version SET version = 5"); err != nil {
		t.Fatal(err)
	}
	s2, err := pgstore.Open(t.Context(), c.DSN(""), &pgstore.Options{Schema: q})
	if err != nil {
		t.Fatalf("Open of a version 5 store: %v", err)
	}
	defer s2.Close()
	if got := collect(t, s2.Runs(t.Context(), store.ListQuery{})); !reflect.DeepEqual(got, runs) {
		t.Fatalf("migrated runs %+v, want %+v", got, runs)
	}
	if got := collect(t, s2.Threads(t.Context(), store.ListQuery{})); !reflect.DeepEqual(got, threads) {
		t.Fatalf("migrated threads %+v, want %+v", got, threads)
	}
	more := ids.Reply(reqs[2], protocol.TypeChatMessage, "agent:ken")
	more.Payload = json.RawMessage(`{"text":"more"}`)
	if _, err := s2.Append(t.Context(), more); err != nil {
		t.Fatal(err)
	}
	raw, err := protocol.Encode(more)
	if err != nil {
		t.Fatal(err)
	}
	after := collect(t, s2.Threads(t.Context(), store.ListQuery{}))
	if len(after) != 1 || after[0].Bytes != threads[0].Bytes+int64(len(raw)) {
		t.Fatalf("after an append: %+v, want %d bytes", after, threads[0].Bytes+int64(len(raw)))
	}
	sql, err := os.ReadFile("migrations/0006_summary_bytes.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), "SET search_path TO "+q+"; "+string(sql)); err != nil {
		t.Fatalf("the migration again: %v", err)
	}
	if again := collect(t, s2.Threads(t.Context(), store.ListQuery{})); !reflect.DeepEqual(again, after) {
		t.Fatalf("after the migration ran again: %+v, want %+v", again, after)
	}
}

func collect(t *testing.T, seq func(func(store.Summary, error) bool)) []store.Summary {
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

// The connection of an append dies in the middle of its transaction (the
// server ends the session while it waits for the append lock): the
// append fails with a retryable ErrUnavailable, nothing of its batch is
// stored, and appending it again stores it once.
func TestConnectionKilledMidAppend(t *testing.T) {
	c := cluster.Need(t)
	s := openStore(t, nil)
	tx := holdAppendLock(t, c.DSN(""), s)
	batch := msgs(4)
	errc := make(chan error, 1)
	go func() {
		_, err := s.Append(t.Context(), batch...)
		errc <- err
	}()
	// Wait for the append's session to block on the lock, then end it.
	admin, err := pgx.Connect(t.Context(), c.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(context.Background())
	for {
		var n int
		err := admin.QueryRow(t.Context(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE application_name = 'clutch-pgstore' AND wait_event_type = 'Lock'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		select {
		case err := <-errc:
			t.Fatalf("Append returned %v before it waited for the lock", err)
		case <-time.After(5 * time.Millisecond): // the session has not reached the lock yet
		}
	}
	err = <-errc
	if !errors.Is(err, pgstore.ErrUnavailable) || !protocol.CodeOf(err).Retryable() {
		t.Fatalf("Append whose session was killed: %v, want a retryable ErrUnavailable", err)
	}
	tx.Rollback(t.Context())
	if n, _ := s.LastSeq(t.Context()); n != 0 {
		t.Fatalf("LastSeq = %d after the failed append, want 0", n)
	}
	res, err := s.Append(t.Context(), batch...)
	if err != nil || res[3].Seq != 4 || res[0].Duplicate {
		t.Fatalf("Append again: %+v, %v; want seqs 1-4", res, err)
	}
}

// A store of schema version 6 (an index on type, summaries indexed by
// kind and last_seq) is migrated to the current version on Open: the type
// index is gone and the summaries are indexed by last_seq; reads by a
// type prefix, alone or beside a field, find the same events, runs and
// threads list as before, and the migration's file runs again without
// harm.
func TestMigrationFromVersion6(t *testing.T) {
	c := cluster.Need(t)
	s := openStore(t, nil)
	ids := protocol.NewIDs(nil)
	var all []*protocol.Message
	for range 3 {
		req := ids.NewMessage(protocol.TypeTaskRequest, "agent:ui")
		req.To = []protocol.Participant{{AgentID: "agent:orchestrator"}}
		req.Payload = json.RawMessage(`{"text":"go"}`)
		res := ids.Reply(req, protocol.TypeTaskResult, "agent:ken")
		res.Payload = json.RawMessage(`{}`)
		chat := ids.Reply(req, protocol.TypeChatMessage, "agent:ken")
		chat.Payload = json.RawMessage(`{"text":"done"}`)
		all = append(all, req, res, chat)
	}
	if _, err := s.Append(t.Context(), all...); err != nil {
		t.Fatal(err)
	}
	runs, threads := collect(t, s.Runs(t.Context(), store.ListQuery{})), collect(t, s.Threads(t.Context(), store.ListQuery{}))
	if len(runs) != 3 || len(threads) != 3 {
		t.Fatalf("summaries before: %+v %+v", runs, threads)
	}
	s.Close()
	conn := adminConn(t, c)
	q := s.Schema()
	if _, err := conn.Exec(t.Context(), "SET search_path TO "+q+"; CREATE INDEX events_type ON events (type, seq); "+
		"DROP INDEX summaries_last; CREATE INDEX summaries_newest ON summaries (kind, last_seq DESC); UPDATE schema_version SET version = 6"); err != nil {
		t.Fatal(err)
	}
	s2, err := pgstore.Open(t.Context(), c.DSN(""), &pgstore.Options{Schema: q})
	if err != nil {
		t.Fatalf("Open of a version 6 store: %v", err)
	}
	defer s2.Close()
	var version int
	var indexes []string
	if err := conn.QueryRow(t.Context(), "SELECT (SELECT version FROM "+q+".schema_version), (SELECT array_agg(indexname ORDER BY indexname) FROM pg_indexes WHERE schemaname = $1 AND indexname IN ('events_type', 'summaries_newest', 'summaries_last'))", q).Scan(&version, &indexes); err != nil {
		t.Fatal(err)
	}
	if version != pgstore.SchemaVersion || !reflect.DeepEqual(indexes, []string{"summaries_last"}) {
		t.Fatalf("after Open: version %d, indexes %v; want %d, [summaries_last]", version, indexes, pgstore.SchemaVersion)
	}
	check := func(when string) {
		t.Helper()
		for _, c := range []struct {
			q    store.Query
			want []int // indexes in all
		}{
			{store.Query{TypePrefix: "task."}, []int{0, 1, 3, 4, 6, 7}},
			{store.Query{TypePrefix: string(protocol.TypeTaskRequest)}, []int{0, 3, 6}},
			{store.Query{TypePrefix: "chat.", AfterSeq: 3}, []int{5, 8}},
			{store.Query{TypePrefix: "task.", TaskID: all[3].TaskID}, []int{3, 4}},
			{store.Query{TypePrefix: "task.r", Limit: 2}, []int{0, 1}},
		} {
			var got []string
			for ev, err := range s2.Read(t.Context(), c.q) {
				if err != nil {
					t.Fatal(err)
				}
				m, err := ev.Message()
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, m.ID)
			}
			var want []string
			for _, i := range c.want {
				want = append(want, all[i].ID)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: Read %+v: %v, want %v", when, c.q, got, want)
			}
		}
	}
	check("migrated")
	if got := collect(t, s2.Runs(t.Context(), store.ListQuery{})); !reflect.DeepEqual(got, runs) {
		t.Fatalf("migrated runs %+v, want %+v", got, runs)
	}
	if got := collect(t, s2.Threads(t.Context(), store.ListQuery{Limit: 2})); !reflect.DeepEqual(got, threads[:2]) {
		t.Fatalf("migrated threads %+v, want %+v", got, threads[:2])
	}
	sql, err := os.ReadFile("migrations/0007_indexes.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), "SET search_path TO "+q+"; "+string(sql)); err != nil {
		t.Fatalf("the migration again: %v", err)
	}
	check("after the migration ran again")
}

// adminConn is a connection to c as its superuser, closed when the test
// ends (a test that changes a schema behind a store).
func adminConn(t *testing.T, c *pgpeer.Cluster) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), c.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}
