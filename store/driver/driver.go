package driver

import (
	"context"
	"iter"
	"math"
	"sync"
	"sync/atomic"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/internal/fold"
)

// Entry is a message prepared for appending: its bytes and the fields the
// store indexes, deduplicates and summarizes on. Prepare fills it, and
// EntryOf for a message read back (rebuilding indexes or summaries). Raw
// and Payload are the message's memory: a store that keeps an entry after
// Append returns copies what it keeps of them.
type Entry struct {
	Raw            []byte         // the message's bytes, shared with it
	ID             string         // id
	RunID          string         // run_id
	ThreadID       string         // thread_id
	TaskID         string         // task_id
	AgentID        string         // from.agent_id
	Type           protocol.Type  // type
	IdempotencyKey string         // idempotency_key, "" when absent
	Attempt        int            // attempt
	Channel        string         // meta.ui_channel when it is a string (summaries)
	Ends           bool           // protocol.EndsTask: the event ends its task's attempt
	PayloadType    string         // payload_type (summaries: titles)
	Payload        []byte         // payload, shared with the message (summaries: titles; see Fold)
	Failure        *store.Failure // what failed, for a task.error or task.timeout that ends its task; else nil

	title  string // Title's, once titled
	titled bool
}

// Title is the title e gives a run or thread that has none (see
// store.Summary.Title): "" when e's type gives none or its payload and
// payload type hold no text. The payload is read on the first call only,
// and never for a type that gives no title. Fold calls Title only for a
// summary without a title; a backend that folds under a lock may call it
// before taking the lock, for the entries whose summaries have none, so
// that the lock is not held while a payload is read.
func (e *Entry) Title() string {
	if !e.titled {
		e.title, e.titled = fold.Title(e.Type, e.PayloadType, e.Payload), true
	}
	return e.title
}

// Prepare validates msgs and gets their bytes, encoding each message at
// most once (docs/protocol.md §11 "the hot path"): a message that has bytes is validated
// and stored as it is; one without is encoded by protocol.Encode, which
// validates it. The first failure is returned as a store.InvalidMessageError
// or store.TooLargeError naming the message's index. The entries are
// appended to dst, which may be a caller's stack buffer.
func Prepare(dst []Entry, msgs []*protocol.Message, maxSize int) ([]Entry, error) {
	out := append(dst, make([]Entry, len(msgs))...)[len(dst):]
	for i, m := range msgs {
		if m == nil {
			return nil, &store.InvalidMessageError{Index: i, Err: &protocol.Error{Code: protocol.CodeMissingField, Offset: -1, Detail: "nil message"}}
		}
		if m.Raw() != nil {
			if err := m.Validate(); err != nil {
				return nil, &store.InvalidMessageError{Index: i, Err: err}
			}
		}
		raw, err := protocol.Encode(m)
		if err != nil {
			return nil, &store.InvalidMessageError{Index: i, Err: err}
		}
		if len(raw) > maxSize {
			return nil, &store.TooLargeError{What: "message", Index: i, Size: len(raw), Limit: maxSize}
		}
		entryOf(&out[i], m, raw)
	}
	return out, nil
}

// EntryOf returns the entry of m, whose bytes are raw.
func EntryOf(m *protocol.Message, raw []byte) Entry {
	var e Entry
	entryOf(&e, m, raw)
	return e
}

// entryOf fills e, which is zero, in place: Prepare's entries are not
// built on the stack and then copied.
func entryOf(e *Entry, m *protocol.Message, raw []byte) {
	e.Raw, e.ID, e.RunID, e.ThreadID, e.TaskID = raw, m.ID, m.RunID, m.ThreadID, m.TaskID
	e.AgentID, e.Type, e.IdempotencyKey = m.From.AgentID, m.Type, m.IdempotencyKey
	e.Attempt, e.Ends, e.Channel = m.Attempt, protocol.EndsTask(m), fold.Channel(m)
	e.PayloadType, e.Payload, e.Failure = m.PayloadType, m.Payload, fold.FailureOf(m, e.Ends)
}

// Index names the index that serves a query.
type Index uint8

// The indexes of docs/protocol.md §8.1, most selective first.
const (
	NoIndex     Index = iota // no index field is set: scan the log
	TaskIndex                // task_id
	ThreadIndex              // thread_id
	RunIndex                 // run_id
	AgentIndex               // from.agent_id
)

