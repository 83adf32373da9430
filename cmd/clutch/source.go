package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"iter"
	"os"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/client"
	"github.com/clutchprotocol/clutch/internal/eventio"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

// where is where a command reads: a store file or a gateway.
type where struct {
	cmd         string // the command, for hints
	db          string
	url         string
	key         string
	lockTimeout time.Duration
	fs          *flag.FlagSet // the command's flags: open finds --since and --until among them
}

func getenv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// addWhere registers --db, --url, --key and --lock-timeout.
func addWhere(fs *flag.FlagSet) *where {
	w := &where{cmd: strings.TrimPrefix(fs.Name(), "clutch "), fs: fs}
	fs.StringVar(&w.db, "db", getenv("CLUTCH_DB", "clutch.db"), "the store file, opened read-only ($CLUTCH_DB)")
	fs.StringVar(&w.url, "url", os.Getenv("CLUTCH_URL"), "read through the gateway at this URL instead of the file ($CLUTCH_URL)")
	fs.StringVar(&w.key, "key", "", "the gateway API key, with --url (default $CLUTCH_API_KEY)")
	fs.DurationVar(&w.lockTimeout, "lock-timeout", time.Second, "how long to wait for a file another process holds")
	bindContext(fs) // --context: applied once the flags are parsed
	return w
}

// filters are the event filters of tail, export, stats and verify.
type filters struct {
	run, thread, task, agent, typ string
	after                         uint64
	win                           *window
}

func addFilters(fs *flag.FlagSet) *filters {
	f := &filters{}
	fs.StringVar(&f.run, "run", "", "only events of this run_id (exit 3 when it has none)")
	fs.StringVar(&f.thread, "thread", "", "only events of this thread_id (exit 3 when it has none)")
	fs.StringVar(&f.task, "task", "", "only events of this task_id (exit 3 when it has none)")
	fs.StringVar(&f.agent, "agent", "", "only events from this agent id")
	fs.StringVar(&f.typ, "type", "", "only events whose type starts with this (task. or task.result)")
	fs.Uint64Var(&f.after, "after", 0, "only events after this seq")
	f.win = addWindow(fs, "events")
	return f
}

func (f *filters) query() store.Query {
	return store.Query{RunID: f.run, ThreadID: f.thread, TaskID: f.task, AgentID: f.agent, TypePrefix: f.typ, AfterSeq: f.after}
}

// window is the time range of --since and --until: [since, until), a
// zero bound being open. Times are compared at the API's precision,
// milliseconds, so a file and a gateway select the same events.
type window struct{ since, until whenFlag }

// addWindow registers --since and --until; what says what they select.
func addWindow(fs *flag.FlagSet, what string) *window {
	w := &window{}
	fs.Var(&w.since, "since", "only "+what+" at or after `TIME`: RFC 3339 (2026-03-01T09:00:00Z) or a duration ago (90m, 24h)")
	fs.Var(&w.until, "until", "only "+what+" before `TIME`: RFC 3339 or a duration ago")
	return w
}

// windowOf is the window of the --since and --until among fs's flags
// (zero when it has none).
func windowOf(fs *flag.FlagSet) window {
	var w window
	if fs == nil {
		return w
	}
	if f := fs.Lookup("since"); f != nil {
		if v, ok := f.Value.(*whenFlag); ok {
			w.since = *v
		}
	}
	if f := fs.Lookup("until"); f != nil {
		if v, ok := f.Value.(*whenFlag); ok {
			w.until = *v
		}
	}
	return w
}

// set reports whether either bound is set.
func (w window) set() bool { return !w.since.t.IsZero() || !w.until.t.IsZero() }

// holds reports whether t is in the window.
func (w window) holds(t time.Time) bool {
	t = t.Truncate(time.Millisecond)
	return (w.since.t.IsZero() || !t.Before(w.since.t)) && (w.until.t.IsZero() || t.Before(w.until.t))
}

// overlaps reports whether [from, to] meets the window: a run active
// at some time in it.
func (w window) overlaps(from, to time.Time) bool {
	return (w.since.t.IsZero() || !to.Truncate(time.Millisecond).Before(w.since.t)) &&
		(w.until.t.IsZero() || from.Truncate(time.Millisecond).Before(w.until.t))
}

// whenFlag is the value of --since or --until.
type whenFlag struct {
	t   time.Time // UTC, to the millisecond; zero when not given
	arg string
}

func (f *whenFlag) String() string { return f.arg }

func (f *whenFlag) Set(s string) error {
	t, err := parseWhen(s, time.Now())
	if err != nil {
		return err
	}
	f.t, f.arg = t, s
	return nil
}

// errWhen is a --since or --until value that is neither a time nor a
// duration.
var errWhen = errors.New("want an RFC 3339 time (2026-03-01T09:00:00Z) or a duration ago (90m, 24h)")

