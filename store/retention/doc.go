// Package retention applies a retention policy to a store: it chooses the
// runs that have ended and are past the policy's limits (by age, by count,
// by size), archives each one first when asked (JSON lines or CloudEvents,
// the format of `clutch export`), and removes them with the store's
// [store.Remover], which leaves a tombstone per run that says what went,
// when and by which rule (docs/protocol.md §8.3).
//
//	rep, err := retention.Apply(ctx, st, retention.Policy{
//		MaxAge:   30 * 24 * time.Hour,
//		MaxRuns:  10000,
//		MaxBytes: 20 << 30,
//		Archive:  &retention.Archive{Dir: "/var/lib/app/archive"},
//	})
//
// # What goes
//
// Only whole runs that have ended: every task of the run has ended and none
// waits for an answer ([store.Removable]). A run that is running, waiting
// or has no tasks (a chat thread's run, the registry's and the rules
// library's system runs) is never chosen, whatever its age. Of the ended
// runs, newest first by their last event:
//
//   - MaxAge: a run whose last event is older than MaxAge (by the store's
//     clock, [store.ClockOf]) goes;
//   - MaxRuns: the runs after the first MaxRuns go;
//   - MaxBytes, after those two: of the ended runs left, the oldest go,
//     one after the other, until the runs that stay hold at most MaxBytes
//     bytes. The size of a run is [store.Summary.Bytes], the stored size
//     of its events, and the runs counted are all those of Apply's one
//     listing: running, waiting, without tasks and ended (every event has
//     a run, so that is the whole log). Runs that cannot go are counted
//     but never chosen: when they alone hold more than MaxBytes, every
//     ended run goes and the store still holds more.
//
// They go oldest first. A zero limit is no limit; a Policy with none
// removes nothing. Each tombstone names the rule that chose its run
// ("max_age=720h0m0s", "max_runs=10000", "max_bytes=21474836480"). The
// size counted is that of the events, not of the store: a file-backed
// store's file keeps its size (the space is reused by new events, and
// compaction gives it back: boltstore's Compact), and PostgreSQL keeps
// its relations' size until VACUUM FULL; [store.Usage] reports both.
//
// # Archives
//
// With an Archive, each run is written to its own file in Archive.Dir,
// named after the run id (<run_id>.jsonl, or .cloudevents.jsonl; an id
// that is not a plain file name is escaped, a long one hashed), through a
// temporary file that is synced and renamed, before the run is removed; the
// tombstone's Archive names the file. A run whose archive cannot be written
// is not removed, and Apply returns the error. `clutch import` reads the
// files back into a store.
//
// # Races
//
// Apply notes the store's LastSeq, lists the runs, then archives and
// removes them in batches, each removal with that seq as its
// [store.Removal.Through]. A run that gets a new event in between (a
// partial retry opens it again, a message comes after its task ended, even
// after its archive was written) is refused by the store with a
// [store.RunActiveError], so an event no archive holds never goes; Apply
// leaves the run and goes on with the rest, and counts it in
// Report.Active. The next Apply chooses it again, as it then is. Apply may run while the store serves
// appends, reads and follows; it holds no lock between batches. Run one
// Apply at a time per store: two at once do no harm (removal is idempotent)
// but archive the same runs twice.
//
// A store without [store.Remover] gives [ErrUnsupported].
package retention
