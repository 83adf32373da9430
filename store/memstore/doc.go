// Package memstore is an in-memory [store.Store]: the double to unit-test
// agents and routers with no disk, no network and, with Options.Clock and
// protocol.NewIDs, deterministic ids and times. It passes the same
// conformance suite as the durable backend
// ([github.com/clutchprotocol/clutch/store/storetest]), so code tested
// against it behaves the same on
// [github.com/clutchprotocol/clutch/store/boltstore].
//
// # Basics
//
//	s, err := memstore.New(nil)
//	...
//	defer s.Close()
//	res, err := s.Append(ctx, msg)
//	for ev, err := range s.Read(ctx, store.Query{RunID: msg.RunID}) { ... }
//
// A Store is safe for concurrent use. An append interns the message's run,
// thread, task and agent ids first, in 32 sharded tables (agent ids, which
// every event repeats, also in a lock-free cache; the ids of an event that
// reuses the very strings of an earlier one, as replies do, in a cache by
// address). Then it takes the store's one lock only to check the id (and
// idempotency key) for a duplicate, copy the bytes after the last event's
// and add the seq to four posting lists. Ids with a ULID time are checked
// in a small table per 128 ms of that time, which recent appends keep in
// the cache. The lists keep their first seqs inline and grow in fixed
// chunks; the hash tables are pointer-free open-addressing arrays of 32-bit
// fingerprints and values that grow one at a time; events are
// pointer-free records in blocks, their bytes in chunks of up to 1 MiB,
// the next of which is prepared outside the lock. So nothing is copied at
// length or, mostly, allocated under the lock, and the garbage collector
// has almost nothing to scan however many events the store holds. Reads
// copy a page of events out under the same lock (a plain mutex: appends
// dominate) and hold nothing between pages, so a loop body may append to
// the same store. Follow waits on a broadcast channel that an append
// closes when someone waits, so it never polls.
//
// # Errors
//
// Errors are those of the store contract (store.ErrClosed, ...). New
// returns an error matching [ErrInvalidOptions] for unusable options.
//
// # Caveats
//
// Everything lives in memory until Close, which drops it: there is no
// durability and no size bound other than Options.MaxEventSize per
// message (and the indexes' own: 2^32-1 events, 64 Mi distinct run,
// thread, task and agent ids; past them Append fails with
// store.ErrTooLarge). The store keeps a copy of each event's bytes;
// Event.Raw is a read-only view of it, and holding one keeps its chunk
// (up to 1 MiB) alive after Close. The dedup window is the store's
// lifetime.
package memstore
