package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
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
(the next_before the previous page printed). No run prints "(no runs)".

Filters: --status (one status), --agent (the agent that started the run or one
of the first 8 that accepted its tasks), --since and --until (runs active at
some time between them: last event at or after --since, first event before
--until). A page is filled with the runs that pass; the same on a file and
through a gateway. The system runs (the registry's, the rules library's;
docs/protocol.md §6.7) are left out unless --system.

--json prints {"runs"|"threads": [summary...], "next_before": SEQ}, each summary
whole (the store's Summary: id, run_id, owner, channel, title, first_seq,
last_seq, created, updated, events, bytes, tasks, ended, waiting, status, agents,
agents_more, failure), next_before 0 on the last page.`,
		examples: `  clutch runs
  clutch runs --status failed --since 24h
  clutch runs --agent agent:ken --limit 100 --json
  clutch runs --threads --url http://127.0.0.1:8080 --key $KEY`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			w := addWhere(fs)
			q := runsQuery{}
			fs.IntVar(&q.limit, "limit", 20, "how many to list")
			fs.Uint64Var(&q.before, "before", 0, "list those whose last event is before this seq (paging)")
			fs.BoolVar(&q.threads, "threads", false, "list threads instead of runs")
			fs.StringVar(&q.status, "status", "", "only runs of this status: running, completed, failed, cancelled, timed_out or active")
			fs.StringVar(&q.agent, "agent", "", "only runs this agent started or took tasks of")
			fs.BoolVar(&q.system, "system", false, "list the system runs too (the registry's, the rules library's)")
			win := addWindow(fs, "runs active")
			asJSON := fs.Bool("json", false, "print JSON ({\"runs\"|\"threads\": [...], \"next_before\": SEQ})")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usagef("unexpected argument %q", args[0])
				}
				if q.limit <= 0 {
					return usagef("--limit must be positive")
				}
				if q.status != "" && !slices.Contains(runStatuses, q.status) {
					return usagef("--status %q: want one of running, completed, failed, cancelled, timed_out, active", q.status)
				}
				q.win = *win
				src, err := w.open()
				if err != nil {
					return err
				}
				defer src.close()
				list, next, err := listRuns(ctx, src, q)
				if err != nil {
					return err
				}
				if *asJSON {
					key := "runs"
					if q.threads {
						key = "threads"
					}
					if list == nil {
						list = []client.Summary{}
					}
					return writeJSON(e.stdout, map[string]any{key: list, "next_before": next})
				}
				printRuns(e.stdout, list, q.threads)
				if next != 0 {
					fmt.Fprintf(e.stdout, "(more: --before %d)\n", next)
				}
				return nil
			}
		},
	})
}

// runStatuses are the values of --status: those of a Summary.
var runStatuses = []string{store.StatusRunning, store.StatusCompleted, store.StatusFailed, store.StatusCancelled, store.StatusTimedOut, store.StatusActive}

// runsQuery is what `clutch runs` lists.
type runsQuery struct {
	threads       bool
	before        uint64
	limit         int
	system        bool
	status, agent string
	win           window
}

// filtered reports whether q has filters the listing APIs do not take.
func (q runsQuery) filtered() bool { return q.status != "" || q.agent != "" || q.win.set() }

// keep reports whether s passes q's filters.
func (q runsQuery) keep(s client.Summary) bool {
	return (q.system || !system(s)) &&
		(q.status == "" || s.Status == q.status) &&
		(q.agent == "" || s.Owner == q.agent || slices.Contains(s.Agents, q.agent)) &&
		q.win.overlaps(s.Created, s.Updated)
}

// listPage is how many summaries listRuns asks for at a time when it
// filters them itself.
const listPage = 200

// listRuns lists what q selects, newest first, in the same way from a
// file and from a gateway: it reads pages of summaries, keeps those that
// pass the filters and goes on until q.limit are kept or the list ends.
// next is the before of the next page when the page is full, else 0.
func listRuns(ctx context.Context, src source, q runsQuery) ([]client.Summary, uint64, error) {
	lq := client.ListQuery{Before: q.before, Limit: q.limit, System: q.system}
	if q.filtered() {
		lq.Limit = max(q.limit, listPage)
	}
	var out []client.Summary
	for {
		page, next, err := src.page(ctx, q.threads, lq)
		if err != nil {
			return nil, 0, err
		}
		for _, s := range page {
			if !q.keep(s) {
				continue
			}
			out = append(out, s)
			if len(out) == q.limit {
				return out, s.LastSeq, nil
			}
		}
		if next == 0 || len(page) == 0 {
			return out, 0, nil
		}
		lq.Before = next
	}
}

func printRuns(out io.Writer, list []client.Summary, threads bool) {
	if len(list) == 0 {
		if threads {
			fmt.Fprintln(out, "(no threads)")
		} else {
			fmt.Fprintln(out, "(no runs)")
		}
		return
	}
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
