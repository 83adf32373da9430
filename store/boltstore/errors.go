package boltstore

import (
	"errors"
	"fmt"
	"strconv"
)

// The sentinel errors of boltstore. The store contract's own errors
// (store.ErrClosed, store.ErrNotFound, ...) apply as well.
var (
	// ErrLocked: another process holds the file (bbolt's file lock) and did
	// not release it within Options.LockTimeout.
	ErrLocked = errors.New("boltstore: file is locked by another process")
	// ErrFormat: the file is not an event store this package can read: a
	// newer format version, or a bbolt file of something else (see
	// [FormatError]).
	ErrFormat = errors.New("boltstore: unsupported file format")
	// ErrCorrupt: the file holds data this package cannot decode (see
	// [CorruptError]).
	ErrCorrupt = errors.New("boltstore: corrupt file")
	// ErrInvalidOptions: Open was given options it cannot use.
	ErrInvalidOptions = errors.New("boltstore: invalid options")
)

// FormatError reports a file Open refuses. It matches ErrFormat.
type FormatError struct {
	Path      string
	Version   uint32 // the file's format version; 0 when it has none
	Supported uint32 // the newest version this package reads
	Detail    string
}

func (e *FormatError) Error() string {
	s := "boltstore: " + e.Path + ": "
	if e.Version > e.Supported {
		return s + "format version " + strconv.FormatUint(uint64(e.Version), 10) + " is newer than the " +
			strconv.FormatUint(uint64(e.Supported), 10) + " this package reads; use a newer Clutch"
	}
	return s + e.Detail
}

// Is matches ErrFormat.
func (e *FormatError) Is(target error) bool { return target == ErrFormat }

// CorruptError reports data that cannot be decoded. It matches ErrCorrupt.
type CorruptError struct {
	Detail string
}

func (e *CorruptError) Error() string { return ErrCorrupt.Error() + ": " + e.Detail }

// Is matches ErrCorrupt.
func (e *CorruptError) Is(target error) bool { return target == ErrCorrupt }

func corrupt(format string, args ...any) error {
	return &CorruptError{Detail: fmt.Sprintf(format, args...)}
}

type optionError struct{ detail string }

func (e *optionError) Error() string        { return ErrInvalidOptions.Error() + ": " + e.detail }
func (e *optionError) Is(target error) bool { return target == ErrInvalidOptions }
