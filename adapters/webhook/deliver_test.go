package webhook

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/clutchprotocol/clutch/egress"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// receiver is a webhook receiver that verifies every delivery with the
// package's own verifier and keeps, in order, the ids it answered 2xx.
type receiver struct {
	t      testing.TB
	keys   []key
	mu     sync.Mutex
	answer func(n int, id string) (int, http.Header) // n counts attempts, from 1
	n      int
	got    []string
	bodies [][]byte
	times  []time.Time
	in     int // requests in flight
	maxIn  int
	ok     chan string
}

func newReceiver(t testing.TB, secret string) *receiver {
	k, err := parseSecret(secret)
	require.NoError(t, err)
	return &receiver{t: t, keys: []key{{key: k}}, ok: make(chan string, 1000)}
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	rc.in++
	rc.maxIn = max(rc.maxIn, rc.in)
	rc.n++
	n := rc.n
	rc.times = append(rc.times, time.Now())
	rc.mu.Unlock()
	defer func() { rc.mu.Lock(); rc.in--; rc.mu.Unlock() }()

	h, err := parseHeaders(r.Header.Get(HeaderID), r.Header.Get(HeaderTimestamp), r.Header.Get(HeaderSignature))
	if err == nil {
		_, err = verify(rc.keys, h, body, time.Now(), DefaultTolerance)
	}
	if err != nil {
		rc.t.Errorf("receiver: delivery does not verify: %v", err)
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	status := http.StatusNoContent
	if rc.answer != nil {
		var hdr http.Header
		status, hdr = rc.answer(n, h.id)
		for k, v := range hdr {
			w.Header()[k] = v
		}
	}
	if status/100 == 2 {
		rc.mu.Lock()
		rc.got = append(rc.got, h.id)
		rc.bodies = append(rc.bodies, body)
		rc.mu.Unlock()
		rc.ok <- h.id
	}
	w.WriteHeader(status)
}

func (rc *receiver) delivered() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]string(nil), rc.got...)
}

// loopback is an egress policy that lets tests reach httptest servers.
func loopback(t testing.TB) *egress.Policy {
	p, err := egress.New(&egress.Options{Allow: []string{"127.0.0.1"}})
	require.NoError(t, err)
	return p
}

// inProcess points d at h without a network, for synctest bubbles.
type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func inProcess(d *Deliverer, h http.Handler) {
	d.client.Transport = roundTrip(func(r *http.Request) (*http.Response, error) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec.Result(), nil
	})
}

// appendEvents appends n events of type x.test.event (or the given types,
// cycling) and returns their ids in order.
func appendEvents(t testing.TB, st store.Store, n int, types ...protocol.Type) []string {
	t.Helper()
	if len(types) == 0 {
		types = []protocol.Type{"x.test.event"}
	}
	var ids []string
	for i := range n {
		m := protocol.NewMessage(types[i%len(types)], "agent:src")
		m.RunID, m.ThreadID, m.TaskID = "run_t", "thr_t", "task_t"
		m.To = []protocol.Participant{}
		require.NoError(t, m.SetPayload(map[string]int{"i": i}))
		_, err := st.Append(context.Background(), m)
		require.NoError(t, err)
		ids = append(ids, m.ID)
	}
	return ids
}

// records returns the delivery records of subscription name, waiting until
// there are n, at most 30 s.
func records(t testing.TB, st store.Store, name string, n int) []Delivery {
	t.Helper()
	return recordsWithin(t, st, name, n, 30*time.Second)
}

// recordsWithin is records with a timeout (of fake time in a synctest
// bubble, where backoffs of minutes pass at once).
func recordsWithin(t testing.TB, st store.Store, name string, n int, timeout time.Duration) []Delivery {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out []Delivery
	for ev, err := range st.Follow(ctx, store.Query{RunID: protocol.PrefixRun + "webhook:" + name, TypePrefix: string(TypeDelivery)}) {
		require.NoError(t, err)
		m, err := ev.Message()
		require.NoError(t, err)
		d, err := protocol.DecodePayload[Delivery](m)
		require.NoError(t, err)
		out = append(out, d)
		if len(out) == n {
			return out
		}
	}
	t.Fatalf("only %d of %d delivery records", len(out), n)
	return nil
}

