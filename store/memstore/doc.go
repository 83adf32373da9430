// Package memstore is an in-memory [store.Store] for tests and ephemeral
// runs: no disk, no network and, with Options.Clock and protocol.NewIDs,
// reproducible ids and times. It passes the same conformance suite as the
// durable backends ([github.com/clutchprotocol/clutch/store/storetest]), so
// code tested against it behaves the same on
// [github.com/clutchprotocol/clutch/store/boltstore].
//
// # Basics
//
//	s, err := memstore.New(nil) // nil: the defaults
//	if err != nil { ... }
//	defer s.Close()
//	res, err := s.Append(ctx, msg)
//	for ev, err := range s.Read(ctx, store.Query{RunID: msg.RunID}) { ... }
//
// A Store is safe for concurrent use and keeps every rule of the store
// contract (the [store] package doc): seqs, atomic batches, dedup by id
// and by (run_id, idempotency_key) for the store's lifetime, AppendIfNew
// (store.Conditional), reads and follows that hold nothing between pages,
// size limits (Options.MaxEventSize, Options.MaxArtifactSize), removal of
// ended runs with tombstones (store.Remover) and presence (store.Presence,
// beats kept in a map until Close). An event whose clock reading is
// earlier than the previous event's time is given that time, so times
// never decrease along seqs.
//
// # Errors
//
// Errors are those of the store contract (store.ErrClosed,
// store.ErrNotFound, store.ErrTooLarge, ...). New returns an error
// matching [ErrInvalidOptions] for a negative size limit or a
// MaxEventSize over 2^32-1.
//
// # Caveats
//
// The store is the plain test double, built to be obviously right rather
// than fast: Go maps and slices under one lock, which writes hold for
// their whole work and reads share while they copy out one page. It keeps
// no run or thread summaries (it is no store.Lister): store.Runs and
// store.Threads fold its log. It has no speed target.
//
// Everything lives in memory until Close, which drops it all (later calls
// return store.ErrClosed, followers end with it): the store suits tests
// and short-lived runs, not a long-running service. It keeps its own copy
// of each event's bytes and of each artifact; Event.Raw is shared with the
// store and must be treated as read-only, while GetArtifact returns a
// copy.
package memstore
