package boltstore

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
)

// The sentinel errors of boltstore. The store contract's own errors
// (store.ErrClosed, store.ErrNotFound, ...) apply as well.
var (
	// ErrLocked: another process holds the file (bbolt's file lock) and did
	// not release it within Options.LockTimeout.
	ErrLocked error = coded.New("boltstore: file is locked by another process", protocol.CodeConflict)
	// ErrFormat: the file is not an event store this package can read:
	// not a bbolt file, a bbolt file of something else, or a newer format
	// or bbolt version (see [FormatError]).
	ErrFormat error = coded.New("boltstore: unsupported file format", protocol.CodeUnsupportedVersion)
	// ErrCorrupt: the file is damaged: truncated, a page bbolt cannot
	// use, or data this package cannot decode or whose checksum does not
	// match (see [CorruptError] and "Damaged files" in the package doc).
	ErrCorrupt error = coded.New("boltstore: corrupt file", protocol.CodeInternal)
	// ErrInvalidOptions: Open was given options it cannot use.
	ErrInvalidOptions error = coded.New("boltstore: invalid options", protocol.CodeInvalidField)
	// ErrReadOnly: Append or PutArtifact on a store opened with
	// Options.ReadOnly. Its code is POLICY_DENIED: the store is not
	// broken, it refuses writes.
	ErrReadOnly error = coded.New("boltstore: store is open read-only", protocol.CodePolicyDenied)
	// ErrNoSummaries: Runs or Threads on a file opened read-only that has
	// no run and thread summaries yet (a file of an older version); open it
	// once for writing to build them.
	ErrNoSummaries error = coded.New("boltstore: the file has no run and thread summaries yet", protocol.CodeUnsupportedVersion)
)

// FormatError reports a file Open refuses. It matches ErrFormat.
type FormatError struct {
	Path      string // the file
	Version   uint32 // the file's format version; 0 when it has none
	Supported uint32 // the newest version this package reads
	Detail    string // what is wrong, when it is not the version
}

// Error describes the refusal; for a newer file it says to upgrade.
func (e *FormatError) Error() string {
	s := "boltstore: " + e.Path + ": "
	if e.Version > e.Supported {
		return s + "format version " + strconv.FormatUint(uint64(e.Version), 10) + " is newer than the " +
			strconv.FormatUint(uint64(e.Supported), 10) + " this package reads; use a newer Clutch"
	}
	return s + e.Detail
}

// Unwrap returns ErrFormat.
func (e *FormatError) Unwrap() error { return ErrFormat }

// CorruptError reports damage. It matches ErrCorrupt.
type CorruptError struct {
	Detail string // what is damaged, and where: the file, the page or event, what was found
}

// Error returns "boltstore: corrupt file: " and the detail.
func (e *CorruptError) Error() string { return ErrCorrupt.Error() + ": " + e.Detail }

// Unwrap returns ErrCorrupt.
func (e *CorruptError) Unwrap() error { return ErrCorrupt }

// corrupt builds a CorruptError. An error among args that is (or holds)
// one already is put in by its text without "boltstore: corrupt file: ",
// so that the error says it once: "boltstore: corrupt file: event 296:
// record checksum …".
func corrupt(format string, args ...any) error {
	for i, a := range args {
		if err, ok := a.(error); ok && errors.Is(err, ErrCorrupt) {
			args[i] = strings.ReplaceAll(err.Error(), ErrCorrupt.Error()+": ", "")
		}
	}
	return &CorruptError{Detail: fmt.Sprintf(format, args...)}
}
