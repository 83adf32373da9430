package routertest

import (
	"context"
	"encoding/json"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/clutchprotocol/clutch/store/storetest"
)

// Options configures an Env. Nil means defaults.
type Options struct {
	// Router holds router options; its IDs and Logger are replaced by the
	// Env's, a zero Backoff becomes 1 ms so retries do not slow tests, and
	// a nil Validator becomes the Env's schema registry.
	Router router.Options
	// Registry holds registry options; its IDs is replaced by the Env's.
	Registry registry.Options
	// Schemas holds schema registry options.
	Schemas *schema.Options
	// Start is the clock's first reading; 2026-01-01T00:00:00Z when zero.
	Start time.Time
	// Seed seeds the ids' random part; the same seed gives the same ids
	// for the same sequence of calls.
	Seed uint64
	// Timeout bounds Run's wait for a task; 10 s when 0.
	Timeout time.Duration
	// Store, when set, is the store of the Env in place of a memstore on
	// the Env's clock (a boltstore or pgstore, to check a behaviour on
	// every store). The Env does not close it: its opener does.
	Store store.Store
}

// Clock is a clock the test controls. It only moves with Advance or Set.
// Its Now is the func() time.Time the Env gives its id source (the clock
// of the router and the registry) and its store.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// Now returns the clock's reading.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Set sets the clock.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.now = t
	c.mu.Unlock()
}

// Env is a router over a store (in memory unless Options.Store says
// otherwise) with deterministic ids.
type Env struct {
	T        testing.TB
	Store    store.Store
	Registry *registry.Registry
	Schemas  *schema.Registry
	Router   *router.Router
	IDs      *protocol.IDs
	Clock    *Clock
	timeout  time.Duration

	mu         sync.Mutex
	onQuestion func(*protocol.Question) any
}

// New returns an Env; opts may be nil. It fails the test on any setup
// error and closes the router and store at the end of the test.
func New(t testing.TB, opts *Options) *Env {
	t.Helper()
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Second
	}
	clock := &Clock{now: o.Start}
	var seed [32]byte
	for i := range 8 {
		seed[i] = byte(o.Seed >> (8 * i))
	}
	ids := protocol.NewIDs(&protocol.IDOptions{Clock: clock.Now, Entropy: rand.NewChaCha8(seed)})
	st := o.Store
	if st == nil {
		ms, err := memstore.New(&memstore.Options{Clock: clock.Now})
		if err != nil {
			t.Fatalf("routertest: %v", err)
		}
		t.Cleanup(func() { ms.Close() })
		st = ms
	}
	regOpts := o.Registry
	regOpts.IDs = ids
	reg, err := registry.Open(context.Background(), st, &regOpts)
	if err != nil {
		t.Fatalf("routertest: %v", err)
	}
	sch, err := schema.New(o.Schemas)
	if err != nil {
		t.Fatalf("routertest: %v", err)
	}
	ro := o.Router
	ro.IDs = ids
	if ro.Logger == nil {
		ro.Logger = slog.New(slog.DiscardHandler)
	}
	if ro.Backoff == nil {
		ro.Backoff = func(int) time.Duration { return time.Millisecond }
	}
	if ro.Validator == nil {
		ro.Validator = sch
	}
	r, err := router.New(st, reg, &ro)
	if err != nil {
		t.Fatalf("routertest: %v", err)
	}
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("routertest: closing the router: %v", err)
		}
		storetest.AssertOneTerminal(t, st)
	})
	return &Env{T: t, Store: st, Registry: reg, Schemas: sch, Router: r, IDs: ids, Clock: clock, timeout: o.Timeout}
}

// Agent registers an in-process agent with the given capability ids and
// handler: Register of router.Card(agentID, capabilities...), the card it
// returns.
func (e *Env) Agent(agentID string, capabilities []string, h router.Handler) *protocol.AgentCard {
	e.T.Helper()
	card := router.Card(agentID, capabilities...)
	e.Register(card, h)
	return card
}

// Register registers an in-process agent with a full card.
func (e *Env) Register(card *protocol.AgentCard, h router.Handler) {
	e.T.Helper()
	if err := e.Router.Register(context.Background(), card, h); err != nil {
		e.T.Fatalf("routertest: registering %s: %v", card.AgentID, err)
	}
}

// Request returns a task.request from "agent:test" carrying payload as
// payloadType, requiring the given capabilities.
func (e *Env) Request(payloadType string, payload any, requires ...string) *protocol.Message {
	e.T.Helper()
	m, err := e.Router.NewRequest("agent:test", payloadType, payload)
	if err != nil {
		e.T.Fatalf("routertest: %v", err)
	}
	if len(requires) > 0 {
		m.Requires = requires
	}
	return m
}

// Run submits req and waits for its outcome. It fails the test if the task
// does not end within the Env's timeout; a task that fails is not a test
// failure: its error is returned. A task that asks (router.Task.Ask) is
// answered by the function set with OnQuestion, as many times as it asks;
// without one, Run returns the outcome of the task waiting (Question set,
// error INPUT_REQUIRED), which Answer answers.
func (e *Env) Run(req *protocol.Message) (*router.Outcome, error) {
	e.T.Helper()
	h, err := e.Router.Submit(context.Background(), req)
	if err != nil {
		e.T.Fatalf("routertest: submit: %v", err)
	}
	for {
		out, err := e.Wait(h)
		e.mu.Lock()
		f := e.onQuestion
		e.mu.Unlock()
		if out.Question == nil || f == nil {
			return out, err
		}
		h = e.Answer(out, f(out.Question))
	}
}

