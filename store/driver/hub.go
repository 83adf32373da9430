package driver

import (
	"context"
	"errors"
	"iter"
	"sync"
	"sync/atomic"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// The bounds of a reader's buffer in a Hub: how many events, and how many
// bytes of them, may wait for it before it falls back to reading the
// store. Variables only so that the package's tests can run a store whose
// readers always fall behind (export_test.go).
var (
	hubEvents       = 256
	hubBytes  int64 = 1 << 20
)

// Hub is the one follower of a store, shared by every Follow of it
// (docs/protocol.md §8.1): while it has readers it runs one loop over the
// whole log and hands each new event to the readers whose query it
// matches, so an append wakes one goroutine however many streams are
// open. A store makes one at Open and returns [Hub.Follow] from its
// Follow. It is safe for concurrent use and needs no Close: its follower
// stops when the last reader goes, and ends every reader with
// store.ErrClosed when the store's page function returns it.
//
// A reader has a bounded buffer. The hub never waits for one: a reader
// whose buffer is full is dropped, takes what its buffer holds, reads the
// store from the last seq it yielded and joins again, so it loses no event
// and repeats none, and costs the writer and the other readers nothing.
type Hub struct {
	sig     *Signal
	page    PageFunc
	lastSeq func(context.Context) (uint64, error)
	events  int   // a reader's buffer: events
	bytes   int64 // and their bytes

	mu sync.Mutex
	// subs holds the readers by the index that drives their query and its
	// value (IndexOf; NoIndex under ""), so an event is offered to the
	// readers of its task, thread, run and agent, not to every reader.
	subs [AgentIndex + 1]map[string][]*sub
	n    int    // readers in subs
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
	ix     Index
	key    string
	ch     chan store.Event
	queued atomic.Int64 // bytes of the events in ch
	i      int          // index in its subs list; -1 once dropped
	err    error        // why ch was closed: errLagged or the follower's error
}

// errLagged closes the channel of a reader whose buffer was full.
var errLagged = errors.New("driver: reader fell behind")

// NewHub returns the hub of a store: sig is the Signal the store notifies
// after each commit and on Close, page its PageFunc (the hub's follower
// reads the whole log with it, and a reader the events it missed), and
// lastSeq its LastSeq (where the follower starts).
func NewHub(sig *Signal, page PageFunc, lastSeq func(context.Context) (uint64, error)) *Hub {
	h := &Hub{sig: sig, page: page, lastSeq: lastSeq, events: hubEvents, bytes: hubBytes}
	for ix := range h.subs {
		h.subs[ix] = map[string][]*sub{}
	}
	return h
}

// Follow implements store.Store.Follow through the hub's one follower:
// the backlog after q.AfterSeq, then every new matching event, each
// exactly once and in seq order, ending without an error when ctx ends or
// after q.Limit events, and with the page function's error (store.ErrClosed
// after Close) otherwise.
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
			// up to it from the store.
			if joined > pos {
				rq := q
				rq.AfterSeq, rq.Limit = pos, 0
				upTo := func(context.Context) (uint64, error) { return joined, nil }
				for ev, err := range Read(ctx, rq, upTo, h.page) {
					if err != nil {
						h.leave(s)
						fail(err)
						return
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
						continue // before the reader's start
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
	if h.run == nil {
		// Where the follower starts is read without the lock (it may be
		// a round trip); a head read earlier than the start is as good.
		h.mu.Unlock()
		head, err := h.lastSeq(ctx)
		if err != nil {
			return nil, 0, err
		}
		h.mu.Lock()
		if h.run == nil {
			rctx, cancel := context.WithCancel(context.Background())
			r := &run{cancel: cancel, done: make(chan struct{})}
			h.run, h.seq = r, head
			go h.follow(rctx, r, head)
		}
	}
	defer h.mu.Unlock()
	ix, key := IndexOf(q)
	list := h.subs[ix][key]
	s := &sub{q: q, ix: ix, key: key, ch: make(chan store.Event, h.events), i: len(list)}
	h.subs[ix][key] = append(list, s)
	h.n++
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
	if h.n > 0 || r == nil {
		h.mu.Unlock()
		return
	}
	h.run = nil
	h.mu.Unlock()
	r.cancel()
	<-r.done
}

// drop removes s from its list; mu is held.
func (h *Hub) drop(s *sub) {
	list := h.subs[s.ix][s.key]
	last := len(list) - 1
	list[s.i] = list[last]
	list[s.i].i = s.i
	list[last] = nil
	if last == 0 {
		delete(h.subs[s.ix], s.key)
	} else {
		h.subs[s.ix][s.key] = list[:last]
	}
	s.i = -1
	h.n--
}

// follow is the follower: it reads every new event once and hands it to
// the readers it matches, never waiting for one.
func (h *Hub) follow(ctx context.Context, r *run, after uint64) {
	defer close(r.done)
	for ev, err := range follow(ctx, store.Query{AfterSeq: after}, h.sig, h.page) {
		if err != nil {
			h.fail(r, err)
			return
		}
		if !h.hand(r, ev) {
			return
		}
	}
	if ctx.Err() == nil {
		h.fail(r, store.ErrClosed) // the loop does not end by itself
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
	h.offer(h.subs[NoIndex][""], f, ev, n)
	for ix, key := range [...]string{TaskIndex: f.task, ThreadIndex: f.thread, RunIndex: f.run, AgentIndex: f.agent} {
		if ix != int(NoIndex) && key != "" {
			h.offer(h.subs[ix][key], f, ev, n)
		}
	}
	return true
}

// offer gives ev to the readers of list that it matches; a reader whose
// buffer is full is dropped (and list[i] is then another reader). mu is
// held.
func (h *Hub) offer(list []*sub, f fields, ev store.Event, n int64) {
	for i := 0; i < len(list); {
		s := list[i]
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
		s.err = errLagged
		h.drop(s)
		close(s.ch)
		list = list[:len(list)-1]
	}
}

// fail ends every reader of r with err.
func (h *Hub) fail(r *run, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.run != r {
		return
	}
	for ix := range h.subs {
		for _, list := range h.subs[ix] {
			for _, s := range list {
				s.err, s.i = err, -1
				close(s.ch)
			}
		}
		clear(h.subs[ix])
	}
	h.n, h.run = 0, nil
	r.cancel()
}

// fields are what a query matches of an event (store.Query.Match).
type fields struct {
	run, thread, task, agent string
	typ                      protocol.Type
}

// head is the members of a stored message that fieldsOf reads; the
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
