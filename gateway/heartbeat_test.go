package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// pipeWriter is an http.ResponseWriter whose body goes into a pipe, for
// handlers run without a network (in a synctest bubble).
type pipeWriter struct {
	h      http.Header
	w      *io.PipeWriter
	status atomic.Int32
}

func (p *pipeWriter) Header() http.Header         { return p.h }
func (p *pipeWriter) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p *pipeWriter) WriteHeader(s int)           { p.status.Store(int32(s)) }
func (p *pipeWriter) Flush()                      {}

// TestSSEHeartbeat: a quiet stream gets a ": ping" comment every
// Options.Heartbeat, and the events in between (fake time: synctest).
func TestSSEHeartbeat(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st, _ := memstore.New(nil)
		reg, _ := registry.Open(ctx, st, nil)
		schemas, _ := schema.New(nil)
		r, err := router.New(st, reg, &router.Options{Validator: schemas, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		gw, err := New(r, &Options{Auth: testAuth(t), Heartbeat: 15 * time.Second, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		chat := func(thread string) uint64 {
			m := r.IDs().NewMessage(protocol.TypeChatMessage, "agent:alice")
			if thread != "" {
				m.ThreadID = thread
			}
			res, err := st.Append(ctx, m)
			if err != nil {
				t.Fatal(err)
			}
			return res[0].Seq
		}
		first := chat("thr_beat")
		pr, pw := io.Pipe()
		w := &pipeWriter{h: http.Header{}, w: pw}
		rctx, cancel := context.WithCancel(ctx)
		req := httptest.NewRequestWithContext(rctx, "GET", "/v1/stream?thread=thr_beat", nil)
		req.Header.Set("Authorization", "Bearer "+keyAlice)
		done := make(chan struct{})
		go func() {
			defer close(done)
			gw.ServeHTTP(w, req)
			pw.Close()
		}()
		s := &sseReader{r: bufio.NewReader(pr)}
		start := time.Now()
		ev, err := s.next()
		if err != nil || ev.ID != itoa(first) {
			t.Fatalf("first: %+v %v", ev, err)
		}
		for i := 1; i <= 3; i++ {
			ev, err := s.next()
			if err != nil || ev.Comment != "ping" {
				t.Fatalf("heartbeat %d: %+v %v", i, ev, err)
			}
			if got := time.Since(start); got != time.Duration(i)*15*time.Second {
				t.Fatalf("heartbeat %d after %v", i, got)
			}
			if i == 2 {
				// An event in between goes out at once.
				time.Sleep(time.Second)
				seq := chat("thr_beat")
				ev, err := s.next()
				if err != nil || ev.ID != itoa(seq) {
					t.Fatalf("event between heartbeats: %+v %v", ev, err)
				}
				if got := time.Since(start); got != 31*time.Second {
					t.Fatalf("event sent at %v", got)
				}
			}
		}
		if w.status.Load() != 200 {
			t.Fatalf("status %d", w.status.Load())
		}
		cancel()
		io.Copy(io.Discard, pr)
		<-done
		r.Close()
		st.Close()
	})
}

// TestWebSocketHeartbeat: the server pings a quiet WebSocket.
func TestWebSocketHeartbeat(t *testing.T) {
	e := newEnv(t, &envOptions{gw: &Options{Heartbeat: 20 * time.Millisecond}})
	a := e.submit(keyAlice, `{"type":"chat.message","payload":{"text":"x"}}`)
	pinged := make(chan struct{}, 100)
	c, _, err := websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(e.srv.URL, "http")+"/v1/ws?thread="+a.ThreadID,
		&websocket.DialOptions{
			HTTPHeader: http.Header{"Authorization": {"Bearer " + keyAlice}},
			OnPingReceived: func(context.Context, []byte) bool {
				pinged <- struct{}{}
				return true
			},
		})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	_, b, err := c.Read(t.Context()) // the chat; the read loop then answers pings
	if err != nil {
		t.Fatal(err)
	}
	var d streamData
	if json.Unmarshal(b, &d); d.Seq != a.Seq {
		t.Fatalf("first frame %s", b)
	}
	go c.Read(context.Background())
	for range 3 {
		select {
		case <-pinged:
		case <-time.After(10 * time.Second):
			t.Fatal("no ping")
		}
	}
}
