package webhook

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/auth"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router/routertest"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// BenchmarkVerify: checking the headers and signature of a 1 KiB delivery
// against one of two secrets (rotation), the work before the body is read.
func BenchmarkVerify(b *testing.B) {
	s1, s2 := newSecret(b), newSecret(b)
	k1, _ := parseSecret(s1)
	k2, _ := parseSecret(s2)
	keys := []key{{key: k1}, {key: k2, caller: 1}}
	body := []byte(`{"data":"` + strings.Repeat("x", 1000) + `"}`)
	now := time.Now()
	sig, _ := Sign(s2, "msg_2a", now, body)
	ts := strconv.FormatInt(now.Unix(), 10)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		h, err := parseHeaders("msg_2a", ts, sig)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := verify(keys, h, body, now, DefaultTolerance); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHandler: one delivery through ServeHTTP, verified, mapped and
// appended to an in-memory store as an extension event.
func BenchmarkHandler(b *testing.B) {
	env := routertest.New(b, nil)
	secret := newSecret(b)
	h, err := NewHandler(env.Router, &Mapping{TypeFrom: "/event", Types: map[string]protocol.Type{"order.note": "x.shop.note"}, Payload: "/data", Meta: map[string]string{"order": "/data/order_id"}},
		map[string]auth.Caller{secret: submitter}, nil)
	if err != nil {
		b.Fatal(err)
	}
	body := `{"event":"order.note","data":{"order_id":42,"text":"` + strings.Repeat("x", 200) + `"}}`
	now := env.Clock.Now()
	reqs := make([]*http.Request, 0, 1024)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		b.StopTimer()
		if len(reqs) == 0 {
			for range 1024 {
				i++
				reqs = append(reqs, delivery(b, secret, "evt_"+strconv.Itoa(i), now, body))
			}
		}
		req := reqs[len(reqs)-1]
		reqs = reqs[:len(reqs)-1]
		rec := httptest.NewRecorder()
		b.StartTimer()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Code, rec.Body.String())
		}
	}
}

// BenchmarkDeliveries: events delivered per second, signed, one at a time,
// to an httptest receiver on loopback that answers 204, each outcome
// recorded in an in-memory store.
func BenchmarkDeliveries(b *testing.B) {
	st, err := memstore.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	secret := newSecret(b)
	got := make(chan struct{}, 1<<16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
		got <- struct{}{}
	}))
	defer srv.Close()
	d, err := NewDeliverer(st, &DelivererOptions{Egress: loopback(b)})
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Subscribe(context.Background(), Subscription{Name: "bench", URL: srv.URL, Secrets: []string{secret}, Types: []string{"x.test."}}); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go d.Run(ctx)
	defer d.Close()
	appendEvents(b, st, b.N) // appended up front: the deliverer follows
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		<-got
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "deliveries/s")
	// Wait for the last record, so the store is quiet when the run ends.
	for ev, err := range st.Follow(ctx, store.Query{RunID: protocol.PrefixRun + "webhook:bench", AfterSeq: uint64(b.N)}) {
		if err != nil {
			b.Fatal(err)
		}
		m, _ := ev.Message()
		if dl, _ := protocol.DecodePayload[Delivery](m); dl.EventSeq == uint64(b.N) {
			break
		}
	}
}
