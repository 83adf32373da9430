package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/client"
	"github.com/clutchprotocol/clutch/cmd/clutch/internal/progress"
	"github.com/clutchprotocol/clutch/internal/eventio"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

func init() {
	register(&command{
		name:    "stats",
		summary: "count events by type, runs, threads, tasks and agents",
		usage:   "clutch stats [flags]",
		help: `Reads every event (that matches the filters) once and prints: the number of
events and their bytes, the first and last event time, the numbers of runs,
threads, tasks and sending agents, the events by type and by agent, and, for a
file, its size on disk. The events of the system runs (the registry's, the
rules library's; docs/protocol.md §6.7) are left out unless --system, or a
filter names a system run, thread or task. A --run, --thread or --task that
does not exist exits 3; filters that leave no event print zero counts.

--json prints {"events", "event_bytes", "first_seq", "last_seq", "first",
"last", "runs", "threads", "tasks", "agents", "by_type": {TYPE: N},
"by_agent": {AGENT: N}, "undecodable", "file_bytes"}: first and last (RFC 3339,
UTC, milliseconds) are left out when no event counts, as are undecodable and
file_bytes when 0 (file_bytes is a file's alone).

Whatever the filters, a "store" block says what the whole store holds: its
size (and the free space clutch compact gives back), its events, the oldest
one, and when it was last compacted and backed up; in JSON "store": {"bytes",
"free_bytes", "events", "last_seq", "oldest_seq", "oldest_time",
"last_compaction", "last_backup"}, zero ones left out. Through --url it needs
a key with read:all (GET /v1/store), and is left out otherwise.`,
		examples: `  clutch stats
  clutch stats --json
  clutch stats --run run_01JD3Z...
  clutch stats --since 24h --agent agent:ken
  clutch stats --url http://127.0.0.1:8080 --key $KEY`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			w := addWhere(fs)
			f := addFilters(fs)
			system := fs.Bool("system", false, "count the events of the system runs too")
			asJSON := fs.Bool("json", false, "print JSON")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usagef("unexpected argument %q", args[0])
				}
				src, err := w.open()
				if err != nil {
					return err
				}
				defer src.close()
				q := f.query()
				s, err := collectStats(ctx, src, q, *system || namesSystem(q), e.stderr)
				if err != nil {
					return err
				}
				if l, ok := src.(*local); ok {
					if fi, err := os.Stat(l.name()); err == nil {
						s.FileBytes = fi.Size()
					}
				}
				if s.Store, err = storeUsage(ctx, src); err != nil {
					return err
				}
				if *asJSON {
					return writeJSON(e.stdout, s)
				}
				s.print(e.stdout)
				return nil
			}
		},
	})
}

// stats is what `clutch stats` prints.
type stats struct {
	Events     int            `json:"events"`
	EventBytes int64          `json:"event_bytes"`
	FirstSeq   uint64         `json:"first_seq"`
	LastSeq    uint64         `json:"last_seq"`
	First      time.Time      `json:"first,omitzero"`
	Last       time.Time      `json:"last,omitzero"`
	Runs       int            `json:"runs"`
	Threads    int            `json:"threads"`
	Tasks      int            `json:"tasks"`
	Agents     int            `json:"agents"`
	ByType     map[string]int `json:"by_type"`
	ByAgent    map[string]int `json:"by_agent"`
	Undecoded  int            `json:"undecodable,omitempty"`
	FileBytes  int64          `json:"file_bytes,omitempty"`
	// Store is the whole store's usage, whatever the filters; nil
	// through a gateway that does not serve it to this caller.
	Store *client.StoreUsage `json:"store,omitempty"`
}

// storeUsage is the usage of the store src reads: the file's own
// (store.UsageOf), or GET /v1/store of a gateway, nil when the caller's
// key lacks read:all.
func storeUsage(ctx context.Context, src source) (*client.StoreUsage, error) {
	switch src := src.(type) {
	case *local:
		u, err := store.UsageOf(ctx, src.st)
		if err != nil {
			return nil, err
		}
		ms := func(t time.Time) time.Time { return t.Truncate(time.Millisecond) }
		return &client.StoreUsage{
			Bytes: u.Bytes, Free: u.Free, Events: u.Events, LastSeq: u.LastSeq, OldestSeq: u.OldestSeq,
			OldestTime: ms(u.OldestTime), LastCompaction: ms(u.LastCompaction), LastBackup: ms(u.LastBackup),
		}, nil
	case *remote:
		u, err := src.c.Store(ctx)
		if errors.Is(err, protocol.CodePolicyDenied) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		return &u, nil
	}
	return nil, nil
}

