package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// sseEvent is one event of an SSE stream as a client parses it.
type sseEvent struct {
	ID, Event, Data string
	Comment         string
}

type sseReader struct {
	r    *bufio.Reader
	body io.Closer
}

func (e *env) openSSE(query, key string, hdr http.Header) (*sseReader, *http.Response) {
	e.t.Helper()
	resp := e.resp("GET", "/v1/stream"+query, key, "", hdr)
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		e.t.Fatalf("GET /v1/stream%s: %d %s", query, resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		e.t.Fatalf("Content-Type %q", ct)
	}
	return &sseReader{r: bufio.NewReader(resp.Body), body: resp.Body}, resp
}

// next returns the next event or comment block; retry: lines are skipped.
func (s *sseReader) next() (sseEvent, error) {
	var ev sseEvent
	seen := false
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			if seen {
				return ev, nil
			}
			continue
		}
		k, v, _ := strings.Cut(line, ":")
		v = strings.TrimPrefix(v, " ")
		switch k {
		case "":
			ev.Comment = v
			seen = true
		case "id":
			ev.ID, seen = v, true
		case "event":
			ev.Event, seen = v, true
		case "data":
			if ev.Data != "" {
				ev.Data += "\n"
			}
			ev.Data, seen = ev.Data+v, true
		}
	}
}

// nextEvent skips comments.
func (s *sseReader) nextEvent() (sseEvent, error) {
	for {
		ev, err := s.next()
		if err != nil || ev.Comment == "" {
			return ev, err
		}
	}
}

type streamData struct {
	Seq     uint64          `json:"seq"`
	Time    string          `json:"time"`
	Message json.RawMessage `json:"message"`
}

func TestSSE(t *testing.T) {
	forStores(t, func(t *testing.T, e *env) {
		a := e.runTask(keyAlice, `{"q":1}`)
		s, _ := e.openSSE("?run="+a.RunID, keyAlice, nil)
		defer s.body.Close()
		var types []string
		var last uint64
		for len(types) < 4 {
			ev, err := s.nextEvent()
			if err != nil {
				t.Fatal(err)
			}
			var d streamData
			if err := json.Unmarshal([]byte(ev.Data), &d); err != nil {
				t.Fatalf("data %q: %v", ev.Data, err)
			}
			stored, err := e.st.Get(t.Context(), mustDecode(t, d.Message).ID)
			if err != nil || stored.Seq != d.Seq || string(stored.Raw) != string(d.Message) || ev.ID != strconv.FormatUint(d.Seq, 10) {
				t.Fatalf("event id %s, data seq %d, stored %d (%v); message as stored: %v", ev.ID, d.Seq, stored.Seq, err, string(stored.Raw) == string(d.Message))
			}
			if ev.Event != string(mustDecode(t, d.Message).Type) || d.Seq <= last {
				t.Fatalf("event %q for %s, seq %d after %d", ev.Event, mustDecode(t, d.Message).Type, d.Seq, last)
			}
			last = d.Seq
			types = append(types, ev.Event)
		}
		if want := []string{"task.request", "routing.decision", "task.accept", "task.result"}; !slices.Equal(types, want) {
			t.Fatalf("types %v", types)
		}
		// Live: a new event of the run arrives.
		c := e.submit(keyAlice, `{"type":"chat.message","run_id":"`+a.RunID+`","payload":{"text":"live"}}`)
		ev, err := s.nextEvent()
		if err != nil || ev.ID != strconv.FormatUint(c.Seq, 10) || ev.Event != "chat.message" {
			t.Fatalf("live event %+v, %v; want seq %d", ev, err, c.Seq)
		}
	})
}

