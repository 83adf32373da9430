package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/atomicfile"
	"github.com/clutchprotocol/clutch/cmd/clutch/internal/progress"
	"github.com/clutchprotocol/clutch/internal/eventio"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
)

func init() {
	register(&command{
		name:    "export",
		summary: "write events as JSON lines or CloudEvents",
		usage:   "clutch export [flags]",
		help: `Writes the events that match the filters, in seq order, one per line: JSON
lines ({"seq","time","message"}) or, with --format cloudevents, CloudEvents 1.0
structured JSON (see the package doc for the mapping). Each message is written
as the bytes the store holds, so signatures still verify and 'clutch import'
restores the same bytes. --out FILE is written with mode 0600 (events may
carry what users said) under a temporary name, renamed to FILE when the
export is complete. A progress bar goes to stderr when it is a terminal.`,
		examples: `  clutch export --db clutch.db --out events.jsonl
  clutch export --run run_01JD3Z... --format cloudevents > run.ce.jsonl
  clutch export --url http://127.0.0.1:8080 --key $KEY --after 5000 --out new.jsonl`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			w := addWhere(fs)
			f := addFilters(fs)
			out := fs.String("out", "-", "the file to write, - for stdout")
			format := fs.String("format", "jsonl", "jsonl or cloudevents")
			return func(ctx context.Context, e *env, args []string) error {
				if len(args) > 0 {
					return usagef("unexpected argument %q", args[0])
				}
				fm, err := eventio.ParseFormat(*format)
				if err != nil {
					return usagef("%v", err)
				}
				src, err := w.open()
				if err != nil {
					return err
				}
				defer src.close()
				dst, done, err := create(e, *out)
				if err != nil {
					return err
				}
				n, err := export(ctx, src, f.query(), dst, fm, e.stderr)
				if cerr := done(err == nil); err == nil {
					err = cerr
				}
				if err != nil {
					return err
				}
				if *out != "-" {
					fmt.Fprintf(e.stderr, "exported %d events to %s\n", n, *out)
				}
				return nil
			}
		},
	})
	register(&command{
		name:    "import",
		summary: "append exported events to a store file",
		usage:   "clutch import [flags] FILE|-",
		help: `Reads JSON lines or CloudEvents lines (as 'clutch export' writes them; the
two may be mixed) and appends each message to the store file --db, creating it
if needed. The stored bytes are the exported bytes, unchanged, so signatures
still verify. The events get the seqs and times of this store, in the order of
the input.

All or nothing: every line is decoded and validated first, and only then are
the messages appended, so a bad line stores nothing (a new --db is not left
behind either) and the error names its line. The input is read twice: a file
from its start again, stdin through a temporary copy next to --db. --resume
appends as it reads instead and stops at a bad line with everything before it
stored. Deduplication makes a second import of the same events append nothing
(they are counted as duplicates), so either import can be run again.
--dry-run reads and validates the input and says how many events would be
appended and how many are duplicates, and writes nothing.

The file must not be open in another process; import does not go through a
gateway (its API stamps the caller as the sender and cannot keep the stored
bytes).`,
		examples: `  clutch import --db copy.db events.jsonl
  clutch import --db copy.db --dry-run events.jsonl   # check it first
  clutch export --db a.db | clutch import --db b.db -
  clutch import --db copy.db --resume run.ce.jsonl`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			var o importOptions
			fs.StringVar(&o.db, "db", getenv("CLUTCH_DB", "clutch.db"), "the store file to append to, created if needed ($CLUTCH_DB)")
			url := fs.String("url", "", "not supported: import writes a file")
			fs.IntVar(&o.batch, "batch", 1024, "messages per append (one transaction)")
			fs.DurationVar(&o.lockTimeout, "lock-timeout", time.Second, "how long to wait for a file another process holds")
			fs.BoolVar(&o.noSync, "no-sync", false, "skip fsync per batch (faster; the file is synced at the end)")
			fs.BoolVar(&o.resume, "resume", false, "append while reading; a bad line stops the import with the lines before it stored")
			fs.BoolVar(&o.dryRun, "dry-run", false, "validate the input and count what would be appended; write nothing")
			return func(ctx context.Context, e *env, args []string) error {
				if *url != "" {
					return usagef("import writes a store file and cannot go through a gateway: the API stamps the caller as the sender, so the stored bytes (and signatures) would change; stop the process or import into another file")
				}
				if len(args) != 1 {
					return usagef("want one input FILE, or - for stdin")
				}
				if o.batch <= 0 {
					return usagef("--batch must be positive")
				}
				if o.resume && o.dryRun {
					return usagef("--resume and --dry-run exclude each other")
				}
				return runImport(ctx, e, o, args[0])
			}
		},
	})
}

