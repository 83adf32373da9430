package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/atomicfile"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

func init() {
	register(&command{
		name:    "backup",
		summary: "write a consistent copy of a store file",
		usage:   "clutch backup [--db FILE] --out BACKUP [--json]",
		help: `Writes a consistent copy of the store file --db to --out (mode 0600): to a
new file beside --out, synced, then renamed over it, so --out holds either
its previous content or the whole backup. The file is opened for writing,
so that the backup's time is recorded in it (clutch stats: last backup);
when other readers hold it (a clutch tail, say), it is opened read-only
instead and the backup is made but not recorded. A process that has it
open for writing holds it exclusively: that process backs it up itself,
with the store's BackupFile (a host calls it on a timer), and this command
fails after --lock-timeout naming the file.

The backup is a store file: clutch check, every read command and
boltstore.Open take it as it is. clutch restore puts it in place.

--json prints {"backup": FILE, "last_seq": N, "bytes": N, "seconds": S,
"recorded": BOOL}.`,
		examples: `  clutch backup --db clutch.db --out clutch-$(date +%F).db
  clutch backup --db clutch.db --out /backups/clutch.db --json`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			db := fs.String("db", getenv("CLUTCH_DB", "clutch.db"), "the store file ($CLUTCH_DB)")
			out := fs.String("out", "", "the backup file to write (required)")
			lockTimeout := fs.Duration("lock-timeout", time.Second, "how long to wait for a file another process holds")
			asJSON := fs.Bool("json", false, "print the result as JSON")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usagef("unexpected argument %q", args[0])
				}
				if *out == "" {
					return usagef("--out is required")
				}
				st, recorded, err := openForBackup(*db, *lockTimeout)
				if err != nil {
					return err
				}
				defer st.Close()
				info, err := st.BackupFile(ctx, *out)
				if err != nil {
					return err
				}
				if *asJSON {
					return writeJSON(e.stdout, backupReport{Backup: *out, LastSeq: info.LastSeq, Bytes: info.Bytes,
						Seconds: info.Duration.Seconds(), Recorded: recorded})
				}
				note := ""
				if !recorded {
					note = "; not recorded in the store: other readers hold it"
				}
				_, err = fmt.Fprintf(e.stdout, "backup: %s, events up to seq %d, %d bytes (%s)%s\n",
					*out, info.LastSeq, info.Bytes, info.Duration.Round(time.Millisecond), note)
				return err
			}
		},
	})
	register(&command{
		name:    "restore",
		summary: "put a backup in place as a store file",
		usage:   "clutch restore --from BACKUP [--db FILE] [--force]",
		help: `Copies the backup --from to --db: to a new file beside --db (mode 0600),
synced, checked as clutch check does (the store's Check: pages, records,
indexes), and only then renamed over --db. A backup that fails the check
is refused and nothing is changed.

An existing --db is refused unless --force; with --force it is replaced,
unless a process has it open for writing (then the command fails after
--lock-timeout: stop that process first). That check and the rename are
two steps: a process that opens --db between them keeps the replaced file
open, so stop the processes that use --db before restoring. Restoring
over a damaged file is what --force is for.`,
		examples: `  clutch restore --from clutch-2026-11-28.db --db clutch.db
  clutch restore --from /backups/clutch.db --db clutch.db --force`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			db := fs.String("db", getenv("CLUTCH_DB", "clutch.db"), "the store file to write ($CLUTCH_DB)")
			from := fs.String("from", "", "the backup file to restore (required)")
			force := fs.Bool("force", false, "replace an existing --db")
			lockTimeout := fs.Duration("lock-timeout", time.Second, "how long to wait for a file another process holds")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usagef("unexpected argument %q", args[0])
				}
				if *from == "" {
					return usagef("--from is required")
				}
				last, err := restore(ctx, *from, *db, *force, *lockTimeout)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(e.stdout, "restored: %s from %s, events up to seq %d\n", *db, *from, last)
				return err
			}
		},
	})
}

