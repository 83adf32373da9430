// Package boltstore is the default [store.Store]: the event log in one
// embedded bbolt file (go.etcd.io/bbolt), durable, with no service to run.
// It passes the store conformance suite
// ([github.com/clutchprotocol/clutch/store/storetest]) with durability on.
//
// # Basics
//
//	s, err := boltstore.Open("clutch.db", nil) // nil: the defaults
//	if err != nil { ... }
//	defer s.Close()
//	res, err := s.Append(ctx, msg) // durable when it returns
//
// Appends are fsynced before they return (Options.NoSync turns that off).
// Appends from many goroutines are group-committed: the Append calls
// waiting at one moment share one bbolt transaction and one fsync (at most
// Options.MaxBatch events; one call is never split), and each caller
// returns when its group is committed. No append waits on a timer.
// [Store.Stats] counts commits, appended events and duplicates.
//
// An acknowledged append survives kill -9 and, with fsync on, power loss;
// reopening after a crash needs no repair step. A file another process
// holds gives [ErrLocked] after Options.LockTimeout (1s by default), never
// a hang. The file carries a format version: a file from a newer version
// of this package is refused with [ErrFormat] and left untouched. A file
// of format 1 (records without checksums) is read as it is, and Open marks
// it format 2, so that an older version refuses it rather than take the
// checksums of new records for damage.
//
// Reads are served by on-file indexes (id, idempotency key, run, thread,
// task, agent), so a read by run, thread, task or agent costs the events
// it returns, not the size of the log. The index entries of the most
// recent events (at most Options.IndexBatch of them) are held in memory
// and written to the file together; reads and deduplication see them
// either way, and Close writes them out. [Store.Check] verifies a whole
// file.
//
// Run and thread summaries (Runs, Threads) live in their own buckets,
// updated in each append's transaction and listed newest first through an
// index by last seq; none of them is held in memory. A file written by a
// version without summaries gets them built from its events when it is
// opened for writing (one pass over the log, a batch of events per
// transaction); a file opened read-only without them gives
// [ErrNoSummaries] from Runs and Threads.
//
// # Errors
//
// Besides the store contract's errors (store.ErrClosed, store.ErrNotFound,
// ...), Open returns [ErrLocked], [ErrFormat] (a [*FormatError]) and
// [ErrInvalidOptions], and reads return [ErrCorrupt] (a [*CorruptError])
// for data that does not decode.
//
// # Damaged files
//
// A damaged file never crashes the host: whatever its bytes, Open, Read,
// Follow, Get, GetArtifact, LastSeq, Stats, Check and Close return data or
// an error, never panic, and never die of a memory fault. What a caller
// gets:
//
//   - a file that is not a bbolt file (random bytes, text), a bbolt file of
//     something else, or a store of a newer format or bbolt version: Open
//     returns [ErrFormat], naming what it found;
//   - a file bbolt cannot open safely (truncated before the end of its
//     pages, both meta pages damaged, a damaged free list or root page, a
//     page bbolt trips over while Open reads the store's state): Open
//     returns [ErrCorrupt], naming the damage;
//   - damage further in: the reads that reach it return [ErrCorrupt] (with
//     the events before it, in order); other reads work. Each record
//     carries a checksum, so a read never returns a damaged event as if it
//     were whole; reads by id, run, thread, task or agent go through the
//     indexes, whose damage a read may not see (an event missing from a
//     result, or ErrNotFound) but [Store.Check] reports;
//   - one meta page damaged: bbolt opens the file from the other one, as
//     after a torn write; that one may be a commit older, whose events
//     are then gone.
//
// The first ErrCorrupt a Store meets makes it read-only: later Append
// and PutArtifact calls fail with an error matching ErrCorrupt, and Close
// does not write the in-memory index entries. Nothing repairs a file: the
// damage stays as found, for inspection or a restore from a copy. An empty
// file is a new store (Open creates the buckets in it).
//
// [Store.Check] is the way to examine a suspect file: it reads all of it
// without writing and reports the first damage it finds, in the page
// structure (read with plain reads, not through bbolt's memory mapping),
// the records or the indexes.
//
// # Caveats
//
// Events and artifacts are never deleted, so the dedup window is forever
// and the file only grows. A read copies each event out of the file;
// nothing is held between pages of a loop, so a loop body may append, and
// a long loop does not keep the file from growing. Memory holds the
// in-memory index entries (a few hundred bytes per event, at most
// Options.IndexBatch events plus one group) and nothing else that grows
// with the file; reopening after a crash reads those events again. One
// process at a time: bbolt's file lock makes a second opener wait for
// Options.LockTimeout and fail.
package boltstore
