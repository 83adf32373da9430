package protocol

import (
	"crypto/rand"
	"encoding/binary"
	"io"
	mrand "math/rand/v2"
	"sync"
	"sync/atomic"
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
// one IDs sort by creation time, also within one millisecond (the ULID
// specification's monotonic mode): the first id of a millisecond takes 80
// random bits, each next one of that millisecond adds a random step of 1 to
// 2^32 to them, so that an id does not tell the next one. With the default
// entropy an IDs takes no lock within a millisecond (steps come from the
// runtime's ChaCha8 source); with a caller's Entropy every id is made under
// a lock and steps are read from it, so that tests get the same ids from
// the same clock and seed. An IDs is safe for concurrent use.
type IDs struct {
	clock   func() time.Time
	mu      sync.Mutex // serialises entropy reads (every id, with a caller's Entropy)
	entropy io.Reader
	seeded  bool                    // the caller gave Entropy
	cur     atomic.Pointer[idEpoch] // the latest millisecond that has ids
	// prev is an earlier millisecond's: the clock went back, or a
	// goroutine read the clock before cur began. Its ids still sort among
	// themselves, and cur goes on undisturbed.
	prev atomic.Pointer[idEpoch]
}

// idEpoch is one millisecond's ids: every id of it shares ms and hi, and
// takes the next lo. lo starts below 2^63 and steps are at most 2^32, so
// 2^31 ids of one millisecond fit before it could wrap.
type idEpoch struct {
	ms uint64
	hi uint16        // the top 16 of the 80 random bits
	lo atomic.Uint64 // the low 64 random bits of the last id handed out
}

// NewIDs returns an id source; opts may be nil.
func NewIDs(opts *IDOptions) *IDs {
	g := &IDs{clock: time.Now, entropy: rand.Reader}
	if opts != nil {
		if opts.Clock != nil {
			g.clock = opts.Clock
		}
		if opts.Entropy != nil {
			g.entropy, g.seeded = opts.Entropy, true
		}
	}
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
	g.next(id[:], g.clock())
	var buf [64]byte
	return string(appendID(buf[:0], prefix, id[0]))
}

// next fills ids with new ULIDs of time t, in order.
func (g *IDs) next(ids []ulid.ULID, t time.Time) {
	ms := ulid.Timestamp(t)
	if g.seeded {
		g.mu.Lock()
		defer g.mu.Unlock()
	}
	for i := range ids {
		e := g.epoch(ms)
		lo, ok := g.step(e)
		if !ok {
			ids[i] = g.fresh(ms) // 2^31 ids in one millisecond: never, but not a duplicate either
			continue
		}
		id := &ids[i]
		_ = id.SetTime(ms) // ms came from ulid.Timestamp: in range
		binary.BigEndian.PutUint16(id[6:8], e.hi)
		binary.BigEndian.PutUint64(id[8:], lo)
	}
}

// epoch returns the epoch of millisecond ms: cur or prev when one is of
// ms, else a new one with fresh entropy, which becomes cur when ms is
// later than cur's and prev otherwise. g.mu is held when g.seeded.
func (g *IDs) epoch(ms uint64) *idEpoch {
	if e := g.cur.Load(); e != nil && e.ms == ms {
		return e
	}
	if e := g.prev.Load(); e != nil && e.ms == ms {
		return e
	}
	if !g.seeded {
		g.mu.Lock()
		defer g.mu.Unlock()
	}
	cur := g.cur.Load()
	if cur != nil && cur.ms == ms {
		return cur // another goroutine started it
	}
	if e := g.prev.Load(); e != nil && e.ms == ms {
		return e
	}
	var b [10]byte
	g.read(b[:])
	e := &idEpoch{ms: ms, hi: binary.BigEndian.Uint16(b[:2])}
	e.lo.Store(binary.BigEndian.Uint64(b[2:]) >> 1)
	if cur == nil || ms > cur.ms {
		g.cur.Store(e)
	} else {
		g.prev.Store(e)
	}
	return e
}

// step advances e by a random step and returns the new low bits; false if
// they would wrap. g.mu is held when g.seeded.
func (g *IDs) step(e *idEpoch) (uint64, bool) {
	var inc uint64
	if g.seeded {
		var b [4]byte
		g.read(b[:])
		inc = 1 + uint64(binary.BigEndian.Uint32(b[:]))
	} else {
		inc = 1 + uint64(mrand.Uint32())
	}
	for {
		old := e.lo.Load()
		next := old + inc
		if next < old {
			return 0, false
		}
		if e.lo.CompareAndSwap(old, next) {
			return next, true
		}
	}
}

// read fills b from the entropy source; g.mu is held. A failing source of
// the caller's falls back to crypto/rand rather than fail the caller.
func (g *IDs) read(b []byte) {
	if _, err := io.ReadFull(g.entropy, b); err != nil {
		_, _ = rand.Read(b)
	}
}

// fresh returns an id of millisecond ms with 80 new random bits. g.mu is
// held when g.seeded.
func (g *IDs) fresh(ms uint64) ulid.ULID {
	var id ulid.ULID
	_ = id.SetTime(ms)
	if !g.seeded {
		g.mu.Lock()
		defer g.mu.Unlock()
	}
	g.read(id[6:])
	return id
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
