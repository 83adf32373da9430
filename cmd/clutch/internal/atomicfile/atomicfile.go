package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// File is a temporary file that becomes path when committed. Write to it
// as to an *os.File; end it with Commit, CommitNew or Abort.
type File struct {
	*os.File
	path   string
	closed bool
	ended  bool
}

// Create makes the temporary file of path, beside it, with mode perm.
func Create(path string, perm fs.FileMode) (*File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return &File{File: f, path: path}, nil
}

// Finish syncs and closes the temporary file, so that it can be read by
// name (checked) before it is committed. Commit and CommitNew call it.
func (f *File) Finish() error {
	if f.closed {
		return nil
	}
	f.closed = true
	err := f.File.Sync()
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	return err
}

// Commit renames the file over path, replacing what it held. On an error
// the temporary file is removed and path is left as it was.
func (f *File) Commit() error {
	return f.end(func() error { return os.Rename(f.Name(), f.path) })
}

// CommitNew links the file to path, which must not exist: when it does
// the error is fs.ErrExist and path is left as it was. The temporary file
// is removed either way.
func (f *File) CommitNew() error {
	return f.end(func() error { return os.Link(f.Name(), f.path) })
}

func (f *File) end(put func() error) error {
	if f.ended {
		return errors.New("atomicfile: " + f.path + " already committed or aborted")
	}
	err := f.Finish()
	if err == nil {
		err = put()
	}
	f.ended = true
	// After a link, or a failure, the temporary name goes; after a
	// rename it is gone already.
	os.Remove(f.Name())
	if err == nil {
		SyncDir(filepath.Dir(f.path))
	}
	return err
}

// Abort removes the temporary file; path is left as it was. It does
// nothing after Commit or CommitNew, so it may be deferred.
func (f *File) Abort() {
	if f.ended {
		return
	}
	f.ended = true
	if !f.closed {
		f.closed = true
		f.File.Close()
	}
	os.Remove(f.Name())
}

// WriteFile writes data to path whole or not at all, with mode perm,
// replacing what path held.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(data); err != nil {
		return err
	}
	return f.Commit()
}

// SyncDir makes a rename in dir durable where the system allows it (not
// on Windows, where a directory cannot be opened for syncing).
func SyncDir(dir string) {
	if runtime.GOOS == "windows" {
		return
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
