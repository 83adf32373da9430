package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/retention"
)

func init() {
	register(&command{
		name:    "prune",
		summary: "remove ended runs past a retention policy, archiving them first",
		usage:   "clutch prune [--db FILE] [--max-age AGE] [--max-runs N] [--max-bytes SIZE] [--archive DIR] [--dry-run] [--json]",
		help: `Applies a retention policy to the store file --db: of the runs that have
ended (every task ended, none waiting for an answer), those past a limit
are removed, oldest first, and each leaves a tombstone that says when, by
which rule and where it was archived; reading a removed run says so. Runs
that are running, waiting or have no tasks are never removed.

  --max-age AGE     runs whose last event is older than AGE (720h, 30d)
  --max-runs N      all but the N most recently updated ended runs
  --max-bytes SIZE  then the oldest ended runs, until the events of all
                    runs (running and waiting ones counted) take at most
                    SIZE: bytes, or with K, M, G or T (powers of 1024)

At least one limit is required. With --archive DIR each run is first
written to DIR/<run_id>.jsonl (--format cloudevents: .cloudevents.jsonl),
synced, before it goes; clutch import reads the files back. --dry-run
prints what would go and changes nothing. The file keeps its size: the
space is reused by new events, and clutch compact gives it back.

The file must not be open for writing elsewhere (the command fails after
--lock-timeout): a process serving it applies the policy itself
(retention.Apply on a timer).

--json prints {"dry_run", "removed": [tombstones], "ended", "active",
"bytes"}.`,
		examples: `  clutch prune --db clutch.db --max-age 30d --dry-run
  clutch prune --db clutch.db --max-age 30d --archive /var/archive/clutch
  clutch prune --db clutch.db --max-runs 10000 --json
  clutch prune --db clutch.db --max-bytes 20G --dry-run`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			db := fs.String("db", getenv("CLUTCH_DB", "clutch.db"), "the store file ($CLUTCH_DB)")
			var age ageFlag
			fs.Var(&age, "max-age", "remove ended runs whose last event is older than `AGE` (720h, 30d)")
			maxRuns := fs.Int("max-runs", 0, "keep at most `N` ended runs, the most recent")
			var maxBytes sizeFlag
			fs.Var(&maxBytes, "max-bytes", "remove the oldest ended runs until the runs' events take at most `SIZE` (bytes, K, M, G, T)")
			archive := fs.String("archive", "", "write each run to a file in `DIR` before removing it")
			format := fs.String("format", "jsonl", "the archive format: jsonl or cloudevents")
			note := fs.String("note", "clutch prune", "a note kept in each tombstone")
			dry := fs.Bool("dry-run", false, "print what would be removed and change nothing")
			lockTimeout := fs.Duration("lock-timeout", time.Second, "how long to wait for a file another process holds")
			asJSON := fs.Bool("json", false, "print JSON")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usagef("unexpected argument %q", args[0])
				}
				if *maxRuns < 0 {
					return usagef("--max-runs must not be negative")
				}
				p := retention.Policy{MaxAge: age.d, MaxRuns: *maxRuns, MaxBytes: maxBytes.n, Note: *note}
				if p.MaxAge == 0 && p.MaxRuns == 0 && p.MaxBytes == 0 {
					return usagef("give --max-age, --max-runs, --max-bytes or several")
				}
				if *archive == "" && flagSet(fs, "format") {
					return usagef("--format is the archive's: give --archive DIR too")
				}
				if *archive != "" {
					switch *format {
					case "jsonl", "cloudevents":
					default:
						return usagef("--format: want jsonl or cloudevents, not %q", *format)
					}
					p.Archive = &retention.Archive{Dir: *archive, CloudEvents: *format == "cloudevents"}
				}
				st, err := boltstore.Open(*db, &boltstore.Options{ReadOnly: *dry, LockTimeout: *lockTimeout})
				if errors.Is(err, boltstore.ErrLocked) {
					return fmt.Errorf("%w\n(a process has it open for writing: that process applies the policy with retention.Apply)", err)
				}
				if err != nil {
					return err
				}
				defer st.Close()
				apply := retention.Apply
				if *dry {
					apply = retention.Plan
				}
				rep, err := apply(ctx, st, p)
				if err != nil && len(rep.Removed) == 0 {
					return err
				}
				if perr := printPrune(e, rep, *dry, *asJSON); perr != nil {
					return perr
				}
				return err
			}
		},
	})
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// pruneReport is what prune --json prints.
type pruneReport struct {
	DryRun  bool              `json:"dry_run"`
	Removed []store.Tombstone `json:"removed"`
	Ended   int               `json:"ended"`
	Active  int               `json:"active"`
	Bytes   int64             `json:"bytes"`
}

func printPrune(e *env, rep retention.Report, dry, asJSON bool) error {
	if rep.Removed == nil {
		rep.Removed = []store.Tombstone{}
	}
	if asJSON {
		return writeJSON(e.stdout, pruneReport{DryRun: dry, Removed: rep.Removed, Ended: rep.Ended, Active: rep.Active, Bytes: rep.Bytes})
	}
	verb := "removed"
	if dry {
		verb = "would remove"
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	if len(rep.Removed) > 0 {
		fmt.Fprintln(tw, "RUN\tEVENTS\tBYTES\tRULE\tARCHIVE")
		for _, t := range rep.Removed {
			a := t.Archive
			if a == "" {
				a = "-"
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", t.RunID, t.Events, t.Bytes, t.Policy, a)
		}
	}
	fmt.Fprintf(tw, "%s %d of %d ended runs (%d bytes); %d not ended, kept\n", verb, len(rep.Removed), rep.Ended, rep.Bytes, rep.Active)
	return tw.Flush()
}

// ageFlag is a duration that also takes days ("30d").
type ageFlag struct{ d time.Duration }

func (f *ageFlag) String() string {
	if f.d == 0 {
		return ""
	}
	return f.d.String()
}

func (f *ageFlag) Set(s string) error {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 {
			return errors.New("want a positive duration: 720h, 90m or 30d")
		}
		f.d = time.Duration(n) * 24 * time.Hour
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return errors.New("want a positive duration: 720h, 90m or 30d")
	}
	f.d = d
	return nil
}

// sizeFlag is a positive number of bytes, with an optional suffix K, M, G
// or T (powers of 1024; lower case too): 1073741824, 512M, 20G.
type sizeFlag struct{ n int64 }

func (f *sizeFlag) String() string {
	if f.n == 0 {
		return ""
	}
	return strconv.FormatInt(f.n, 10)
}

func (f *sizeFlag) Set(s string) error {
	bad := errors.New("want a positive size: bytes, or with K, M, G or T (powers of 1024): 1073741824, 512M, 20G")
	digits, shift := s, 0
	if s != "" {
		if k := strings.IndexByte("KMGTkmgt", s[len(s)-1]); k >= 0 {
			digits, shift = s[:len(s)-1], 10*(k%4+1)
		}
	}
	if digits == "" || strings.TrimLeft(digits, "0123456789") != "" {
		return bad
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n <= 0 || n > math.MaxInt64>>shift {
		return bad
	}
	f.n = n << shift
	return nil
}