// backupReport is what backup --json prints.
type backupReport struct {
	Backup   string  `json:"backup"`
	LastSeq  uint64  `json:"last_seq"`
	Bytes    int64   `json:"bytes"`
	Seconds  float64 `json:"seconds"`
	Recorded bool    `json:"recorded"`
}

// openForBackup opens the existing store file db for a backup: for
// writing, so that the store records the backup (Usage.LastBackup), or,
// when other readers hold the file, read-only (recorded false). A file a
// process holds for writing fails after lockTimeout, saying who backs it
// up.
func openForBackup(db string, lockTimeout time.Duration) (st *boltstore.Store, recorded bool, err error) {
	if _, err := os.Stat(db); err != nil {
		return nil, false, err // a backup never creates the store it copies
	}
	st, err = boltstore.Open(db, &boltstore.Options{LockTimeout: lockTimeout})
	if err == nil {
		return st, true, nil
	}
	if !errors.Is(err, boltstore.ErrLocked) {
		return nil, false, err
	}
	// Readers share the file; a writer holds it. The wait is spent
	// already: a shared lock is there at once or not at all.
	st, err = boltstore.Open(db, &boltstore.Options{ReadOnly: true, LockTimeout: sharedLockWait})
	if errors.Is(err, boltstore.ErrLocked) {
		return nil, false, fmt.Errorf("%w\n(a process has it open for writing: that process backs it up with its store's BackupFile)", err)
	}
	return st, false, err
}

// sharedLockWait is how long openForBackup waits for a shared lock after
// the exclusive one timed out.
const sharedLockWait = 50 * time.Millisecond

// restore copies the backup from to a new file beside db, checks the copy
// and renames it over db. It returns the last seq the copy holds.
func restore(ctx context.Context, from, db string, force bool, lockTimeout time.Duration) (last uint64, err error) {
	if _, err := os.Stat(from); err != nil {
		return 0, fmt.Errorf("backup %s: %w", from, err)
	}
	if fi, err := os.Stat(db); err == nil {
		if !force {
			return 0, fmt.Errorf("%s exists; to replace it with the backup, add --force", db)
		}
		if fa, ferr := os.Stat(from); ferr == nil && os.SameFile(fi, fa) {
			return 0, fmt.Errorf("--from and --db are the same file: %s", db)
		}
		// A process writing db would go on writing the replaced file:
		// refused while one holds it. Damage or a foreign format is
		// what a restore replaces.
		if st, err := boltstore.Open(db, &boltstore.Options{ReadOnly: true, LockTimeout: lockTimeout}); err == nil {
			st.Close()
		} else if errors.Is(err, boltstore.ErrLocked) {
			return 0, fmt.Errorf("%w\n(stop the process that has it open for writing, then restore)", err)
		}
	}
	tmp, err := atomicfile.Create(db, 0o600)
	if err != nil {
		return 0, err
	}
	defer tmp.Abort() // path is left as it was unless committed
	src, err := os.Open(from)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(tmp, src)
	src.Close()
	if err != nil {
		return 0, err
	}
	if err = tmp.Finish(); err != nil {
		return 0, err
	}
	name := tmp.Name()
	if last, err = checkBackup(ctx, name); err != nil {
		// The check ran on the copy: its errors name the backup.
		return 0, &refusedError{
			msg: "backup " + from + " is not a sound store, nothing was restored: " + strings.ReplaceAll(err.Error(), name, from),
			err: err,
		}
	}
	if err = tmp.Commit(); err != nil {
		return 0, err
	}
	return last, nil
}

// checkBackup opens the file read-only and checks it whole.
func checkBackup(ctx context.Context, path string) (uint64, error) {
	st, err := boltstore.Open(path, &boltstore.Options{ReadOnly: true})
	if err != nil {
		return 0, err
	}
	defer st.Close()
	if err := st.Check(ctx); err != nil {
		return 0, err
	}
	return st.LastSeq(ctx)
}

// refusedError is a backup restore refused; it matches the check's error.
type refusedError struct {
	msg string
	err error
}

func (e *refusedError) Error() string { return e.msg }
func (e *refusedError) Unwrap() error { return e.err }