func mustDecode(t testing.TB, raw []byte) *protocol.Message {
	t.Helper()
	m, err := protocol.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestStreamFilters(t *testing.T) {
	e := newEnv(t, nil)
	a := e.runTask(keyAlice, `{"q":1}`)
	b := e.runTask(keyBob, `{"q":2}`)
	collect := func(query, key string, n int) []streamData {
		s, _ := e.openSSE(query, key, nil)
		defer s.body.Close()
		var out []streamData
		for len(out) < n {
			ev, err := s.nextEvent()
			if err != nil {
				t.Fatal(err)
			}
			var d streamData
			json.Unmarshal([]byte(ev.Data), &d)
			out = append(out, d)
		}
		return out
	}
	// agent= and type= (a prefix) AND-ed.
	got := collect("?agent=agent:echo&type=task.res", keyAudit, 2)
	if mustDecode(t, got[0].Message).TaskID != a.TaskID || mustDecode(t, got[1].Message).TaskID != b.TaskID {
		t.Fatalf("agent+type: %v", got)
	}
	// Alice without filters sees her run only; mark the end with a chat.
	end := e.submit(keyAlice, `{"type":"chat.message","payload":{"text":"end"}}`)
	got = collect("", keyAlice, 5)
	for _, d := range got {
		if m := mustDecode(t, d.Message); m.RunID != a.RunID && m.RunID != end.RunID {
			t.Fatalf("alice's stream has an event of run %s (%s)", m.RunID, m.Type)
		}
	}
	if got[4].Seq != end.Seq {
		t.Fatalf("alice's stream: last %d, want %d", got[4].Seq, end.Seq)
	}
	// after= resumes.
	got = collect("?run="+a.RunID+"&after="+itoa(a.Seq+1), keyAlice, 2)
	if got[0].Seq != a.Seq+2 {
		t.Fatalf("after: first seq %d, want %d", got[0].Seq, a.Seq+2)
	}
	for _, bad := range []string{"?after=x", "?run=", "?colour=red", "?type=a%20b", "?run=a&run=b"} {
		status, body := e.do("GET", "/v1/stream"+bad, keyAlice, "")
		wantError(t, bad, status, body, 400, "INVALID_FIELD")
	}
	resp := e.resp("GET", "/v1/stream?run="+a.RunID, keyAlice, "", http.Header{"Last-Event-ID": {"x"}})
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("bad Last-Event-ID: %d", resp.StatusCode)
	}
}

// TestAccessToken: the key as ?access_token= is taken on the streams
// only.
func TestAccessToken(t *testing.T) {
	e := newEnv(t, nil)
	a := e.runTask(keyAlice, `{"q":1}`)
	s, _ := e.openSSE("?run="+a.RunID+"&access_token="+keyAlice, "", nil)
	if ev, err := s.nextEvent(); err != nil || ev.Event != "task.request" {
		t.Fatalf("SSE with access_token: %+v %v", ev, err)
	}
	s.body.Close()
	c, _, err := websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(e.srv.URL, "http")+"/v1/ws?run="+a.RunID+"&access_token="+keyAlice, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, b, err := c.Read(t.Context()); err != nil || !strings.Contains(string(b), `"task.request"`) {
		t.Fatalf("WS with access_token: %s %v", b, err)
	}
	c.CloseNow()
	status, body := e.do("GET", "/v1/runs?access_token="+keyAlice, "", "")
	wantError(t, "access_token on /v1/runs", status, body, 401, "UNAUTHORIZED")
	status, body = e.do("GET", "/v1/stream?access_token=wrong-key-0123456789abcdef", "", "")
	wantError(t, "wrong access_token", status, body, 401, "UNAUTHORIZED")
}