// namesSystem reports whether q names a reserved system run, thread or
// task.
func namesSystem(q store.Query) bool {
	return protocol.Reserved(q.RunID) || protocol.Reserved(q.ThreadID) || protocol.Reserved(q.TaskID)
}

// collectStats counts the events of q; those of the system runs only
// when system is set. Times are to the millisecond, as a gateway serves
// them.
func collectStats(ctx context.Context, src source, q store.Query, system bool, stderr io.Writer) (*stats, error) {
	s := &stats{ByType: map[string]int{}, ByAgent: map[string]int{}}
	runs, threads, tasks := map[string]struct{}{}, map[string]struct{}{}, map[string]struct{}{}
	var total uint64
	if last, err := src.lastSeq(ctx); err == nil && q == (store.Query{}) && !windowOfSource(src).set() {
		total = last
	}
	bar := progress.New(stderr, "stats", "events", total)
	defer bar.Finish()
	for ev, err := range src.read(ctx, q) {
		if err != nil {
			return nil, err
		}
		bar.Add(1)
		h, herr := eventio.ReadHead(ev.Raw)
		if herr == nil && !system && protocol.Reserved(h.Run) {
			continue
		}
		t := ev.Time.Truncate(time.Millisecond)
		if s.Events == 0 {
			s.FirstSeq, s.First = ev.Seq, t
		}
		s.Events++
		s.EventBytes += int64(len(ev.Raw))
		s.LastSeq, s.Last = ev.Seq, t
		if herr != nil {
			s.Undecoded++
			continue
		}
		s.ByType[h.Type]++
		s.ByAgent[h.From.AgentID]++
		runs[h.Run] = struct{}{}
		threads[h.Thread] = struct{}{}
		if h.Task != "" {
			tasks[h.Task] = struct{}{}
		}
	}
	s.Runs, s.Threads, s.Tasks, s.Agents = len(runs), len(threads), len(tasks), len(s.ByAgent)
	return s, nil
}

func (s *stats) print(out io.Writer) {
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "events\t%d (%s of messages)\n", s.Events, bytesString(s.EventBytes))
	if s.Events > 0 {
		fmt.Fprintf(tw, "seqs\t%d to %d\n", s.FirstSeq, s.LastSeq)
		fmt.Fprintf(tw, "time\t%s to %s\n", s.First.UTC().Format(time.RFC3339), s.Last.UTC().Format(time.RFC3339))
	}
	fmt.Fprintf(tw, "runs\t%d\nthreads\t%d\ntasks\t%d\nagents\t%d\n", s.Runs, s.Threads, s.Tasks, s.Agents)
	if s.FileBytes > 0 {
		fmt.Fprintf(tw, "file\t%s\n", bytesString(s.FileBytes))
	}
	if s.Undecoded > 0 {
		fmt.Fprintf(tw, "undecodable\t%d\n", s.Undecoded)
	}
	tw.Flush()
	if u := s.Store; u != nil {
		fmt.Fprintf(out, "\nstore:\n")
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintf(tw, "  size\t%s", bytesString(u.Bytes))
		if u.Free > 0 {
			fmt.Fprintf(tw, " (%s free: clutch compact gives it back)", bytesString(u.Free))
		}
		fmt.Fprintf(tw, "\n  events\t%d (last seq %d)\n", u.Events, u.LastSeq)
		if u.OldestSeq > 0 {
			fmt.Fprintf(tw, "  oldest\tseq %d, %s\n", u.OldestSeq, u.OldestTime.UTC().Format(time.RFC3339))
		}
		when := func(t time.Time) string {
			if t.IsZero() {
				return "never (or not recorded)"
			}
			return t.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "  last compaction\t%s\n  last backup\t%s\n", when(u.LastCompaction), when(u.LastBackup))
		tw.Flush()
	}
	for _, part := range []struct {
		title string
		m     map[string]int
	}{{"by type", s.ByType}, {"by agent", s.ByAgent}} {
		if len(part.m) == 0 {
			continue
		}
		fmt.Fprintf(out, "\n%s:\n", part.title)
		keys := make([]string, 0, len(part.m))
		for k := range part.m {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b string) int {
			return cmp.Or(cmp.Compare(part.m[b], part.m[a]), cmp.Compare(a, b))
		})
		for _, k := range keys {
			fmt.Fprintf(out, "  %8d  %s\n", part.m[k], clean(k))
		}
	}
}

func bytesString(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
