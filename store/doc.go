// Package store defines Clutch's event store: the one append-only log that
// the router, the UI, audit, replay and deduplication all read (docs/protocol.md
// §1.6, §5, §8). It holds the contract — the [Store] interface, [Event],
// [Query], [AppendResult], the artifact refs and the sentinel errors — and
// no implementation; [github.com/clutchprotocol/clutch/store/driver]
// holds what a backend needs to follow the rules. The backends are
// [github.com/clutchprotocol/clutch/store/memstore] (in memory, for tests
// and ephemeral runs) and [github.com/clutchprotocol/clutch/store/boltstore]
// (embedded bbolt, durable, the default). Both pass
// [github.com/clutchprotocol/clutch/store/storetest], and so must any
// third-party backend.
//
// # Basics
//
// Append stores messages; each becomes an Event with a seq the store
// assigns, starting at 1 and increasing by exactly one per event:
//
//	res, err := s.Append(ctx, request, accept) // one atomic batch
//	// res[0].Seq, res[1].Seq: consecutive seqs
//
// Reads return iter.Seq2[Event, error], in seq order, served by the
// indexes of docs/protocol.md §8.1 (run_id, thread_id, task_id,
// from.agent_id) and filtered by a type prefix:
//
//	for ev, err := range s.Read(ctx, store.Query{RunID: run, Limit: 100}) {
//		if err != nil { ... }
//		msg, err := ev.Message() // decodes Raw; skip it when bytes will do
//	}
//
// Pass the Seq of the last event seen as Query.AfterSeq to resume. Follow
// is the live tail: it yields the backlog after AfterSeq and then every
// new matching event as it is appended, exactly once and in order, without
// polling, until its context ends:
//
//	for ev, err := range s.Follow(ctx, store.Query{ThreadID: thread}) { ... }
//
// Breaking out of any of these loops releases everything the read held.
//
// [Runs] and [Threads] list a [Summary] of each run and thread, newest
// first (by the seq of its last event), paged with [ListQuery].Before:
// what a UI shows before it reads any event: its title, status, counts,
// the agents that took its tasks, the tasks waiting for an answer and what
// failed. The rules are on [Summary].
//
//	for sum, err := range store.Runs(ctx, s, store.ListQuery{Limit: 50}) { ... }
//
// Summaries are not part of the Store contract but an optional upgrade,
// [Lister]: a store that keeps them as it appends lists a page for the
// price of a page, and Runs and Threads use that; for any other store they
// fold the whole log on each call (correct, O(events)). The in-tree
// backends implement Lister, so a UI over them stays fast, while a new
// backend passes the conformance suite with the eight methods of the log
// alone and can add Lister later; storetest then checks that its listings
// equal the projection of its log. A store that wraps another (to measure
// or filter it) and embeds it loses the inner Lister unless it has a
// method Unwrap() Store, which Runs and Threads follow.
//
// Large payloads go to the artifact store (docs/protocol.md §8.2): PutArtifact
// returns a content address "artifact:sha256:<hex>" ([ArtifactRef]) to put
// in a message's attachments, and GetArtifact returns the bytes.
//
// # Append rules
//
// Each message is validated with [protocol.Message.Validate] before it is
// stored; an invalid one is refused with an [InvalidMessageError] that
// wraps the protocol error. The bytes stored are the message's own
// ([protocol.Message.Raw]): a decoded or signed message is never
// re-encoded, and a message built in Go is encoded once, by
// [protocol.Encode], which remembers the bytes on the message. The store
// indexes the message's fields, which must therefore agree with its bytes
// (change a message after encoding only through [protocol.Message.Reset]).
//
// A batch is all or nothing: if any message is refused, or the backend
// fails, nothing of it is stored.
//
// # Deduplication
//
// Deduplication happens in the same transaction as the append
// (docs/protocol.md §5.2). A message is a duplicate, and is not appended again, when
//
//  1. an event with the same id is stored (checked first), or
//  2. an event with the same (run_id, idempotency_key) is stored; messages
//     without an idempotency key never match this rule.
//
// The rules also hold inside one batch: a later message duplicates an
// earlier one of the same batch. The result of a duplicate has Duplicate
// set, the rule in DuplicateBy, and the Seq of the stored event. A message
// that duplicates one event by id and another by key is reported as a
// duplicate by id.
//
// A store that implements the optional upgrade [Conditional] appends a
// batch on the condition that its first message is new (AppendIfNew): when
// it is a duplicate nothing of the batch is stored, its first result says
// which event it duplicates and the others are zero ([AppendResult.Stored]
// false). The router stores a request with its routing decision and
// acceptance that way (docs/protocol.md §5.1). Find it with a type
// assertion on the store itself: a wrapper that overrides Append keeps it
// only by implementing AppendIfNew.
//
// The dedup window: docs/protocol.md §5.2 asks for dedup state "until run
// completion". The in-tree backends keep it as long as they keep events:
// until the event's run is removed ([Remover]), or memstore's Close. A
// backend with a shorter window must keep it at least until the run ends
// and say so in its documentation.
//
// # Retention
//
// A store that implements the optional upgrade [Remover] ([RemoverOf]
// finds it; the in-tree stores do) removes whole runs that have ended,
// atomically, and leaves a [Tombstone] for each (docs/protocol.md §8.3):
//
//	ts, err := store.RemoverOf(s).RemoveRuns(ctx, runs, store.Removal{Policy: "max_age=720h"})
//
// A run still running, waiting for an answer or active, or with an event
// past the Removal.Through its caller chose it at, is refused with a
// [*RunActiveError] ([ErrRunActive]) and nothing is removed. Afterwards a
// Read of the run yields one [*RemovedError] ([ErrRemoved]) carrying its
// tombstone, Get of one of its events gives ErrNotFound, [Runs] no longer
// lists it, and the summaries of the threads it shared are those of what
// stays. Seqs are never reused: LastSeq stays, and Read and Follow step
// over the gap.
//
// # Presence
//
// Current state that is not history, such as liveness, is kept beside the
// log by the optional upgrade [Presence] ([PresenceOf] finds it): Beat
// replaces a key's last beat, stamped with the store's clock, and returns
// the one it replaced; Beats lists them by key prefix. Beats are not
// events: no seq, not in Read or Follow, one per key. The registry and
// the team nodes keep heartbeats there and store only changes as events
// (docs/protocol.md §2.4). Keys are checked by [CheckBeat] ([ErrInvalidKey]).
//
// # Errors
//
// The sentinel errors are [ErrClosed], [ErrNotFound],
// [ErrTooLarge], [ErrInvalidMessage], [ErrInvalidQuery], [ErrInvalidRef],
// [ErrInvalidMediaType], and for removal [ErrRunActive] and [ErrRemoved].
// Match them with errors.Is; the typed errors ([InvalidMessageError],
// [TooLargeError], [QueryError], [RunActiveError], [RunNotFoundError],
// [RemovedError]) carry the detail.
// Every store error also carries a [protocol.Code] for [protocol.CodeOf],
// so it can be sent on the wire as a docs/protocol.md §5.4 error. A call
// whose context is done returns ctx.Err().
//
// # Caveats
//
// Event.Raw may be shared with the store and the appended message: treat
// it as read-only. Read stops at the last event present when the loop
// starts; use Follow to keep going. Follow ends without an error when its
// context ends (check ctx.Err() if the reason matters) and yields
// ErrClosed if the store is closed under it. An Append whose context ends
// while it waits for its commit returns ctx.Err(), and its messages may or
// may not have been stored; appending them again is safe, because of
// deduplication.
package store
