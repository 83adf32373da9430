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
// Appends from many goroutines are group-committed: one writer goroutine
// takes every Append waiting at that moment into one bbolt transaction
// and one fsync, then acknowledges each caller, while the next group forms
// behind it. It never waits on a timer (bbolt's DB.Batch waits up to
// 10 ms, which makes it slower than one transaction per message at low
// concurrency); after a group of several it yields the processor briefly,
// for at most half the last commit's duration, so that the callers
// it just acknowledged can join the next group. [Store.Stats] shows the
// mean group size.
//
// An acknowledged append survives kill -9 and, with fsync on, power loss;
// reopening after a crash needs no repair step. A file another process
// holds gives [ErrLocked] after Options.LockTimeout (1s by default), never
// a hang. The file carries a format version: a file from a newer version
// of this package is refused with [ErrFormat] and left untouched.
//
// # Layout
//
// The file holds, per format 1 (see record.go):
//
//   - events: seq (8 bytes, big-endian) → record. Append-only, pages
//     filled to 100%. A record is a small header — the append time and the
//     indexed fields (id, run_id, thread_id, task_id, from.agent_id, type,
//     idempotency_key) — followed by the message's exact bytes, so reads,
//     filters and checks never decode JSON.
//   - ids: id → seq, and idem: (idempotency_key, run_id) → seq, for Get and
//     deduplication (docs/protocol.md §5.2).
//   - run, thread, task, agent: (value, first seq) → posting list, the
//     seqs of that value as delta-encoded varints. Chunks of one value are
//     adjacent and ordered by seq, so an index read is a range scan with no
//     sort, and new runs, threads and tasks (time-ordered ids) land at the
//     end of their tree.
//   - meta: the format version and the index watermark; artifacts:
//     SHA-256 → media type and bytes (docs/protocol.md §8.2).
//
// # Performance
//
// bbolt rewrites every B+tree page a transaction touches. Updating four
// indexes, the id and the idempotency key per event in every commit
// touches a page per concurrently active run, thread and task — hundreds
// per commit with 64 appenders — which caps a naive layout far below the
// disk's fsync rate. So a commit writes only the event records (appended at
// the end of one tree), and the index entries of recent events are kept in
// memory, in the index tail, and written to the file together every
// Options.IndexBatch events (8192 by default), in one transaction that also
// moves the index watermark. Reads merge the file's indexes (events up to
// the watermark) with the tail (events after it); deduplication checks the
// tail, then the file. After a crash Open rebuilds the tail from the
// records after the watermark, whose headers hold the indexed fields;
// Close writes it out. The default 16 KiB page holds ten or eleven 1.4 KiB records
// where a 4 KiB page holds two, which saves a quarter of the file (see
// Options.PageSize).
//
// # Errors
//
// Besides the store contract's errors (store.ErrClosed, store.ErrNotFound,
// ...), Open returns [ErrLocked], [ErrFormat] (a [*FormatError]) and
// [ErrInvalidOptions], and reads return [ErrCorrupt] (a [*CorruptError])
// for data that does not decode; [Store.Check] verifies a whole file.
//
// # Caveats
//
// Events and artifacts are never deleted, so the dedup window is forever.
// A read copies each event out of the file; nothing is held between pages
// of a loop, so a loop body may append, and a long loop does not block
// bbolt from growing the file. Memory holds the index tail (a few hundred
// bytes per event, at most IndexBatch plus one group) and nothing else
// that grows with the file. One process at a time: bbolt's file lock
// makes a second opener wait for LockTimeout and fail.
package boltstore