func runDeliverer(t testing.TB, d *Deliverer) {
	done := make(chan error, 1)
	go func() { done <- d.Run(context.Background()) }()
	t.Cleanup(func() {
		require.NoError(t, d.Close())
		require.NoError(t, <-done)
	})
}

func TestDelivererDeliversSelectedEventsInOrder(t *testing.T) {
	st, err := memstore.New(nil)
	require.NoError(t, err)
	secret := newSecret(t)
	rc := newReceiver(t, secret)
	srv := httptest.NewServer(rc)
	defer srv.Close()

	d, err := NewDeliverer(st, &DelivererOptions{Egress: loopback(t), MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, d.Subscribe(context.Background(), Subscription{Name: "results", URL: srv.URL, Secrets: []string{secret}, Types: []string{"task.result", "x.test."}}))
	runDeliverer(t, d)

	ids := appendEvents(t, st, 12, "x.test.event", "chat.message", protocol.TypeTaskResult)
	var want []string
	for i, id := range ids {
		if i%3 != 1 { // chat.message is not selected
			want = append(want, id)
		}
	}
	recs := records(t, st, "results", len(want))
	assert.Equal(t, want, rc.delivered())
	for i, r := range recs {
		assert.Equal(t, want[i], r.EventID)
		assert.Equal(t, StatusDelivered, r.Status)
		assert.Equal(t, 1, r.Attempts)
		assert.Equal(t, http.StatusNoContent, r.HTTPStatus)
	}
	// The body is the stored envelope, byte for byte.
	ev, err := st.Get(context.Background(), want[0])
	require.NoError(t, err)
	assert.Equal(t, ev.Raw, rc.bodies[0])
	// Records are not delivered (they would make records of their own).
	for _, id := range rc.delivered() {
		ev, err := st.Get(context.Background(), id)
		require.NoError(t, err)
		m, _ := ev.Message()
		assert.NotEqual(t, TypeDelivery, m.Type)
	}
}

func TestDelivererRetriesWithBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, err := memstore.New(nil)
		require.NoError(t, err)
		secret := newSecret(t)
		rc := newReceiver(t, secret)
		rc.answer = func(n int, _ string) (int, http.Header) {
			if n <= 4 {
				return http.StatusServiceUnavailable, nil
			}
			return http.StatusOK, nil
		}
		d, err := NewDeliverer(st, &DelivererOptions{Egress: loopback(t), MinBackoff: time.Second, MaxBackoff: 4 * time.Second})
		require.NoError(t, err)
		inProcess(d, rc)
		require.NoError(t, d.Subscribe(t.Context(), Subscription{Name: "s", URL: "http://127.0.0.1:9/hook", Secrets: []string{secret}}))
		ids := appendEvents(t, st, 1)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()

		recs := recordsWithin(t, st, "s", 1, time.Hour)
		assert.Equal(t, Delivery{Subscription: "s", EventID: ids[0], EventSeq: 1, EventType: "x.test.event", Status: StatusDelivered, Attempts: 5, HTTPStatus: 200}, recs[0])
		// Waits: 1s, 2s, 4s, then capped at 4s, each jittered into [b/2, b].
		for i, b := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second} {
			gap := rc.times[i+1].Sub(rc.times[i])
			assert.True(t, gap >= b/2 && gap <= b, "wait %d: %v not in [%v, %v]", i+1, gap, b/2, b)
		}
		cancel()
		assert.ErrorIs(t, <-done, context.Canceled)
	})
}

func TestDelivererHonoursRetryAfterAndGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, err := memstore.New(nil)
		require.NoError(t, err)
		secret := newSecret(t)
		rc := newReceiver(t, secret)
		var first string
		rc.answer = func(n int, id string) (int, http.Header) {
			if first == "" {
				first = id
			}
			if id == first {
				return http.StatusTooManyRequests, http.Header{"Retry-After": {"30"}}
			}
			return http.StatusOK, nil
		}
		d, err := NewDeliverer(st, &DelivererOptions{Egress: loopback(t), MaxAttempts: 3, MinBackoff: time.Second, MaxBackoff: time.Minute})
		require.NoError(t, err)
		inProcess(d, rc)
		require.NoError(t, d.Subscribe(t.Context(), Subscription{Name: "s", URL: "http://127.0.0.1:9/hook", Secrets: []string{secret}}))
		ids := appendEvents(t, st, 2)
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		go func() { _ = d.Run(ctx) }()

		recs := recordsWithin(t, st, "s", 2, time.Hour)
		assert.Equal(t, StatusFailed, recs[0].Status)
		assert.Equal(t, 3, recs[0].Attempts)
		assert.Equal(t, 429, recs[0].HTTPStatus)
		require.NotNil(t, recs[0].Error)
		assert.Equal(t, protocol.CodeToolUnavailable, recs[0].Error.Code)
		assert.GreaterOrEqual(t, rc.times[1].Sub(rc.times[0]), 30*time.Second, "Retry-After is honoured")
		assert.Equal(t, StatusDelivered, recs[1].Status, "the subscription moves on after a final failure")
		assert.Equal(t, []string{ids[1]}, rc.delivered())
	})
}

func TestDelivererOneInFlightPerSubscription(t *testing.T) {
	st, err := memstore.New(nil)
	require.NoError(t, err)
	secret := newSecret(t)
	rc := newReceiver(t, secret)
	// Every event fails once first, so a deliverer that did not wait for
	// an event before the next would reorder them.
	seen := map[string]bool{}
	rc.answer = func(_ int, id string) (int, http.Header) {
		if !seen[id] {
			seen[id] = true
			return http.StatusInternalServerError, nil
		}
		return http.StatusOK, nil
	}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	d, err := NewDeliverer(st, &DelivererOptions{Egress: loopback(t), MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, d.Subscribe(context.Background(), Subscription{Name: "a", URL: srv.URL, Secrets: []string{secret}}))
	runDeliverer(t, d)
	ids := appendEvents(t, st, 20)
	records(t, st, "a", 20)
	assert.Equal(t, ids, rc.delivered())
	assert.Equal(t, 1, rc.maxIn)
}

func TestDelivererResumesAfterRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	st, err := boltstore.Open(path, nil)
	require.NoError(t, err)
	secret := newSecret(t)
	rc := newReceiver(t, secret)
	var mu sync.Mutex
	up := true
	refused := make(chan struct{}, 1<<16)
	rc.answer = func(int, string) (int, http.Header) {
		mu.Lock()
		defer mu.Unlock()
		if up {
			return http.StatusOK, nil
		}
		refused <- struct{}{}
		return http.StatusServiceUnavailable, nil
	}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	sub := Subscription{Name: "orders", URL: srv.URL, Secrets: []string{secret}}
	opts := &DelivererOptions{Egress: loopback(t), MaxAttempts: 1 << 20, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond}

	d, err := NewDeliverer(st, opts)
	require.NoError(t, err)
	require.NoError(t, d.Subscribe(context.Background(), sub))
	done := make(chan error, 1)
	go func() { done <- d.Run(context.Background()) }()
	ids := appendEvents(t, st, 5)
	records(t, st, "orders", 5)
	// The receiver goes down; more events arrive and are tried in vain.
	mu.Lock()
	up = false
	mu.Unlock()
	ids = append(ids, appendEvents(t, st, 5)...)
	for range 3 { // a few attempts fail
		<-refused
	}
	require.NoError(t, d.Close())
	require.NoError(t, <-done)
	require.NoError(t, st.Close())

	// The process restarts; the receiver is back, at a new address. The
	// old one keeps refusing: a request the closed deliverer sent may still
	// reach it late, and must not count as a delivery, since the sender
	// gave it up.
	rc2 := newReceiver(t, secret)
	srv2 := httptest.NewServer(rc2)
	defer srv2.Close()
	sub.URL = srv2.URL
	st, err = boltstore.Open(path, nil)
	require.NoError(t, err)
	defer st.Close()
	ids = append(ids, appendEvents(t, st, 3)...)
	d, err = NewDeliverer(st, opts)
	require.NoError(t, err)
	require.NoError(t, d.Subscribe(context.Background(), sub))
	runDeliverer(t, d)
	recs := records(t, st, "orders", 13)
	assert.Equal(t, ids, append(rc.delivered(), rc2.delivered()...), "every event delivered once, in order")
	for i, r := range recs {
		assert.Equal(t, ids[i], r.EventID)
		assert.Equal(t, StatusDelivered, r.Status)
		if i > 0 {
			assert.Greater(t, r.EventSeq, recs[i-1].EventSeq)
		}
	}
}

