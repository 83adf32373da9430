package retention_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/internal/backends"
	"github.com/clutchprotocol/clutch/internal/eventio"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/clutchprotocol/clutch/store/retention"
)

func TestMain(m *testing.M) { os.Exit(backends.Main(m)) }

// msg is an event of run's task from agent:ken.
func msg(run string, typ protocol.Type, payload string) *protocol.Message {
	m := protocol.NewMessage(typ, "agent:ken")
	m.RunID, m.ThreadID, m.TaskID = run, "thr_"+run, "task_"+run
	m.Payload = json.RawMessage(payload)
	return m
}

// ended appends a run whose one task completed; running one whose task
// has not ended; waiting one whose task asked a question; chat one
// without tasks.
func ended(t *testing.T, s store.Store, run string) {
	t.Helper()
	appendAll(t, s, msg(run, protocol.TypeTaskRequest, `{"text":"do `+run+`"}`), msg(run, protocol.TypeTaskResult, `{"text":"done"}`))
}

func running(t *testing.T, s store.Store, run string) {
	t.Helper()
	appendAll(t, s, msg(run, protocol.TypeTaskRequest, `{"text":"do `+run+`"}`))
}

func waiting(t *testing.T, s store.Store, run string) {
	t.Helper()
	q, _ := json.Marshal(protocol.Question{ID: "task_" + run + ".q0", Text: "which market?"})
	appendAll(t, s, msg(run, protocol.TypeTaskRequest, `{"text":"do `+run+`"}`), msg(run, protocol.TypeTaskQuestion, string(q)))
}

func chat(t *testing.T, s store.Store, run string) {
	t.Helper()
	appendAll(t, s, msg(run, protocol.TypeChatMessage, `{"text":"hello"}`))
}

func appendAll(t *testing.T, s store.Store, msgs ...*protocol.Message) {
	t.Helper()
	_, err := s.Append(context.Background(), msgs...)
	require.NoError(t, err)
}

func runIDs(t *testing.T, s store.Store) []string {
	t.Helper()
	var out []string
	for sum, err := range store.Runs(context.Background(), s, store.ListQuery{}) {
		require.NoError(t, err)
		out = append(out, sum.ID)
	}
	return out
}

func removedIDs(rep retention.Report) []string {
	var out []string
	for _, ts := range rep.Removed {
		out = append(out, ts.RunID)
	}
	return out
}

// TestApplyKeepsWhatHasNotEnded: MaxRuns keeps the newest ended runs and
// removes the rest, oldest first, on every store; running, waiting and
// task-less runs stay whatever the limit; a removed run's read says it was
// removed, and by which rule.
func TestApplyKeepsWhatHasNotEnded(t *testing.T) {
	backends.Each(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		for i := range 5 {
			ended(t, s, fmt.Sprintf("run_e%d", i))
		}
		running(t, s, "run_running")
		waiting(t, s, "run_waiting")
		chat(t, s, "run_chat")

		rep, err := retention.Apply(ctx, s, retention.Policy{MaxRuns: 2, Note: "test"})
		require.NoError(t, err)
		assert.Equal(t, []string{"run_e0", "run_e1", "run_e2"}, removedIDs(rep))
		assert.Equal(t, 5, rep.Ended)
		assert.Equal(t, 3, rep.Active)
		var bytes int64
		for _, ts := range rep.Removed {
			assert.Equal(t, "max_runs=2", ts.Policy)
			assert.Equal(t, "test", ts.Note)
			assert.Equal(t, 2, ts.Events)
			bytes += ts.Bytes
		}
		assert.Equal(t, bytes, rep.Bytes)
		assert.Positive(t, rep.Bytes)
		assert.ElementsMatch(t, []string{"run_e3", "run_e4", "run_running", "run_waiting", "run_chat"}, runIDs(t, s))

		for _, err := range s.Read(ctx, store.Query{RunID: "run_e1"}) {
			require.ErrorIs(t, err, store.ErrRemoved)
			assert.Contains(t, err.Error(), `by policy "max_runs=2"`)
		}
		// Applied again, nothing more goes.
		rep, err = retention.Apply(ctx, s, retention.Policy{MaxRuns: 2})
		require.NoError(t, err)
		assert.Empty(t, rep.Removed)
		assert.Equal(t, 2, rep.Ended)

		// A policy without limits removes nothing; MaxAge of a nanosecond
		// removes every ended run and still nothing that has not ended.
		rep, err = retention.Apply(ctx, s, retention.Policy{})
		require.NoError(t, err)
		assert.Empty(t, rep.Removed)
		rep, err = retention.Apply(ctx, s, retention.Policy{MaxAge: time.Nanosecond})
		require.NoError(t, err)
		assert.Equal(t, []string{"run_e3", "run_e4"}, removedIDs(rep))
		assert.Equal(t, "max_age=1ns", rep.Removed[0].Policy)
		assert.ElementsMatch(t, []string{"run_running", "run_waiting", "run_chat"}, runIDs(t, s))
	})
}

