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
// returns when its group is committed. Each caller prepares its own
// records (encoding, checksums, keys) while the writer commits the group
// before; the writer opens a group's transaction at its first request and
// puts each request as it arrives (deduplication, one put per event into
// an append-only bucket), then commits and fsyncs the group: index entries
// and summaries are written later, many events at a time (below). After a
// group of several callers, the next one waits for the callers just
// acknowledged, besides those that queued during the commit, for at most
// half the last group's time (never after a lone append), so that they
// all share one fsync rather than alternate. [Store.Stats] counts
// commits, appended events and duplicates. [Store.AppendIfNew]
// (store.Conditional) takes the same way: the writer checks the call's
// first message in the group's transaction and, when it is a duplicate,
// puts nothing of that call; the group's other calls are stored as usual.
//
// With fsync on, a background goroutine keeps up to 16 MiB of zeros
// written and synced past the pages bbolt uses (an eighth of the file for
// a small one), so that each commit's fsync writes blocks the file
// already has rather than allocating them: the file is longer than its
// pages by that much. bbolt and Check ignore what lies past the pages in
// use, and the zeros are written only while no write transaction is
// committing (bbolt writes pages only then), a MiB at a time.
//
// An acknowledged append survives kill -9 and, with fsync on, power loss;
// reopening after a crash needs no repair step. A file another process
// holds gives [ErrLocked] after Options.LockTimeout (1s by default), never
// a hang. The file carries a format version, and this package reads only
// its own, format 3: a file of any other version is refused with a
// [*FormatError] ([ErrFormat]) that names both versions, and is left
// untouched.
//
// Reads are served by on-file indexes (id, idempotency key, run, thread,
// task, agent), so a read by run, thread, task or agent costs the events
// it returns, not the size of the log. The indexes by id and by
// idempotency key hold the keys that follow every key before them
// (time-ordered ones, as protocol.NewIDs makes) in blocks of 64, one
// bbolt key per block, and any other under a bbolt key of its own; a
// lookup reads one key or one block. The index entries of the most
// recent events are held in memory and written to the file together
// once Options.IndexBatch of them are (sorted and encoded beside the
// appends, then written between two groups: fewer than twice IndexBatch
// and two groups are held); reads and deduplication see them either way, and Close writes
// them out. [Store.Check] verifies a whole file.
//
// Run and thread summaries (Runs, Threads) live in their own buckets,
// listed newest first through an index by last seq. Like the index
// entries, those of the runs, threads and tasks touched since the last
// index flush are held in memory, folded as each group commits, listed
// from there, and written to the file by the flush (one write per run,
// thread and task, however many events touched it). A file written by a
// version without summaries gets them built from its events when it is
// opened for writing (one pass over the log, a batch of events per
// transaction); a file opened read-only without them gives
// [ErrNoSummaries] from Runs and Threads. Summaries written by a version
// that kept no titles, agents, failures or waiting tasks read as having
// none, and get them from the events appended after. Those written by a
// version that did not count their events' bytes (Summary.Bytes) get them
// counted when the file is opened for writing (one pass over the events'
// headers, in one transaction); a read-only handle lists them with Bytes
// 0, plus the bytes of the events it folds itself.
//
// # Presence
//
// The Store implements store.Presence. A beat is kept in memory and
// written to the bucket "presence" (made at the first write: older files
// open unchanged) within 250 ms: with the next commit of appends (in the
// same transaction, so it costs no fsync of its own), or, when no append
// commits it within 250 ms of the beat, in a commit of the waiting beats
// alone (synced unless Options.NoSync), or at Close. A store that only
// beats (an idle team) makes at most one such commit per 250 ms, however
// many keys beat; a busy one makes none. [Stats] counts them
// (BeatCommits). A restart after Close remembers every beat; a crash or
// kill -9 loses those of the last 250 ms at most, which is liveness only,
// learned again at the holder's next beat: a registry reopened after it
// sees an agent's last sign of life at most 250 ms early, well inside a
// heartbeat TTL of seconds (docs/protocol.md §2.4). A backup holds the
// beats written to the file when it starts.
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
// # Read-only
//
// Options.ReadOnly opens an existing file for reading (tools, a second
// process inspecting a store): bbolt's read-only mode, with a shared file
// lock. Any number of read-only opens may hold a file together; a process
// that has it open for writing excludes them, and they exclude it: either
// side's Open fails with [ErrLocked] after Options.LockTimeout, naming the
// file. Read, Follow, Get, GetArtifact, LastSeq, Check and Close work;
// Append and PutArtifact fail with [ErrReadOnly]. Nothing is ever written:
// a missing file gives store.ErrNotFound, an empty one [ErrFormat], and
// the index tail after a crash is rebuilt in memory only. Follow yields the backlog and then waits, since
// no append can happen while the file is held: to watch a live store, ask
// the process that writes it (its gateway).
//
// # Backup
//
// [Store.Backup] writes a consistent copy of the file to an io.Writer, and
// [Store.BackupFile] to a file (beside it first, synced, then renamed in
// place, mode 0600): a host calls it on a timer, while its store works.
// The copy is bbolt's copy of one read transaction (Tx.WriteTo): appends
// go on committing meanwhile, and the copy holds every event committed
// when it began — every append acknowledged before the call — and none
// after; [BackupInfo] says up to which seq, its size, when it began and
// how long it took. Index entries and summaries still in memory are not in
// the copy: Open rebuilds them from the events after the file's watermark,
// as after a crash, so the copy opens with no repair step, passes Check,
// and appends and follows on from its last seq. A store opened read-only
// can be backed up too (the clutch CLI's backup does that); a store that
// met damage refuses with its ErrCorrupt. To restore, put a backup that
// passes Check in place of the file while no process has it open (clutch
// restore does both).
//
// What a backup costs the appends is the disk: the copy is written and
// synced while the commits fsync to the same disk (and, on a journaling
// file system, through the same journal commit). BackupFile syncs the copy
// every 8 MiB as it writes it, so a commit waits for at most one piece
// (20 ms on a disk that writes 550 MB/s) rather than for the whole file
// at its end (150 ms for 80 MB); Backup leaves the syncing to its writer.
// Putting the new backup in place frees the previous one's blocks, which
// the file system does in the rename, and commits wait for that too
// (60 ms for 80 MB on ext4 mounted with online discard). The read
// transaction the copy holds does not slow the appends: pages freed
// meanwhile are reused only after it ends, and bbolt waits for it only to
// grow its memory map, which a commit needs when the file's pages reach
// the map's size (doubling up to 1 GiB, then every 1 GiB): such a commit
// waits until the copy ends.
//
// # Compaction
//
// A bbolt file never shrinks: pages freed by overwritten index and summary
// entries (and by removals) are reused but stay in the file.
// [Store.Compact] rewrites the file into a new one without them (the
// copy bbolt.Compact makes, pages filled, but made within one read
// transaction of the old file) and puts it in place while the
// store stays open. Reads, followers and appends go on during the copy;
// at its end, the events appended meanwhile are carried into the new file,
// which is synced, renamed over the old one (and the directory synced),
// and the store switches to it: appends queued meanwhile are acknowledged
// once committed to the new file, and reads wait for that moment only.
// Every event keeps its seq, so followers go on with no gap and no repeat.
// Index flushes wait while the copy runs: the entries of the events
// appended meanwhile stay in memory, past twice Options.IndexBatch if the
// copy takes that long. A write other than an append during the copy (an
// artifact, a backup's record) makes Compact copy again, and its third
// copy holds reads and appends for the whole copy. [CompactResult] says
// the sizes before and after and how long reads and appends waited.
//
// A crash during a compaction loses nothing: before the rename the old
// file is whole (Open removes the leftover <path>.compact, once it holds
// the lock), after it the new one is. The last compaction's time is kept
// in the file ([Store.Usage]). The copy holds a read transaction of the
// old file, with Backup's cost: a commit that needs a larger memory map
// waits until the copy ends, and the disk needs room for a second file.
// To compact a file no process has open, clutch compact --db FILE opens
// it and compacts it (ErrLocked when a process has it open).
//
// What else a compaction costs the appends is the disk, as for a backup.
// The copy is committed, and synced, 4 MiB at a time, so a commit of the
// store waits for at most one piece rather than for the whole new file
// at the swap (150 to 200 ms for 80 MB on a disk that writes 550 MB/s).
// After the swap, the old file's blocks are given back 4 MiB at a time,
// each piece synced, before Compact returns: freed at once by the close
// of the old file, they made commits wait for the file system (70 to
// 110 ms for 80 MB on ext4 mounted with online discard). So a process
// other than the store that still has the old file open (a copy made
// with cp, say, rather than with Backup) sees it emptied; an old file
// that still has a name (a hard link) is left whole.
//
// # Usage
//
// [Store.Usage] implements store.UsageReporter: the file's size, its free
// pages, the events it holds, the oldest one, and the times of the last
// compaction and of the last backup made by a store open for writing, all
// read without a pass over the log.
//
// # Removal
//
// [Store.RemoveRuns] implements store.Remover: it runs on the writer
// between two groups (appends wait for it), writes the in-memory index
// entries and summaries to the file first, then removes the runs' events,
// their entries in every index, their summaries and task states (the
// summaries they shared recomputed from what stays) and writes a
// tombstone per run, all in one transaction. The file keeps the highest
// seq, so seqs are not reused after the newest runs go; reads, Open and
// [Store.Check] accept the gaps of removed runs (Check requires as many
// missing seqs as events removed). The freed pages go to bbolt's free
// list, for later appends; Compact gives them back. A version of this package older than
// removal reads a file with gaps as damaged: open a file that had runs
// removed with this version or a later one.
//
// # Caveats
//
// Events are deleted only by [Store.RemoveRuns] and artifacts never, so
// the dedup window of an event lasts until its run is removed; the file
// only grows until it is compacted. A read copies each event out of the file;
// nothing is held between pages of a loop, so a loop body may append, and
// a long loop does not keep the file from growing. Memory holds the
// in-memory index entries and summaries (a few hundred bytes per event, at
// most twice Options.IndexBatch events plus two groups) and nothing else that
// grows with the file; reopening after a crash reads those events again,
// and writes nothing. One writing process at a time: bbolt's file lock
// makes a second opener wait for Options.LockTimeout and fail (read-only
// opens share the file among themselves only).
package boltstore