// importOptions are import's flags.
type importOptions struct {
	db             string
	batch          int
	lockTimeout    time.Duration
	noSync         bool
	resume, dryRun bool
}

// runImport imports the input at path ("-": stdin) into o.db.
func runImport(ctx context.Context, e *env, o importOptions, path string) error {
	exists, err := fileExists(o.db)
	if err != nil {
		return err
	}
	in, err := openImportInput(e, path, o.db, !o.resume && !o.dryRun)
	if err != nil {
		return err
	}
	defer in.close()
	if o.dryRun {
		return dryRun(ctx, e, o, exists, in)
	}
	// The store is opened first: a file another process holds fails at
	// once, and is held for the whole import, checks included.
	t, err := openTarget(o, exists)
	if err != nil {
		return err
	}
	r, size := in.r, in.size
	if !o.resume {
		if _, err := checkInput(ctx, in.r, in.size, nil, e.stderr); err != nil {
			t.discard()
			return fmt.Errorf("%w\nnothing imported (--resume imports the lines before it)", err)
		}
		if r, size, err = in.again(); err != nil {
			t.discard()
			return err
		}
	}
	res, err := importEvents(ctx, t.st, r, size, o.batch, e.stderr)
	if err != nil {
		if o.resume && res.appended > 0 || t.tmp == "" {
			err = errors.Join(err, t.keep(o.noSync))
			return fmt.Errorf("%w\n%d events appended before it (an import of the same input skips them as duplicates)", err, res.appended)
		}
		t.discard()
		return fmt.Errorf("%w\nnothing imported", err)
	}
	if err := t.keep(o.noSync); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "imported %d events into %s (%d duplicates skipped)\n", res.appended, o.db, res.duplicates)
	return nil
}

// fileExists reports whether path exists; an error other than "does not
// exist" is returned.
func fileExists(path string) (bool, error) {
	_, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// target is the store an import writes: db itself when it exists, else a
// new file next to it (tmp) that becomes db only when the import keeps
// it, so that a failed import leaves no file behind.
type target struct {
	st      *boltstore.Store
	db, tmp string
}

// openTarget opens the store of an import.
func openTarget(o importOptions, exists bool) (*target, error) {
	t := &target{db: o.db}
	path := o.db
	if !exists {
		f, err := os.CreateTemp(filepath.Dir(o.db), "."+filepath.Base(o.db)+".import-*")
		if err != nil {
			return nil, err
		}
		f.Close()
		t.tmp, path = f.Name(), f.Name()
	}
	st, err := boltstore.Open(path, &boltstore.Options{LockTimeout: o.lockTimeout, NoSync: o.noSync})
	if err != nil {
		if t.tmp != "" {
			os.Remove(t.tmp)
		}
		if errors.Is(err, boltstore.ErrLocked) {
			return nil, fmt.Errorf("%w\n(import needs the file to itself: stop the process that has it open, or import into another file)", err)
		}
		return nil, err
	}
	t.st = st
	return t, nil
}

// keep closes the store and, for a new file, moves it to db. A file that
// appeared at db meanwhile is not replaced: the import fails.
func (t *target) keep(noSync bool) error {
	err := t.st.Close()
	path := cmp.Or(t.tmp, t.db)
	if err == nil && noSync {
		err = syncFile(path)
	}
	if err != nil || t.tmp == "" {
		if t.tmp != "" {
			os.Remove(t.tmp)
		}
		return err
	}
	// A hard link does not replace a file that exists (a rename would);
	// where links are not supported, rename.
	err = os.Link(t.tmp, t.db)
	switch {
	case errors.Is(err, fs.ErrExist):
		os.Remove(t.tmp)
		return fmt.Errorf("%s was created by another process during the import; nothing imported", t.db)
	case err != nil:
		err = os.Rename(t.tmp, t.db)
	default:
		err = os.Remove(t.tmp)
	}
	if err == nil {
		atomicfile.SyncDir(filepath.Dir(t.db))
	}
	return err
}

// discard closes the store and removes it if the import created it.
func (t *target) discard() {
	t.st.Close()
	if t.tmp != "" {
		os.Remove(t.tmp)
	}
}

// importInput is the input of an import. The all-or-nothing import reads
// it twice, once to check it and once to append it: a regular file from
// its start again, anything else (stdin, a pipe) from a spool file next to
// the store, written while it is read the first time. A two-pass read
// keeps memory flat whatever the input's size, where one transaction of
// every message would hold them all.
type importInput struct {
	r     io.Reader // the first read
	size  int64     // the input's size, 0 when unknown
	file  *os.File  // a regular file, rewound for the second read
	spool *os.File  // or the spool
	buf   *bufio.Writer
	close func()
}

// openImportInput opens the input at path ("-": stdin); twice asks for a
// second read, spooling next to db what cannot be read again.
func openImportInput(e *env, path, db string, twice bool) (*importInput, error) {
	in := &importInput{close: func() {}}
	var src io.Reader = e.stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		in.close = func() { f.Close() }
		src = f
		if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
			in.r, in.size, in.file = f, fi.Size(), f
			return in, nil
		}
	}
	if src == nil {
		src = strings.NewReader("")
	}
	in.r = src
	if !twice {
		return in, nil
	}
	spool, err := os.CreateTemp(filepath.Dir(db), "."+filepath.Base(db)+".spool-*")
	if err != nil {
		in.close()
		return nil, fmt.Errorf("a copy of the input for its second read: %w", err)
	}
	closeSrc := in.close
	in.close = func() {
		closeSrc()
		spool.Close()
		os.Remove(spool.Name())
	}
	in.spool, in.buf = spool, bufio.NewWriterSize(spool, 256<<10)
	in.r = io.TeeReader(src, in.buf)
	return in, nil
}

