package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/internal/httpjson"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// A live stream (SSE or WebSocket) is two goroutines joined by a bounded
// buffer: the feeder reads the store — the backlog after the resume seq,
// then every new matching event as it is appended, through the store's
// one follower (store.Follow, docs/protocol.md §8.1: an append wakes one
// goroutine, not one per stream) — and puts each event in the buffer; the
// request's own goroutine takes events out and writes them to the client.
// The feeder reads at the client's pace, so a client that is behind costs
// no memory beyond its buffer and never holds up another client or an
// append. A client that takes nothing while its buffer is full for
// Options.SlowTimeout is cut off as a slow consumer, with the reason.
//
// Resume: the feeder starts after the resume seq and each event goes out
// once, in seq order (store.Follow's guarantee), so a client that resumes
// from the id of the last event it got sees no gap and no duplicate.

// sink is the client side of a stream: SSE or WebSocket.
type sink interface {
	// events writes a batch of events and flushes them.
	events(evs []store.Event) error
	// ping writes a heartbeat.
	ping() error
	// closed tells the client why the stream ends (a slow consumer, a
	// store failure) before the connection is closed.
	closed(err error)
}

// testHookCut, when set by a test, is called when a stream cuts a slow
// consumer off.
var testHookCut func()

// stream is one live stream.
type stream struct {
	g       *Gateway
	q       store.Query
	filter  func(ctx context.Context, ev store.Event) bool // per-event visibility; nil: all
	buf     chan store.Event
	queued  atomic.Int64 // bytes of the events in buf
	err     error        // why the feeder stopped; read after buf is closed
	wg      sync.WaitGroup
	scratch []store.Event
}

// streamOf parses the stream query of r (lastEventID: the SSE header, ""
// for a WebSocket) and opens that stream for r's caller.
func (g *Gateway) streamOf(r *http.Request, lastEventID string) (*stream, error) {
	q, err := parseStreamQuery(r.URL.Query(), lastEventID)
	if err != nil {
		return nil, err
	}
	return g.openStream(r.Context(), caller(r.Context()), q)
}

// openStream checks the caller's right to the stream q asks for and
// returns it, not yet started. A caller without read:all streams a run,
// thread or task it may see (404 otherwise), or, without one of those
// filters, only the events of the runs it may see.
func (g *Gateway) openStream(ctx context.Context, c *auth.Caller, q streamQuery) (*stream, error) {
	if !c.MayRead() {
		return nil, auth.ErrForbidden
	}
	if q.Now {
		n, err := g.st.LastSeq(ctx)
		if err != nil {
			return nil, err
		}
		q.After = n
	}
	s := &stream{g: g, q: store.Query{
		RunID: q.Run, ThreadID: q.Thread, TaskID: q.Task, AgentID: q.Agent, TypePrefix: q.Type, AfterSeq: q.After,
	}}
	switch {
	case c.Has(auth.ScopeAdmin):
	case c.Has(auth.ScopeReadAll):
		// Everybody's runs but the reserved system runs (docs/protocol.md
		// §6.7).
		for _, id := range []string{q.Run, q.Thread, q.Task} {
			if protocol.Reserved(id) {
				return nil, coded.Wrap(ErrNotFound, "no such "+clip(id), nil)
			}
		}
		s.filter = func(_ context.Context, ev store.Event) bool {
			f := scanEnvelope(ev.Raw)
			return !protocol.Reserved(f.run)
		}
	default:
		var err error
		switch {
		case q.Task != "":
			err = g.checkVisible(ctx, c, auth.KindTask, q.Task)
		case q.Thread != "":
			err = g.checkVisible(ctx, c, auth.KindThread, q.Thread)
		case q.Run != "":
			err = g.checkVisible(ctx, c, auth.KindRun, q.Run)
		default:
			s.filter = g.runFilter(c)
		}
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

// runFilter passes the events of the runs c may see, remembering the
// answer for up to maxOwners runs.
func (g *Gateway) runFilter(c *auth.Caller) func(context.Context, store.Event) bool {
	const maxOwners = 4096
	seen := map[string]bool{}
	return func(ctx context.Context, ev store.Event) bool {
		f := scanEnvelope(ev.Raw)
		if f.run == "" {
			return false
		}
		ok, known := seen[f.run]
		if !known {
			vis, err := g.visible(ctx, c, auth.KindRun, f.run)
			if err != nil {
				return false
			}
			if len(seen) >= maxOwners {
				clear(seen)
			}
			seen[f.run], ok = vis, vis
		}
		return ok
	}
}

// serve runs the stream to the sink until the client goes, ctx ends, or
// the stream is cut; it returns once the feeder has stopped.
func (s *stream) serve(ctx context.Context, out sink) {
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		s.wg.Wait()
	}()
	o := &s.g.opts
	s.buf = make(chan store.Event, o.StreamBuffer)
	s.wg.Add(1)
	go s.feed(ctx)
	var tick <-chan time.Time
	if o.Heartbeat > 0 {
		t := time.NewTicker(o.Heartbeat)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case ev, ok := <-s.buf:
			if !ok {
				if s.err != nil && ctx.Err() == nil {
					out.closed(s.err)
				}
				return
			}
			batch := append(s.scratch[:0], ev)
		more:
			for len(batch) < 256 {
				select {
				case ev, ok := <-s.buf:
					if !ok {
						break more
					}
					batch = append(batch, ev)
				default:
					break more
				}
			}
			err := out.events(batch)
			var n int64
			for _, ev := range batch {
				n += int64(len(ev.Raw))
			}
			s.queued.Add(-n)
			clear(batch) // let the events' bytes go
			s.scratch = batch[:0]
			if err != nil {
				return
			}
		case <-tick:
			if out.ping() != nil {
				return
			}
		case <-ctx.Done():
			return
		}
	}
}

