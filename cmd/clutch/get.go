package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/clutchprotocol/clutch/store"
)

func init() {
	register(&command{
		name:    "get",
		summary: "print one event, by message id or seq",
		usage:   "clutch get EVENT_ID|SEQ [--json]",
		help: `Prints one event: by the id of its message (msg_...) or, when the argument is
a decimal number, by its seq. The first line is the one tail prints (seq,
time, type, sender, what it says), then the message as stored, indented.
--json prints one JSON line, {"seq","time","message"} (the export format),
the message being the stored bytes.

Through a gateway (--url) the caller gets an event of a run, thread or task
it may read; any other is not found, as one that does not exist: exit code 3.`,
		examples: `  clutch get msg_01JD3Z...
  clutch get 1204 --json
  clutch get --url http://127.0.0.1:8080 --key $KEY msg_01JD3Z...`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			w := addWhere(fs)
			asJSON := fs.Bool("json", false, `print one JSON line ({"seq","time","message"})`)
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 1 || args[0] == "" {
					return usagef("want one EVENT_ID or SEQ")
				}
				src, err := w.open()
				if err != nil {
					return err
				}
				defer src.close()
				ev, err := src.(eventGetter).event(ctx, args[0])
				if err != nil {
					return notFoundAs(err, "event", args[0])
				}
				if *asJSON {
					return printer(e.stdout, true)(ev)
				}
				return printEvent(e.stdout, ev)
			}
		},
	})
}

// eventGetter is what get reads: a file and a gateway both are.
type eventGetter interface {
	// event returns the event ref names, a seq (a decimal number) or a
	// message id; not found is store.ErrNotFound or the gateway's 404.
	event(ctx context.Context, ref string) (store.Event, error)
}

var (
	_ eventGetter = (*local)(nil)
	_ eventGetter = (*remote)(nil)
)

// eventSeq reads ref as a seq: decimal digits only, the rule of the
// gateway's GET /v1/events/{id}, so that both modes read ref alike.
func eventSeq(ref string) (uint64, bool) {
	if ref == "" || ref[0] < '0' || ref[0] > '9' {
		return 0, false
	}
	seq, err := strconv.ParseUint(ref, 10, 64)
	return seq, err == nil
}

func (l *local) event(ctx context.Context, ref string) (store.Event, error) {
	seq, ok := eventSeq(ref)
	if !ok {
		return l.st.Get(ctx, ref)
	}
	if seq == 0 {
		return store.Event{}, store.ErrNotFound
	}
	for ev, err := range l.st.Read(ctx, store.Query{AfterSeq: seq - 1, Limit: 1}) {
		if err != nil {
			return store.Event{}, err
		}
		if ev.Seq == seq {
			return ev, nil
		}
	}
	return store.Event{}, store.ErrNotFound
}

func (r *remote) event(ctx context.Context, ref string) (store.Event, error) {
	ev, err := r.c.Event(ctx, ref)
	if err != nil {
		return store.Event{}, err
	}
	return ev.StoreEvent(), nil
}

// printEvent writes the event's line, then its message indented.
func printEvent(out io.Writer, ev store.Event) error {
	var buf bytes.Buffer
	buf.WriteString(renderEvent(ev))
	buf.WriteByte('\n')
	if err := json.Indent(&buf, ev.Raw, "", "  "); err != nil {
		buf.WriteString(clean(string(ev.Raw))) // shown, so that the reader meets it
	}
	buf.WriteByte('\n')
	_, err := fmt.Fprint(out, buf.String())
	return err
}
