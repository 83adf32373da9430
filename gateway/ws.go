package gateway

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/clutchprotocol/clutch/store"
)

// wsSink writes a stream as WebSocket text frames, one per event, each
// the same JSON object as an SSE event's data.
type wsSink struct {
	ctx     context.Context
	gone    context.Context // done once the client has gone: a ping waits no longer
	c       *websocket.Conn
	timeout time.Duration
	buf     []byte
}

func (s *wsSink) events(evs []store.Event) error {
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout)
	defer cancel()
	for _, ev := range evs {
		s.buf = appendData(s.buf[:0], ev)
		if err := s.c.Write(ctx, websocket.MessageText, s.buf); err != nil {
			return err
		}
	}
	return nil
}

func (s *wsSink) ping() error {
	ctx, cancel := context.WithTimeout(s.gone, s.timeout)
	defer cancel()
	return s.c.Ping(ctx)
}

// closed closes the connection with 1013 (try again later) for a slow
// consumer and 1011 (internal error) for a failed store; the reason is
// the message of the SSE clutch.closed event, cut to the 123 bytes a
// close frame holds.
func (s *wsSink) closed(err error) {
	code := websocket.StatusInternalError
	if errors.Is(err, ErrSlowConsumer) {
		code = websocket.StatusTryAgainLater
	}
	reason := closedOf(err).Message
	if len(reason) > 123 {
		reason = reason[:120] + "..."
	}
	_ = s.c.Close(code, reason)
}

// serveWS serves GET /v1/ws: the stream of /v1/stream over a WebSocket.
// The query is the same; there is no Last-Event-ID, resume with after=.
func (g *Gateway) serveWS(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	st, err := g.streamOf(r, "")
	if err != nil {
		g.writeError(w, r, err)
		return
	}
	// Browsers send Origin on WebSockets and obey no CORS: accept the
	// page's own origin and the ones Options.CORS lists, nothing else.
	c, err := websocket.Accept(w, r, &websocket.AcceptOptions{OriginPatterns: g.opts.CORS})
	if err != nil {
		return // Accept has answered
	}
	defer g.subscribed("ws")()
	// The client sends nothing: a reader answers its pings and pongs and
	// notices when it goes or sends a data frame, which ends the stream
	// (1008). (Not Conn.CloseRead: its goroutine's own Close would wait
	// for itself.)
	ctx, cancel := context.WithCancel(ctx)
	gone, left := context.WithCancel(r.Context())
	defer left()
	var input atomic.Bool
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		defer cancel()
		if _, _, err := c.Read(ctx); err == nil {
			input.Store(true)
		} else {
			left() // a pong will not come
		}
	}()
	defer func() {
		cancel()
		c.CloseNow()
		<-readDone
	}()
	// The sink writes under the request's context, not ctx: cancelling a
	// Write's context closes the connection at once, and a data frame
	// from the client must end the stream with 1008, not with a cut
	// connection. Each write has its own WriteTimeout. A ping waits for
	// its pong until the reader finds the client gone: a hijacked
	// connection's request context does not end with it.
	st.serve(ctx, &wsSink{ctx: r.Context(), gone: gone, c: c, timeout: g.opts.WriteTimeout})
	switch {
	case input.Load():
		_ = c.Close(websocket.StatusPolicyViolation, "the stream takes no input")
	case st.err == nil && r.Context().Err() == nil:
		_ = c.Close(websocket.StatusNormalClosure, "")
	}
}
