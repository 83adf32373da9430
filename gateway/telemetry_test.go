package gateway

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/clutchprotocol/clutch/gateway/agui"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/telemetry"
)

// TestTraceparentContinued: a POST /v1/messages carrying a W3C
// traceparent header submits a task that continues that trace: its
// invoke_agent span is in the caller's trace, a child of the caller's
// span, and the task's events carry the trace id.
func TestTraceparentContinued(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tel, err := telemetry.New(&telemetry.Options{TracerProvider: tp})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, &envOptions{observer: tel})
	const traceID, parent = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	status, b := e.do2("POST", "/v1/messages", keyAlice, `{"type":"task.request","requires":["skill:echo"],"payload":{"q":1}}`,
		http.Header{"Traceparent": {"00-" + traceID + "-" + parent + "-01"}})
	if status != http.StatusAccepted {
		t.Fatalf("POST /v1/messages: %d %s", status, b)
	}
	a := decodeAccepted(t, b)
	e.waitEnded(a.TaskID)
	// The result event carries the attempt's span, in the caller's trace.
	var resultTrace *protocol.Trace
	for ev, err := range e.st.Read(t.Context(), store.Query{TaskID: a.TaskID, TypePrefix: "task.result"}) {
		if err != nil {
			t.Fatal(err)
		}
		m, err := ev.Message()
		if err != nil {
			t.Fatal(err)
		}
		resultTrace = m.Trace
	}
	if resultTrace == nil || resultTrace.TraceID != traceID {
		t.Fatalf("the task.result's trace %+v; want trace id %s", resultTrace, traceID)
	}
	// Shutdown waits for the attempt, whose span then has ended.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.r.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, s := range spans.GetSpans() {
		if !strings.HasPrefix(s.Name, telemetry.OpInvokeAgent) {
			continue
		}
		found = true
		if s.SpanContext.TraceID().String() != traceID || s.Parent.SpanID().String() != parent || !s.Parent.IsRemote() {
			t.Fatalf("span %s in trace %s under %s (remote %v); want trace %s under %s", s.Name, s.SpanContext.TraceID(), s.Parent.SpanID(), s.Parent.IsRemote(), traceID, parent)
		}
	}
	if !found {
		t.Fatalf("no invoke_agent span among %d", len(spans.GetSpans()))
	}

	// Without the header the task starts a trace of its own.
	spans.Reset()
	e2 := newEnv(t, &envOptions{observer: tel})
	a = e2.runTask(keyAlice, `{"q":2}`)
	if err := e2.r.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range spans.GetSpans() {
		if s.SpanContext.TraceID().String() == traceID {
			t.Fatalf("span %s of task %s continued the earlier caller's trace", s.Name, a.TaskID)
		}
	}
}

// do2 is do with request headers.
func (e *env) do2(method, path, key, body string, hdr http.Header) (int, []byte) {
	e.t.Helper()
	resp := e.resp(method, path, key, body, hdr)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, b
}

func decodeAccepted(t testing.TB, b []byte) Accepted {
	t.Helper()
	var a Accepted
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	return a
}

// subscribers records Options.Subscribers calls.
type subscribers struct {
	mu     sync.Mutex
	live   map[string]int
	total  map[string]int
	events chan string // "+sse", "-sse", ...
}

func newSubscribers() *subscribers {
	return &subscribers{live: map[string]int{}, total: map[string]int{}, events: make(chan string, 64)}
}

func (s *subscribers) hook(stream string) func() {
	s.mu.Lock()
	s.live[stream]++
	s.total[stream]++
	s.mu.Unlock()
	s.events <- "+" + stream
	return func() {
		s.mu.Lock()
		s.live[stream]--
		s.mu.Unlock()
		s.events <- "-" + stream
	}
}

func (s *subscribers) want(t *testing.T, ev string) {
	t.Helper()
	select {
	case got := <-s.events:
		if got != ev {
			t.Fatalf("subscriber event %q; want %q", got, ev)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no subscriber event; want %q", ev)
	}
}

// TestSubscribers: Options.Subscribers is told when an SSE, WebSocket
// or AG-UI stream starts and when it ends; a refused stream is not
// counted.
func TestSubscribers(t *testing.T) {
	subs := newSubscribers()
	e := newEnv(t, nil)
	h, err := agui.New(e.r, &agui.Options{Agent: "agent:echo"})
	if err != nil {
		t.Fatal(err)
	}
	e = newEnvOver(t, e, &Options{AGUI: h, Subscribers: subs.hook})
	a := e.runTask(keyAlice, `{"q":1}`)

	// SSE: counted while open.
	sse, _ := e.openSSE("?task="+a.TaskID, keyAlice, nil)
	subs.want(t, "+sse")
	if _, err := sse.nextEvent(); err != nil {
		t.Fatal(err)
	}
	sse.body.Close()
	subs.want(t, "-sse")

	// A refused stream (bob may not see alice's task) is not one.
	resp := e.resp("GET", "/v1/stream?task="+a.TaskID, keyBob, "", nil)
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Fatalf("bob's stream: %d", resp.StatusCode)
	}

	// WebSocket.
	c := e.dialWS("?task="+a.TaskID, keyAlice)
	subs.want(t, "+ws")
	if _, _, err := c.Read(t.Context()); err != nil {
		t.Fatal(err)
	}
	c.Close(websocket.StatusNormalClosure, "")
	subs.want(t, "-ws")

	// AG-UI: the run's stream, until it ends.
	resp = e.resp("POST", "/v1/agui", keyAlice, `{"threadId":"t1","runId":"r1","messages":[{"id":"u1","role":"user","content":"hi"}]}`,
		http.Header{"Content-Type": {"application/json"}, "Accept": {"text/event-stream"}})
	subs.want(t, "+agui")
	if resp.StatusCode != 200 {
		t.Fatalf("POST /v1/agui: %d", resp.StatusCode)
	}
	_, _ = io.Copy(io.Discard, resp.Body) // the run ends, and its stream
	resp.Body.Close()
	subs.want(t, "-agui")

	subs.mu.Lock()
	defer subs.mu.Unlock()
	if subs.total["sse"] != 1 || subs.total["ws"] != 1 || subs.total["agui"] != 1 || subs.live["sse"]+subs.live["ws"]+subs.live["agui"] != 0 {
		t.Fatalf("subscribers: total %v, live %v", subs.total, subs.live)
	}
}