// TestStreamResumeNoGapNoDuplicate: a client that disconnects at random
// points while four writers append, and resumes each time from the last
// id it saw (Last-Event-ID), gets every event of the thread exactly once,
// in order.
func TestStreamResumeNoGapNoDuplicate(t *testing.T) {
	forStores(t, func(t *testing.T, e *env) {
		seed := uint64(time.Now().UnixNano())
		t.Logf("seed %d", seed)
		rng := rand.New(rand.NewPCG(seed, 1))
		first := e.submit(keyAlice, `{"type":"chat.message","payload":{"text":"start"}}`)
		const writers, each = 4, 150
		var wg sync.WaitGroup
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range each {
					m := e.r.IDs().NewMessage(protocol.TypeChatMessage, "agent:writer")
					m.ThreadID, m.RunID = first.ThreadID, first.RunID
					m.Payload = json.RawMessage(`{"w":` + strconv.Itoa(w) + `,"i":` + strconv.Itoa(i) + `}`)
					batch := []*protocol.Message{m}
					if i%5 == 0 { // a batch of two now and then
						m2 := e.r.IDs().NewMessage(protocol.TypeChatMessage, "agent:writer")
						m2.ThreadID, m2.RunID = first.ThreadID, first.RunID
						batch = append(batch, m2)
					}
					if _, err := e.st.Append(context.Background(), batch...); err != nil {
						t.Error(err)
						return
					}
				}
			}()
		}
		total := 1 + writers*(each+each/5)
		var got []uint64
		last := ""
		for len(got) < total {
			hdr := http.Header{}
			if last != "" {
				hdr.Set("Last-Event-ID", last)
			}
			s, _ := e.openSSE("?thread="+first.ThreadID, keyAlice, hdr)
			for range 1 + rng.IntN(60) {
				ev, err := s.nextEvent()
				if err != nil {
					t.Fatal(err)
				}
				seq, _ := strconv.ParseUint(ev.ID, 10, 64)
				got = append(got, seq)
				last = ev.ID
				if len(got) == total {
					break
				}
			}
			s.body.Close()
		}
		wg.Wait()
		var want []uint64
		for ev, err := range e.st.Read(t.Context(), store.Query{ThreadID: first.ThreadID}) {
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, ev.Seq)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("resumed stream: %d events, want %d; first difference at %d", len(got), len(want), firstDiff(got, want))
		}
	})
}

func firstDiff(a, b []uint64) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// cutHook makes testHookCut close the returned channel.
func cutHook(t *testing.T) <-chan struct{} {
	cut := make(chan struct{})
	var once sync.Once
	testHookCut = func() { once.Do(func() { close(cut) }) }
	t.Cleanup(func() { testHookCut = nil })
	return cut
}

// appendUntil appends big chat messages to the thread until done is
// closed (at most n).
func (e *env) appendUntil(thread, run string, done <-chan struct{}, n int) {
	e.t.Helper()
	big := `{"text":"` + strings.Repeat("x", 64<<10) + `"}`
	for range n {
		select {
		case <-done:
			return
		default:
		}
		m := e.r.IDs().NewMessage(protocol.TypeChatMessage, "agent:writer")
		m.ThreadID, m.RunID = thread, run
		m.Payload = json.RawMessage(big)
		if _, err := e.st.Append(context.Background(), m); err != nil {
			e.t.Fatal(err)
		}
	}
	e.t.Fatalf("no slow consumer cut after %d events", n)
}

// TestSlowConsumerSSE: a client that stops reading is cut off with a
// clutch.closed event naming the reason, which it reads once it reads
// again; other clients are not held up meanwhile.
func TestSlowConsumerSSE(t *testing.T) {
	cut := cutHook(t)
	e := newEnv(t, &envOptions{gw: &Options{StreamBuffer: 4, SlowTimeout: 50 * time.Millisecond}})
	first := e.submit(keyAlice, `{"type":"chat.message","payload":{"text":"start"}}`)
	slow, _ := e.openSSE("?thread="+first.ThreadID, keyAlice, nil)
	defer slow.body.Close()
	fast, _ := e.openSSE("?thread="+first.ThreadID, keyAlice, nil)
	defer fast.body.Close()
	// The fast client's events, by seq (the stream's ids), as it reads them.
	fastSeqs := make(chan string, 1<<14)
	go func() {
		defer close(fastSeqs)
		for {
			ev, err := fast.nextEvent()
			if err != nil {
				return
			}
			fastSeqs <- ev.ID
		}
	}()
	e.appendUntil(first.ThreadID, first.RunID, cut, 2000)
	<-cut
	// The fast client got every event so far while the slow one was stuck.
	last, _ := e.st.LastSeq(t.Context())
	var lastEv sseEvent
	for {
		ev, err := slow.nextEvent()
		if err != nil {
			break
		}
		lastEv = ev
	}
	if lastEv.Event != "clutch.closed" {
		t.Fatalf("the slow client's last event: %+v", lastEv)
	}
	var ce closedEvent
	if err := json.Unmarshal([]byte(lastEv.Data), &ce); err != nil || ce.Code != "CAPACITY" || !strings.Contains(ce.Message, "slow consumer") || !ce.Retryable {
		t.Fatalf("clutch.closed data %q", lastEv.Data)
	}
	// A new event still reaches the fast client, which then leaves.
	c := e.submit(keyAlice, `{"type":"chat.message","thread_id":"`+first.ThreadID+`","payload":{"text":"after"}}`)
	if c.Seq <= last {
		t.Fatal("seq did not move")
	}
	// The fast client gets every event of the thread up to it, in order,
	// then leaves.
	var want []string
	for ev, err := range e.st.Read(t.Context(), store.Query{ThreadID: first.ThreadID}) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Seq <= c.Seq {
			want = append(want, itoa(ev.Seq))
		}
	}
	for i, w := range want {
		got, ok := <-fastSeqs
		if !ok {
			t.Fatalf("the fast client's stream ended after %d of %d events", i, len(want))
		}
		if got != w {
			t.Fatalf("the fast client's event %d of %d: seq %s, want %s", i+1, len(want), got, w)
		}
	}
	fast.body.Close()
	for range fastSeqs { // until its reader ends
	}
}

