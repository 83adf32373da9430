package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/clutchprotocol/clutch/cmd/clutch/internal/eventio"
	"github.com/clutchprotocol/clutch/cmd/clutch/internal/progress"
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
the input. Deduplication makes a second import of the same events append
nothing (they are counted as duplicates), so an interrupted import can be run
again. The file must not be open in another process; import does not go
through a gateway (its API stamps the caller as the sender and cannot keep
the stored bytes).`,
		examples: `  clutch import --db copy.db events.jsonl
  clutch export --db a.db | clutch import --db b.db -
  clutch import --db copy.db run.ce.jsonl`,
		flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
			db := fs.String("db", getenv("CLUTCH_DB", "clutch.db"), "the store file to append to, created if needed ($CLUTCH_DB)")
			url := fs.String("url", "", "not supported: import writes a file")
			batch := fs.Int("batch", 1024, "messages per append (one transaction)")
			lockTimeout := fs.Duration("lock-timeout", time.Second, "how long to wait for a file another process holds")
			nosync := fs.Bool("no-sync", false, "skip fsync per batch (faster; the file is synced at the end)")
			return func(ctx context.Context, e *env, args []string) error {
				if *url != "" {
					return usagef("import writes a store file and cannot go through a gateway: the API stamps the caller as the sender, so the stored bytes (and signatures) would change; stop the process or import into another file")
				}
				if len(args) != 1 {
					return usagef("want one input FILE, or - for stdin")
				}
				if *batch <= 0 {
					return usagef("--batch must be positive")
				}
				in, size, closeIn, err := openInput(e, args[0])
				if err != nil {
					return err
				}
				defer closeIn()
				st, err := boltstore.Open(*db, &boltstore.Options{LockTimeout: *lockTimeout, NoSync: *nosync})
				if errors.Is(err, boltstore.ErrLocked) {
					return fmt.Errorf("%w\n(import needs the file to itself: stop the process that has it open, or import into another file)", err)
				}
				if err != nil {
					return err
				}
				res, err := importEvents(ctx, st, in, size, *batch, e.stderr)
				if cerr := st.Close(); err == nil {
					err = cerr
				}
				if err == nil && *nosync {
					err = syncFile(*db)
				}
				if err != nil {
					return fmt.Errorf("%w (%d events appended before it)", err, res.appended)
				}
				fmt.Fprintf(e.stdout, "imported %d events into %s (%d duplicates skipped)\n", res.appended, *db, res.duplicates)
				return nil
			}
		},
	})
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
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, nil, err
	}
	return f, func(ok bool) error {
		err := f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if ok && err == nil {
			err = os.Rename(f.Name(), path)
		}
		if !ok || err != nil {
			os.Remove(f.Name())
		}
		if ok && err == nil {
			syncDir(filepath.Dir(path))
		}
		return err
	}, nil
}

// syncDir makes a rename in dir durable where the system allows it (not
// on Windows, where a directory cannot be opened for syncing).
func syncDir(dir string) {
	if runtime.GOOS == "windows" {
		return
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
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

// openInput opens FILE or stdin ("-") and returns its size when known.
func openInput(e *env, path string) (io.Reader, int64, func() error, error) {
	if path == "-" {
		return e.stdin, 0, func() error { return nil }, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, nil, err
	}
	var size int64
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	return f, size, f.Close, nil
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