// parseWhen reads an RFC 3339 time, or a duration before now ("1h": an
// hour ago), as UTC truncated to the millisecond.
func parseWhen(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC().Truncate(time.Millisecond), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return time.Time{}, errWhen
	}
	return now.Add(-d).UTC().Truncate(time.Millisecond), nil
}

// source is what the read commands read, a file or a gateway. Both
// answer the same question the same way: a run, thread or task a query
// names that has no event (or that the caller may not see) is
// notFound; an empty result is no error.
type source interface {
	// read yields the events matching q and the window of --since and
	// --until in seq order, as the log is when it starts; first, when q
	// names a run, thread or task that does not exist, one notFound.
	read(ctx context.Context, q store.Query) iter.Seq2[store.Event, error]
	// follow is read, then the events appended later, until ctx is done.
	follow(ctx context.Context, q store.Query) iter.Seq2[store.Event, error]
	// lastSeq is the seq of the last event (that the caller may see).
	lastSeq(ctx context.Context) (uint64, error)
	// exists reports whether the run, thread or task ("run", "thread",
	// "task") id has an event the caller may see.
	exists(ctx context.Context, kind, id string) (bool, error)
	// page is one page of run (or thread) summaries, newest first, the
	// reserved system ones left out unless q.System; next is the Before
	// of the next page, 0 after the last.
	page(ctx context.Context, threads bool, q client.ListQuery) ([]client.Summary, uint64, error)
	// tree is the task tree of a run, or the subtree of a task (taskID
	// set): notFound when it does not exist.
	tree(ctx context.Context, runID, taskID string) (*client.Tree, error)
	name() string
	close() error
}

// open opens the source w names.
func (w *where) open() (source, error) {
	win := windowOf(w.fs)
	if w.url != "" {
		if w.key == "" {
			w.key = os.Getenv("CLUTCH_API_KEY")
		}
		c, err := client.New(w.url, w.key, nil)
		if err != nil {
			return nil, err
		}
		return &remote{c: c, url: w.url, win: win}, nil
	}
	st, err := boltstore.Open(w.db, &boltstore.Options{ReadOnly: true, LockTimeout: w.lockTimeout})
	if errors.Is(err, boltstore.ErrLocked) {
		return nil, fmt.Errorf("%w\n(to read it now: clutch %s --url http://HOST:PORT --key KEY, the gateway of that process)", err, w.cmd)
	}
	if err != nil {
		return nil, err
	}
	return &local{st: st, win: win}, nil
}

// windowOfSource is the time window src reads in.
func windowOfSource(src source) window {
	switch s := src.(type) {
	case *local:
		return s.win
	case *remote:
		return s.win
	}
	return window{}
}

// named are the run, thread and task q names, as kind and id.
func named(q store.Query) [][2]string {
	var out [][2]string
	for _, n := range [][2]string{{"run", q.RunID}, {"thread", q.ThreadID}, {"task", q.TaskID}} {
		if n[1] != "" {
			out = append(out, n)
		}
	}
	return out
}

// checkNamed is notFound for the first run, thread or task q names that
// src does not have.
func checkNamed(ctx context.Context, src source, q store.Query) error {
	for _, n := range named(q) {
		ok, err := src.exists(ctx, n[0], n[1])
		if err != nil {
			return err
		}
		if !ok {
			return notFound(n[0], n[1])
		}
	}
	return nil
}

// windowed keeps the events of seq in win.
func windowed(seq iter.Seq2[store.Event, error], win window) iter.Seq2[store.Event, error] {
	if !win.set() {
		return seq
	}
	return func(yield func(store.Event, error) bool) {
		for ev, err := range seq {
			if err == nil && !win.holds(ev.Time) {
				continue
			}
			if !yield(ev, err) {
				return
			}
		}
	}
}

// checked is seq after checkNamed.
func checked(ctx context.Context, src source, q store.Query, seq iter.Seq2[store.Event, error]) iter.Seq2[store.Event, error] {
	return func(yield func(store.Event, error) bool) {
		if err := checkNamed(ctx, src, q); err != nil {
			yield(store.Event{}, err)
			return
		}
		for ev, err := range seq {
			if !yield(ev, err) {
				return
			}
		}
	}
}

// scopeQuery is the query of the events of a run, thread or task.
func scopeQuery(kind, id string) store.Query {
	switch kind {
	case "run":
		return store.Query{RunID: id}
	case "thread":
		return store.Query{ThreadID: id}
	}
	return store.Query{TaskID: id}
}

// local reads a store file opened read-only.
type local struct {
	st  *boltstore.Store
	win window
}

func (l *local) read(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	return checked(ctx, l, q, windowed(l.st.Read(ctx, q), l.win))
}

// follow on a file: nothing can be appended while it is held read-only,
// so this is read, then a wait for ctx.
func (l *local) follow(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	return checked(ctx, l, q, windowed(l.st.Follow(ctx, q), l.win))
}

