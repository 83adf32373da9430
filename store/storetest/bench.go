package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// Bench measures a backend with the workload of the store figures: a
// ~1 KiB envelope, four indexes, dedup on. It runs
//
//   - Append/appenders=N: b.N single-message appends from N goroutines
//     (1, 2, 8, 64), each working through its own run, thread and tasks;
//   - ReadRun/raw and ReadRun/decoded: reading a 10k-event run by index
//     (20k events stored), with and without decoding each event;
//   - FollowLatency: the time from Append returning to a follower
//     receiving the event, p50 and p99.
//
// newStore must return an empty store; Bench closes it. Each figure is
// reported as a metric (events/s, µs); run with -benchmem for allocations.
// The building blocks are exported for backend-specific benchmarks.
func Bench(b *testing.B, newStore func(b *testing.B) store.Store) {
	for _, n := range []int{1, 2, 8, 64} {
		b.Run(fmt.Sprintf("Append/appenders=%d", n), func(b *testing.B) {
			s := newStore(b)
			defer s.Close()
			BenchAppend(b, s, n)
		})
	}
	for _, decode := range []bool{false, true} {
		name := map[bool]string{false: "ReadRun/raw", true: "ReadRun/decoded"}[decode]
		b.Run(name, func(b *testing.B) {
			s := newStore(b)
			defer s.Close()
			BenchReadRun(b, s, decode)
		})
	}
	b.Run("FollowLatency", func(b *testing.B) {
		s := newStore(b)
		defer s.Close()
		BenchFollowLatency(b, s)
	})
}

// BenchMessages returns n ~1 KiB envelopes for appenders goroutines:
// out[i] is the sequence of appender i, which works on its own run and
// thread and starts a new task (a new time-ordered id) every 8 events.
// Each message carries a payload {title, findings[3], citations[2]}, meta,
// trace, requires/prefers, a policy and an idempotency key, and is already
// encoded, as a message is once it has entered the system, so that the
// benchmark measures the store and not the encoder.
func BenchMessages(tb testing.TB, n, appenders int) [][]*protocol.Message {
	tb.Helper()
	ids := protocol.NewIDs(&protocol.IDOptions{Entropy: rand.NewChaCha8([32]byte{42})})
	return buildRound(tb, newBenchWorkers(ids, appenders), n)
}

func newBenchWorkers(ids *protocol.IDs, appenders int) []*Traffic {
	workers := make([]*Traffic, appenders)
	for a := range workers {
		workers[a] = NewTraffic(ids, a, benchTypes, 0)
	}
	return workers
}

// buildRound makes the next n messages of workers, round robin, so that
// ids are made in about the order they are appended, as when each message
// is created just before it is sent.
func buildRound(tb testing.TB, workers []*Traffic, n int) [][]*protocol.Message {
	out := make([][]*protocol.Message, len(workers))
	for a := range out {
		out[a] = make([]*protocol.Message, 0, n/len(workers)+1)
	}
	for i := range n {
		a := i % len(workers)
		m := workers[a].Next()
		if _, err := protocol.Encode(m); err != nil {
			tb.Fatal(err)
		}
		out[a] = append(out[a], m)
	}
	return out
}

var benchPayload = json.RawMessage(`{"title":"Market analysis complete for the Nordic payments segment","findings":["Three incumbents hold 70% of volume","Real-time rails adoption doubled in 2026","Margins compress at the low end"],"citations":["https://example.com/reports/nordic-payments-2026","https://example.com/data/rails"]}`)

var benchTypes = []protocol.Type{
	protocol.TypeTaskRequest, protocol.TypeTaskAccept, protocol.TypeTaskProgress, protocol.TypeTaskProgress,
	protocol.TypeTaskProgress, protocol.TypeToolCall, protocol.TypeToolResult, protocol.TypeTaskResult,
}

// Traffic makes benchmark messages one at a time, as an appender that
// builds each message just before it sends it: the ~1 KiB envelopes of
// BenchMessages, sent by one agent, with a new task id every len(types)
// events and a new run and thread every runEvery events (0: one run and
// thread for all of them). Messages are not encoded.
type Traffic struct {
	ids                *protocol.IDs
	types              []protocol.Type
	runEvery           int
	run, thread, agent string
	task               string
	i                  int
}

// NewTraffic returns the Traffic of appender a (one of 16 agents, by a's
// remainder), sending types in turn.
func NewTraffic(ids *protocol.IDs, a int, types []protocol.Type, runEvery int) *Traffic {
	return &Traffic{ids: ids, types: types, runEvery: runEvery, agent: fmt.Sprintf("agent:worker-%02d", a%16)}
}

// Sent is how many messages Next has made.
func (w *Traffic) Sent() int { return w.i }

