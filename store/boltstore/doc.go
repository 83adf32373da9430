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
// of this package is refused with [ErrFormat] and left untouched.
//
// Reads are served by on-file indexes (id, idempotency key, run, thread,
// task, agent), so a read by run, thread, task or agent costs the events
// it returns, not the size of the log. The index entries of the most
// recent events (at most Options.IndexBatch of them) are held in memory
// and written to the file together; reads and deduplication see them
// either way, and Close writes them out. [Store.Check] verifies a whole
// file.
//
// # Errors
//
// Besides the store contract's errors (store.ErrClosed, store.ErrNotFound,
// ...), Open returns [ErrLocked], [ErrFormat] (a [*FormatError]) and
// [ErrInvalidOptions], and reads return [ErrCorrupt] (a [*CorruptError])
// for data that does not decode.
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
