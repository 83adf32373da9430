package pgstore_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clutchprotocol/clutch/internal/pgpeer"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/pgstore"
	"github.com/clutchprotocol/clutch/store/storetest"
	"github.com/jackc/pgx/v5"
)

// lifecycle is the events of one task, in order: each task of the load
// ends with its one terminal event, so a run of whole tasks has ended.
var lifecycle = []protocol.Type{
	protocol.TypeTaskRequest, protocol.TypeTaskAccept, protocol.TypeTaskProgress,
	protocol.TypeToolCall, protocol.TypeToolResult, protocol.TypeTaskResult,
}

// pgDump runs the backup of the package doc ("# Backup and restore") on
// the store in schema of c's database "postgres": pg_dump of the
// cluster's version, custom format, into file.
func pgDump(ctx context.Context, t testing.TB, c *pgpeer.Cluster, schema, file string) {
	t.Helper()
	runTool(ctx, t, c.Tool(t, "pg_dump"), "--schema="+schema, "--format=custom", "--file="+file, "--dbname="+c.DSN(""))
}

// pgRestore restores file, as the package doc says, into database db of
// c, which must exist and hold no schema of the dump's name.
func pgRestore(ctx context.Context, t testing.TB, c *pgpeer.Cluster, file, db string) {
	t.Helper()
	runTool(ctx, t, c.Tool(t, "pg_restore"), "--no-owner", "--single-transaction", "--exit-on-error", "--dbname="+c.DSN(db), file)
}

// runTool runs a client program of the cluster and fails t with its
// output when it fails.
func runTool(ctx context.Context, t testing.TB, path string, args ...string) {
	t.Helper()
	out, err := exec.CommandContext(ctx, path, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %q: %v\n%s", filepath.Base(path), args, err, out)
	}
}

// newDatabase creates an empty database of c, dropped at the end of the
// test once the stores opened on it after this call are closed.
func newDatabase(t testing.TB, c *pgpeer.Cluster, name string) {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), c.DSN(""))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), c.DSN(""))
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(context.Background())
		// PostgreSQL waits up to 5 s for the sessions of closed pools to
		// end.
		if _, err := conn.Exec(context.Background(), "DROP DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
			t.Errorf("dropping the restored database: %v", err)
		}
	})
}

// acked is an Append acknowledged under the load.
type acked struct {
	seq        uint64
	msg        *protocol.Message
	start, end time.Time // the call, from its start to its acknowledgement
}

// load appends from n goroutines, one message per call, until stop is
// closed; every acknowledgement is recorded, in the order it came.
type load struct {
	mu    sync.Mutex
	acks  []acked
	stop  chan struct{}
	wg    sync.WaitGroup
	first chan struct{} // closed at the warm-th acknowledgement
	warm  int
	gone  chan struct{} // closed when every appender has returned
}

func startLoad(t testing.TB, s store.Store, ids *protocol.IDs, n, warm, runEvery int) *load {
	l := &load{stop: make(chan struct{}), first: make(chan struct{}), warm: warm, gone: make(chan struct{})}
	for a := range n {
		tr := storetest.NewTraffic(ids, a, lifecycle, runEvery)
		l.wg.Go(func() {
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				m := tr.Next()
				start := time.Now()
				res, err := s.Append(context.Background(), m)
				end := time.Now()
				if err != nil || res[0].Duplicate {
					t.Errorf("append under load: %+v, %v", res, err)
					return
				}
				l.mu.Lock()
				l.acks = append(l.acks, acked{res[0].Seq, m, start, end})
				if len(l.acks) == l.warm {
					close(l.first)
				}
				l.mu.Unlock()
			}
		})
	}
	go func() {
		l.wg.Wait()
		close(l.gone)
	}()
	return l
}

// warmed waits for the warm-th acknowledgement, and fails t if the
// appenders returned before it (an append failed).
func (l *load) warmed(t testing.TB) {
	t.Helper()
	select {
	case <-l.first:
	case <-l.gone:
		t.Fatal("the appenders stopped before the load was under way")
	}
}

// acknowledged returns how many appends have been acknowledged so far.
func (l *load) acknowledged() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acks)
}

// end stops the appenders and returns every acknowledgement.
func (l *load) end() []acked {
	close(l.stop)
	<-l.gone
	return l.acks
}

// latencies returns the p50 and p99 of the calls made wholly inside
// [from, to], and how many there were.
func latencies(acks []acked, from, to time.Time) (p50, p99 time.Duration, n int) {
	var d []time.Duration
	for _, a := range acks {
		if !a.start.Before(from) && !a.end.After(to) {
			d = append(d, a.end.Sub(a.start))
		}
	}
	if len(d) == 0 {
		return 0, 0, 0
	}
	slices.Sort(d)
	pct := func(p int) time.Duration { return d[max(0, (len(d)*p+99)/100-1)] }
	return pct(50), pct(99), len(d)
}

