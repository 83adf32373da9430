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
	"github.com/clutchprotocol/clutch/cmd/clutch/internal/eventio"
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
}

func getenv(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// addWhere registers --db, --url, --key and --lock-timeout.
func addWhere(fs *flag.FlagSet) *where {
	w := &where{cmd: strings.TrimPrefix(fs.Name(), "clutch ")}
	fs.StringVar(&w.db, "db", getenv("CLUTCH_DB", "clutch.db"), "the store file, opened read-only ($CLUTCH_DB)")
	fs.StringVar(&w.url, "url", os.Getenv("CLUTCH_URL"), "read through the gateway at this URL instead of the file ($CLUTCH_URL)")
	fs.StringVar(&w.key, "key", "", "the gateway API key, with --url (default $CLUTCH_API_KEY)")
	fs.DurationVar(&w.lockTimeout, "lock-timeout", time.Second, "how long to wait for a file another process holds")
	return w
}

// filters are the event filters of tail, export and verify.
type filters struct {
	run, thread, task, agent, typ string
	after                         uint64
}

func addFilters(fs *flag.FlagSet) *filters {
	f := &filters{}
	fs.StringVar(&f.run, "run", "", "only events of this run_id")
	fs.StringVar(&f.thread, "thread", "", "only events of this thread_id")
	fs.StringVar(&f.task, "task", "", "only events of this task_id")
	fs.StringVar(&f.agent, "agent", "", "only events from this agent id")
	fs.StringVar(&f.typ, "type", "", "only events whose type starts with this (task. or task.result)")
	fs.Uint64Var(&f.after, "after", 0, "only events after this seq")
	return f
}

func (f *filters) query() store.Query {
	return store.Query{RunID: f.run, ThreadID: f.thread, TaskID: f.task, AgentID: f.agent, TypePrefix: f.typ, AfterSeq: f.after}
}

// source is what the read commands read, a file or a gateway.
type source interface {
	// read yields the events matching q in seq order, as the log is
	// when it starts.
	read(ctx context.Context, q store.Query) iter.Seq2[store.Event, error]
	// follow is read, then the events appended later, until ctx is done.
	follow(ctx context.Context, q store.Query) iter.Seq2[store.Event, error]
	// lastSeq is the seq of the last event (that the caller may see).
	lastSeq(ctx context.Context) (uint64, error)
	runs(ctx context.Context, threads bool, before uint64, limit int) ([]client.Summary, uint64, error)
	tree(ctx context.Context, runID, taskID string) (*client.Tree, error)
	name() string
	close() error
}

// open opens the source w names.
func (w *where) open() (source, error) {
	if w.url != "" {
		if w.key == "" {
			w.key = os.Getenv("CLUTCH_API_KEY")
		}
		c, err := client.New(w.url, w.key, nil)
		if err != nil {
			return nil, err
		}
		return &remote{c: c, url: w.url}, nil
	}
	st, err := boltstore.Open(w.db, &boltstore.Options{ReadOnly: true, LockTimeout: w.lockTimeout})
	if errors.Is(err, boltstore.ErrLocked) {
		return nil, fmt.Errorf("%w\n(to read it now: clutch %s --url http://HOST:PORT --key KEY, the gateway of that process)", err, w.cmd)
	}
	if err != nil {
		return nil, err
	}
	return &local{st: st}, nil
}

// local reads a store file opened read-only.
type local struct{ st *boltstore.Store }

func (l *local) read(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	return l.st.Read(ctx, q)
}

// follow on a file: nothing can be appended while it is held read-only,
// so this is read, then a wait for ctx.
func (l *local) follow(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	return l.st.Follow(ctx, q)
}

func (l *local) lastSeq(ctx context.Context) (uint64, error) { return l.st.LastSeq(ctx) }
func (l *local) name() string                                { return l.st.Path() }
func (l *local) close() error                                { return l.st.Close() }

// remote reads through a gateway.
type remote struct {
	c   *client.Client
	url string
}

func (r *remote) name() string { return r.url }
func (r *remote) close() error { return nil }

// lastSeq is the largest last_seq of the runs the caller may see: every
// message has a run_id, so that is the last event it can read.
func (r *remote) lastSeq(ctx context.Context) (uint64, error) {
	runs, _, err := r.c.Runs(ctx, 0, 50)
	if err != nil {
		return 0, err
	}
	var last uint64
	for _, s := range runs {
		last = max(last, s.LastSeq)
	}
	return last, nil
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
		scope, id := client.Scope(""), ""
		switch {
		case q.RunID != "":
			scope, id = client.RunScope, q.RunID
		case q.TaskID != "":
			scope, id = client.TaskScope, q.TaskID
		case q.ThreadID != "":
			scope, id = client.ThreadScope, q.ThreadID
		}
		if scope != "" {
			for ev, err := range r.c.AllEvents(ctx, scope, id, q.AfterSeq, q.TypePrefix) {
				if err != nil {
					yield(store.Event{}, err)
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
	return func(yield func(store.Event, error) bool) {
		sq := client.StreamQuery{Run: q.RunID, Thread: q.ThreadID, Task: q.TaskID, Agent: q.AgentID, Type: q.TypePrefix, After: q.AfterSeq}
		for ev, err := range r.c.Stream(ctx, sq) {
			if err != nil {
				yield(store.Event{}, err)
				return
			}
			if !yield(ev.StoreEvent(), nil) {
				return
			}
		}
	}
}

func (r *remote) runs(ctx context.Context, threads bool, before uint64, limit int) ([]client.Summary, uint64, error) {
	if threads {
		return r.c.Threads(ctx, before, limit)
	}
	return r.c.Runs(ctx, before, limit)
}

func (r *remote) tree(ctx context.Context, runID, taskID string) (*client.Tree, error) {
	if taskID != "" {
		return r.c.TaskTree(ctx, taskID)
	}
	return r.c.RunTree(ctx, runID)
}