// IndexOf returns the index that drives q and the value it looks up: the
// most selective field set (task, thread, run, agent), or NoIndex.
func IndexOf(q store.Query) (Index, string) {
	switch {
	case q.TaskID != "":
		return TaskIndex, q.TaskID
	case q.ThreadID != "":
		return ThreadIndex, q.ThreadID
	case q.RunID != "":
		return RunIndex, q.RunID
	case q.AgentID != "":
		return AgentIndex, q.AgentID
	}
	return NoIndex, ""
}

// Signal is a broadcast: Wait returns a channel that is closed by the next
// Notify. Followers take it before they read, so an append between their
// read and their wait still wakes them (no lost wake-up, no polling).
type Signal struct {
	mu     sync.Mutex
	ch     chan struct{}
	waited atomic.Bool // a channel was handed out since the last Notify
}

// Wait returns the channel the next Notify closes.
func (s *Signal) Wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	s.waited.Store(true)
	return s.ch
}

// Notify wakes every waiter. It takes no lock when nobody waits, which is
// every append of a store without followers. No wake-up is lost: Notify
// runs after the append it announces, and a follower sets waited before it
// reads; in the one order of these atomic steps either Notify sees waited,
// or the follower's read comes after the append and sees it.
func (s *Signal) Notify() {
	if !s.waited.Load() {
		return
	}
	s.mu.Lock()
	if s.waited.Load() {
		close(s.ch)
		s.ch = make(chan struct{})
		s.waited.Store(false)
	}
	s.mu.Unlock()
}

// PageSize is the most events a Read or Follow loop fetches at a time.
// Nothing is held between pages, so breaking out of a loop releases
// everything.
const PageSize = 256

// PageFunc reads, in seq order, at most max events that match q (AfterSeq
// and Limit aside) with after < Seq ≤ upTo. It returns them and through,
// the seq up to which the scan is complete: the Seq of the last event when
// the page is full, else min(upTo, the store's last seq when it read), and
// never less than after. It returns ctx.Err() when ctx is done and
// store.ErrClosed after Close. With an error it may also return the events
// it read before the failure; the loops yield them first.
type PageFunc func(ctx context.Context, q store.Query, after, upTo uint64, max int) (evs []store.Event, through uint64, err error)

// Read implements Store.Read on top of page: it reads up to the last seq
// at the start (lastSeq), a page at a time.
func Read(ctx context.Context, q store.Query, lastSeq func(context.Context) (uint64, error), page PageFunc) iter.Seq2[store.Event, error] {
	return func(yield func(store.Event, error) bool) {
		if err := q.Validate(); err != nil {
			yield(store.Event{}, err)
			return
		}
		end, err := lastSeq(ctx)
		if err != nil {
			yield(store.Event{}, err)
			return
		}
		after, left := q.AfterSeq, q.Limit
		for after < end {
			n := PageSize
			if left > 0 && left < n {
				n = left
			}
			evs, through, err := page(ctx, q, after, end, n)
			for _, e := range evs {
				if !yield(e, nil) {
					return
				}
			}
			if err != nil {
				yield(store.Event{}, err)
				return
			}
			if left > 0 {
				if left -= len(evs); left == 0 {
					return
				}
			}
			if len(evs) < n {
				return
			}
			after = through
		}
	}
}

// follow is the loop of a Hub's follower: q's events after q.AfterSeq,
// read with page, waiting on sig (which the store notifies after each
// commit and on Close) for more.
func follow(ctx context.Context, q store.Query, sig *Signal, page PageFunc) iter.Seq2[store.Event, error] {
	return func(yield func(store.Event, error) bool) {
		if err := q.Validate(); err != nil {
			yield(store.Event{}, err)
			return
		}
		after, left := q.AfterSeq, q.Limit
		for {
			wake := sig.Wait() // before reading: an append after the read still wakes us
			n := PageSize
			if left > 0 && left < n {
				n = left
			}
			evs, through, err := page(ctx, q, after, math.MaxUint64, n)
			for _, e := range evs {
				if !yield(e, nil) {
					return
				}
			}
			if err != nil {
				if ctx.Err() == nil {
					yield(store.Event{}, err)
				}
				return
			}
			if left > 0 {
				if left -= len(evs); left == 0 {
					return
				}
			}
			after = through
			if len(evs) == n {
				continue // more backlog
			}
			select {
			case <-wake:
			case <-ctx.Done():
				return
			}
		}
	}
}