// sizes lists the runs of s: their Bytes by id, and their total.
func sizes(t *testing.T, s store.Store) (map[string]int64, int64) {
	t.Helper()
	out := map[string]int64{}
	var total int64
	for sum, err := range store.Runs(context.Background(), s, store.ListQuery{}) {
		require.NoError(t, err)
		require.Positive(t, sum.Bytes, sum.ID)
		out[sum.ID] = sum.Bytes
		total += sum.Bytes
	}
	return out, total
}

// TestApplyMaxBytes: on every store, the oldest ended runs go until the
// runs that stay (running, waiting and chat ones counted) hold at most
// MaxBytes, exactly: a limit met by removing two runs removes two, one
// byte less removes a third; the rule comes after MaxRuns, whose runs
// count as gone; Plan makes the same choice; runs that cannot go are
// never chosen, even when they alone are past the limit.
func TestApplyMaxBytes(t *testing.T) {
	backends.Each(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		for i := range 6 { // sizes that differ, the oldest the smallest
			run := fmt.Sprintf("run_b%d", i)
			appendAll(t, s, msg(run, protocol.TypeTaskRequest, `{"text":"`+strings.Repeat("x", 100*(i+1))+`"}`),
				msg(run, protocol.TypeTaskResult, `{"text":"done"}`))
		}
		running(t, s, "run_running")
		waiting(t, s, "run_waiting")
		chat(t, s, "run_chat")
		size, total := sizes(t, s)
		require.Len(t, size, 9)

		// Met after two: b0 and b1 go, by max_bytes.
		limit := total - size["run_b0"] - size["run_b1"]
		p := retention.Policy{MaxBytes: limit}
		plan, err := retention.Plan(ctx, s, p)
		require.NoError(t, err)
		assert.Equal(t, []string{"run_b0", "run_b1"}, removedIDs(plan))
		rep, err := retention.Apply(ctx, s, p)
		require.NoError(t, err)
		assert.Equal(t, []string{"run_b0", "run_b1"}, removedIDs(rep))
		assert.Equal(t, size["run_b0"]+size["run_b1"], rep.Bytes)
		for _, ts := range rep.Removed {
			assert.Equal(t, fmt.Sprintf("max_bytes=%d", limit), ts.Policy)
		}
		_, left := sizes(t, s)
		assert.Equal(t, limit, left)
		rep, err = retention.Apply(ctx, s, p)
		require.NoError(t, err)
		assert.Empty(t, rep.Removed, "the store fits: nothing more goes")

		// One byte less: b2 goes too.
		rep, err = retention.Apply(ctx, s, retention.Policy{MaxBytes: limit - 1})
		require.NoError(t, err)
		assert.Equal(t, []string{"run_b2"}, removedIDs(rep))
		_, left = sizes(t, s)
		assert.Equal(t, limit-size["run_b2"], left)

		// After MaxRuns: b3 goes by count (two ended runs kept, b4 and
		// b5), and b4 by size; the limit counts b3 as gone.
		limit = left - size["run_b3"] - size["run_b4"]
		p = retention.Policy{MaxRuns: 2, MaxBytes: limit}
		plan, err = retention.Plan(ctx, s, p)
		require.NoError(t, err)
		rep, err = retention.Apply(ctx, s, p)
		require.NoError(t, err)
		assert.Equal(t, []string{"run_b3", "run_b4"}, removedIDs(rep))
		assert.Equal(t, removedIDs(plan), removedIDs(rep))
		assert.Equal(t, "max_runs=2", rep.Removed[0].Policy)
		assert.Equal(t, fmt.Sprintf("max_bytes=%d", limit), rep.Removed[1].Policy)

		// A limit below what the runs that cannot go hold: every ended run
		// goes, and they stay.
		rep, err = retention.Apply(ctx, s, retention.Policy{MaxBytes: 1})
		require.NoError(t, err)
		assert.Equal(t, []string{"run_b5"}, removedIDs(rep))
		assert.Equal(t, 3, rep.Active)
		assert.ElementsMatch(t, []string{"run_running", "run_waiting", "run_chat"}, runIDs(t, s))
	})
}