func TestSubscribeChecksURLAgainstEgress(t *testing.T) {
	st, err := memstore.New(nil)
	require.NoError(t, err)
	d, err := NewDeliverer(st, nil) // egress.Default(): loopback is refused
	require.NoError(t, err)
	defer d.Close()
	secret := newSecret(t)
	err = d.Subscribe(context.Background(), Subscription{Name: "x", URL: "http://127.0.0.1:8080/hook", Secrets: []string{secret}})
	assert.ErrorIs(t, err, egress.ErrDenied)
	err = d.Subscribe(context.Background(), Subscription{Name: "x", URL: "http://169.254.169.254/latest", Secrets: []string{secret}})
	assert.ErrorIs(t, err, egress.ErrDenied)
	err = d.Subscribe(context.Background(), Subscription{Name: "x", URL: "file:///etc/passwd", Secrets: []string{secret}})
	assert.Error(t, err)
	for _, s := range []Subscription{
		{Name: "", URL: "https://example.com", Secrets: []string{secret}},
		{Name: "a b", URL: "https://example.com", Secrets: []string{secret}},
		{Name: "a", URL: "https://example.com"},
		{Name: "a", URL: "https://example.com", Secrets: []string{"nope"}},
	} {
		assert.ErrorIs(t, d.Subscribe(context.Background(), s), ErrInvalidOptions, "%+v", s)
	}
}

// A delivery that went through just as the Deliverer stops is still
// recorded, so the next start does not send it again.
func TestDelivererRecordsTheLastDeliveryWhenStopping(t *testing.T) {
	st, err := memstore.New(nil)
	require.NoError(t, err)
	secret := newSecret(t)
	rc := newReceiver(t, secret)
	ctx, cancel := context.WithCancel(context.Background())
	rc.answer = func(int, string) (int, http.Header) {
		cancel() // the host stops while the receiver answers
		return http.StatusOK, nil
	}
	d, err := NewDeliverer(st, &DelivererOptions{Egress: loopback(t)})
	require.NoError(t, err)
	inProcess(d, rc)
	require.NoError(t, d.Subscribe(ctx, Subscription{Name: "s", URL: "http://127.0.0.1:9/", Secrets: []string{secret}}))
	ids := appendEvents(t, st, 2)
	require.ErrorIs(t, d.Run(ctx), context.Canceled)
	recs := records(t, st, "s", 1)
	assert.Equal(t, ids[0], recs[0].EventID)
	assert.Equal(t, []string{ids[0]}, rc.delivered())
}

// A destination the egress policy refuses at the dial (a name that now
// resolves to a private address, say) fails at once, without retries.
func TestDelivererDialRefusedIsFinal(t *testing.T) {
	st, err := memstore.New(nil)
	require.NoError(t, err)
	d, err := NewDeliverer(st, &DelivererOptions{MaxAttempts: 5, MinBackoff: time.Hour, MaxBackoff: time.Hour})
	require.NoError(t, err)
	k, err := parseSecret(newSecret(t))
	require.NoError(t, err)
	s := &sub{Subscription: Subscription{Name: "s", URL: "http://10.0.0.1:9/hook"}, keys: [][]byte{k}}
	ids := appendEvents(t, st, 1)
	ev, err := st.Get(context.Background(), ids[0])
	require.NoError(t, err)
	m, err := ev.Message()
	require.NoError(t, err)
	rec, ok := d.deliver(context.Background(), s, ev, m)
	require.True(t, ok)
	assert.Equal(t, StatusFailed, rec.Status)
	assert.Equal(t, 1, rec.Attempts)
	require.NotNil(t, rec.Error)
	assert.Equal(t, protocol.CodePolicyDenied, rec.Error.Code)
}
