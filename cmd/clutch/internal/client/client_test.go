package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/cmd/clutch/internal/client"
	"github.com/clutchprotocol/clutch/gateway"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const key = "client-test-key-0123456789"

type env struct {
	st    *boltstore.Store
	srv   *httptest.Server
	c     *client.Client
	ids   *protocol.IDs
	opens atomic.Int32  // stream connections
	cut   chan struct{} // closed when the gateway cut a stream
	cutOn atomic.Bool
}

// newEnv serves a real gateway over a bolt file, counting stream
// connections and noticing a clutch.closed event on the way out.
func newEnv(t *testing.T, opts *gateway.Options) *env {
	t.Helper()
	ctx := context.Background()
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "events.db"), &boltstore.Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Open(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	schemas, _ := schema.New(nil)
	r, err := router.New(st, reg, &router.Options{Validator: schemas, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	keys, _ := auth.APIKeys(map[string]auth.Caller{key: {AgentID: "agent:operator", Scopes: []string{auth.ScopeAdmin}}})
	o := *opts
	o.Auth, o.Logger = keys, slog.New(slog.DiscardHandler)
	gw, err := gateway.New(r, &o)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{st: st, ids: protocol.NewIDs(nil), cut: make(chan struct{})}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/stream" {
			gw.ServeHTTP(w, req)
			return
		}
		e.opens.Add(1)
		gw.ServeHTTP(w, req)
		// The stream's handler returns when the gateway ends it: here,
		// while the client is still there, only by cutting it off.
		if e.cutOn.CompareAndSwap(false, true) {
			close(e.cut)
		}
	}))
	e.c, err = client.New(e.srv.URL, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.srv.CloseClientConnections()
		e.srv.Close()
		r.Close()
		st.Close()
	})
	return e
}

func (e *env) appendChat(t *testing.T, run, thread string, n, size int) uint64 {
	t.Helper()
	msgs := make([]*protocol.Message, n)
	for i := range msgs {
		m := e.ids.NewMessage(protocol.TypeChatMessage, "agent:operator")
		m.RunID, m.ThreadID, m.TaskID = run, thread, "task_chat"
		text, _ := json.Marshal(map[string]string{"text": strings.Repeat("x", size)})
		m.Payload = text
		msgs[i] = m
	}
	res, err := e.st.Append(context.Background(), msgs...)
	if err != nil {
		t.Fatal(err)
	}
	return res[len(res)-1].Seq
}

// A client cut off as a slow consumer reconnects from its last seq: every
// event arrives once, in order.
func TestStreamResumesAfterCut(t *testing.T) {
	e := newEnv(t, &gateway.Options{StreamBuffer: 4, SlowTimeout: 20 * time.Millisecond, WriteTimeout: 200 * time.Millisecond})
	run, thread := e.ids.RunID(), e.ids.ThreadID()
	first := e.appendChat(t, run, thread, 1, 10)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan uint64, 1)
	release := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		held := false
		for ev, err := range e.c.Stream(ctx, client.StreamQuery{Thread: thread, After: first - 1}) {
			if err != nil {
				errc <- err
				return
			}
			got <- ev.Seq
			if !held {
				held = true
				<-release // a slow consumer
			}
		}
		errc <- nil
	}()
	if seq := <-got; seq != first {
		t.Fatalf("first event %d, want %d", seq, first)
	}
	// More than the socket buffers of a loopback connection hold: the
	// gateway's buffer fills and it gives up on the stuck client.
	var last uint64
	for range 100 {
		last = e.appendChat(t, run, thread, 20, 16<<10)
	}
	select {
	case <-e.cut:
	case <-time.After(30 * time.Second):
		t.Fatal("the gateway never cut the stuck client")
	}
	close(release)
	for want := first + 1; want <= last; want++ {
		select {
		case seq := <-got:
			if seq != want {
				t.Fatalf("seq %d after a reconnect, want %d", seq, want)
			}
		case err := <-errc:
			t.Fatalf("stream ended at %d of %d: %v", want, last, err)
		}
	}
	if n := e.opens.Load(); n < 2 {
		t.Fatalf("%d stream connections, want a reconnect", n)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("after cancel: %v", err)
	}
}

func TestPagesAndErrors(t *testing.T) {
	e := newEnv(t, &gateway.Options{})
	run, thread := e.ids.RunID(), e.ids.ThreadID()
	last := e.appendChat(t, run, thread, 12, 10)
	ctx := context.Background()
	n := 0
	for ev, err := range e.c.AllEvents(ctx, client.ThreadScope, thread, 0, "chat.") {
		if err != nil {
			t.Fatal(err)
		}
		stored, err := e.st.Get(ctx, mustID(t, ev.Message))
		if err != nil || !bytes.Equal(stored.Raw, ev.StoreEvent().Raw) || stored.Seq != ev.Seq {
			t.Fatalf("event %d: %v", ev.Seq, err)
		}
		n++
	}
	if n != 12 {
		t.Fatalf("%d events", n)
	}
	runs, next, err := e.c.Runs(ctx, 0, 10)
	if err != nil || len(runs) == 0 || runs[0].ID != run || runs[0].LastSeq != last || next != 0 {
		t.Fatalf("Runs: %+v %d %v", runs, next, err)
	}
	_, err = e.c.RunTree(ctx, "run_missing")
	var apiErr *client.Error
	if !errors.As(err, &apiErr) || apiErr.Status != 404 || !errors.Is(err, protocol.CodeNotFound) {
		t.Fatalf("a missing run's tree: %v", err)
	}
	bad, _ := client.New(e.srv.URL, "wrong-key-0123456789abc", nil)
	if _, _, err := bad.Runs(ctx, 0, 1); protocol.CodeOf(err) != protocol.CodeUnauthorized {
		t.Fatalf("a wrong key: %v", err)
	}
	for ev, err := range bad.Stream(ctx, client.StreamQuery{}) {
		if protocol.CodeOf(err) != protocol.CodeUnauthorized {
			t.Fatalf("a wrong key's stream: %+v %v", ev, err)
		}
	}
	if err := e.c.Health(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := client.New("localhost:8080", "", nil); !errors.Is(err, client.ErrInvalidURL) {
		t.Fatalf("a URL without a scheme: %v", err)
	}
}

func mustID(t *testing.T, raw []byte) string {
	m, err := protocol.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	return m.ID
}
