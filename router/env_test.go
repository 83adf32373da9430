package router

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/clutchprotocol/clutch/internal/backends"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/schema"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/memstore"
	"github.com/clutchprotocol/clutch/store/storetest"
)

// TestMain starts PostgreSQL for the pgstore cases (internal/backends)
// and fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	if askChild() {
		return
	}
	os.Exit(backends.Main(m))
}

type env struct {
	t   *testing.T
	st  store.Store
	reg *registry.Registry
	sch *schema.Registry
	r   *Router
}

func newEnv(t *testing.T, opts *Options) *env {
	t.Helper()
	st, err := memstore.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return newEnvOn(t, st, opts)
}

func newEnvOn(t *testing.T, st store.Store, opts *Options) *env {
	t.Helper()
	ctx := context.Background()
	reg, err := registry.Open(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	sch, err := schema.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if opts == nil {
		opts = &Options{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Backoff == nil {
		opts.Backoff = func(int) time.Duration { return time.Millisecond }
	}
	if opts.Validator == nil {
		opts.Validator = sch
	}
	r, err := New(st, reg, opts)
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, st: st, reg: reg, sch: sch, r: r}
	t.Cleanup(func() {
		r.Close()
		checkTerminals(t, st)
	})
	return e
}

// checkTerminals fails t when a task of st has two terminal events for
// one attempt (storetest.CheckTerminals); every test's env checks it when
// the test ends. A store closed by the test is not checked.
func checkTerminals(t *testing.T, st store.Store) {
	t.Helper()
	rep, err := storetest.CheckTerminals(context.Background(), st)
	if errors.Is(err, store.ErrClosed) {
		return
	}
	if err != nil {
		t.Errorf("reading the log: %v", err)
		return
	}
	for _, p := range rep.Problems {
		t.Errorf("a task breaks \"exactly one terminal event\": %s", p)
	}
}

func card(id string, caps ...protocol.Capability) *protocol.AgentCard {
	if caps == nil {
		caps = []protocol.Capability{}
	}
	return &protocol.AgentCard{V: protocol.Version, AgentID: id, Capabilities: caps}
}

func skill(id string, tags ...string) protocol.Capability {
	return protocol.Capability{ID: id, Tags: tags}
}

func (e *env) register(c *protocol.AgentCard, h Handler) {
	e.t.Helper()
	if err := e.r.Register(context.Background(), c, h); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) request(requires ...string) *protocol.Message {
	e.t.Helper()
	m, err := e.r.NewRequest("agent:ui", "research.query.v1", schema.ResearchQuery{Query: "nordic payments"})
	if err != nil {
		e.t.Fatal(err)
	}
	m.Requires = requires
	return m
}

func (e *env) submit(m *protocol.Message) *Handle {
	e.t.Helper()
	h, err := e.r.Submit(context.Background(), m)
	if err != nil {
		e.t.Fatal(err)
	}
	return h
}

func (e *env) wait(h *Handle) (*Outcome, error) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := h.Wait(ctx)
	if out == nil {
		e.t.Fatalf("task %s did not end: %v", h.TaskID(), err)
	}
	return out, err
}

// types returns the types of the task's events, in order.
func (e *env) types(taskID string) []string {
	e.t.Helper()
	var out []string
	for ev, err := range e.st.Read(context.Background(), store.Query{TaskID: taskID}) {
		if err != nil {
			e.t.Fatal(err)
		}
		m, err := ev.Message()
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, string(m.Type))
	}
	return out
}

func summary(findings ...string) *Result {
	return &Result{PayloadType: "research.summary.v1", Payload: schema.ResearchSummary{
		Title: "done", Findings: findings, Citations: []string{"https://example.com"},
	}}
}
