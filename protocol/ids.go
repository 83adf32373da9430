package protocol

import (
	"crypto/rand"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// Id prefixes of the envelope's ids (docs/protocol.md §1.1), and of the
// call id of a tool call refused before its tool.call was stored
// (§2.3.1, §11.3).
const (
	IDPrefixMessage = "msg_"
	IDPrefixRun     = "run_"
	IDPrefixTask    = "task_"
	IDPrefixThread  = "thr_"
	IDPrefixCall    = "call_"
)

// IDOptions configures an [IDs] source. Nil or zero fields take defaults.
type IDOptions struct {
	// Clock gives the time put in ids and in [IDs.Now]; time.Now when nil.
	Clock func() time.Time
	// Entropy gives the random part of ids; crypto/rand when nil. Pass a
	// seeded reader (math/rand/v2's ChaCha8, say) for reproducible ids: the
	// same Clock readings and the same Entropy give the same ids, made in
	// the same order. Should the reader fail, crypto/rand fills in, so
	// making an id never fails.
	Entropy io.Reader
}

// IDs makes prefixed ULIDs (msg_, run_, task_, thr_) and timestamps. An IDs
// is safe for concurrent use.
//
// Ids from one IDs are strictly increasing in the order they are made, also
// within one millisecond, so they sort by creation time. Within a
// millisecond each id adds a random step (1 to 2^32) to the random part of
// the one before (the monotonic mode of github.com/oklog/ulid/v2), so an id
// does not tell the next one.
//
// An id's time is the clock reading, but never earlier than the previous
// id's: should the clock step back, ids keep the latest millisecond seen
// (and ts, which is the clock reading, may then be earlier than the id's
// time) until the clock passes it again. In the rare case that a
// millisecond's random part would overflow, ids go on in the next
// millisecond.
type IDs struct {
	clock func() time.Time
	mu    sync.Mutex
	// entropy and last are guarded by mu: the monotonic entropy is not
	// safe for concurrent use, and last is the millisecond of the latest
	// id made.
	entropy *ulid.MonotonicEntropy
	last    uint64
	// rnd receives the random part of each id: the entropy's reader is an
	// interface, so a buffer handed to it escapes, and the callers' arrays
	// of ids would each cost an allocation.
	rnd [10]byte
}

// NewIDs returns an id source; opts may be nil.
func NewIDs(opts *IDOptions) *IDs {
	g := &IDs{clock: time.Now}
	var src io.Reader = rand.Reader
	if opts != nil {
		if opts.Clock != nil {
			g.clock = opts.Clock
		}
		if opts.Entropy != nil {
			src = orCryptoRand{opts.Entropy}
		}
	}
	// inc 0 is ulid's default bound on the step, math.MaxUint32.
	g.entropy = ulid.Monotonic(src, 0)
	return g
}

// orCryptoRand reads r, and crypto/rand when r fails.
type orCryptoRand struct{ r io.Reader }

func (o orCryptoRand) Read(p []byte) (int, error) {
	if _, err := io.ReadFull(o.r, p); err != nil {
		_, _ = rand.Read(p) // never fails (crypto/rand)
	}
	return len(p), nil
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
	g.next(id[:], g.clock())
	var buf [64]byte
	return string(appendID(buf[:0], prefix, id[0]))
}

// next fills ids with new ULIDs of time t (or later, see [IDs]), in order.
func (g *IDs) next(ids []ulid.ULID, t time.Time) {
	// A ULID holds the milliseconds from 1970 to the year 10889.
	ms := uint64(min(max(t.UnixMilli(), 0), int64(ulid.MaxTime())))
	g.mu.Lock()
	defer g.mu.Unlock()
	ms = max(ms, g.last)
	for i := range ids {
		for g.entropy.MonotonicRead(ms, g.rnd[:]) != nil {
			// ErrMonotonicOverflow, the one error left (the reader
			// does not fail): go on in the next millisecond, whose
			// random part starts afresh.
			ms++
		}
		_ = ids[i].SetTime(ms)
		copy(ids[i][6:], g.rnd[:])
	}
	g.last = ms
}

// appendID appends prefix and id's text to b.
func appendID(b []byte, prefix string, id ulid.ULID) []byte {
	b = append(b, prefix...)
	n := len(b)
	b = append(b, make([]byte, ulid.EncodedSize)...)
	_ = id.MarshalTextTo(b[n:])
	return b
}

// stamp returns a new "msg_" id and the timestamp of the clock reading it
// was made at. Both are cut from one string: one allocation, not two.
func (g *IDs) stamp() (id, ts string) {
	var u [1]ulid.ULID
	now := g.clock()
	g.next(u[:], now)
	var buf [64]byte
	b := appendID(buf[:0], IDPrefixMessage, u[0])
	n := len(b)
	s := string(appendTimestamp(b, now))
	return s[:n], s[n:]
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
	// The four ids in one step: a message id, then thread, run and task,
	// cut with the timestamp from one string (one allocation, not five).
	var ids [4]ulid.ULID
	now := g.clock()
	g.next(ids[:], now)
	var buf [160]byte
	var ends [4]int
	b := buf[:0]
	for i, p := range [4]string{IDPrefixMessage, IDPrefixThread, IDPrefixRun, IDPrefixTask} {
		b = appendID(b, p, ids[i])
		ends[i] = len(b)
	}
	s := string(appendTimestamp(b, now))
	x := new(messageWith)
	x.m = Message{
		V:        Version,
		ID:       s[:ends[0]],
		ThreadID: s[ends[0]:ends[1]],
		RunID:    s[ends[1]:ends[2]],
		TaskID:   s[ends[2]:ends[3]],
		TS:       s[ends[3]:],
		From:     Participant{AgentID: from},
		To:       []Participant{},
		Type:     t,
		Payload:  x.null(),
		Attempt:  1,
	}
	return &x.m
}

// messageWith is a new message allocated together with the backing arrays
// of its first recipient and its "null" payload: one allocation, not three.
// Appending to To or Payload moves them out (their capacity is exact).
type messageWith struct {
	m       Message
	to      [1]Participant
	payload [4]byte
}

func (x *messageWith) null() []byte {
	x.payload = [4]byte{'n', 'u', 'l', 'l'}
	return x.payload[:4:4]
}

// NewMessage is [IDs.NewMessage] on the default id source.
func NewMessage(t Type, from string) *Message { return defaultIDs.NewMessage(t, from) }

// Reply returns a new message of type t from agent from in the same thread,
// run and task as m, addressed to m's sender, with the same domain, trace
// and parent task. Use it for task.accept, task.progress, task.result and
// the other answers of §2.1.
func (g *IDs) Reply(m *Message, t Type, from string) *Message {
	id, ts := g.stamp()
	x := new(messageWith)
	x.to[0] = Participant{AgentID: m.From.AgentID}
	x.m = Message{
		V:            Version,
		ID:           id,
		TS:           ts,
		ThreadID:     m.ThreadID,
		RunID:        m.RunID,
		TaskID:       m.TaskID,
		ParentTaskID: m.ParentTaskID,
		From:         Participant{AgentID: from},
		To:           x.to[:1:1],
		Type:         t,
		Domain:       m.Domain,
		Payload:      x.null(),
		Attempt:      1,
	}
	r := &x.m
	if m.Trace != nil {
		tr := *m.Trace
		r.Trace = &tr
	}
	return r
}

// Reserved reports whether id — a run, thread or task id — is in the
// namespace of Clutch's own system records (docs/protocol.md §6.7): the
// part after its kind prefix ("run_", "run:", "thr_", "thread:", "task_",
// "task:") starts with "clutch_" or "clutch:", or it is one of the names
// system records had before that namespace (run_registry, thr_registry,
// task_registry, and run:rules:…, thread:rules:…, task:rules:…,
// run:webhook:…). No caller from outside the process may write under a
// reserved id, and surfaces list and stream them only to admins.
func Reserved(id string) bool {
	switch id {
	case "run_registry", "thr_registry", "task_registry":
		return true
	}
	for _, p := range [...]string{IDPrefixRun, IDPrefixThread, IDPrefixTask, PrefixRun, PrefixThread, PrefixTask} {
		if body, ok := strings.CutPrefix(id, p); ok {
			if strings.HasPrefix(body, "clutch_") || strings.HasPrefix(body, "clutch:") {
				return true
			}
			if p == PrefixRun || p == PrefixThread || p == PrefixTask {
				return strings.HasPrefix(body, "rules:") || (p == PrefixRun && strings.HasPrefix(body, "webhook:"))
			}
			return false
		}
	}
	return false
}
