// Package driver is what a backend of the event store uses to follow the
// rules of [github.com/clutchprotocol/clutch/store], so that a store
// written outside this module behaves exactly like the in-tree ones. It
// is for implementers; users of a store never import it.
//
// # Basics
//
// A backend implements [store.Store] and runs
// [github.com/clutchprotocol/clutch/store/storetest.Run] from its tests.
// The package doc of store states the contract; driver gives the parts
// that are easy to get subtly wrong:
//
//   - Append: [Prepare] validates each message, gets its bytes (encoding
//     it at most once) and checks the size limit, with the error types the
//     contract names. The backend then, under its lock or in one
//     transaction, deduplicates each [Entry] by ID and by (RunID,
//     IdempotencyKey) when the key is not "" (also against earlier entries
//     of the same batch), gives the others consecutive seqs and one time,
//     stores Raw and the index fields, and after the commit calls
//     [Signal.Notify].
//   - Read and Follow: the backend writes one [PageFunc] (a bounded scan
//     of its log or of the index [IndexOf] picks, filtered with
//     [store.Query.Match]) and returns [Read] built on it, and, from
//     Follow, [Hub.Follow] of the one [Hub] it made at Open with
//     [NewHub]. They validate the query, page, honour Limit and AfterSeq,
//     and stop Read at the last seq of its start. The hub is the store's
//     one follower (docs/protocol.md §8.1): while any Follow runs, one
//     goroutine waits on the store's [Signal] without losing a wake-up,
//     reads each new event once and hands it to the Follows it matches,
//     through a buffer of 256 events and 1 MiB each; a Follow whose buffer
//     is full reads the store with the PageFunc until it has caught up, so
//     an append costs the writer the same with one follower or thousands.
//   - Artifacts: [store.CheckMediaType], [store.ArtifactRefFromDigest] and
//     [store.ParseArtifactRef].
//   - Summaries (optional): a backend that implements [store.Lister] folds
//     each appended event into its run and thread summaries with
//     [NeedsTask], [TaskStep] and [Fold], the same definition store.Runs
//     uses to project a log without one, stores every field of what Fold
//     gives, and yields each summary through [Listed].
//
// A plain store, every method under one mutex:
//
//	func (s *Store) Append(ctx context.Context, msgs ...*protocol.Message) ([]store.AppendResult, error) {
//		if err := ctx.Err(); err != nil {
//			return nil, err
//		}
//		entries, err := driver.Prepare(nil, msgs, s.maxEventSize)
//		if err != nil {
//			return nil, err
//		}
//		s.mu.Lock()
//		// ErrClosed when closed (even for no messages); then dedup,
//		// assign seqs, store the entries ...
//		s.mu.Unlock()
//		s.sig.Notify() // after the events are visible to page
//		return res, nil
//	}
//
//	// At Open: s.hub = driver.NewHub(&s.sig, s.page, s.LastSeq)
//
//	func (s *Store) Read(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
//		return driver.Read(ctx, q, s.LastSeq, s.page)
//	}
//
//	func (s *Store) Follow(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
//		return s.hub.Follow(ctx, q)
//	}
//
// store/storetest/external in this repository is such a store, in a
// module of its own, and passes the suite.
//
// # Caveats
//
// Close must call Notify too, after which the page function returns
// [store.ErrClosed], so that the hub's follower ends every Follow with it.
// The hub needs no Close of its own: its goroutine runs only while a
// Follow does. Entry.Raw is shared with the
// message: store it as it is or copy it, never change it.
package driver
