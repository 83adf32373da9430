package boltstore

import (
	"os"
	"time"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/store"
)

// Options configures Open. Nil means defaults; zero fields take defaults.
type Options struct {
	// ReadOnly opens an existing file for reading only, under a shared
	// lock: several read-only opens, in any processes, may hold a file at
	// once, and none while a process has it open for writing (then Open
	// fails with ErrLocked after LockTimeout; so does a writer's Open while
	// a reader holds it). Nothing is written to the file; Append and
	// PutArtifact fail with ErrReadOnly. See "Read-only" in the package doc.
	ReadOnly bool
	// NoSync skips fsync on commit. An append then survives the process
	// being killed but not the machine losing power. Off by default.
	NoSync bool
	// LockTimeout is how long Open waits for a file another process holds
	// before it fails with ErrLocked; 1s when 0.
	LockTimeout time.Duration
	// MaxBatch is the most events one group commit takes; 1024 when 0. An
	// Append call is never split, so a larger call forms a larger group.
	// 1 gives one transaction (and fsync) per Append call.
	MaxBatch int
	// IndexBatch is how many appended events have their index entries
	// (ids, idempotency keys, run, thread, task, agent) held in memory
	// before they are written to the file together; 8192 when 0. They are
	// written once sorted and encoded, beside the appends that follow
	// (held in memory too: fewer than twice IndexBatch and two groups in
	// all). Larger values append faster and use more memory and reopen
	// time after a crash; 1 writes them after about every commit.
	IndexBatch int
	// MaxEventSize is the largest encoded message accepted, in bytes;
	// store.DefaultMaxEventSize when 0.
	MaxEventSize int
	// MaxArtifactSize is the largest artifact accepted, in bytes;
	// store.DefaultMaxArtifactSize when 0.
	MaxArtifactSize int
	// Clock gives event times; time.Now when nil.
	Clock func() time.Time
	// FileMode is the mode of a new file; 0600 when 0.
	FileMode os.FileMode
	// PageSize is the bbolt page size of a new file, a power of two from
	// 4 KiB to 64 KiB; 16 KiB when 0. An existing file keeps its own.
	// Larger pages pack records of about 1 KiB more densely.
	PageSize int
	// (bbolt leaves at least two entries on each side of a page split, so a
	// 1.4 KiB record fills a 4 KiB page only half, a 16 KiB page nine
	// tenths whatever the group size.)
}

func (o *Options) validate() error {
	switch {
	case o.LockTimeout < 0:
		return invalidOption("LockTimeout must not be negative")
	case o.MaxBatch < 0:
		return invalidOption("MaxBatch must not be negative")
	case o.IndexBatch < 0:
		return invalidOption("IndexBatch must not be negative")
	case o.MaxEventSize < 0:
		return invalidOption("MaxEventSize must not be negative")
	case o.MaxArtifactSize < 0:
		return invalidOption("MaxArtifactSize must not be negative")
	case o.MaxArtifactSize > maxBoltValue:
		return invalidOption("MaxArtifactSize is over bbolt's value limit")
	case o.MaxEventSize > maxBoltValue-1024:
		return invalidOption("MaxEventSize is over bbolt's value limit")
	case o.PageSize != 0 && (o.PageSize < 4096 || o.PageSize > 65536 || o.PageSize&(o.PageSize-1) != 0):
		return invalidOption("PageSize must be a power of two from 4096 to 65536")
	}
	return nil
}

func invalidOption(detail string) error { return coded.Wrap(ErrInvalidOptions, detail, nil) }

// maxBoltValue is bbolt's largest value (bbolt.MaxValueSize).
const maxBoltValue = (1 << 31) - 2

func (o *Options) setDefaults() {
	if o.LockTimeout == 0 {
		o.LockTimeout = time.Second
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = 1024
	}
	if o.IndexBatch == 0 {
		o.IndexBatch = 8192
	}
	if o.MaxEventSize == 0 {
		o.MaxEventSize = store.DefaultMaxEventSize
	}
	if o.MaxArtifactSize == 0 {
		o.MaxArtifactSize = store.DefaultMaxArtifactSize
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.FileMode == 0 {
		o.FileMode = 0o600
	}
	if o.PageSize == 0 {
		o.PageSize = 16 << 10
	}
}
