package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/internal/benchcpu"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/memstore"
)

// benchStores are the stores the benchmarks run on: memstore shows the
// gateway's own cost, boltstore (fsync on) what a default host sees.
func benchStores(b *testing.B, f func(b *testing.B, st store.Store)) {
	b.Run("memstore", func(b *testing.B) {
		st, _ := memstore.New(nil)
		defer st.Close()
		f(b, st)
	})
	b.Run("boltstore", func(b *testing.B) {
		st, err := boltstore.Open(filepath.Join(b.TempDir(), "events.db"), nil)
		if err != nil {
			b.Fatal(err)
		}
		defer st.Close()
		f(b, st)
	})
}

type benchGW struct {
	st  store.Store
	r   *router.Router
	srv *httptest.Server
}

func newBenchGW(b *testing.B, st store.Store, h router.Handler) *benchGW {
	ctx := context.Background()
	reg, err := registry.Open(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	schemas, _ := schema.New(&schema.Options{Permissive: true})
	r, err := router.New(st, reg, &router.Options{Validator: schemas, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	if h != nil {
		card := &protocol.AgentCard{V: protocol.Version, AgentID: "agent:echo", Capabilities: []protocol.Capability{{ID: "skill:echo"}}}
		if err := r.Register(ctx, card, h); err != nil {
			b.Fatal(err)
		}
	}
	gw, err := New(r, &Options{Auth: testAuth(b), Logger: slog.New(slog.DiscardHandler), StreamBuffer: 4096})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(gw)
	b.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		r.Close()
	})
	return &benchGW{st: st, r: r, srv: srv}
}

// sseSeqs reads an SSE stream and calls f with each event's seq as it
// arrives, until f returns false or the stream ends.
func sseSeqs(b *testing.B, g *benchGW, query string, f func(seq uint64) bool) {
	req, _ := http.NewRequest("GET", g.srv.URL+"/v1/stream"+query, nil)
	req.Header.Set("Authorization", "Bearer "+keyAdmin)
	resp, err := g.srv.Client().Do(req)
	if err != nil {
		b.Error(err)
		return
	}
	defer resp.Body.Close()
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	var seq uint64
	for {
		line, err := r.ReadSlice('\n')
		if err != nil {
			return
		}
		switch {
		case len(line) > 4 && string(line[:4]) == "id: ":
			seq, _ = strconv.ParseUint(strings.TrimSpace(string(line[4:])), 10, 64)
		case len(line) == 1 && seq != 0:
			if !f(seq) {
				return
			}
			seq = 0
		}
	}
}

func chatMsg(g *benchGW, thread, run string) *protocol.Message {
	m := g.r.IDs().NewMessage(protocol.TypeChatMessage, "agent:admin")
	m.ThreadID, m.RunID = thread, run
	m.Payload = json.RawMessage(`{"text":"` + strings.Repeat("x", 400) + `"}`)
	return m
}

// BenchmarkAppendToSSE measures the time from an Append call to each SSE
// subscriber of the thread receiving the event, one event at a time, with
// 0, 1, 100 and 1,000 subscribers: p50-µs and p99-µs over every (event,
// subscriber); append-p50-µs and append-p99-µs, the writer's Append call
// alone, which must not grow with the number of subscribers; cpu-µs/delivery, the
// process's CPU time (every goroutine: store, streams, the in-process
// clients) per delivered (event, subscriber).
func BenchmarkAppendToSSE(b *testing.B) {
	for _, subs := range []int{0, 1, 100, 1000} {
		b.Run("subscribers="+strconv.Itoa(subs), func(b *testing.B) {
			benchStores(b, func(b *testing.B, st store.Store) {
				g := newBenchGW(b, st, nil)
				ctx := context.Background()
				start := chatMsg(g, "thr_bench", "run_bench")
				res, err := st.Append(ctx, start)
				if err != nil {
					b.Fatal(err)
				}
				base := res[0].Seq
				got := make(chan struct{}, subs)
				var mu sync.Mutex
				var lat []time.Duration
				var sent sync.Map // seq → time.Time
				var wg sync.WaitGroup
				ready := make(chan struct{}, subs)
				for range subs {
					wg.Add(1)
					go func() {
						defer wg.Done()
						var mine []time.Duration
						sseSeqs(b, g, "?thread=thr_bench&after="+itoa(base-1), func(seq uint64) bool {
							if seq == base {
								ready <- struct{}{}
								return true
							}
							if t, ok := sent.Load(seq); ok {
								mine = append(mine, time.Since(t.(time.Time)))
							}
							got <- struct{}{}
							return seq < base+uint64(b.N)
						})
						mu.Lock()
						lat = append(lat, mine...)
						mu.Unlock()
					}()
				}
				for range subs {
					<-ready
				}
				appends := make([]time.Duration, 0, b.N)
				b.ResetTimer()
				cpu := benchcpu.Process()
				for i := range b.N {
					m := chatMsg(g, "thr_bench", "run_bench")
					t0 := time.Now()
					sent.Store(base+uint64(i)+1, t0)
					if _, err := st.Append(ctx, m); err != nil {
						b.Fatal(err)
					}
					appends = append(appends, time.Since(t0))
					for range subs {
						<-got
					}
				}
				used := benchcpu.Process() - cpu
				b.StopTimer()
				wg.Wait()
				slices.Sort(appends)
				b.ReportMetric(float64(appends[len(appends)/2].Nanoseconds())/1e3, "append-p50-µs")
				b.ReportMetric(float64(appends[len(appends)*99/100].Nanoseconds())/1e3, "append-p99-µs")
				if subs > 0 && used > 0 {
					b.ReportMetric(float64(used.Nanoseconds())/float64(b.N*subs)/1e3, "cpu-µs/delivery")
				}
				slices.Sort(lat)
				if len(lat) > 0 {
					b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e3, "p50-µs")
					b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e3, "p99-µs")
				}
			})
		})
	}
}

