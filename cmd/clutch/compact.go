package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/clutchprotocol/clutch/store/boltstore"
)

func init() {
	register(&command{
		name:    "compact",
		summary: "rewrite a store file without its free space",
		usage:   "clutch compact [--db FILE] [--json]",
		help: `Rewrites the store file --db into a new file without the free pages a bbolt
file keeps (left by overwritten index entries and summaries, and by removals),
and renames it over the old one: the store's Compact, with nothing else
writing. The new file is written and synced beside the old one as
FILE.compact first; a crash before the rename leaves the old file whole (the
next open removes the leftover). Every event keeps its seq. Prints the
file's size before and after.

The file must not be open elsewhere: a process that has it open (for
writing or reading) holds it, and this command fails after --lock-timeout
naming the file. A process that has it open for writing compacts it itself,
online, with its store's Compact.

--json prints {"db": FILE, "bytes_before": N, "bytes_after": N,
"last_seq": N, "seconds": S}.`,
		examples: `  clutch compact --db clutch.db
  clutch compact --db clutch.db --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			db := fs.String("db", getenv("CLUTCH_DB", "clutch.db"), "the store file ($CLUTCH_DB)")
			lockTimeout := fs.Duration("lock-timeout", time.Second, "how long to wait for a file another process holds")
			asJSON := fs.Bool("json", false, "print the result as JSON")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usagef("unexpected argument %q", args[0])
				}
				// Open would make a new store of a missing file.
				if _, err := os.Stat(*db); err != nil {
					return err
				}
				// NoSync: Compact syncs the new file and the rename itself,
				// and the store takes no appends here.
				st, err := boltstore.Open(*db, &boltstore.Options{NoSync: true, LockTimeout: *lockTimeout})
				if errors.Is(err, boltstore.ErrLocked) {
					return fmt.Errorf("%w\n(a process has it open: stop it, or let it compact the store itself with its store's Compact)", err)
				}
				if err != nil {
					return err
				}
				res, err := st.Compact(ctx)
				if cerr := st.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					return err
				}
				if *asJSON {
					return writeJSON(e.stdout, compactReport{DB: *db, Before: res.BytesBefore, After: res.BytesAfter, LastSeq: res.LastSeq, Seconds: res.Duration.Seconds()})
				}
				_, err = fmt.Fprintf(e.stdout, "compact: %s, %s before, %s after, events up to seq %d (%s)\n",
					*db, bytesString(res.BytesBefore), bytesString(res.BytesAfter), res.LastSeq, res.Duration.Round(time.Millisecond))
				return err
			}
		},
	})
}

// compactReport is what clutch compact --json prints.
type compactReport struct {
	DB      string  `json:"db"`
	Before  int64   `json:"bytes_before"`
	After   int64   `json:"bytes_after"`
	LastSeq uint64  `json:"last_seq"`
	Seconds float64 `json:"seconds"`
}