// drain reads seq to its end and returns the first error.
func drain(seq func(func(store.Event, error) bool)) (n int, err error) {
	for _, err := range seq {
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func readAll(t testing.TB, s store.Store, q store.Query) []store.Event {
	t.Helper()
	var out []store.Event
	for ev, err := range s.Read(t.Context(), q) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

// A backup is pg_dump of the store's schema, taken while 8 goroutines
// append; pg_restore of it into a new database of the cluster gives a
// store that holds every event acknowledged before the dump began, byte
// for byte under its seq, whose head and events agree, whose task
// lifecycles and summaries check out, with its presence beats,
// tombstones and artifacts, and that dedups, appends and follows from where the dump
// ended (the package doc, "# Backup and restore").
func TestDumpRestoreUnderLoad(t *testing.T) {
	c := cluster.Need(t)
	ctx := t.Context()
	schema := newSchema()
	src := openStore(t, &pgstore.Options{Schema: schema})
	ids := protocol.NewIDs(nil)

	// Before the load: two ended runs (whole tasks), one of them removed;
	// presence beats; an artifact.
	pre := storetest.NewTraffic(ids, 99, lifecycle, 2*len(lifecycle))
	var ended []*protocol.Message
	for range 4 * len(lifecycle) {
		ended = append(ended, pre.Next())
	}
	res, err := src.Append(ctx, ended...)
	if err != nil {
		t.Fatal(err)
	}
	removedRun := ended[0].RunID
	tombs, err := src.RemoveRuns(ctx, []string{removedRun}, store.Removal{Policy: "manual", Note: "before the dump"})
	if err != nil {
		t.Fatal(err)
	}
	for i, key := range []string{"agent:a", "agent:b", "node:1"} {
		if _, _, err := src.Beat(ctx, key, []byte{byte(i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := src.Beat(ctx, "agent:a", []byte("again")); err != nil {
		t.Fatal(err)
	}
	art, err := src.PutArtifact(ctx, "text/plain", []byte("kept across the dump"))
	if err != nil {
		t.Fatal(err)
	}
	// The events of the run that stays were acknowledged before the dump.
	var before []acked
	for i, m := range ended {
		if m.RunID != removedRun {
			before = append(before, acked{seq: res[i].Seq, msg: m})
		}
	}

	l := startLoad(t, src, ids, 8, 1000, 6*len(lifecycle))
	l.warmed(t)
	file := filepath.Join(t.TempDir(), "store.dump")
	n := l.acknowledged()
	dumpStart := time.Now()
	pgDump(ctx, t, c, schema, file)
	dumpEnd := time.Now()
	acks := l.end()
	before = append(before, acks[:n]...)
	during := l.acknowledged() - n
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	p50, p99, m := latencies(acks, dumpStart, dumpEnd)
	b50, b99, bm := latencies(acks, time.Time{}, dumpStart)
	t.Logf("pg_dump took %v for %d bytes; %d appends acknowledged while it ran (p50 %v, p99 %v over %d calls; before it: p50 %v, p99 %v over %d)",
		dumpEnd.Sub(dumpStart), fi.Size(), during, p50, p99, m, b50, b99, bm)

	db := "restore_" + schema
	newDatabase(t, c, db)
	pgRestore(ctx, t, c, file, db)
	dst, err := pgstore.Open(ctx, c.DSN(db), &pgstore.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dst.Close() })

	// The restored log is the source's log up to the restored head, byte
	// for byte: the dump is one snapshot.
	last, err := dst.LastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, dst, store.Query{})
	if len(got) == 0 || got[len(got)-1].Seq != last {
		t.Fatalf("restored LastSeq %d; the last restored event is %v", last, got[len(got)-1:])
	}
	var want []store.Event
	for _, ev := range readAll(t, src, store.Query{}) {
		if ev.Seq <= last {
			want = append(want, ev)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the restored log is not the source's up to seq %d (-source +restored):\n%s", last, diff)
	}
	// Nothing past the head is there, not even in part: events,
	// summaries and tombstones all stop at it.
	conn, err := pgx.Connect(ctx, c.DSN(db))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var head, maxEvent, maxSummary, maxTomb int64
	err = conn.QueryRow(ctx, fmt.Sprintf(`SELECT (SELECT seq FROM %[1]s.head),
		(SELECT coalesce(max(seq), 0) FROM %[1]s.events),
		(SELECT coalesce(max(last_seq), 0) FROM %[1]s.summaries),
		(SELECT coalesce(max(last_seq), 0) FROM %[1]s.tombstones)`, schema)).Scan(&head, &maxEvent, &maxSummary, &maxTomb)
	if err != nil {
		t.Fatal(err)
	}
	if uint64(head) != last || maxEvent != head || maxSummary != head || maxTomb > head {
		t.Fatalf("restored head %d; largest seq of the events %d, of the summaries %d, of the tombstones %d", head, maxEvent, maxSummary, maxTomb)
	}
	// Every event acknowledged before the dump began is there, as
	// acknowledged.
	bySeq := map[uint64]store.Event{}
	for _, ev := range got {
		bySeq[ev.Seq] = ev
	}
	for _, a := range before {
		raw, err := protocol.Encode(a.msg)
		if err != nil {
			t.Fatal(err)
		}
		if ev, ok := bySeq[a.seq]; !ok || !bytes.Equal(ev.Raw, raw) {
			t.Fatalf("event %d (%s), acknowledged before the dump, restored as %q", a.seq, a.msg.ID, ev.Raw)
		}
	}
	t.Logf("%d events acknowledged before the dump; %d restored (LastSeq %d); %d acknowledged in all", len(before), len(got), last, len(acks)+len(ended))

	// The restored store checks out: one terminal event per task, and
	// summaries that are the projection of its log.
	rep, err := storetest.CheckTerminals(ctx, dst)
	if err != nil || len(rep.Problems) > 0 {
		t.Fatalf("CheckTerminals of the restored store: %v %v", rep.Problems, err)
	}
	storetest.CheckLister(t, dst)
	runs := 0
	for _, err := range dst.Runs(ctx, store.ListQuery{}) {
		if err != nil {
			t.Fatal(err)
		}
		runs++
	}
	if runs < 2 {
		t.Fatalf("restored runs: %d, want the run that stayed and the runs of the load", runs)
	}

	// Presence, tombstones and artifacts come back as they were.
	beats := func(p store.Presence) []store.Beat {
		var out []store.Beat
		for b, err := range p.Beats(ctx, "") {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
		return out
	}
	if diff := cmp.Diff(beats(src), beats(dst)); diff != "" {
		t.Fatalf("restored beats (-source +restored):\n%s", diff)
	}
	tomb, err := dst.Tombstone(ctx, removedRun)
	if err != nil || !cmp.Equal(tomb, tombs[0]) {
		t.Fatalf("restored tombstone: %+v, %v; want %+v", tomb, err, tombs[0])
	}
	if a, err := dst.GetArtifact(ctx, art); err != nil || string(a.Data) != "kept across the dump" || a.MediaType != "text/plain" {
		t.Fatalf("restored artifact: %+v, %v", a, err)
	}
	var removed *store.RemovedError
	_, err = drain(dst.Read(ctx, store.Query{RunID: removedRun}))
	if !errors.As(err, &removed) || !cmp.Equal(removed.Tombstone, tombs[0]) {
		t.Fatalf("read of the removed run: %v; want its tombstone", err)
	}

	// Dedup holds across the restore, by id and by idempotency key.
	old := before[len(before)-1]
	if res, err := dst.Append(ctx, old.msg); err != nil || !res[0].Duplicate || res[0].Seq != old.seq || res[0].DuplicateBy != store.DedupByID {
		t.Fatalf("re-append of event %d: %+v, %v; want a duplicate by id", old.seq, res, err)
	}
	k := ids.NewMessage(protocol.TypeTaskProgress, old.msg.From.AgentID)
	k.RunID, k.ThreadID, k.TaskID, k.To = old.msg.RunID, old.msg.ThreadID, old.msg.TaskID, old.msg.To
	k.Payload, k.IdempotencyKey = json.RawMessage(`{}`), old.msg.IdempotencyKey
	if res, err := dst.Append(ctx, k); err != nil || !res[0].Duplicate || res[0].Seq != old.seq || res[0].DuplicateBy != store.DedupByIdempotencyKey {
		t.Fatalf("append with the key of event %d: %+v, %v; want a duplicate by key", old.seq, res, err)
	}

	// A new append gets the next seq, and a follower in another Store of
	// the restored database, started from the old head, yields it first.
	// A second append reaches the follower while it waits, with a poll
	// interval longer than the test: through the restored schema's
	// notifications.
	fol, err := pgstore.Open(ctx, c.DSN(db), &pgstore.Options{Schema: schema, PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fol.Close() })
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	next := make(chan store.Event, 2)
	ferr := make(chan error, 1) // why the follow ended, sent before next closes
	go func() {
		defer close(next)
		for ev, err := range fol.Follow(fctx, store.Query{AfterSeq: last, Limit: cap(next)}) {
			if err != nil {
				ferr <- err
				return
			}
			next <- ev
		}
		ferr <- fctx.Err()
	}()
	tr := storetest.NewTraffic(ids, 100, lifecycle, 0)
	for i := range uint64(2) {
		nm := tr.Next()
		res, err := dst.Append(ctx, nm)
		if err != nil || res[0].Duplicate || res[0].Seq != last+1+i {
			t.Fatalf("new append to the restored store: %+v, %v; want seq %d", res, err, last+1+i)
		}
		// The follow ends after its second event (its Limit): only a
		// closed next with no event says it ended too soon.
		ev, ok := <-next
		if !ok {
			t.Fatalf("follow from %d ended: %v", last, <-ferr)
		}
		raw, _ := protocol.Encode(nm)
		if ev.Seq != last+1+i || !bytes.Equal(ev.Raw, raw) {
			t.Fatalf("follow from %d yielded seq %d %q; want the new event, seq %d", last, ev.Seq, ev.Raw, last+1+i)
		}
	}
}

// BenchmarkDump measures the backup of the package doc on a store of
// 50k ~1 KiB events (storetest.BenchMessages): "rate" runs pg_dump alone
// and reports its rate in events and in MB of the events' bytes per
// second, and the dump's size; "appends" runs pg_dump under 8 appenders,
// one event per call, then as many calls again without it, and reports
// the p50 and p99 of the calls of each phase (the phases alternate, so
// the machine's load weighs on both alike). Each run of "appends" adds
// events to the store.
func BenchmarkDump(b *testing.B) {
	c := cluster.Need(b)
	ctx := context.Background()
	s := openStore(b, nil)
	const events = 50_000
	for _, msgs := range storetest.BenchMessages(b, events, 1) {
		for len(msgs) > 0 {
			n := min(len(msgs), 500)
			if _, err := s.Append(ctx, msgs[:n]...); err != nil {
				b.Fatal(err)
			}
			msgs = msgs[n:]
		}
	}
	file := filepath.Join(b.TempDir(), "store.dump")

	b.Run("rate", func(b *testing.B) {
		conn, err := pgx.Connect(ctx, c.DSN(""))
		if err != nil {
			b.Fatal(err)
		}
		defer conn.Close(ctx)
		var n, bytes int64
		if err := conn.QueryRow(ctx, "SELECT count(*), sum(octet_length(raw)) FROM "+s.Schema()+".events").Scan(&n, &bytes); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			pgDump(ctx, b, c, s.Schema(), file)
		}
		sec := b.Elapsed().Seconds() / float64(b.N)
		fi, err := os.Stat(file)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(n)/sec, "events/s")
		b.ReportMetric(float64(bytes)/1e6/sec, "MB/s")
		b.ReportMetric(float64(fi.Size())/1e6, "dump-MB")
	})

	b.Run("appends", func(b *testing.B) {
		ids := protocol.NewIDs(nil)
		// phase runs 8 appenders through wait and returns the calls made
		// wholly inside it and its length.
		phase := func(wait func()) ([]acked, time.Duration) {
			l := startLoad(b, s, ids, 8, 1, 6*len(lifecycle))
			l.warmed(b)
			from := time.Now()
			wait()
			to := time.Now()
			var in []acked
			for _, a := range l.end() {
				if !a.start.Before(from) && !a.end.After(to) {
					in = append(in, a)
				}
			}
			return in, to.Sub(from)
		}
		var during, without []acked
		var dDur, wDur time.Duration
		for b.Loop() {
			in, d := phase(func() { pgDump(ctx, b, c, s.Schema(), file) })
			during, dDur = append(during, in...), dDur+d
			in, d = phase(func() { time.Sleep(d) }) // as long, without a dump
			without, wDur = append(without, in...), wDur+d
		}
		b.StopTimer()
		d50, d99, _ := latencies(during, time.Time{}, time.Now())
		w50, w99, _ := latencies(without, time.Time{}, time.Now())
		b.ReportMetric(float64(d50.Microseconds()), "dump-p50-µs")
		b.ReportMetric(float64(d99.Microseconds()), "dump-p99-µs")
		b.ReportMetric(float64(len(during))/dDur.Seconds(), "dump-events/s")
		b.ReportMetric(float64(w50.Microseconds()), "p50-µs")
		b.ReportMetric(float64(w99.Microseconds()), "p99-µs")
		b.ReportMetric(float64(len(without))/wDur.Seconds(), "events/s")
	})
}
