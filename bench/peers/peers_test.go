package peers

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ThreeDotsLabs/watermill"
	"github.com/ThreeDotsLabs/watermill/components/cqrs"
	"github.com/ThreeDotsLabs/watermill/components/requestreply"
	"github.com/ThreeDotsLabs/watermill/message"
	"github.com/ThreeDotsLabs/watermill/pubsub/gochannel"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/boltstore"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/clutchprotocol/clutch/store/storetest"
)

// callers is how many goroutines call each system at once.
const callers = 64

// ---- the messages, built per operation on every side ----

var eventTypes = [...]protocol.Type{protocol.TypeTaskRequest, protocol.TypeTaskAccept, protocol.TypeTaskProgress, protocol.TypeTaskResult}

// newTraffic makes one caller's events: its own runs (a new one every 256
// events) and tasks (a new one every 4 events), about 1.1 KiB each.
func newTraffic(ids *protocol.IDs, a int) *traffic {
	return &traffic{storetest.NewTraffic(ids, a, eventTypes[:], 256)}
}

type traffic struct{ *storetest.Traffic }

func (w *traffic) next() *protocol.Message { return w.Next() }

// encoded is next, encoded: the bytes a peer stores or sends.
func (w *traffic) encoded(tb testing.TB) []byte {
	raw, err := protocol.Encode(w.next())
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

var summary = schema.ResearchSummary{
	Title:     "Market analysis complete",
	Findings:  []string{"Three incumbents hold 70% of volume", "Real-time rails adoption doubled"},
	Citations: []string{"https://example.com/reports/nordic-payments-2026"},
}

// newRequest builds a task.request as the router's NewRequest does, for
// the peers that do not have one.
func newRequest(tb testing.TB, ids *protocol.IDs) (*protocol.Message, []byte) {
	m := ids.NewMessage(protocol.TypeTaskRequest, "agent:ui")
	m.PayloadType = schema.PayloadResearchQuery
	p, err := json.Marshal(schema.ResearchQuery{Query: "nordic payments"})
	if err != nil {
		tb.Fatal(err)
	}
	m.Payload = p
	m.Requires = []string{"skill:research"}
	m.Prefers = []string{"domain:fintech"}
	raw, err := protocol.Encode(m)
	if err != nil {
		tb.Fatal(err)
	}
	return m, raw
}

// ---- the driver: n operations from callers goroutines ----

var rates sync.Map // benchmark name → ops/s of its last (largest) run

// run calls op b.N times from callers goroutines (op gets its goroutine's
// index) and reports ops/s.
func run(b *testing.B, op func(g int) error) {
	var left atomic.Int64
	left.Store(int64(b.N))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for g := range callers {
		wg.Go(func() {
			for left.Add(-1) >= 0 {
				if err := op(g); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	rate := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(rate, "ops/s")
	rates.Store(b.Name(), rate)
}

func rateOf(name string) float64 {
	v, ok := rates.Load(name)
	if !ok {
		return 0
	}
	return v.(float64)
}

// ratio is one line of the summary TestMain prints.
type ratio struct{ name, clutch, peer string }

var (
	ratiosMu sync.Mutex
	ratioSet []ratio
)

// ratios records, after the sub-benchmarks of b ran, each Clutch rate to
// be set against each peer's at the end of the run (TestMain).
func ratios(b *testing.B, clutch string, peers ...string) {
	for _, p := range peers {
		addRatio(ratio{b.Name(), b.Name() + "/" + clutch, b.Name() + "/" + p})
	}
}

// addRatio records one ratio of two benchmarks, printed at the end of the
// run (TestMain) when both ran.
func addRatio(r ratio) {
	ratiosMu.Lock()
	defer ratiosMu.Unlock()
	ratioSet = append(ratioSet, r)
}

// TestMain prints the ratios of the benchmarks that ran, after them.
func TestMain(m *testing.M) {
	code := m.Run()
	ratiosMu.Lock()
	for _, r := range ratioSet {
		c, p := rateOf(r.clutch), rateOf(r.peer)
		if c > 0 && p > 0 {
			fmt.Printf("ratio %s: %s / %s = %.2f× (%.0f vs %.0f ops/s)\n", r.name,
				strings.TrimPrefix(r.clutch, r.name+"/"), strings.TrimPrefix(r.peer, r.name+"/"), c/p, c, p)
		}
	}
	ratiosMu.Unlock()
	os.Exit(code)
}

// ---- in-memory task round trip ----

// BenchmarkRoundTrip is the in-memory task round trip: the caller builds a
// task.request, the system delivers it to an agent, the agent's result
// comes back to the caller.
func BenchmarkRoundTrip(b *testing.B) {
	b.Run("clutch-memstore", func(b *testing.B) {
		st, err := memstore.New(nil)
		if err != nil {
			b.Fatal(err)
		}
		clutchRoundTrip(b, st)
	})
	b.Run("watermill-requestreply", benchWatermillRequestReply)
	b.Run("watermill-router", benchWatermillRouter)
	ratios(b, "clutch-memstore", "watermill-requestreply", "watermill-router")
}

func newRouter(tb testing.TB, st store.Store) *router.Router {
	ctx := context.Background()
	reg, err := registry.Open(ctx, st, nil)
	if err != nil {
		tb.Fatal(err)
	}
	sch, err := schema.New(nil)
	if err != nil {
		tb.Fatal(err)
	}
	r, err := router.New(st, reg, &router.Options{Validator: sch, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close(); st.Close() })
	result := &router.Result{PayloadType: schema.PayloadResearchSummary, Payload: summary}
	for i := range 2 {
		c := &protocol.AgentCard{V: protocol.Version, AgentID: fmt.Sprintf("agent:research-%d", i),
			Capabilities: []protocol.Capability{{ID: "skill:research", Tags: []string{"fintech"}}}}
		if err := r.Register(ctx, c, func(ctx context.Context, t *router.Task) (*router.Result, error) { return result, nil }); err != nil {
			tb.Fatal(err)
		}
	}
	return r
}

// clutchRoundTrip submits a task and waits for its result: the request is
// validated (envelope and payload schema), routed, every event (request,
// decision, accept, result) is appended to st, and the result is validated.
func clutchRoundTrip(b *testing.B, st store.Store) {
	r := newRouter(b, st)
	ctx := context.Background()
	run(b, func(int) error {
		req, err := r.NewRequest("agent:ui", schema.PayloadResearchQuery, schema.ResearchQuery{Query: "nordic payments"})
		if err != nil {
			return err
		}
		req.Requires = []string{"skill:research"}
		req.Prefers = []string{"domain:fintech"}
		h, err := r.Submit(ctx, req)
		if err != nil {
			return err
		}
		_, err = h.Wait(ctx)
		return err
	})
}

// taskCommand is the Watermill command: the encoded task.request.
type taskCommand struct {
	Request json.RawMessage `json:"request"`
}

type taskResult struct {
	PayloadType string                 `json:"payload_type"`
	Payload     schema.ResearchSummary `json:"payload"`
}

type watermillRR struct {
	bus     *cqrs.CommandBus
	backend *requestreply.PubSubBackend[taskResult]
	router  *message.Router
	cancel  context.CancelFunc
}

// newWatermillRR is Watermill's request/reply component as its own tests
// set it up: GoChannel, a command bus and processor, and a reply topic per
// operation.
func newWatermillRR(tb testing.TB) *watermillRR {
	logger := watermill.NopLogger{}
	pubSub := gochannel.NewGoChannel(gochannel.Config{}, logger)
	backend, err := requestreply.NewPubSubBackend[taskResult](requestreply.PubSubBackendConfig{
		Publisher: pubSub,
		SubscriberConstructor: func(requestreply.PubSubBackendSubscribeParams) (message.Subscriber, error) {
			return pubSub, nil
		},
		GenerateSubscribeTopic: func(p requestreply.PubSubBackendSubscribeParams) (string, error) {
			return "reply." + string(p.OperationID), nil
		},
		GeneratePublishTopic: func(p requestreply.PubSubBackendPublishParams) (string, error) {
			return "reply." + string(p.OperationID), nil
		},
		Logger:           logger,
		AckCommandErrors: true,
	}, requestreply.BackendPubsubJSONMarshaler[taskResult]{})
	if err != nil {
		tb.Fatal(err)
	}
	rt, err := message.NewRouter(message.RouterConfig{}, logger)
	if err != nil {
		tb.Fatal(err)
	}
	marshaler := cqrs.JSONMarshaler{}
	bus, err := cqrs.NewCommandBusWithConfig(pubSub, cqrs.CommandBusConfig{
		GeneratePublishTopic: func(cqrs.CommandBusGeneratePublishTopicParams) (string, error) { return "commands", nil },
		Marshaler:            marshaler,
		Logger:               logger,
	})
	if err != nil {
		tb.Fatal(err)
	}
	proc, err := cqrs.NewCommandProcessorWithConfig(rt, cqrs.CommandProcessorConfig{
		GenerateSubscribeTopic: func(cqrs.CommandProcessorGenerateSubscribeTopicParams) (string, error) { return "commands", nil },
		SubscriberConstructor: func(cqrs.CommandProcessorSubscriberConstructorParams) (message.Subscriber, error) {
			return pubSub, nil
		},
		Marshaler: marshaler,
		Logger:    logger,
	})
	if err != nil {
		tb.Fatal(err)
	}
	err = proc.AddHandlers(requestreply.NewCommandHandlerWithResult(
		"task", backend,
		func(ctx context.Context, cmd *taskCommand) (taskResult, error) {
			return taskResult{PayloadType: schema.PayloadResearchSummary, Payload: summary}, nil
		},
	))
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go rt.Run(ctx)
	<-rt.Running()
	w := &watermillRR{bus: bus, backend: backend, router: rt, cancel: cancel}
	tb.Cleanup(func() { cancel(); rt.Close(); pubSub.Close() })
	return w
}

func (w *watermillRR) call(ctx context.Context, raw []byte) error {
	reply, err := requestreply.SendWithReply[taskResult](ctx, w.bus, w.backend, &taskCommand{Request: raw})
	if err != nil {
		return err
	}
	if reply.Error != nil {
		return reply.Error
	}
	if reply.HandlerResult.Payload.Title == "" {
		return fmt.Errorf("empty result")
	}
	return nil
}

func benchWatermillRequestReply(b *testing.B) {
	w := newWatermillRR(b)
	ids := protocol.NewIDs(nil)
	ctx := context.Background()
	run(b, func(int) error {
		_, raw := newRequest(b, ids)
		return w.call(ctx, raw)
	})
}

// benchWatermillRouter is Watermill's bare router: each operation
// publishes one message on a GoChannel that waits for the handler's ack;
// the handler returns at once. Nothing is validated, stored or replied.
func benchWatermillRouter(b *testing.B) {
	logger := watermill.NopLogger{}
	pubSub := gochannel.NewGoChannel(gochannel.Config{BlockPublishUntilSubscriberAck: true}, logger)
	rt, err := message.NewRouter(message.RouterConfig{}, logger)
	if err != nil {
		b.Fatal(err)
	}
	rt.AddConsumerHandler("task", "tasks", pubSub, func(*message.Message) error { return nil })
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); rt.Close(); pubSub.Close() }()
	go rt.Run(ctx)
	<-rt.Running()
	ids := protocol.NewIDs(nil)
	run(b, func(int) error {
		_, raw := newRequest(b, ids)
		return pubSub.Publish("tasks", message.NewMessage(watermill.NewUUID(), raw))
	})
}

// ---- durable append ----

// BenchmarkAppend is the durable append of one ~1.1 KiB event per call
// from 64 callers, each side at two durability levels compared pairwise:
// boltstore with fsync before Append returns against JetStream file
// storage with fsync on every write (sync_always), and boltstore with
// NoSync against JetStream's default (fsync every two minutes): in both of
// those an acknowledged message can be lost with the machine.
func BenchmarkAppend(b *testing.B) {
	for _, sync := range []bool{true, false} {
		name := map[bool]string{true: "clutch-boltstore-fsync", false: "clutch-boltstore-nosync"}[sync]
		b.Run(name, func(b *testing.B) {
			s, err := boltstore.Open(filepath.Join(b.TempDir(), "events.db"), &boltstore.Options{NoSync: !sync})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ids := protocol.NewIDs(nil)
			work := make([]*traffic, callers)
			for g := range work {
				work[g] = newTraffic(ids, g)
			}
			ctx := context.Background()
			run(b, func(g int) error {
				_, err := s.Append(ctx, work[g].next())
				return err
			})
		})
	}
	for _, sync := range []bool{true, false} {
		name := map[bool]string{true: "jetstream-sync-always", false: "jetstream-default-sync"}[sync]
		b.Run(name, func(b *testing.B) {
			js := newJetStream(b, sync)
			ids := protocol.NewIDs(nil)
			work := make([]*traffic, callers)
			for g := range work {
				work[g] = newTraffic(ids, g)
			}
			ctx := context.Background()
			run(b, func(g int) error {
				m := work[g].next()
				raw, err := protocol.Encode(m)
				if err != nil {
					return err
				}
				_, err = js.js.Publish(ctx, "events."+m.RunID, raw)
				return err
			})
		})
	}
	ratios(b, "clutch-boltstore-fsync", "jetstream-sync-always")
	ratios(b, "clutch-boltstore-nosync", "jetstream-default-sync")
}

type jetStream struct {
	srv *server.Server
	nc  *nats.Conn
	js  jetstream.JetStream
}

// newJetStream starts an embedded NATS server with JetStream on file
// storage in a temporary directory, fsyncing every write when syncAlways,
// and creates the streams EVENTS (events.>) and TASKS (tasks.>).
func newJetStream(tb testing.TB, syncAlways bool) *jetStream {
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true,
		JetStream: true, StoreDir: tb.TempDir(), SyncAlways: syncAlways,
	})
	if err != nil {
		tb.Fatal(err)
	}
	go srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		tb.Fatal("nats server not ready")
	}
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		tb.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		tb.Fatal(err)
	}
	ctx := context.Background()
	for name, subj := range map[string]string{"EVENTS": "events.>", "TASKS": "tasks.>"} {
		if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subj}, Storage: jetstream.FileStorage}); err != nil {
			tb.Fatal(err)
		}
	}
	tb.Cleanup(func() { nc.Close(); srv.Shutdown(); srv.WaitForShutdown() })
	return &jetStream{srv: srv, nc: nc, js: js}
}