// TestApplyMaxAge: with the store's clock, exactly the ended runs whose
// last event is older than MaxAge go.
func TestApplyMaxAge(t *testing.T) {
	now := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	s, err := memstore.New(&memstore.Options{Clock: func() time.Time { return now }})
	require.NoError(t, err)
	defer s.Close()
	for day := range 10 {
		now = time.Date(2026, 11, 1+day, 0, 0, 0, 0, time.UTC)
		ended(t, s, fmt.Sprintf("run_day%d", day))
	}
	now = time.Date(2026, 11, 11, 0, 0, 0, 0, time.UTC)
	rep, err := retention.Apply(context.Background(), s, retention.Policy{MaxAge: 7 * 24 * time.Hour})
	require.NoError(t, err)
	// Days 0 to 2 are 10, 9 and 8 days old; day 3 is exactly 7 and stays.
	assert.Equal(t, []string{"run_day0", "run_day1", "run_day2"}, removedIDs(rep))
	for _, ts := range rep.Removed {
		assert.Equal(t, now, ts.Removed)
		assert.Equal(t, "max_age=168h0m0s", ts.Policy)
	}
}

// TestApplyArchives: each run is archived in its own file before it goes;
// the file holds its events, readable by eventio (what `clutch import`
// reads), and the tombstone names it.
func TestApplyArchives(t *testing.T) {
	for _, ce := range []bool{false, true} {
		t.Run(fmt.Sprintf("cloudevents=%v", ce), func(t *testing.T) {
			backends.Each(t, func(t *testing.T, s store.Store) {
				ctx := context.Background()
				ended(t, s, "run_a1")
				ended(t, s, "run/odd id")
				running(t, s, "run_kept")
				var want []store.Event
				for ev, err := range s.Read(ctx, store.Query{RunID: "run_a1"}) {
					require.NoError(t, err)
					want = append(want, ev)
				}
				dir := filepath.Join(t.TempDir(), "archive")
				a := &retention.Archive{Dir: dir, CloudEvents: ce}
				rep, err := retention.Apply(ctx, s, retention.Policy{MaxAge: time.Nanosecond, Archive: a})
				require.NoError(t, err)
				require.Equal(t, []string{"run_a1", "run/odd id"}, removedIDs(rep))
				assert.Equal(t, filepath.Join(dir, a.FileName("run_a1")), rep.Removed[0].Archive)
				assert.Equal(t, filepath.Join(dir, a.FileName("run/odd id")), rep.Removed[1].Archive)
				assert.NotContains(t, filepath.Base(rep.Removed[1].Archive), "/")

				f, err := os.Open(rep.Removed[0].Archive)
				require.NoError(t, err)
				defer f.Close()
				r := eventio.NewReader(f)
				var got []string
				for {
					rec, err := r.Next()
					if errors.Is(err, io.EOF) {
						break
					}
					require.NoError(t, err)
					got = append(got, rec.Msg.ID)
				}
				require.Len(t, got, len(want))
				for i, ev := range want {
					m, err := ev.Message()
					require.NoError(t, err)
					assert.Equal(t, m.ID, got[i])
				}
				entries, err := os.ReadDir(dir)
				require.NoError(t, err)
				assert.Len(t, entries, 2, "no temporary file is left")
			})
		})
	}
}

