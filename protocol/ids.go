package protocol

import (
	"crypto/rand"
	"io"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// Id prefixes of the seed's examples (§1.1).
const (
	IDPrefixMessage = "msg_"
	IDPrefixRun     = "run_"
	IDPrefixTask    = "task_"
	IDPrefixThread  = "thr_"
)

// IDOptions configures an [IDs] source. Nil or zero fields take defaults.
type IDOptions struct {
	// Clock gives the time put in ids and in [IDs.Now]; time.Now when nil.
	Clock func() time.Time
	// Entropy gives the random part of ids; crypto/rand when nil. Pass a
	// seeded reader (math/rand/v2's ChaCha8, say) for reproducible ids.
	Entropy io.Reader
}

// IDs makes prefixed ULIDs (msg_, run_, task_, thr_) and timestamps. Ids from
// one IDs sort by creation time, also within one millisecond (monotonic
// entropy). An IDs is safe for concurrent use. Tests make a deterministic one
// with a fixed clock and seeded entropy.
type IDs struct {
	mu      sync.Mutex
	clock   func() time.Time
	entropy *ulid.MonotonicEntropy
	scratch [10]byte // entropy bytes; a field so that no id escapes to the heap
}

// NewIDs returns an id source; opts may be nil.
func NewIDs(opts *IDOptions) *IDs {
	g := &IDs{clock: time.Now}
	var r io.Reader = rand.Reader
	if opts != nil {
		if opts.Clock != nil {
			g.clock = opts.Clock
		}
		if opts.Entropy != nil {
			r = opts.Entropy
		}
	}
	g.entropy = ulid.Monotonic(r, 0)
	return g
}

var defaultIDs = NewIDs(nil)

// DefaultIDs is the process-wide id source used by [NewID] and [NewMessage].
func DefaultIDs() *IDs { return defaultIDs }

// NewID returns prefix + a new ULID from the default source.
func NewID(prefix string) string { return defaultIDs.New(prefix) }

// Now returns the source's clock reading.
func (g *IDs) Now() time.Time { return g.clock() }

// New returns prefix followed by a new ULID, e.g. "msg_01J9ZK...".
func (g *IDs) New(prefix string) string {
	var id [1]ulid.ULID
	g.mu.Lock()
	g.next(id[:], g.clock())
	g.mu.Unlock()
	return format(prefix, id[0])
}

// next fills ids with new ULIDs of time t, in order; g.mu is held.
func (g *IDs) next(ids []ulid.ULID, t time.Time) {
	ms := ulid.Timestamp(t)
	for i := range ids {
		// ulid.New would do the same, but its buffer escapes to the heap.
		err := ids[i].SetTime(ms)
		if err == nil {
			err = g.entropy.MonotonicRead(ms, g.scratch[:])
			copy(ids[i][6:], g.scratch[:])
		}
		if err != nil {
			// The monotonic counter overflowed within one millisecond or
			// the entropy source failed: fall back to fresh entropy for
			// this id rather than fail the caller.
			ids[i] = ulid.MustNew(ms, rand.Reader)
		}
	}
}

// format returns prefix followed by id's text.
func format(prefix string, id ulid.ULID) string {
	var buf [64]byte
	n := copy(buf[:], prefix)
	if n+ulid.EncodedSize > len(buf) {
		return prefix + id.String()
	}
	_ = id.MarshalTextTo(buf[n : n+ulid.EncodedSize])
	return string(buf[:n+ulid.EncodedSize])
}

// stamp returns a new "msg_" id and the timestamp of the clock reading it
// was made at, under one lock.
func (g *IDs) stamp() (id, ts string) {
	var u [1]ulid.ULID
	g.mu.Lock()
	now := g.clock()
	g.next(u[:], now)
	g.mu.Unlock()
	return format(IDPrefixMessage, u[0]), Timestamp(now)
}

// MessageID returns a new "msg_" id.
func (g *IDs) MessageID() string { return g.New(IDPrefixMessage) }

// RunID returns a new "run_" id.
func (g *IDs) RunID() string { return g.New(IDPrefixRun) }

// TaskID returns a new "task_" id.
func (g *IDs) TaskID() string { return g.New(IDPrefixTask) }

// ThreadID returns a new "thr_" id.
func (g *IDs) ThreadID() string { return g.New(IDPrefixThread) }

// Timestamp formats t as the envelope's ts: RFC 3339, UTC, milliseconds
// ("2026-03-14T09:26:53.589Z").
func Timestamp(t time.Time) string {
	var buf [32]byte
	return string(appendTimestamp(buf[:0], t))
}

// appendTimestamp appends t as Timestamp formats it. It writes the digits
// itself: time.Time.AppendFormat parses its layout on every call, which was
// a visible share of the cost of a message.
func appendTimestamp(b []byte, t time.Time) []byte {
	t = t.UTC()
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
	}
	hour, min, sec := t.Clock()
	ms := t.Nanosecond() / 1e6
	b = appendDigits(b, year, 4)
	b = append(b, '-')
	b = appendDigits(b, int(month), 2)
	b = append(b, '-')
	b = appendDigits(b, day, 2)
	b = append(b, 'T')
	b = appendDigits(b, hour, 2)
	b = append(b, ':')
	b = appendDigits(b, min, 2)
	b = append(b, ':')
	b = appendDigits(b, sec, 2)
	b = append(b, '.')
	b = appendDigits(b, ms, 3)
	return append(b, 'Z')
}

