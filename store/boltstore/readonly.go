package boltstore

import (
	"errors"
	"io/fs"
	"os"
	"time"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/driver"
	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// openReadOnly is Open with Options.ReadOnly: bbolt's read-only mode, which
// opens the file O_RDONLY and takes a shared flock, so readers share the
// file and exclude a writer (whose lock is exclusive) for as long as they
// hold it. No writer goroutine runs and nothing is written: not the buckets
// of an empty file, not the index tail at Close (it is rebuilt in memory,
// as after a crash).
func openReadOnly(path string, o Options) (*Store, error) {
	s := &Store{
		path:  path,
		opts:  o,
		q:     queue{wake: make(chan struct{}, 1)},
		wdone: make(chan struct{}),
	}
	close(s.wdone) // no writer: Close has nothing to wait for
	s.hub = driver.NewHub(&s.sig, s.page, s.LastSeq)
	err := s.guard("open", func() error {
		fi, err := os.Stat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return coded.Wrap(store.ErrNotFound, path+": no such file (a read-only open creates nothing)", err)
		case err != nil:
			return err
		case fi.IsDir():
			return &FormatError{Path: path, Supported: formatVersion, Detail: "a directory, not a store file"}
		case fi.Size() == 0:
			return &FormatError{Path: path, Supported: formatVersion, Detail: "an empty file: no event store in it yet"}
		}
		db, err := bolt.Open(path, 0, &bolt.Options{Timeout: o.LockTimeout, ReadOnly: true})
		if errors.Is(err, berrors.ErrTimeout) {
			return &heldError{path: path, timeout: o.LockTimeout}
		}
		// The file is inspected while the shared lock is held, so that
		// no writer changes it under the check.
		if ierr := inspect(path); ierr != nil {
			if db != nil {
				db.Close()
			}
			return ierr
		}
		if err != nil {
			return corrupt("%s: bbolt: %v", path, err)
		}
		s.db = db
		if err := s.load(); err != nil {
			return err
		}
		return s.w.init(s)
	})
	if err != nil {
		if s.db != nil {
			s.db.Close()
		}
		return nil, err
	}
	return s, nil
}

// ReadOnly reports whether the store was opened with Options.ReadOnly.
func (s *Store) ReadOnly() bool { return s.opts.ReadOnly }

// readOnly is the error of a write to a read-only store.
func (s *Store) readOnly(op string) error {
	return coded.Wrap(ErrReadOnly, op+" on "+s.path, nil)
}

// heldError is ErrLocked for a read-only open: the file is open for
// writing in another process (or through another handle in this one).
type heldError struct {
	path    string
	timeout time.Duration
}

func (e *heldError) Error() string {
	return ErrLocked.Error() + ": " + e.path + " is open for writing by another process (waited " +
		e.timeout.String() + "); read it through that process (its gateway) or after it closes the file"
}

func (e *heldError) Unwrap() error { return ErrLocked }