// OnQuestion sets how Run answers the questions of the tasks it runs: f
// gets each question and returns the value of its answer (encoded as
// JSON), given as the task's requester. Scripted answers are a function
// over q.Text or q.Index; nil stops answering.
func (e *Env) OnQuestion(f func(q *protocol.Question) any) {
	e.mu.Lock()
	e.onQuestion = f
	e.mu.Unlock()
}

// Answer answers the question a task stopped on (out.Question, from Run
// or Wait) with value, encoded as JSON, as the task's requester, and
// returns the handle of the task run on. It fails the test if the answer
// is refused; call Router.Answer to test a refusal.
func (e *Env) Answer(out *router.Outcome, value any) *router.Handle {
	e.T.Helper()
	if out == nil || out.Question == nil || out.Message == nil || len(out.Message.To) == 0 {
		e.T.Fatalf("routertest: Answer needs the outcome of a task waiting for an answer, not %+v", out)
	}
	raw, err := json.Marshal(value)
	if err != nil {
		e.T.Fatalf("routertest: encoding the answer: %v", err)
	}
	by := router.Answerer{AgentID: out.Message.To[0].AgentID} // a question goes to the requester
	h, err := e.Router.Answer(context.Background(), out.Question.ID, by, raw)
	if err != nil {
		e.T.Fatalf("routertest: answering %s: %v", out.Question.ID, err)
	}
	return h
}

// Wait waits for a submitted task, failing the test after the timeout.
func (e *Env) Wait(h *router.Handle) (*router.Outcome, error) {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
	defer cancel()
	out, err := h.Wait(ctx)
	if out == nil {
		e.T.Fatalf("routertest: task %s did not end within %s: %v", h.TaskID(), e.timeout, err)
	}
	return out, err
}

// Events returns the messages matching q, in store order.
func (e *Env) Events(q store.Query) []*protocol.Message {
	e.T.Helper()
	var out []*protocol.Message
	for ev, err := range e.Store.Read(context.Background(), q) {
		if err != nil {
			e.T.Fatalf("routertest: reading events: %v", err)
		}
		m, err := ev.Message()
		if err != nil {
			e.T.Fatalf("routertest: event %d: %v", ev.Seq, err)
		}
		out = append(out, m)
	}
	return out
}

// Await follows the events matching q, stored before the call or after,
// until one satisfies until (the first one when until is nil), and returns
// it. It follows the store's live tail (no polling) and fails the test if
// no such event comes within the Env's timeout. To wait for n events, let
// until count them.
func (e *Env) Await(q store.Query, until func(*protocol.Message) bool) *protocol.Message {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
	defer cancel()
	seen := 0
	for ev, err := range e.Store.Follow(ctx, q) {
		if err != nil {
			break
		}
		m, err := ev.Message()
		if err != nil {
			e.T.Fatalf("routertest: event %d: %v", ev.Seq, err)
		}
		seen++
		if until == nil || until(m) {
			return m
		}
	}
	e.T.Fatalf("routertest: no awaited event of %+v within %v (%d events seen)", q, e.timeout, seen)
	return nil
}

// AssertOneTerminal fails the test unless every task in the Env's store
// has exactly one terminal event per attempt that ran it, and none is
// open (storetest.AssertOneTerminal). The Env checks it when the test
// ends, after closing the router; call it earlier once every task should
// have ended.
func (e *Env) AssertOneTerminal() {
	e.T.Helper()
	storetest.AssertOneTerminal(e.T, e.Store)
}

// Count returns a condition for Await that holds at the n-th event.
func Count(n int) func(*protocol.Message) bool {
	seen := 0
	return func(*protocol.Message) bool { seen++; return seen >= n }
}

// Types returns the types of a task's events, in order.
func (e *Env) Types(taskID string) []protocol.Type {
	var out []protocol.Type
	for _, m := range e.Events(store.Query{TaskID: taskID}) {
		out = append(out, m.Type)
	}
	return out
}

// AssertTypes fails the test unless the task's events have exactly these
// types, in this order.
func (e *Env) AssertTypes(taskID string, want ...protocol.Type) {
	e.T.Helper()
	if got := e.Types(taskID); !slices.Equal(got, want) {
		e.T.Errorf("task %s events:\n got %v\nwant %v", taskID, got, want)
	}
}

// Decisions returns the routing decisions of a task, one per attempt.
func (e *Env) Decisions(taskID string) []protocol.RoutingDecision {
	e.T.Helper()
	var out []protocol.RoutingDecision
	for _, m := range e.Events(store.Query{TaskID: taskID, TypePrefix: string(protocol.TypeRoutingDecision)}) {
		d, err := protocol.DecodePayload[protocol.RoutingDecision](m)
		if err != nil {
			e.T.Fatalf("routertest: decision %s: %v", m.ID, err)
		}
		out = append(out, d)
	}
	return out
}

// AssertRoutedTo fails the test unless the task's last routing decision
// selected agentID.
func (e *Env) AssertRoutedTo(taskID, agentID string) {
	e.T.Helper()
	ds := e.Decisions(taskID)
	if len(ds) == 0 {
		e.T.Errorf("task %s was never routed (want %s)", taskID, agentID)
		return
	}
	if got := ds[len(ds)-1].Selected; got != agentID {
		e.T.Errorf("task %s routed to %s, want %s (reason: %s)", taskID, got, agentID, ds[len(ds)-1].Reason)
	}
}
