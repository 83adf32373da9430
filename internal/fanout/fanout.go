package fanout

import (
	"context"
	"errors"
	"iter"
	"sync"
	"sync/atomic"

	"github.com/chromedp/cdproto/cdp/jsonv2"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// Defaults of Options.
const (
	DefaultEvents = 256
	DefaultBytes  = 1 << 20
)

// Options tune a Hub; nil means the defaults.
type Options struct {
	// Events is how many events a reader may have waiting before it falls
	// back to reading the store; DefaultEvents when 0.
	Events int
	// Bytes bounds the bytes of those events; DefaultBytes when 0.
	Bytes int64
}

// Hub is one follower of a store shared by many readers. Its zero value
// is not usable; make one with New. It is safe for concurrent use and
// needs no Close: its follower stops when the last reader goes.
type Hub struct {
	st     store.Store
	events int
	bytes  int64

	mu   sync.Mutex
	subs []*sub
	run  *run   // the follower; nil while there is no reader
	seq  uint64 // the last seq the follower handed out (while run != nil)
}

// run is one life of the follower.
type run struct {
	cancel context.CancelFunc
	done   chan struct{}
}

// sub is a reader joined to the hub.
type sub struct {
	q      store.Query
	ch     chan store.Event
	queued atomic.Int64 // bytes of the events in ch
	i      int          // index in Hub.subs; -1 once dropped
	err    error        // why ch was closed: errLagged or the follower's error
}

// errLagged closes the channel of a reader whose buffer was full.
var errLagged = errors.New("fanout: reader fell behind")

// New returns a hub following st.
func New(st store.Store, opts *Options) *Hub {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Events <= 0 {
		o.Events = DefaultEvents
	}
	if o.Bytes <= 0 {
		o.Bytes = DefaultBytes
	}
	return &Hub{st: st, events: o.Events, bytes: o.Bytes}
}

// Follow implements store.Store.Follow through the hub's one follower.
func (h *Hub) Follow(ctx context.Context, q store.Query) iter.Seq2[store.Event, error] {
	return func(yield func(store.Event, error) bool) {
		if err := q.Validate(); err != nil {
			yield(store.Event{}, err)
			return
		}
		fail := func(err error) {
			if ctx.Err() == nil {
				yield(store.Event{}, err)
			}
		}
		pos, left := q.AfterSeq, q.Limit
		// emit yields ev and says whether to go on.
		emit := func(ev store.Event) bool {
			pos = ev.Seq
			if !yield(ev, nil) {
				return false
			}
			if left > 0 {
				left--
				return left > 0
			}
			return true
		}
		for {
			s, joined, err := h.join(ctx, q)
			if err != nil {
				fail(err)
				return
			}
			// The hub hands s every event after joined; read the ones
			// before it from the store.
			if joined > pos {
				rq := q
				rq.AfterSeq, rq.Limit = pos, 0
				for ev, err := range h.st.Read(ctx, rq) {
					if err != nil {
						h.leave(s)
						fail(err)
						return
					}
					if ev.Seq > joined {
						break
					}
					if !emit(ev) {
						h.leave(s)
						return
					}
				}
				pos = joined
			}
			for open := true; open; {
				select {
				case ev, ok := <-s.ch:
					if !ok {
						open = false
						break
					}
					s.queued.Add(-int64(len(ev.Raw)))
					if ev.Seq <= pos {
						continue // joined before the reader's start
					}
					if !emit(ev) {
						h.leave(s)
						return
					}
				case <-ctx.Done():
					h.leave(s)
					return
				}
			}
			if s.err != errLagged {
				fail(s.err)
				return
			}
			// Dropped for being behind: every event up to pos was
			// yielded; join again and read the rest from the store.
		}
	}
}

// join adds a reader of q and returns it with the seq after which the hub
// hands it events, starting the follower if none runs.
func (h *Hub) join(ctx context.Context, q store.Query) (*sub, uint64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.run == nil {
		head, err := h.st.LastSeq(ctx)
		if err != nil {
			return nil, 0, err
		}
		rctx, cancel := context.WithCancel(context.Background())
		r := &run{cancel: cancel, done: make(chan struct{})}
		h.run, h.seq = r, head
		go h.follow(rctx, r, head)
	}
	s := &sub{q: q, ch: make(chan store.Event, h.events), i: len(h.subs)}
	h.subs = append(h.subs, s)
	return s, h.seq, nil
}

// leave removes s; the last reader to go stops the follower and waits
// for it.
func (h *Hub) leave(s *sub) {
	h.mu.Lock()
	if s.i >= 0 {
		h.drop(s)
	}
	r := h.run
	if len(h.subs) > 0 || r == nil {
		h.mu.Unlock()
		return
	}
	h.run = nil
	h.mu.Unlock()
	r.cancel()
	<-r.done
}

// drop removes s from subs; mu is held.
func (h *Hub) drop(s *sub) {
	last := len(h.subs) - 1
	h.subs[s.i] = h.subs[last]
	h.subs[s.i].i = s.i
	h.subs[last] = nil
	h.subs = h.subs[:last]
	s.i = -1
}

// follow is the follower: it reads every new event once and hands it to
// the readers it matches, never waiting for one.
func (h *Hub) follow(ctx context.Context, r *run, after uint64) {
	defer close(r.done)
	for ev, err := range h.st.Follow(ctx, store.Query{AfterSeq: after}) {
		if err != nil {
			h.fail(r, err)
			return
		}
		if !h.hand(r, ev) {
			return
		}
	}
	if ctx.Err() == nil {
		h.fail(r, store.ErrClosed) // Follow does not end by itself
	}
}

// hand gives ev to the readers it matches; false when r is no longer the
// hub's follower.
func (h *Hub) hand(r *run, ev store.Event) bool {
	f := fieldsOf(ev.Raw)
	n := int64(len(ev.Raw))
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.run != r {
		return false
	}
	h.seq = ev.Seq
	for i := 0; i < len(h.subs); {
		s := h.subs[i]
		if !s.q.Match(f.run, f.thread, f.task, f.agent, f.typ) {
			i++
			continue
		}
		if s.queued.Add(n) <= h.bytes {
			select {
			case s.ch <- ev:
				i++
				continue
			default:
			}
		}
		// Full: the reader goes back to the store (and s.subs[i] is now
		// another reader).
		s.err = errLagged
		h.drop(s)
		close(s.ch)
	}
	return true
}

// fail ends every reader of r with err.
func (h *Hub) fail(r *run, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.run != r {
		return
	}
	for _, s := range h.subs {
		s.err, s.i = err, -1
		close(s.ch)
	}
	clear(h.subs)
	h.subs, h.run = h.subs[:0], nil
	r.cancel()
}

// fields are what a query matches of an event (store.Query.Match).
type fields struct {
	run, thread, task, agent string
	typ                      protocol.Type
}

// head is the members of a stored message that fields reads; the
// decoder skips the others.
type head struct {
	RunID    string        `json:"run_id"`
	ThreadID string        `json:"thread_id"`
	TaskID   string        `json:"task_id"`
	Type     protocol.Type `json:"type"`
	From     struct {
		AgentID string `json:"agent_id"`
	} `json:"from"`
}

// fieldsOf reads the matched fields of a stored message without decoding
// it whole (the store validated the bytes). Should that fail all the
// same, no reader is given the event by a guess: its fields are empty, as
// the store's own index would have them for bytes it cannot read.
func fieldsOf(raw []byte) fields {
	var h head
	if jsonv2.Unmarshal(raw, &h) != nil {
		return fields{}
	}
	return fields{h.RunID, h.ThreadID, h.TaskID, h.From.AgentID, h.Type}
}