// again returns the input from its start, and its size.
func (in *importInput) again() (io.Reader, int64, error) {
	f := in.file
	if f == nil {
		if err := in.buf.Flush(); err != nil {
			return nil, 0, fmt.Errorf("a copy of the input for its second read: %w", err)
		}
		f = in.spool
	}
	size, err := f.Seek(0, io.SeekEnd)
	if err == nil {
		_, err = f.Seek(0, io.SeekStart)
	}
	return f, size, err
}

// inputSummary is what checkInput found.
type inputSummary struct {
	events     int // messages read
	duplicates int // of them, duplicates (with dups set)
}

// dups finds the duplicates a dry run reports: by id, of an earlier line
// or of an event of the store (st, when not nil), and by run_id +
// idempotency_key of an earlier line (the store has no lookup by key).
type dups struct {
	st   store.Store
	ids  map[string]struct{}
	keys map[[2]string]struct{}
}

func (d *dups) seen(ctx context.Context, m *protocol.Message) (bool, error) {
	if _, ok := d.ids[m.ID]; ok {
		return true, nil
	}
	d.ids[m.ID] = struct{}{}
	if d.st != nil {
		_, err := d.st.Get(ctx, m.ID)
		if err == nil {
			return true, nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return false, err
		}
	}
	if m.IdempotencyKey == "" {
		return false, nil
	}
	k := [2]string{m.RunID, m.IdempotencyKey}
	if _, ok := d.keys[k]; ok {
		return true, nil
	}
	d.keys[k] = struct{}{}
	return false, nil
}

// checkInput reads in to its end, decoding and validating every message
// as the store's Append would (validateLine), and counts them; with d, it
// counts the duplicates too. The first bad line is the error.
func checkInput(ctx context.Context, in io.Reader, size int64, d *dups, stderr io.Writer) (inputSummary, error) {
	var c inputSummary
	bar := progress.New(stderr, "check", "bytes", uint64(max(size, 0)))
	defer bar.Finish()
	r := eventio.NewReader(&countingReader{r: in, bar: bar})
	for {
		if err := ctx.Err(); err != nil {
			return c, err
		}
		rec, err := r.Next()
		if err == io.EOF {
			return c, nil
		}
		if err == nil {
			err = validateLine(rec)
		}
		if err != nil {
			return c, err
		}
		c.events++
		if d != nil {
			dup, err := d.seen(ctx, rec.Msg)
			if err != nil {
				return c, err
			}
			if dup {
				c.duplicates++
			}
		}
	}
}

// validateLine checks a decoded message as store.Append does before it
// stores it: its fields (protocol.Message.Validate) and its size.
func validateLine(rec eventio.Record) error {
	if err := rec.Msg.Validate(); err != nil {
		return fmt.Errorf("line %d: %w", rec.Line, err)
	}
	if n := len(rec.Msg.Raw()); n > store.DefaultMaxEventSize {
		return fmt.Errorf("line %d: the message is %d bytes, over the store's limit of %d", rec.Line, n, store.DefaultMaxEventSize)
	}
	return nil
}

