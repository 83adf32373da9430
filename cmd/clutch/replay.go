package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/clutchprotocol/clutch/store"
)

func init() {
	register(&command{
		name:    "replay",
		summary: "play a run's events back in order, then its task tree",
		usage:   "clutch replay [flags] RUN_ID",
		help: `Prints every event of a run in seq order, as tail does, and then the task tree
rebuilt from them: how the run unfolded, for debugging. With --speed the events
come at their recorded pace (2 = twice as fast); gaps longer than --max-gap are
shortened to it. Nothing is written or re-executed. A run that does not exist
exits 3; when --type leaves no event, "(no events)" comes before the tree.

--json prints the events as JSON lines, {"seq","time","message"} (the export
format), and no tree: 'clutch tree --json' prints that.`,
		examples: `  clutch replay run_01JD3Z...
  clutch replay --speed 1 run_01JD3Z...
  clutch replay --url http://127.0.0.1:8080 --key $KEY --type task. run_01JD3Z...`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			w := addWhere(fs)
			speed := fs.Float64("speed", 0, "replay at the recorded pace times this (0: at once)")
			maxGap := fs.Duration("max-gap", 2*time.Second, "the longest pause between two events with --speed")
			typ := fs.String("type", "", "only events whose type starts with this")
			asJSON := fs.Bool("json", false, "print JSON lines and no tree")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) != 1 {
					return usagef("want one RUN_ID")
				}
				if *speed < 0 {
					return usagef("--speed must not be negative")
				}
				src, err := w.open()
				if err != nil {
					return err
				}
				defer src.close()
				print := printer(e.stdout, *asJSON)
				var prev time.Time
				n := 0
				for ev, err := range src.read(ctx, store.Query{RunID: args[0], TypePrefix: *typ}) {
					if err != nil {
						return err
					}
					if *speed > 0 && !prev.IsZero() {
						gap := min(time.Duration(float64(ev.Time.Sub(prev))/(*speed)), *maxGap)
						if gap > 0 {
							t := time.NewTimer(gap)
							select {
							case <-ctx.Done():
								t.Stop()
								return ctx.Err()
							case <-t.C:
							}
						}
					}
					prev = ev.Time
					if err := print(ev); err != nil {
						return err
					}
					n++
				}
				if *asJSON {
					return nil
				}
				if n == 0 {
					fmt.Fprintln(e.stdout, "(no events)")
				}
				t, err := src.tree(ctx, args[0], "")
				if err != nil {
					return err
				}
				fmt.Fprintln(e.stdout)
				printTree(e.stdout, t)
				return nil
			}
		},
	})
}