func (l *local) exists(ctx context.Context, kind, id string) (bool, error) {
	q := scopeQuery(kind, id)
	q.Limit = 1
	for _, err := range l.st.Read(ctx, q) {
		return err == nil, notFoundAs(err, kind, id)
	}
	return false, nil
}

func (l *local) lastSeq(ctx context.Context) (uint64, error) { return l.st.LastSeq(ctx) }
func (l *local) name() string                                { return l.st.Path() }
func (l *local) close() error                                { return l.st.Close() }

// remote reads through a gateway.
type remote struct {
	c   *client.Client
	url string
	win window
}

func (r *remote) name() string { return r.url }
func (r *remote) close() error { return nil }

// lastSeq is the largest last_seq of the runs the caller may see, the
// system runs among them: every message has a run_id, so that is the
// last event it can read.
func (r *remote) lastSeq(ctx context.Context) (uint64, error) {
	runs, _, err := r.c.ListRuns(ctx, client.ListQuery{Limit: 50, System: true})
	if err != nil {
		return 0, err
	}
	var last uint64
	for _, s := range runs {
		last = max(last, s.LastSeq)
	}
	return last, nil
}

// exists asks for one event of the run, thread or task: a 404 says the
// caller may not see it.
func (r *remote) exists(ctx context.Context, kind, id string) (bool, error) {
	_, _, err := r.c.Events(ctx, scopeOf(kind), id, 0, 1, "")
	if err = notFoundAs(err, kind, id); isNotFound(err) {
		var nf *notFoundError
		if errors.As(err, &nf) && nf.removed != nil {
			return false, err // what became of it, as a file says
		}
		return false, nil
	}
	return err == nil, err
}

func scopeOf(kind string) client.Scope {
	switch kind {
	case "run":
		return client.RunScope
	case "thread":
		return client.ThreadScope
	}
	return client.TaskScope
}

func match(q store.Query, raw []byte) bool {
	h, err := eventio.ReadHead(raw)
	if err != nil {
		return true // shown, so that the reader meets the error
	}
	return q.Match(h.Run, h.Thread, h.Task, h.From.AgentID, typeOf(h.Type))
}

// read pages a run's, thread's or task's events when q names one, and
// otherwise reads the live stream up to the last seq.
func (r *remote) read(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	return checked(ctx, r, q, windowed(r.readAll(ctx, q), r.win))
}

func (r *remote) readAll(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	return func(yield func(store.Event, error) bool) {
		n := 0
		emit := func(ev client.Event) bool {
			se := ev.StoreEvent()
			if !match(q, se.Raw) {
				return true
			}
			n++
			return yield(se, nil) && (q.Limit == 0 || n < q.Limit)
		}
		if ns := named(q); len(ns) > 0 {
			// The narrowest scope: a task's events are in one run.
			kind, id := ns[len(ns)-1][0], ns[len(ns)-1][1]
			for ev, err := range r.c.AllEvents(ctx, scopeOf(kind), id, q.AfterSeq, q.TypePrefix) {
				if err != nil {
					yield(store.Event{}, notFoundAs(err, kind, id))
					return
				}
				if !emit(ev) {
					return
				}
			}
			return
		}
		last, err := r.lastSeq(ctx)
		if err != nil {
			yield(store.Event{}, err)
			return
		}
		if last <= q.AfterSeq {
			return
		}
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		for ev, err := range r.c.Stream(sctx, client.StreamQuery{After: q.AfterSeq}) {
			if err != nil {
				yield(store.Event{}, err)
				return
			}
			if !emit(ev) || ev.Seq >= last {
				return
			}
		}
		if err := ctx.Err(); err != nil {
			yield(store.Event{}, err)
		}
	}
}

func (r *remote) follow(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	live := func(yield func(store.Event, error) bool) {
		sq := client.StreamQuery{Run: q.RunID, Thread: q.ThreadID, Task: q.TaskID, Agent: q.AgentID, Type: q.TypePrefix, After: q.AfterSeq}
		for ev, err := range r.c.Stream(ctx, sq) {
			if err != nil {
				if ns := named(q); len(ns) > 0 {
					err = notFoundAs(err, ns[0][0], ns[0][1])
				}
				yield(store.Event{}, err)
				return
			}
			if !yield(ev.StoreEvent(), nil) {
				return
			}
		}
	}
	return checked(ctx, r, q, windowed(live, r.win))
}

// page of a gateway: GET /v1/runs or /v1/threads.
func (r *remote) page(ctx context.Context, threads bool, q client.ListQuery) ([]client.Summary, uint64, error) {
	if threads {
		return r.c.ListThreads(ctx, q)
	}
	return r.c.ListRuns(ctx, q)
}

func (r *remote) tree(ctx context.Context, runID, taskID string) (*client.Tree, error) {
	if taskID != "" {
		t, err := r.c.TaskTree(ctx, taskID)
		return t, notFoundAs(err, "task", taskID)
	}
	t, err := r.c.RunTree(ctx, runID)
	return t, notFoundAs(err, "run", runID)
}