// TestArchiveFailureKeepsTheRun: a run whose archive cannot be written is
// not removed.
func TestArchiveFailureKeepsTheRun(t *testing.T) {
	s, err := memstore.New(nil)
	require.NoError(t, err)
	defer s.Close()
	ended(t, s, "run_x")
	notDir := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(notDir, []byte("x"), 0o600))
	rep, err := retention.Apply(context.Background(), s, retention.Policy{MaxRuns: -0, MaxAge: time.Nanosecond, Archive: &retention.Archive{Dir: notDir}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "archive")
	assert.Empty(t, rep.Removed)
	assert.Equal(t, []string{"run_x"}, runIDs(t, s))
}

// reopening lists like its store, then appends an event that opens one of
// the listed runs again before Apply removes it: the race the package doc
// describes.
type reopening struct {
	*memstore.Store
	t   *testing.T
	run string
}

func (r reopening) Threads(ctx context.Context, q store.ListQuery) iter.Seq2[store.Summary, error] {
	return store.Threads(ctx, r.Store, q)
}

func (r reopening) Runs(ctx context.Context, q store.ListQuery) iter.Seq2[store.Summary, error] {
	return func(yield func(store.Summary, error) bool) {
		for sum, err := range store.Runs(ctx, r.Store, q) {
			if !yield(sum, err) {
				return
			}
		}
		m := msg(r.run, protocol.TypeTaskRequest, `{"text":"again"}`)
		m.TaskID = "task_again"
		appendAll(r.t, r.Store, m)
	}
}

// TestApplyLeavesARunThatOpensAgain: a run that gets a new task between
// the listing and its removal is left, counted as active; the others of
// its batch go.
func TestApplyLeavesARunThatOpensAgain(t *testing.T) {
	s, err := memstore.New(nil)
	require.NoError(t, err)
	defer s.Close()
	for i := range 4 {
		ended(t, s, fmt.Sprintf("run_r%d", i))
	}
	rep, err := retention.Apply(context.Background(), reopening{s, t, "run_r1"}, retention.Policy{MaxAge: time.Nanosecond})
	require.NoError(t, err)
	assert.Equal(t, []string{"run_r0", "run_r2", "run_r3"}, removedIDs(rep))
	assert.Equal(t, 1, rep.Active)
	assert.Equal(t, []string{"run_r1"}, runIDs(t, s))
}

// bare hides the store's upgrades.
type bare struct{ store.Store }

func TestApplyRefuses(t *testing.T) {
	s, err := memstore.New(nil)
	require.NoError(t, err)
	defer s.Close()
	ctx := context.Background()
	_, err = retention.Apply(ctx, bare{s}, retention.Policy{MaxRuns: 1})
	assert.ErrorIs(t, err, retention.ErrUnsupported)
	assert.Equal(t, protocol.CodeUnsupportedTask, protocol.CodeOf(err))
	for _, p := range []retention.Policy{{MaxAge: -1}, {MaxRuns: -1}, {MaxBytes: -1}, {Archive: &retention.Archive{}}} {
		_, err := retention.Apply(ctx, s, p)
		assert.ErrorIs(t, err, retention.ErrInvalidPolicy, "%+v", p)
		_, err = retention.Plan(ctx, s, p)
		assert.ErrorIs(t, err, retention.ErrInvalidPolicy, "Plan %+v", p)
	}
	_, err = retention.Apply(ctx, s, retention.Policy{MaxBytes: -1})
	assert.Contains(t, err.Error(), "MaxBytes is negative")
}

