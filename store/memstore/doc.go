// Package memstore is an in-memory [store.Store] for tests and ephemeral
// runs: no disk, no network and, with Options.Clock and protocol.NewIDs,
// reproducible ids and times. It passes the same conformance suite as the
// durable backend ([github.com/clutchprotocol/clutch/store/storetest]), so
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
// contract (see the [store] package doc):
//
//   - Seqs start at 1 and grow by one per stored event; an Append is one
//     atomic batch, and its events' times (from Options.Clock, in UTC)
//     never decrease along seqs: an event whose clock reading is earlier
//     than the previous event's time is given that time.
//   - Deduplication by id, then by (run_id, idempotency_key), also within
//     a batch; a duplicate's result gives the seq of the event it
//     duplicates and the rule that matched. The dedup window is the
//     store's lifetime. AppendIfNew (store.Conditional) stores a batch
//     only when its first message is not a duplicate.
//   - Read returns the events present when the loop starts, in seq order;
//     Follow then waits for new ones without polling and yields each once,
//     in order. Neither holds anything between pages of events, so a loop
//     body may append to the same store, and breaking out releases
//     everything.
//   - A message over Options.MaxEventSize or an artifact over
//     Options.MaxArtifactSize is refused with store.ErrTooLarge; artifacts
//     are stored by content address.
//
// # Presence
//
// The Store implements store.Presence with a map: beats are kept until
// Close, like the events.
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
// than fast: Go maps and slices under one lock, which Append, PutArtifact
// and Close hold for their whole work, and reads share while they copy
// out what they return (at most one page of events). It keeps no run or
// thread summaries (it is no store.Lister): store.Runs and store.Threads
// fold its log. It has no speed target; where throughput matters, use a
// durable backend.
//
// Everything lives in memory and nothing is ever dropped before Close:
// memory grows with every event and artifact stored, so the store suits
// tests and short-lived runs, not a long-running service. There is no
// durability: Close drops it all, later calls return store.ErrClosed, and
// followers end with it. The store keeps its own copy of each
// event's bytes and of each artifact; Event.Raw is shared with the store
// and must be treated as read-only, while GetArtifact returns a copy.
package memstore
