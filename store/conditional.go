package store

import (
	"context"

	"github.com/clutchprotocol/clutch/protocol"
)

// Conditional is the upgrade interface of a Store that appends a batch on
// the condition that its first message is new (docs/protocol.md §8.1): a
// request and the events that follow from it (its routing decision, its
// acceptance) are stored together only if the request is not a duplicate
// (§5.2), so that a redelivered request never leaves them behind as
// strays. The in-tree stores (memstore, boltstore, pgstore) implement it,
// and storetest checks every store that does.
//
// Find it with a type assertion on the store you append to, not through a
// chain of wrappers (Unwrap): a wrapper that overrides Append, to measure
// or filter appends, would be bypassed. A wrapper keeps the upgrade by
// implementing AppendIfNew itself.
type Conditional interface {
	// AppendIfNew is Append, except when the first message is a
	// duplicate (by id or by idempotency key, §5.2, of a stored event or
	// of one stored in the meantime): then nothing of the batch is
	// stored. The check and the append are one transaction, so of
	// concurrent calls whose first messages duplicate each other exactly
	// one stores its batch.
	//
	// The result has one entry per message, as Append's. When the first
	// message is new, the batch is appended as Append appends it (a later
	// message may still be a duplicate on its own). When it is a
	// duplicate, the first entry says so (Duplicate, DuplicateBy and the
	// Seq of the stored event) and every other entry is the zero
	// AppendResult: Seq 0, which no event has, meaning "not stored" — see
	// [AppendResult.Stored].
	AppendIfNew(ctx context.Context, msgs ...*protocol.Message) ([]AppendResult, error)
}