func TestFileName(t *testing.T) {
	a := &retention.Archive{}
	assert.Equal(t, "run_01JD.jsonl", a.FileName("run_01JD"))
	assert.Equal(t, "a%2Fb.jsonl", a.FileName("a/b"))
	assert.True(t, strings.HasPrefix(a.FileName(".."), "run-"))
	long := a.FileName(strings.Repeat("é", 120))
	assert.True(t, strings.HasPrefix(long, "run-") && len(long) < 64, long)
	assert.Equal(t, "x.cloudevents.jsonl", (&retention.Archive{CloudEvents: true}).FileName("x"))
}

// TestPlan: Plan chooses what Apply then removes, with the same counts and
// bytes, and changes nothing.
func TestPlan(t *testing.T) {
	backends.Each(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		for i := range 4 {
			ended(t, s, fmt.Sprintf("run_p%d", i))
		}
		running(t, s, "run_running")
		dir := t.TempDir()
		p := retention.Policy{MaxRuns: 1, Archive: &retention.Archive{Dir: filepath.Join(dir, "a")}}
		plan, err := retention.Plan(ctx, s, p)
		require.NoError(t, err)
		assert.Equal(t, []string{"run_p0", "run_p1", "run_p2"}, removedIDs(plan))
		assert.Len(t, runIDs(t, s), 5, "Plan removes nothing")
		_, err = os.Stat(filepath.Join(dir, "a"))
		assert.ErrorIs(t, err, os.ErrNotExist, "Plan writes no archive")

		rep, err := retention.Apply(ctx, s, p)
		require.NoError(t, err)
		require.Equal(t, removedIDs(plan), removedIDs(rep))
		for i, ts := range rep.Removed {
			want := plan.Removed[i]
			want.Removed = ts.Removed
			assert.Equal(t, want, ts)
		}
		assert.Equal(t, plan.Bytes, rep.Bytes)
	})
}

// lateEvent is a store that, once its archive has read run, appends an
// event to it that does not open it again (a chat message after its task
// ended): the race between the archive and the removal.
type lateEvent struct {
	store.Store
	t    *testing.T
	run  string
	done bool
}

func (l *lateEvent) Unwrap() store.Store { return l.Store }

func (l *lateEvent) Read(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	return func(yield func(store.Event, error) bool) {
		for ev, err := range l.Store.Read(ctx, q) {
			if !yield(ev, err) {
				return
			}
		}
		if q.RunID == l.run && !l.done {
			l.done = true
			appendAll(l.t, l.Store, msg(l.run, protocol.TypeChatMessage, `{"text":"late"}`))
		}
	}
}

// TestApplyKeepsAnEventAppendedAfterTheArchive: an event appended to a
// chosen run after its archive was written, before its removal, is not
// removed with it (it is in no archive): the run is left, counted as
// active, and the next Apply archives and removes it whole.
func TestApplyKeepsAnEventAppendedAfterTheArchive(t *testing.T) {
	backends.Each(t, func(t *testing.T, s store.Store) {
		ctx := context.Background()
		ended(t, s, "run_late")
		ended(t, s, "run_other")
		dir := filepath.Join(t.TempDir(), "archive")
		p := retention.Policy{MaxAge: time.Nanosecond, Archive: &retention.Archive{Dir: dir}}
		rep, err := retention.Apply(ctx, &lateEvent{Store: s, t: t, run: "run_late"}, p)
		require.NoError(t, err)
		assert.Equal(t, []string{"run_other"}, removedIDs(rep))
		assert.Equal(t, 1, rep.Active)
		n := 0
		for _, err := range s.Read(ctx, store.Query{RunID: "run_late"}) {
			require.NoError(t, err)
			n++
		}
		assert.Equal(t, 3, n, "the run keeps its events, the late one too")

		rep, err = retention.Apply(ctx, s, p)
		require.NoError(t, err)
		require.Equal(t, []string{"run_late"}, removedIDs(rep))
		assert.Equal(t, 3, rep.Removed[0].Events)
		f, err := os.Open(rep.Removed[0].Archive)
		require.NoError(t, err)
		defer f.Close()
		r := eventio.NewReader(f)
		archived := 0
		for {
			_, err := r.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			archived++
		}
		assert.Equal(t, 3, archived, "the archive holds every event the tombstone counts")
	})
}