// TestSlowConsumerWS: the same over a WebSocket: close status 1013 with
// the reason.
func TestSlowConsumerWS(t *testing.T) {
	cut := cutHook(t)
	e := newEnv(t, &envOptions{gw: &Options{StreamBuffer: 4, SlowTimeout: 50 * time.Millisecond}})
	first := e.submit(keyAlice, `{"type":"chat.message","payload":{"text":"start"}}`)
	c := e.dialWS("?thread="+first.ThreadID, keyAlice)
	defer c.CloseNow()
	c.SetReadLimit(1 << 20)
	e.appendUntil(first.ThreadID, first.RunID, cut, 2000)
	<-cut
	var err error
	n := 0
	for err == nil {
		_, _, err = c.Read(t.Context())
		n++
	}
	if websocket.CloseStatus(err) != websocket.StatusTryAgainLater || !strings.Contains(err.Error(), "slow consumer") {
		t.Fatalf("after %d frames: %v; want close 1013 slow consumer", n, err)
	}
}

func (e *env) dialWS(query, key string) *websocket.Conn {
	e.t.Helper()
	c, resp, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(e.srv.URL, "http")+"/v1/ws"+query,
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + key}}})
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		e.t.Fatalf("dial /v1/ws%s: %d %v", query, status, err)
	}
	return c
}

func TestWebSocket(t *testing.T) {
	forStores(t, func(t *testing.T, e *env) {
		a := e.runTask(keyAlice, `{"q":1}`)
		c := e.dialWS("?task="+a.TaskID, keyAlice)
		defer c.CloseNow()
		var seqs []uint64
		for range 4 {
			typ, b, err := c.Read(t.Context())
			if err != nil || typ != websocket.MessageText {
				t.Fatal(typ, err)
			}
			var d streamData
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, d.Seq)
		}
		c.Close(websocket.StatusNormalClosure, "")
		// Resume with after=.
		c = e.dialWS("?task="+a.TaskID+"&after="+itoa(seqs[1]), keyAlice)
		defer c.CloseNow()
		_, b, err := c.Read(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		var d streamData
		json.Unmarshal(b, &d)
		if d.Seq != seqs[2] {
			t.Fatalf("resumed at %d, want %d", d.Seq, seqs[2])
		}
		// Someone else's task: refused before the upgrade.
		_, resp, err := websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(e.srv.URL, "http")+"/v1/ws?task="+a.TaskID,
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + keyBob}}})
		if err == nil || resp == nil || resp.StatusCode != 404 {
			t.Fatalf("bob's dial: %v %v", resp, err)
		}
		// A cross-origin page is refused unless listed.
		_, resp, err = websocket.Dial(t.Context(), "ws"+strings.TrimPrefix(e.srv.URL, "http")+"/v1/ws?task="+a.TaskID,
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + keyAlice}, "Origin": {"https://evil.example"}}})
		if err == nil || resp == nil || resp.StatusCode != 403 {
			t.Fatalf("cross-origin dial: %v %v", resp, err)
		}
	})
}