// ---- durable task round trip ----

// BenchmarkDurableTask is the durable task round trip from 64 callers.
// Clutch: the router on boltstore, with fsync and with NoSync; the
// request, the routing decision, the accept and the result are stored
// and both payloads validated. Each is compared with JetStream at the same
// durability. JetStream: the caller publishes the request to a
// stream and waits for the result; a worker consumes the requests and
// publishes each result to the stream; both messages are stored, with
// sync_always and with the default sync.
func BenchmarkDurableTask(b *testing.B) {
	for _, sync := range []bool{true, false} {
		name := map[bool]string{true: "clutch-boltstore-fsync", false: "clutch-boltstore-nosync"}[sync]
		b.Run(name, func(b *testing.B) {
			st, err := boltstore.Open(filepath.Join(b.TempDir(), "events.db"), &boltstore.Options{NoSync: !sync})
			if err != nil {
				b.Fatal(err)
			}
			clutchRoundTrip(b, st)
		})
	}
	for _, sync := range []bool{true, false} {
		name := map[bool]string{true: "jetstream-sync-always", false: "jetstream-default-sync"}[sync]
		b.Run(name, func(b *testing.B) { benchJetStreamTask(b, sync) })
	}
	// Each side at the same durability: fsync before the answer against
	// sync_always; no fsync against JetStream's default.
	ratios(b, "clutch-boltstore-fsync", "jetstream-sync-always")
	ratios(b, "clutch-boltstore-nosync", "jetstream-default-sync")
}

