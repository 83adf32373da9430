package store

import (
	"context"
	"iter"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
)

// Store is the append-only event log of docs/protocol.md §1.6 and §8.1. Every
// method that can block takes a context first; all methods are safe for
// concurrent use. The package doc states the rules every implementation
// keeps, and [github.com/clutchprotocol/clutch/store/storetest.Run] checks
// them.
type Store interface {
	// Append stores msgs, in order, as one atomic batch. Each message is
	// validated ([protocol.Message.Validate]) and encoded at most once
	// ([protocol.Encode]: bytes it already has are stored as they are).
	// The result has one entry per message, in order: the seq of the new
	// event, or of the stored event it duplicates (see "Deduplication" in
	// the package doc). If anything fails, nothing of the batch is stored
	// and the results are nil. Append with no messages returns (nil, nil).
	//
	// Append may set the remembered bytes of a message that has none, so
	// a message must not be appended from two goroutines at once.
	Append(ctx context.Context, msgs ...*protocol.Message) ([]AppendResult, error)

	// Get returns the event of the message with this id, or ErrNotFound.
	Get(ctx context.Context, id string) (Event, error)

	// Read returns the events matching q in seq order, up to q.Limit. It
	// reads the log as it is when the loop starts: events appended later
	// are not included. An error ends the sequence after being yielded
	// once. Breaking out of the loop releases everything the read held.
	Read(ctx context.Context, q Query) iter.Seq2[Event, error]

	// Follow is Read that does not stop at the end of the log: after the
	// backlog it blocks until new matching events are appended, and
	// yields each one exactly once, in seq order. It ends without an error
	// when ctx is done (or after q.Limit events), and yields ErrClosed
	// when the store is closed.
	Follow(ctx context.Context, q Query) iter.Seq2[Event, error]

	// LastSeq returns the seq of the last event appended, 0 for an empty
	// store. Removing runs ([Remover]) does not lower it.
	LastSeq(ctx context.Context) (uint64, error)

	// PutArtifact stores data under its content address (docs/protocol.md §8.2)
	// and returns the ref, "artifact:sha256:<hex>" (see [ArtifactRef]).
	// Putting the same bytes again returns the same ref and keeps the
	// media type given first. An empty mediaType means
	// "application/octet-stream".
	PutArtifact(ctx context.Context, mediaType string, data []byte) (ref string, err error)

	// GetArtifact returns the artifact stored under ref. A ref that is not
	// a well-formed address gives ErrInvalidRef, an unknown one ErrNotFound.
	GetArtifact(ctx context.Context, ref string) (Artifact, error)

	// Close waits for appends in flight, then releases the store. Later
	// calls return ErrClosed; calling Close again returns nil.
	Close() error
}

// Event is one stored message.
type Event struct {
	// Seq is assigned by the store: 1 for the first event, then one more
	// for each event, with no gaps (the resume token of readers). Seqs
	// are never reused: the events of a removed run ([Remover]) leave a
	// gap that reads step over.
	Seq uint64
	// Time is when the store appended the event (UTC). Events of one
	// Append share it; it never decreases along Seq unless the store's
	// clock goes back.
	Time time.Time
	// Raw is the message exactly as stored: the bytes it was decoded
	// from or first encoded to. It may be shared with the store: do not
	// modify it.
	Raw []byte
}

// Message decodes e.Raw. It decodes on every call, so loops that only
// need Seq, Time or Raw pay nothing for it.
func (e Event) Message() (*protocol.Message, error) {
	d := protocol.Decoder{}
	if len(e.Raw) > protocol.DefaultMaxBytes {
		// The store accepted it under its own limit; decode what it holds.
		d.MaxBytes = len(e.Raw)
	}
	return d.Decode(e.Raw)
}

// AppendResult is what Append did with one message.
type AppendResult struct {
	// Seq is the seq of the new event or, when Duplicate, of the stored
	// event the message duplicates.
	Seq uint64
	// Duplicate reports that the message was not appended again.
	Duplicate bool
	// DuplicateBy says which rule matched when Duplicate is set.
	DuplicateBy DedupRule
}

// Stored reports whether the message was appended as a new event: not a
// duplicate, and not left out of a batch whose first message was one
// ([Conditional]; its result is the zero AppendResult, Seq 0).
func (r AppendResult) Stored() bool { return r.Seq != 0 && !r.Duplicate }

// DedupRule names a deduplication rule of docs/protocol.md §5.2.
type DedupRule uint8

// The deduplication rules, in the order they are checked.
const (
	// NotDuplicate is the DuplicateBy of a message that was appended.
	NotDuplicate DedupRule = iota
	// DedupByID: an event with the same id is stored.
	DedupByID
	// DedupByIdempotencyKey: an event with the same (run_id,
	// idempotency_key) is stored.
	DedupByIdempotencyKey
)

// String returns "none", "id" or "idempotency_key".
func (r DedupRule) String() string {
	switch r {
	case NotDuplicate:
		return "none"
	case DedupByID:
		return "id"
	case DedupByIdempotencyKey:
		return "idempotency_key"
	}
	return "DedupRule(" + itoa(uint64(r)) + ")"
}

// Query selects events. The zero Query selects every event.
//
// Set fields combine with AND. RunID, ThreadID, TaskID and AgentID are
// exact matches served by an index; TypePrefix is a plain string prefix of
// the type ("task." for the §2.1 lifecycle, "task.result" for one type)
// checked on top of the index, or over the whole log when no index field
// is set.
type Query struct {
	RunID      string // run_id
	ThreadID   string // thread_id
	TaskID     string // task_id
	AgentID    string // from.agent_id
	TypePrefix string // prefix of type
	// AfterSeq skips events with Seq ≤ AfterSeq: pass the Seq of the last
	// event seen to resume.
	AfterSeq uint64
	// Limit is the most events returned; 0 means no limit.
	Limit int
}

// Validate reports whether q is well formed: ErrInvalidQuery for a
// negative Limit.
func (q Query) Validate() error {
	if q.Limit < 0 {
		return &QueryError{Field: "Limit", Detail: "must not be negative"}
	}
	return nil
}

// Match reports whether an event with these fields is selected by q,
// ignoring AfterSeq and Limit. Backends use it to filter.
func (q Query) Match(runID, threadID, taskID, agentID string, typ protocol.Type) bool {
	return (q.RunID == "" || q.RunID == runID) &&
		(q.ThreadID == "" || q.ThreadID == threadID) &&
		(q.TaskID == "" || q.TaskID == taskID) &&
		(q.AgentID == "" || q.AgentID == agentID) &&
		strings.HasPrefix(string(typ), q.TypePrefix)
}

// Artifact is a blob of the artifact store (docs/protocol.md §8.2).
type Artifact struct {
	Ref       string // "artifact:sha256:<hex>"
	MediaType string // e.g. "application/pdf"
	Data      []byte // the content, as put
}

// Defaults of the in-tree backends.
const (
	// DefaultMaxEventSize is the largest encoded message a store accepts
	// by default: the protocol's decode limit, so that every stored event
	// can be decoded by a default decoder.
	DefaultMaxEventSize = protocol.DefaultMaxBytes
	// DefaultMaxArtifactSize is the largest artifact accepted by default.
	DefaultMaxArtifactSize = 64 << 20
	// DefaultMediaType is the media type of an artifact put without one.
	DefaultMediaType = "application/octet-stream"
)

func itoa(v uint64) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(b[i:])
		}
	}
}
