// Package storetest is the conformance suite of the event store: one call
// certifies any [store.Store] implementation, the in-tree ones and
// third-party ones alike (built with
// [github.com/clutchprotocol/clutch/store/driver]), so that the test
// double and the real store cannot drift apart.
//
// # Basics
//
// A backend runs the suite from its own tests, with a constructor that
// returns an empty store and an [Options] that declares what it supports:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T) store.Store {
//			s, err := pgstore.Open(t.Context(), testDSN(t), nil)
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		}, storetest.Options{
//			// Durable: reopen the same storage after the suite closed it.
//			Reopen: func(t *testing.T, closed store.Store) store.Store {
//				s, err := pgstore.Open(t.Context(), closed.(*pgstore.Store).DSN(), nil)
//				if err != nil {
//					t.Fatal(err)
//				}
//				return s
//			},
//		})
//	}
//
// Every rule of the store package doc is its own subtest, so
// `go test -run 'TestConformance/DuplicateID'` runs one: seq increases by
// one with no gaps; raw bytes are kept; duplicate id and idempotency key,
// also inside a batch, and which rule wins; batch atomicity; validation;
// Get; each index read in order with limits, type prefixes and combined
// fields; after-seq resume; concurrent appends from many goroutines with
// concurrent readers (run it with -race); Follow delivering every event
// once and in order across the backlog/live boundary, filtering, ending on
// cancel, on its Limit and on Close; artifacts and malformed refs; context
// cancellation of every call; use after Close; messages of exactly the
// size limit; early break out of iterators; and, when Options.Reopen is
// set, that events, seqs, times, dedup state and artifacts survive a
// reopen. The summary cases list runs and threads through [store.Runs]
// and [store.Threads], so they hold for every store: newest first,
// paging, the counting and status rules, titles, agents, waiting tasks
// and failures, ErrClosed. For a store that
// implements [store.Lister] they also compare its own listings, whole and
// paged, with the projection of its log after each step, so the two
// cannot disagree. For a store that implements [store.Remover] (required
// when Options.Remover is set) the removal cases check that ended runs go
// with a tombstone, running, waiting and active runs stay, reads of a
// removed run yield its *store.RemovedError, followers step over the gap,
// dedup of other runs holds, seqs are not reused, listings are the
// projection of what stays, removal is idempotent and survives a reopen.
// For a store that implements [store.Conditional] (required when
// Options.Conditional is set) the conditional cases check that a batch
// whose first message is new is stored as Append stores it, that one whose
// first message is a duplicate by id or by key stores nothing and reports
// so, with seqs contiguous afterwards, and that of concurrent batches with
// one key exactly one is stored.
// Cases run in parallel (each on its own store) unless
// Options.Serial is set; -short shrinks the concurrency case.
//
// [Bench] runs the store's benchmarks (append from 1, 2, 8 and 64
// goroutines, reading a 10k-event run raw and decoded, live-tail latency)
// on the same ~1 KiB workload for any backend; its building blocks
// ([BenchAppend], [BenchReadRun], [BenchFollowLatency], [BenchMessages])
// serve backend-specific benchmarks. [CheckLister] and [CheckTerminals]
// check a store a backend's own tests built (one restored from a backup):
// its summaries against its log, and its task lifecycles.
//
// # Caveats
//
// The suite builds messages with protocol.NewIDs and a seeded entropy
// source, so its ids are the same on every run; a backend must not assume
// ids are unique across tests of one process (each case gets a fresh
// store). The large-message case allocates messages of the declared
// MaxEventSize and the artifact case one artifact over MaxArtifactSize
// (skipped above 256 MiB).
package storetest