const taskHeader = "Clutch-Task"

func benchJetStreamTask(b *testing.B, syncAlways bool) {
	j := newJetStream(b, syncAlways)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopWorker := startJetStreamWorker(b, ctx, j)
	defer stopWorker()
	ids := protocol.NewIDs(nil)
	callers := make([]*jetStreamCaller, callers)
	for g := range callers {
		callers[g] = newJetStreamCaller(b, j, g)
	}
	run(b, func(g int) error { return callers[g].task(ctx, ids, b) })
}

// startJetStreamWorker consumes task requests and answers each with a
// task.result, published to the stream (on the subject the request names)
// before the request is acked.
func startJetStreamWorker(tb testing.TB, ctx context.Context, j *jetStream) func() {
	cons, err := j.js.CreateOrUpdateConsumer(ctx, "TASKS", jetstream.ConsumerConfig{
		Durable: "worker", FilterSubject: "tasks.req", AckPolicy: jetstream.AckExplicitPolicy,
	})
	if err != nil {
		tb.Fatal(err)
	}
	ids := protocol.NewIDs(nil)
	cc, err := cons.Consume(func(msg jetstream.Msg) {
		go func() {
			req, err := protocol.Decode(msg.Data())
			if err != nil {
				msg.Term()
				return
			}
			res := ids.Reply(req, protocol.TypeTaskResult, "agent:research-0")
			res.PayloadType = schema.PayloadResearchSummary
			p, _ := json.Marshal(summary)
			res.Payload = p
			raw, err := protocol.Encode(res)
			if err != nil {
				msg.Term()
				return
			}
			if _, err := j.js.Publish(ctx, msg.Headers().Get(resultHeader), raw); err != nil {
				msg.Nak()
				return
			}
			msg.Ack()
		}()
	}, jetstream.PullMaxMessages(2*callers))
	if err != nil {
		tb.Fatal(err)
	}
	return cc.Stop
}