// appendDigits appends v (≥ 0) with exactly n digits.
func appendDigits(b []byte, v, n int) []byte {
	var d [4]byte
	for i := n - 1; i >= 0; i-- {
		d[i] = byte('0' + v%10)
		v /= 10
	}
	return append(b, d[:n]...)
}

// NewMessage returns a message of type t from agent from, with v, id, ts and
// attempt set from g, and a new run, thread and task when the caller does
// not set them afterwards. The payload is the JSON null until set.
func (g *IDs) NewMessage(t Type, from string) *Message {
	// The four ids under one lock: a message id, then thread, run and task.
	var ids [4]ulid.ULID
	g.mu.Lock()
	now := g.clock()
	g.next(ids[:], now)
	g.mu.Unlock()
	return &Message{
		V:        Version,
		ID:       format(IDPrefixMessage, ids[0]),
		TS:       Timestamp(now),
		ThreadID: format(IDPrefixThread, ids[1]),
		RunID:    format(IDPrefixRun, ids[2]),
		TaskID:   format(IDPrefixTask, ids[3]),
		From:     Participant{AgentID: from},
		To:       []Participant{},
		Type:     t,
		Payload:  []byte("null"),
		Attempt:  1,
	}
}

// NewMessage is [IDs.NewMessage] on the default id source.
func NewMessage(t Type, from string) *Message { return defaultIDs.NewMessage(t, from) }

// Reply returns a new message of type t from agent from in the same thread,
// run and task as m, addressed to m's sender, with the same domain, trace
// and parent task. Use it for task.accept, task.progress, task.result and
// the other answers of §2.1.
func (g *IDs) Reply(m *Message, t Type, from string) *Message {
	id, ts := g.stamp()
	r := &Message{
		V:            Version,
		ID:           id,
		TS:           ts,
		ThreadID:     m.ThreadID,
		RunID:        m.RunID,
		TaskID:       m.TaskID,
		ParentTaskID: m.ParentTaskID,
		From:         Participant{AgentID: from},
		To:           []Participant{{AgentID: m.From.AgentID}},
		Type:         t,
		Domain:       m.Domain,
		Payload:      []byte("null"),
		Attempt:      1,
	}
	if m.Trace != nil {
		tr := *m.Trace
		r.Trace = &tr
	}
	return r
}