// TestStreamStoreClosed: a stream whose store is closed under it ends
// with a clutch.closed event saying so (SSE) or close status 1011 (WS).
func TestStreamStoreClosed(t *testing.T) {
	e := newEnv(t, nil)
	a := e.submit(keyAlice, `{"type":"chat.message","payload":{}}`)
	s, _ := e.openSSE("?thread="+a.ThreadID, keyAlice, nil)
	defer s.body.Close()
	if _, err := s.nextEvent(); err != nil {
		t.Fatal(err)
	}
	c := e.dialWS("?thread="+a.ThreadID, keyAlice)
	defer c.CloseNow()
	if _, _, err := c.Read(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.r.Close()
	e.st.Close()
	ev, err := s.nextEvent()
	if err != nil || ev.Event != "clutch.closed" || !strings.Contains(ev.Data, `"INTERNAL"`) {
		t.Fatalf("after the store closed: %+v %v", ev, err)
	}
	if _, _, err := c.Read(t.Context()); websocket.CloseStatus(err) != websocket.StatusInternalError {
		t.Fatalf("WS after the store closed: %v", err)
	}
}

// TestWebSocketClientData: a client that sends a data frame is closed
// with 1008 (policy violation): the stream takes no input.
func TestWebSocketClientData(t *testing.T) {
	e := newEnv(t, nil)
	a := e.submit(keyAlice, `{"type":"chat.message","payload":{}}`)
	c := e.dialWS("?thread="+a.ThreadID, keyAlice)
	defer c.CloseNow()
	if _, _, err := c.Read(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := c.Write(t.Context(), websocket.MessageText, []byte("hello")); err != nil {
		t.Fatal(err)
	}
	_, _, err := c.Read(t.Context())
	if websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Fatalf("after a client frame: %v", err)
	}
}

// TestSlowConsumerByBytes: a client that stops reading is cut off once
// the events waiting for it pass StreamBufferBytes, long before the count
// bound or the slow timeout would, so a stream's memory is bounded by
// bytes whatever its events weigh.
func TestSlowConsumerByBytes(t *testing.T) {
	cut := cutHook(t)
	e := newEnv(t, &envOptions{gw: &Options{StreamBuffer: 1 << 16, StreamBufferBytes: 1 << 20, SlowTimeout: time.Hour}})
	first := e.submit(keyAlice, `{"type":"chat.message","payload":{"text":"start"}}`)
	slow, _ := e.openSSE("?thread="+first.ThreadID, keyAlice, nil)
	defer slow.body.Close()
	e.appendUntil(first.ThreadID, first.RunID, cut, 2000)
	<-cut
	var lastEv sseEvent
	for {
		ev, err := slow.nextEvent()
		if err != nil {
			break
		}
		lastEv = ev
	}
	var ce closedEvent
	if err := json.Unmarshal([]byte(lastEv.Data), &ce); lastEv.Event != "clutch.closed" || err != nil || !strings.Contains(ce.Message, "bytes of events waiting") {
		t.Fatalf("the slow client's last event: %+v", lastEv)
	}
}

// TestSSEAfterNow: after=now streams only what is stored once the stream
// is open — the UI's live sidebar — for a caller's own runs.
func TestSSEAfterNow(t *testing.T) {
	e := newEnv(t, nil)
	old := e.runTask(keyAlice, `{"q":"old"}`)
	s, _ := e.openSSE("?after=now", keyAlice, nil)
	defer s.body.Close()
	fresh := e.runTask(keyAlice, `{"q":"new"}`)
	ev, err := s.nextEvent()
	if err != nil {
		t.Fatal(err)
	}
	var d streamData
	if err := json.Unmarshal([]byte(ev.Data), &d); err != nil {
		t.Fatal(err)
	}
	var m struct {
		RunID string `json:"run_id"`
	}
	_ = json.Unmarshal(d.Message, &m)
	if m.RunID != fresh.RunID || m.RunID == old.RunID {
		t.Fatalf("the first event streamed is of run %s; want the new run %s", m.RunID, fresh.RunID)
	}
	status, body := e.do("GET", "/v1/stream?after=later", keyAlice, "")
	wantError(t, "after=later", status, body, http.StatusBadRequest, "INVALID_FIELD")
}