// resultHeader names the subject a request's result is published on.
const resultHeader = "Clutch-Result-Subject"

// jetStreamCaller is one caller: its results arrive on its own subject,
// through one subscription it keeps (as a client of JetStream would).
type jetStreamCaller struct {
	j       *jetStream
	subject string
	results chan *nats.Msg
}

func newJetStreamCaller(tb testing.TB, j *jetStream, g int) *jetStreamCaller {
	c := &jetStreamCaller{j: j, subject: fmt.Sprintf("tasks.res.%d", g), results: make(chan *nats.Msg, 16)}
	sub, err := j.nc.ChanSubscribe(c.subject, c.results)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { sub.Unsubscribe() })
	return c
}

// task is one durable round trip: publish the request (stored,
// acknowledged), wait for its result (stored by the worker).
func (c *jetStreamCaller) task(ctx context.Context, ids *protocol.IDs, tb testing.TB) error {
	req, raw := newRequest(tb, ids)
	msg := nats.NewMsg("tasks.req")
	msg.Header.Set(resultHeader, c.subject)
	msg.Data = raw
	if _, err := c.j.js.PublishMsg(ctx, msg); err != nil {
		return err
	}
	select {
	case res := <-c.results:
		m, err := protocol.Decode(res.Data)
		if err != nil {
			return err
		}
		if m.Type != protocol.TypeTaskResult || m.TaskID != req.TaskID {
			return fmt.Errorf("got %s for task %s, want the result of %s", m.Type, m.TaskID, req.TaskID)
		}
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("no result for task %s in 30s", req.TaskID)
	}
}

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	ids := protocol.NewIDs(nil)
	t.Run("clutch", func(t *testing.T) {
		st, err := memstore.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		r := newRouter(t, st)
		req, err := r.NewRequest("agent:ui", schema.PayloadResearchQuery, schema.ResearchQuery{Query: "q"})
		if err != nil {
			t.Fatal(err)
		}
		req.Requires = []string{"skill:research"}
		h, err := r.Submit(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.Wait(ctx); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("watermill-requestreply", func(t *testing.T) {
		w := newWatermillRR(t)
		_, raw := newRequest(t, ids)
		if err := w.call(ctx, raw); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("jetstream", func(t *testing.T) {
		j := newJetStream(t, true)
		if _, err := j.js.Publish(ctx, "events.x", newTraffic(ids, 0).encoded(t)); err != nil {
			t.Fatal(err)
		}
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := startJetStreamWorker(t, wctx, j)
		defer stop()
		if err := newJetStreamCaller(t, j, 0).task(ctx, ids, t); err != nil {
			t.Fatal(err)
		}
	})
}
