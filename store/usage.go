package store

import (
	"context"
	"time"
)

// Usage is what a store holds and how it has been looked after: the
// figures an operator watches on a log that runs for years. A zero field
// is one the store does not know (Bytes, Free) or an event that never
// happened or is not recorded (LastCompaction, LastBackup).
type Usage struct {
	// Bytes is the space the store takes: the file's size (boltstore),
	// the relations' size with their indexes and TOAST (pgstore), an
	// estimate of the memory its events and artifacts take (memstore).
	Bytes int64
	// Free is the part of Bytes that holds nothing any more and that a
	// compaction would give back (boltstore's free pages); 0 when the
	// store does not know it.
	Free int64
	// Events is how many events the store holds now: LastSeq less the
	// events removed (by retention), counted without a scan of the log.
	Events uint64
	// LastSeq is the seq of the last event appended (removed or not).
	LastSeq uint64
	// OldestSeq and OldestTime are the seq and time of the oldest event
	// still stored; zero when the store holds none.
	OldestSeq  uint64
	OldestTime time.Time
	// LastCompaction is when the store was last compacted: Compact
	// (boltstore), VACUUM or autovacuum of the events table (pgstore).
	LastCompaction time.Time
	// LastBackup is when the last backup the store made of itself
	// completed (boltstore's Backup and BackupFile, recorded in the file).
	LastBackup time.Time
}

// UsageReporter is the upgrade interface of a Store that reports its
// [Usage] itself. The durable in-tree stores report at a cost that does
// not grow with the log (no scan of the events); memstore, a test double,
// sums its events. [UsageOf] finds it.
type UsageReporter interface {
	// Usage returns the store's usage now.
	Usage(ctx context.Context) (Usage, error)
}

// UsageOf returns the usage of s: the store's own report when s, or a
// store it wraps (through a chain of wrappers that each have a method
// Unwrap() Store), implements [UsageReporter]. Otherwise it reports what
// the Store contract tells: LastSeq, Events equal to it (a store without
// the upgrade is taken not to remove events), and the oldest event from a
// one-event Read; the other fields are zero.
func UsageOf(ctx context.Context, s Store) (Usage, error) {
	if r, ok := upgrade[UsageReporter](s); ok {
		return r.Usage(ctx)
	}
	last, err := s.LastSeq(ctx)
	if err != nil {
		return Usage{}, err
	}
	u := Usage{LastSeq: last, Events: last}
	for ev, err := range s.Read(ctx, Query{Limit: 1}) {
		if err != nil {
			return Usage{}, err
		}
		u.OldestSeq, u.OldestTime = ev.Seq, ev.Time
	}
	return u, nil
}