// feed puts the matching events in the buffer until ctx ends, the store
// fails or the client is too slow; it closes the buffer.
func (s *stream) feed(ctx context.Context) {
	defer s.wg.Done()
	defer close(s.buf)
	var timer *time.Timer
	for ev, err := range s.g.st.Follow(ctx, s.q) {
		if err != nil {
			s.err = err
			return
		}
		if s.filter != nil && !s.filter(ctx, ev) {
			continue
		}
		if q := s.queued.Add(int64(len(ev.Raw))); q > s.g.opts.StreamBufferBytes {
			s.err = coded.Wrap(ErrSlowConsumer, "slow consumer: the client left "+strconv.FormatInt(q, 10)+" bytes of events waiting, over the limit of "+strconv.FormatInt(s.g.opts.StreamBufferBytes, 10)+"; resume after the last seq received", nil)
			if testHookCut != nil {
				testHookCut()
			}
			return
		}
		select {
		case s.buf <- ev:
			continue
		default:
		}
		if timer == nil {
			timer = time.NewTimer(s.g.opts.SlowTimeout)
			defer timer.Stop()
		} else {
			timer.Reset(s.g.opts.SlowTimeout)
		}
		select {
		case s.buf <- ev:
			timer.Stop()
		case <-timer.C:
			s.err = coded.Wrap(ErrSlowConsumer, "slow consumer: the client took no event for "+s.g.opts.SlowTimeout.String()+" with "+strconv.Itoa(cap(s.buf))+" waiting; resume after the last seq received", nil)
			if testHookCut != nil {
				testHookCut()
			}
			return
		case <-ctx.Done():
			return
		}
	}
}

// envelope is what a stream reads of a stored message without decoding
// it: its type and run.
type envelope struct{ typ, run string }

var scanners = sync.Pool{New: func() any { return new(jsontext.Decoder) }}

// scanEnvelope reads the top-level "type" and "run_id" of a stored
// message. The store holds valid envelopes; anything else gives what was
// found before it.
func scanEnvelope(raw []byte) envelope {
	var e envelope
	d := scanners.Get().(*jsontext.Decoder)
	defer scanners.Put(d)
	// The store validated the bytes: no need to check names for
	// duplicates again.
	d.Reset(bytes.NewReader(raw), jsontext.AllowDuplicateNames(true))
	defer d.Reset(bytes.NewReader(nil))
	if tok, err := d.ReadToken(); err != nil || tok.Kind() != '{' {
		return e
	}
	for d.PeekKind() == '"' {
		raw, err := d.ReadValue() // the quoted name, valid until the next read
		if err != nil {
			return e
		}
		// A name spelt with escapes is not recognised: the stored
		// envelopes this package writes and decodes do not have them, and
		// missing it costs only the event: line.
		var name string
		switch string(raw) {
		case `"type"`:
			name = "type"
		case `"run_id"`:
			name = "run_id"
		}
		switch name {
		case "type", "run_id":
			v, err := d.ReadToken()
			if err != nil {
				return e
			}
			if name == "type" {
				e.typ = v.String()
			} else {
				e.run = v.String()
			}
			if e.typ != "" && e.run != "" {
				return e
			}
		default:
			if d.SkipValue() != nil {
				return e
			}
		}
	}
	return e
}

