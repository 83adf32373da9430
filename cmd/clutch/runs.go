package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/client"
	"github.com/clutchprotocol/clutch/store"
)

func init() {
	register(&command{
		name:    "runs",
		summary: "list runs (or threads), newest first, with status",
		usage:   "clutch runs [flags]",
		help: `Lists runs, most recently active first: id, status, events, tasks (ended of
all), last activity, channel and title. Status: running while a task is open,
else completed, failed, cancelled or timed_out after the latest ending task,
active when the run has no task; a failed or timed-out run's status is followed
by the code of what failed. The title is the run's ask: the text of its first
request or chat message. --threads lists threads instead. Pages with --before
(the next_before the previous page printed). --json prints the summaries
whole: title, agents, failure and waiting tasks included.`,
		examples: `  clutch runs
  clutch runs --limit 100 --json
  clutch runs --threads --url http://127.0.0.1:8080 --key $KEY`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			w := addWhere(fs)
			limit := fs.Int("limit", 20, "how many to list")
			before := fs.Uint64("before", 0, "list those whose last event is before this seq (paging)")
			threads := fs.Bool("threads", false, "list threads instead of runs")
			asJSON := fs.Bool("json", false, "print JSON ({\"runs\"|\"threads\": [...], \"next_before\": SEQ})")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usagef("unexpected argument %q", args[0])
				}
				if *limit <= 0 {
					return usagef("--limit must be positive")
				}
				src, err := w.open()
				if err != nil {
					return err
				}
				defer src.close()
				list, next, err := src.runs(ctx, *threads, *before, *limit)
				if err != nil {
					return err
				}
				if *asJSON {
					key := "runs"
					if *threads {
						key = "threads"
					}
					if list == nil {
						list = []client.Summary{}
					}
					return writeJSON(e.stdout, map[string]any{key: list, "next_before": next})
				}
				printRuns(e.stdout, list, *threads)
				if next != 0 {
					fmt.Fprintf(e.stdout, "(more: --before %d)\n", next)
				}
				return nil
			}
		},
	})
}

func printRuns(out io.Writer, list []client.Summary, threads bool) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	head := "RUN"
	if threads {
		head = "THREAD"
	}
	fmt.Fprintf(tw, "%s\tSTATUS\tEVENTS\tENDED/TASKS\tUPDATED\tCHANNEL\tTITLE\n", head)
	for _, s := range list {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d/%d\t%s\t%s\t%s\n", clean(s.ID), clean(runStatus(s)), s.Events, s.Ended, s.Tasks,
			s.Updated.UTC().Format(time.DateTime), clean(s.Channel), clean(s.Title))
	}
	tw.Flush()
}

// runStatus is the status of a run or thread, with the code of what failed
// when it failed or timed out: "failed (TOOL_FAILED)".
func runStatus(s client.Summary) string {
	if f := s.Failure; f != nil && f.Code != "" && (s.Status == store.StatusFailed || s.Status == store.StatusTimedOut) {
		return s.Status + " (" + string(f.Code) + ")"
	}
	return s.Status
}