// dryRun checks the input and reports what an import would append;
// it writes nothing: the store, when it exists, is opened read-only, and
// no file is created.
func dryRun(ctx context.Context, e *env, o importOptions, exists bool, in *importInput) error {
	d := &dups{ids: map[string]struct{}{}, keys: map[[2]string]struct{}{}}
	where, note := ", a new file", ""
	if exists {
		st, err := boltstore.Open(o.db, &boltstore.Options{ReadOnly: true, LockTimeout: o.lockTimeout})
		switch {
		case errors.Is(err, boltstore.ErrLocked):
			where, note = "", "; another process holds the file, so duplicates of its events are not counted"
		case err != nil:
			return err
		default:
			defer st.Close()
			d.st, where = st, ""
		}
	}
	c, err := checkInput(ctx, in.r, in.size, d, e.stderr)
	if err != nil {
		return fmt.Errorf("%w\nnothing would be imported (--resume imports the lines before it)", err)
	}
	fmt.Fprintf(e.stdout, "dry run: would import %d events into %s%s (%d duplicates skipped%s); nothing written\n",
		c.events-c.duplicates, o.db, where, c.duplicates, note)
	return nil
}

// create opens the output: stdout for "-"; else a temporary file, mode
// 0600, in the same directory, that done(true) syncs and renames to path,
// so that a reader never sees half an export and other users of the
// machine cannot read it; done(false) removes it, leaving what path held
// before. A path that exists and is not a regular file (a pipe, a
// device) is written in place.
func create(e *env, path string) (io.Writer, func(ok bool) error, error) {
	if path == "-" {
		return e.stdout, func(bool) error { return nil }, nil
	}
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, nil, err
		}
		return f, func(bool) error { return f.Close() }, nil
	}
	f, err := atomicfile.Create(path, 0o600)
	if err != nil {
		return nil, nil, err
	}
	return f, func(ok bool) error {
		if !ok {
			f.Abort()
			return nil
		}
		return f.Commit()
	}, nil
}

// export writes the events of q to out in format fm and returns how many.
func export(ctx context.Context, src source, q store.Query, out io.Writer, fm eventio.Format, stderr io.Writer) (int, error) {
	var total uint64
	if last, err := src.lastSeq(ctx); err == nil && last > q.AfterSeq {
		total = last - q.AfterSeq
	}
	unfiltered := q == store.Query{AfterSeq: q.AfterSeq}
	if !unfiltered {
		total = 0 // unknown: the count of matching events
	}
	bar := progress.New(stderr, "export", "events", total)
	defer bar.Finish()
	w := eventio.NewWriter(out, fm)
	n := 0
	for ev, err := range src.read(ctx, q) {
		if err != nil {
			w.Flush()
			return n, err
		}
		if err := w.Write(ev); err != nil {
			return n, err
		}
		n++
		bar.Add(1)
	}
	return n, w.Flush()
}

type importResult struct{ appended, duplicates int }

// importEvents appends the events read from in to st, batch messages per
// Append. size is the input's size in bytes for the progress bar (0:
// unknown). Reading and decoding the next batch overlaps the commit of
// the one before; batches are appended in input order, and a bad line
// stops the import once every line before it is appended.
func importEvents(ctx context.Context, st store.Store, in io.Reader, size int64, batch int, stderr io.Writer) (importResult, error) {
	var res importResult
	bar := progress.New(stderr, "import", "bytes", uint64(max(size, 0)))
	defer bar.Finish()
	type chunk struct {
		msgs  []*protocol.Message
		lines []int
		err   error // after msgs
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	chunks := make(chan chunk, 2)
	go func() {
		defer close(chunks)
		r := eventio.NewReader(&countingReader{r: in, bar: bar})
		c := chunk{}
		for {
			rec, err := r.Next()
			if err == nil {
				err = validateLine(rec)
			}
			if err != nil {
				if err != io.EOF {
					c.err = err
				}
				select {
				case chunks <- c:
				case <-ctx.Done():
				}
				return
			}
			c.msgs = append(c.msgs, rec.Msg)
			c.lines = append(c.lines, rec.Line)
			if len(c.msgs) == batch {
				select {
				case chunks <- c:
				case <-ctx.Done():
					return
				}
				c = chunk{msgs: make([]*protocol.Message, 0, batch), lines: make([]int, 0, batch)}
			}
		}
	}()
	for c := range chunks {
		if len(c.msgs) > 0 {
			out, err := st.Append(ctx, c.msgs...)
			if err != nil {
				var ime *store.InvalidMessageError
				if errors.As(err, &ime) && ime.Index < len(c.lines) {
					err = fmt.Errorf("line %d: %w", c.lines[ime.Index], err)
				}
				return res, err
			}
			for _, o := range out {
				if o.Duplicate {
					res.duplicates++
				} else {
					res.appended++
				}
			}
		}
		if c.err != nil {
			return res, c.err
		}
	}
	return res, nil
}

type countingReader struct {
	r   io.Reader
	bar *progress.Bar
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.bar.Add(n)
	return n, err
}

// syncFile fsyncs the file at path.
func syncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