// Next makes the next message.
func (w *Traffic) Next() *protocol.Message {
	if w.run == "" || (w.runEvery > 0 && w.i%w.runEvery == 0) {
		w.run, w.thread = w.ids.RunID(), w.ids.ThreadID()
	}
	if w.i%len(w.types) == 0 {
		w.task = w.ids.TaskID()
	}
	typ := w.types[w.i%len(w.types)]
	w.i++
	return &protocol.Message{
		V: protocol.Version, ID: w.ids.MessageID(), TS: protocol.Timestamp(w.ids.Now()),
		ThreadID: w.thread, RunID: w.run, TaskID: w.task,
		Trace:          &protocol.Trace{TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7"},
		From:           protocol.Participant{AgentID: w.agent, Role: "worker"},
		To:             []protocol.Participant{{AgentID: "agent:orchestrator"}},
		Type:           typ,
		Domain:         "research",
		PayloadType:    "research.summary.v1",
		SchemaRef:      "schema://clutch/research/summary@1",
		Payload:        benchPayload,
		Requires:       []string{"skill:research"},
		Prefers:        []string{"tool:browser", "domain:fintech"},
		Security:       &protocol.Security{Policy: &protocol.Policy{Sandbox: true, ToolAllowlist: []string{"mcp:browser", "mcp:files"}}},
		Attachments:    []protocol.Attachment{{Kind: "artifact_ref", Ref: "artifact:sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}},
		IdempotencyKey: w.ids.New("idem_"),
		Attempt:        1,
		Meta:           map[string]any{"framework": "langgraph", "ui_channel": "chat:research"},
	}
}

// BenchAppend appends b.N messages (see BenchMessages), one per Append
// call, from appenders goroutines, and reports events/s. The messages are
// built outside the timer in rounds of benchRound, so that the benchmark's
// own live messages do not weigh on the garbage collector; the appenders
// meet between rounds, which costs the store one short pause per round.
func BenchAppend(b *testing.B, s store.Store, appenders int) {
	ctx := context.Background()
	ids := protocol.NewIDs(&protocol.IDOptions{Entropy: rand.NewChaCha8([32]byte{42})})
	workers := newBenchWorkers(ids, appenders)
	b.ReportAllocs()
	b.ResetTimer()
	var elapsed time.Duration
	for done := 0; done < b.N; {
		n := min(benchRound, b.N-done)
		b.StopTimer()
		work := buildRound(b, workers, n)
		b.StartTimer()
		start := time.Now()
		var wg sync.WaitGroup
		for _, msgs := range work {
			wg.Go(func() {
				for _, m := range msgs {
					if _, err := s.Append(ctx, m); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		elapsed += time.Since(start)
		done += n
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
}

// benchRound is how many messages BenchAppend builds at a time.
const benchRound = 16384

// BenchReadRun stores 20k events (a 10k-event run interleaved with three
// others) and then reads the run by its index, decoding each event when
// decode is set. It reports events/s.
func BenchReadRun(b *testing.B, s store.Store, decode bool) {
	const runLen = 10_000
	ctx := context.Background()
	work := BenchMessages(b, 2*runLen, 4)
	run := work[0][0].RunID
	target := slices.Concat(work[0], work[1]) // the same run: 10k events
	for _, m := range work[1] {
		m.Reset() // re-encode under the target run
		m.RunID = run
		if _, err := protocol.Encode(m); err != nil {
			b.Fatal(err)
		}
	}
	others := slices.Concat(work[2], work[3])
	var batch []*protocol.Message
	for i := range target {
		batch = append(batch, target[i], others[i])
		if len(batch) >= 200 {
			if _, err := s.Append(ctx, batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if _, err := s.Append(ctx, batch...); err != nil {
		b.Fatal(err)
	}
	BenchRead(b, s, run, runLen, decode)
}

// BenchRead reads the events of run, already in s, by the run index once
// per iteration of b.Loop, decoding each event when decode is set; every
// read must give want events. It reports events/s.
func BenchRead(b *testing.B, s store.Store, run string, want int, decode bool) {
	ctx := context.Background()
	b.ReportAllocs()
	start := time.Now()
	reads := 0
	for b.Loop() {
		n := 0
		for ev, err := range s.Read(ctx, store.Query{RunID: run}) {
			if err != nil {
				b.Fatal(err)
			}
			if decode {
				if _, err := ev.Message(); err != nil {
					b.Fatal(err)
				}
			}
			n++
		}
		if n != want {
			b.Fatalf("read %d events of the run, want %d", n, want)
		}
		reads++
	}
	b.ReportMetric(float64(reads*want)/time.Since(start).Seconds(), "events/s")
}

// BenchFollowLatency appends b.N messages one at a time while a follower
// tails the store; each append waits until the follower has the event, so
// the figure is the wake-up latency, not queueing. It reports the latency
// from Append returning to the follower receiving the event (p50-µs,
// p99-µs; 0 when the follower had it first) and from Append being called
// (call-p50-µs, call-p99-µs).
func BenchFollowLatency(b *testing.B, s store.Store) {
	msgs := BenchMessages(b, b.N, 1)[0]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	called := make([]time.Time, len(msgs))
	returned := make([]time.Time, len(msgs))
	received := make([]time.Time, len(msgs))
	after, err := s.LastSeq(ctx)
	if err != nil {
		b.Fatal(err)
	}
	got := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		n := 0
		for ev, err := range s.Follow(ctx, store.Query{AfterSeq: after}) {
			if err != nil {
				done <- err
				return
			}
			received[ev.Seq-after-1] = time.Now()
			got <- struct{}{}
			if n++; n == len(msgs) {
				break
			}
		}
		done <- nil
	}()
	b.ReportAllocs()
	b.ResetTimer()
	for i, m := range msgs {
		called[i] = time.Now()
		if _, err := s.Append(ctx, m); err != nil {
			b.Fatal(err)
		}
		returned[i] = time.Now()
		select {
		case <-got:
		case err := <-done:
			b.Fatalf("follower ended early: %v", err)
		}
	}
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	fromReturn := make([]time.Duration, len(msgs))
	fromCall := make([]time.Duration, len(msgs))
	for i := range msgs {
		fromReturn[i] = max(0, received[i].Sub(returned[i]))
		fromCall[i] = received[i].Sub(called[i])
	}
	b.ReportMetric(percentile(fromReturn, 50), "p50-µs")
	b.ReportMetric(percentile(fromReturn, 99), "p99-µs")
	b.ReportMetric(percentile(fromCall, 50), "call-p50-µs")
	b.ReportMetric(percentile(fromCall, 99), "call-p99-µs")
}

func percentile(d []time.Duration, p int) float64 {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := (len(d)*p + 99) / 100
	return float64(d[max(0, i-1)].Nanoseconds()) / 1e3
}
