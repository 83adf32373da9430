package a2a

import (
	"context"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// benchTeam is a router over an in-memory store (real clock and ids) with
// an agent that answers at once, served by a Server on 127.0.0.1.
type benchTeam struct {
	r  *router.Router
	cl *a2aclient.Client
}

func newBenchTeam(b *testing.B) *benchTeam {
	ctx := context.Background()
	st, err := memstore.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	reg, err := registry.Open(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	sch, err := schema.New(nil)
	if err != nil {
		b.Fatal(err)
	}
	r, err := router.New(st, reg, &router.Options{Validator: sch, Logger: quiet, MaxAttempts: 1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close(); st.Close() })
	instant := func(ctx context.Context, t *router.Task) (*router.Result, error) {
		c, err := router.Input[Content](t)
		if err != nil {
			return nil, err
		}
		return &router.Result{Payload: Content{Text: "echo: " + c.Text}}, nil
	}
	if err := r.Register(ctx, card("agent:echo", nil, "skill:echo"), instant); err != nil {
		b.Fatal(err)
	}
	srv, err := NewServer(r, testOptions(nil))
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	b.Cleanup(hs.Close)
	return &benchTeam{r: r, cl: newSDKClient(b, hs.URL+"/agents/echo")}
}

// a2aSend is one A2A round trip: Go client → JSON-RPC over loopback →
// Server → router → agent → task.result in the store → Task back.
func (bt *benchTeam) a2aSend(b *testing.B, ctx context.Context) time.Duration {
	start := time.Now()
	res, err := bt.cl.SendMessage(ctx, &a2a.SendMessageRequest{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("hello"))})
	d := time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	if task, ok := res.(*a2a.Task); !ok || task.Status.State != a2a.TaskStateCompleted {
		b.Fatalf("answer %T", res)
	}
	return d
}

// directSubmit is the same task submitted to the router in process.
func (bt *benchTeam) directSubmit(b *testing.B, ctx context.Context) time.Duration {
	start := time.Now()
	req, err := bt.r.NewRequest(tester, PayloadContent, Content{Text: "hello"})
	if err != nil {
		b.Fatal(err)
	}
	req.To = []protocol.Participant{{AgentID: "agent:echo"}}
	h, err := bt.r.Submit(ctx, req)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := h.Wait(ctx); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// percentile returns the p-th percentile (0..1) of ds, sorted in place.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	return ds[min(int(p*float64(len(ds))), len(ds)-1)]
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }

// BenchmarkSend measures an A2A send round trip over loopback (a2a), a
// direct router submit of the same task (direct), and both interleaved in
// one loop (added: the A2A cost over the direct submit, robust to the load
// of a shared machine because both see it alike).
func BenchmarkSend(b *testing.B) {
	bt := newBenchTeam(b)
	ctx := context.Background()
	for _, mode := range []string{"a2a", "direct"} {
		b.Run(mode, func(b *testing.B) {
			ds := make([]time.Duration, 0, b.N)
			b.ReportAllocs()
			for b.Loop() {
				if mode == "a2a" {
					ds = append(ds, bt.a2aSend(b, ctx))
				} else {
					ds = append(ds, bt.directSubmit(b, ctx))
				}
			}
			b.ReportMetric(us(percentile(ds, 0.50)), "p50-us")
			b.ReportMetric(us(percentile(ds, 0.99)), "p99-us")
		})
	}
	b.Run("added", func(b *testing.B) {
		var direct, viaA2A, added []time.Duration
		b.ReportAllocs()
		for b.Loop() {
			d := bt.directSubmit(b, ctx)
			a := bt.a2aSend(b, ctx)
			direct, viaA2A, added = append(direct, d), append(viaA2A, a), append(added, a-d)
		}
		b.ReportMetric(us(percentile(direct, 0.50)), "direct-p50-us")
		b.ReportMetric(us(percentile(viaA2A, 0.50)), "a2a-p50-us")
		b.ReportMetric(us(percentile(viaA2A, 0.99)), "a2a-p99-us")
		b.ReportMetric(us(percentile(added, 0.50)), "added-p50-us")
	})
}