// BenchmarkStreamReplay measures the events per second one SSE subscriber
// receives from a run of 100k stored events (the replay) while 10k more are
// appended (live), from after=0 to the last.
func BenchmarkStreamReplay(b *testing.B) {
	const stored, live = 100_000, 10_000
	st, err := boltstore.Open(filepath.Join(b.TempDir(), "events.db"), &boltstore.Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	g := newBenchGW(b, st, nil)
	ctx := context.Background()
	fill := func(n int) {
		batch := make([]*protocol.Message, 0, 100)
		for i := range n {
			batch = append(batch, chatMsg(g, "thr_replay", "run_replay"))
			if len(batch) == cap(batch) || i == n-1 {
				if _, err := st.Append(ctx, batch...); err != nil {
					b.Error(err)
					return
				}
				batch = batch[:0]
			}
		}
	}
	fill(stored)
	b.ResetTimer()
	total := 0
	start := time.Now()
	for range b.N {
		last, _ := st.LastSeq(ctx)
		want := last + live
		done := make(chan struct{})
		go func() {
			defer close(done)
			fill(live)
		}()
		n := 0
		sseSeqs(b, g, "?run=run_replay", func(seq uint64) bool {
			n++
			return seq < want
		})
		<-done
		total += n
	}
	b.StopTimer()
	b.ReportMetric(float64(total)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkSubmit compares a task submitted through the gateway (POST
// /v1/messages, until the 202) with a direct router.Submit, each followed
// by waiting for the agent to have run it; submit-µs is the submission
// alone.
func BenchmarkSubmit(b *testing.B) {
	benchStores(b, func(b *testing.B, st store.Store) {
		ran := make(chan struct{}, 1)
		g := newBenchGW(b, st, func(ctx context.Context, t *router.Task) (*router.Result, error) {
			defer func() { ran <- struct{}{} }()
			return &router.Result{Payload: json.RawMessage(`{"ok":true}`)}, nil
		})
		body := `{"type":"task.request","requires":["skill:echo"],"payload":{"q":"x"}}`
		b.Run("direct", func(b *testing.B) {
			var sub time.Duration
			for range b.N {
				t0 := time.Now()
				req, _ := g.r.NewRequest("agent:admin", "", json.RawMessage(`{"q":"x"}`))
				req.Requires = []string{"skill:echo"}
				if _, err := g.r.Submit(context.Background(), req); err != nil {
					b.Fatal(err)
				}
				sub += time.Since(t0)
				<-ran
			}
			b.ReportMetric(float64(sub.Nanoseconds())/float64(b.N)/1e3, "submit-µs")
		})
		b.Run("gateway", func(b *testing.B) {
			client := g.srv.Client()
			var sub time.Duration
			for range b.N {
				t0 := time.Now()
				req, _ := http.NewRequest("POST", g.srv.URL+"/v1/messages", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+keyAlice)
				resp, err := client.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				var acc Accepted
				json.NewDecoder(resp.Body).Decode(&acc)
				resp.Body.Close()
				if resp.StatusCode != 202 {
					b.Fatal(resp.Status)
				}
				sub += time.Since(t0)
				<-ran
			}
			b.ReportMetric(float64(sub.Nanoseconds())/float64(b.N)/1e3, "submit-µs")
		})
	})
}

// BenchmarkStreamsHeap: 500 open SSE streams of one run, 50 of which never
// read, while chat messages of 4 KiB are appended; heap-MiB is the heap
// the streams hold at the end (after a GC, over the heap before they
// opened), the bound the slow ones' byte buffers set.
func BenchmarkStreamsHeap(b *testing.B) {
	const streams, idle = 500, 50
	e := newEnv(b, &envOptions{gw: &Options{StreamBufferBytes: 1 << 20, SlowTimeout: time.Hour}})
	first := e.submit(keyAdmin, `{"type":"chat.message","payload":{"text":"start"}}`)
	runtime.GC()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	var bodies []io.Closer
	for i := range streams {
		rd, _ := e.openSSE("?run="+first.RunID, keyAdmin, nil)
		bodies = append(bodies, rd.body)
		if i < idle {
			continue
		}
		wg.Go(func() {
			for {
				if _, err := rd.next(); err != nil {
					return
				}
			}
		})
	}
	payload := json.RawMessage(`{"text":"` + strings.Repeat("x", 4<<10) + `"}`)
	b.ResetTimer()
	for b.Loop() {
		m := e.r.IDs().NewMessage(protocol.TypeChatMessage, "agent:writer")
		m.RunID, m.ThreadID = first.RunID, first.ThreadID
		m.Payload = payload
		if _, err := e.st.Append(context.Background(), m); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	runtime.GC()
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/(1<<20), "heap-MiB")
	for _, c := range bodies {
		c.Close()
	}
	wg.Wait()
}
