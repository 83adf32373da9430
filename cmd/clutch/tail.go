package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/clutchprotocol/clutch/internal/eventio"
	"github.com/clutchprotocol/clutch/store"
)

func init() {
	register(&command{
		name:    "tail",
		summary: "print the latest events and follow new ones",
		usage:   "clutch tail [flags]",
		help: `Prints the last -n events that match the filters, then, with --url, follows
the gateway's live stream and prints each new event as it is appended, until
interrupted. A store file cannot grow while tail holds it (no process may
write it meanwhile), so on a file tail prints and exits.

Each line: seq, time (UTC), type, sender and what the event says; "(no events)"
when none matches and tail does not follow. --json prints JSON lines instead
({"seq","time","message"}, the export format; nothing when none matches).

A --run, --thread or --task that does not exist (or that the key may not see)
exits 3. --since and --until select by the time the store appended the event;
with --until, tail does not follow.`,
		examples: `  clutch tail --db clutch.db -n 50
  clutch tail --url http://127.0.0.1:8080 --key $KEY --run run_01JD3Z...
  clutch tail --url http://127.0.0.1:8080 --type task. --agent agent:ken --json
  clutch tail --url http://127.0.0.1:8080 --after 1200   # resume after seq 1200
  clutch tail --since 2026-03-01T09:00:00Z --until 2026-03-01T10:00:00Z -n 1000`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			w := addWhere(fs)
			f := addFilters(fs)
			n := fs.Int("n", 10, "how many of the latest matching events to print first (ignored with --after)")
			noFollow := fs.Bool("no-follow", false, "print and exit, do not follow (with --url)")
			asJSON := fs.Bool("json", false, "print JSON lines instead of text")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usagef("unexpected argument %q", args[0])
				}
				if *n < 0 {
					return usagef("-n must not be negative")
				}
				afterSet := false
				fs.Visit(func(fl *flag.Flag) { afterSet = afterSet || fl.Name == "after" })
				src, err := w.open()
				if err != nil {
					return err
				}
				defer src.close()
				follow := w.url != "" && !*noFollow && f.win.until.t.IsZero()
				return tail(ctx, e.stdout, src, f.query(), f.win.set(), afterSet, *n, follow, *asJSON)
			}
		},
	})
}

// tail prints the backlog (after q.AfterSeq, or the last n matching
// events) and then, when follow is set, the new events, until ctx is done.
// windowed says src keeps only the events of a time window.
func tail(ctx context.Context, out io.Writer, src source, q store.Query, windowed, afterSet bool, n int, follow, asJSON bool) (err error) {
	printed, p := 0, printer(out, asJSON)
	print := func(ev store.Event) error {
		printed++
		return p(ev)
	}
	if !follow && !asJSON {
		defer func() {
			if err == nil && printed == 0 {
				_, err = fmt.Fprintln(out, "(no events)")
			}
		}()
	}
	if err := checkNamed(ctx, src, q); err != nil {
		return err
	}
	last, err := src.lastSeq(ctx)
	if err != nil {
		return err
	}
	from := q.AfterSeq
	if !afterSet {
		// The last n matching events: without a filter they are the last
		// n of the log; with one, the backlog is read and the last n kept.
		from = last
		if n > 0 {
			bq := q
			if bq == (store.Query{}) && !windowed {
				bq.AfterSeq = last - min(last, uint64(n))
			}
			ring := make([]store.Event, 0, n)
			for ev, err := range src.read(ctx, bq) {
				if err != nil {
					return err
				}
				if ev.Seq > last {
					break
				}
				if len(ring) == n {
					copy(ring, ring[1:])
					ring = ring[:n-1]
				}
				ring = append(ring, ev)
			}
			for _, ev := range ring {
				if err := print(ev); err != nil {
					return err
				}
			}
		}
	} else {
		for ev, err := range src.read(ctx, q) {
			if err != nil {
				return err
			}
			if err := print(ev); err != nil {
				return err
			}
			from = max(from, ev.Seq)
		}
		from = max(from, last)
	}
	if !follow {
		return nil
	}
	q.AfterSeq = from
	for ev, err := range src.follow(ctx, q) {
		if err != nil {
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}
		if err := print(ev); err != nil {
			return err
		}
	}
	return nil
}

// printer writes events as text lines or JSON lines, each flushed at once.
func printer(out io.Writer, asJSON bool) func(store.Event) error {
	if asJSON {
		w := eventio.NewWriter(out, eventio.JSONLines)
		return func(ev store.Event) error {
			if err := w.Write(ev); err != nil {
				return err
			}
			return w.Flush()
		}
	}
	return func(ev store.Event) error {
		_, err := fmt.Fprintln(out, renderEvent(ev))
		return err
	}
}