// appendData appends an event's JSON for a stream — the same object as
// the events endpoint's — on one line: a message stored with line breaks
// between its tokens is compacted (whitespace only; SSE data cannot hold
// them as they are).
func appendData(b []byte, ev store.Event) []byte {
	if bytes.IndexByte(ev.Raw, '\n') >= 0 || bytes.IndexByte(ev.Raw, '\r') >= 0 {
		var c bytes.Buffer
		if json.Compact(&c, ev.Raw) == nil {
			ev.Raw = c.Bytes()
		}
	}
	return appendEvent(b, ev)
}

// ---- SSE

type sseSink struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     []byte
}

func (s *sseSink) flush() error {
	_ = s.rc.SetWriteDeadline(time.Now().Add(s.timeout))
	if _, err := s.w.Write(s.buf); err != nil {
		return err
	}
	s.buf = s.buf[:0]
	return s.rc.Flush()
}

func (s *sseSink) events(evs []store.Event) error {
	for _, ev := range evs {
		s.buf = append(s.buf, "id: "...)
		s.buf = strconv.AppendUint(s.buf, ev.Seq, 10)
		if t := scanEnvelope(ev.Raw).typ; t != "" && validEventName(t) {
			s.buf = append(s.buf, "\nevent: "...)
			s.buf = append(s.buf, t...)
		}
		s.buf = append(s.buf, "\ndata: "...)
		s.buf = appendData(s.buf, ev)
		s.buf = append(s.buf, "\n\n"...)
	}
	return s.flush()
}

func validEventName(t string) bool {
	for i := 0; i < len(t); i++ {
		if t[i] < 0x21 || t[i] > 0x7e {
			return false
		}
	}
	return true
}

func (s *sseSink) ping() error {
	s.buf = append(s.buf, ": ping\n\n"...)
	return s.flush()
}

// closedEvent is the data of the "clutch.closed" event (SSE) and the
// reason of the close frame (WebSocket).
type closedEvent struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

func closedOf(err error) closedEvent {
	var wr *coded.Wrapped
	if errors.As(err, &wr) && errors.Is(err, ErrSlowConsumer) {
		return closedEvent{Code: "CAPACITY", Message: wr.Detail, Retryable: true}
	}
	if errors.Is(err, store.ErrClosed) {
		return closedEvent{Code: "INTERNAL", Message: "the store was closed", Retryable: true}
	}
	return closedEvent{Code: "INTERNAL", Message: "the stream failed", Retryable: true}
}

func (s *sseSink) closed(err error) {
	b, _ := httpjson.Marshal(closedOf(err))
	s.buf = append(s.buf, "event: clutch.closed\ndata: "...)
	s.buf = append(s.buf, b...)
	s.buf = append(s.buf, "\n\n"...)
	_ = s.flush()
}

// serveSSE serves GET /v1/stream.
func (g *Gateway) serveSSE(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	st, err := g.streamOf(r, r.Header.Get("Last-Event-ID"))
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	defer g.subscribed("sse")()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // proxies: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	out := &sseSink{w: w, rc: http.NewResponseController(w), timeout: g.opts.WriteTimeout}
	out.buf = append(out.buf, "retry: 2000\n\n"...)
	if out.flush() != nil {
		return
	}
	st.serve(ctx, out)
	if g.opts.Logger != nil && st.err != nil && !errors.Is(st.err, ErrSlowConsumer) && ctx.Err() == nil {
		g.opts.Logger.ErrorContext(ctx, "gateway: stream failed", "err", st.err)
	}
}
