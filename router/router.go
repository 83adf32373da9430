package router

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/store"
)

// Handler runs the tasks routed to one agent. It reads the request from t,
// may report progress and delegate subtasks through t, and returns the
// result, or an error: a *protocol.ErrorPayload (see Fail) reaches the
// task.error event as it is; any other error is coded with
// protocol.CodeOf. ctx ends when the task is cancelled or passes the
// agent's max_runtime_sec.
type Handler func(ctx context.Context, t *Task) (*Result, error)

// Middleware wraps a Handler with behaviour of its own — logging, timing,
// tracing, metrics, a policy check — the way net/http middleware wraps an
// http.Handler. It is installed through Options.Middleware and wraps
// every handler registered with the router (Register and Attach), once,
// when the handler is registered. A middleware may call next (usually
// once), read the Task, change the result or the error, or return without
// calling next: its error then ends the task's attempt like a handler's
// own (a task.error; retried when retryable).
type Middleware func(next Handler) Handler

// Result is what a handler returns on success: the payload of the
// task.result event and its structured contract (docs/protocol.md §3).
type Result struct {
	// PayloadType names the payload's schema ("research.summary.v1"); the
	// result is validated against it. "" sends an untyped result.
	PayloadType string
	// Payload is encoded as JSON; a json.RawMessage or []byte is taken as
	// it is.
	Payload any
	// Attachments reference artifacts (docs/protocol.md §8.2).
	Attachments []protocol.Attachment
}

// Router matches task requests to agents, runs them and records every step
// as an event (docs/protocol.md §2, §4, §5). It is safe for concurrent use.
type Router struct {
	st   store.Store
	cond store.Conditional // st's upgrade, nil when it has none (submitnow.go)
	reg  *registry.Registry
	opts Options
	ids  *protocol.IDs

	hmu      sync.Mutex                         // serialises changes to handlers
	handlers atomic.Pointer[map[string]Handler] // read-only, replaced on change: every routing reads it

	mu       sync.Mutex
	tasks    map[string]*taskState   // claimed and running tasks, by task id (see claim)
	stale    map[*taskState]bool     // ended tasks replaced in tasks whose goroutine still runs
	runs     map[string]*runState    // runs with running tasks
	asking   map[string]*waitingTask // tasks waiting for an answer, by task id (ask.go)
	storing  map[string]int          // ids of requests being stored by Submit, and how many (submitNow)
	deciding map[string]bool         // ids of requests stored with their decision by Submit now (submitNow)
	closed   bool
	inFlight int           // claims and tasks whose goroutine runs (Options.MaxInFlight)
	live     int           // goroutines of the router: task goroutines and goOnCancel's
	drained  chan struct{} // closed when live drops to 0, made by Shutdown

	claims       signal       // broadcast when a claim waited on settles
	claimWaiters atomic.Int32 // callers waiting in follow

	pool *workers[*taskState] // the goroutines tasks run on

	team atomic.Pointer[teamHook] // the Team plugged in with SetTeam, nil for none (team.go)

	matches sync.Pool     // *match, see newMatch
	rr      atomic.Uint64 // round-robin counter
	waiting atomic.Int64  // tasks waiting for capacity
	slots   signal        // broadcast when a slot frees up
}

type runState struct {
	tasks int // tasks of the run counted for the budget
	open  int // tasks of the run running now
}

// New returns a router over a store and an agent registry. opts may be
// nil; set Options.Validator to have payloads checked against their
// schemas.
func New(st store.Store, reg *registry.Registry, opts *Options) (*Router, error) {
	if st == nil || reg == nil {
		return nil, wrap(ErrInvalidOptions, "store and registry are required", nil)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.IDs == nil {
		o.IDs = reg.IDs()
	}
	if err := o.setDefaults(); err != nil {
		return nil, err
	}
	r := &Router{
		st: st, reg: reg, opts: o, ids: o.IDs,
		tasks:    map[string]*taskState{},
		stale:    map[*taskState]bool{},
		runs:     map[string]*runState{},
		asking:   map[string]*waitingTask{},
		storing:  map[string]int{},
		deciding: map[string]bool{},
		slots:    newSignal(),
		claims:   newSignal(),
	}
	if len(o.Signers) > 0 {
		r.st = &signingStore{Store: st, signers: o.Signers} // verify.go
	}
	r.cond, _ = r.st.(store.Conditional) // on the store itself: see store.Conditional
	r.handlers.Store(&map[string]Handler{})
	r.pool = newWorkers(workerIdle, r.run)
	return r, nil
}

// Store returns the store the router records events in.
func (r *Router) Store() store.Store {
	if s, ok := r.st.(*signingStore); ok {
		return s.Store
	}
	return r.st
}

// Registry returns the agent registry the router routes with.
func (r *Router) Registry() *registry.Registry { return r.reg }

// Validator returns Options.Validator, which the router validates payloads
// with; nil when payloads are not checked. schema.RegistryOf gives the
// schema registry behind it, for packages that register their payload
// types.
func (r *Router) Validator() Validator { return r.opts.Validator }

// IDs returns the router's id source, which is also its clock (see the
// package doc, "Clock").
func (r *Router) IDs() *protocol.IDs { return r.ids }

// Register registers an in-process agent: its card goes to the registry
// (an agent.register event, registered Local so it needs no heartbeats)
// and h runs the tasks routed to it. Registering the same agent id again
// replaces card and handler; the same card again (a process registering
// its agents at every start) stores nothing new (registry.Register). An
// empty card.V means protocol.Version. [Card] builds the card of an agent
// that needs only capability ids:
//
//	err := r.Register(ctx, router.Card("agent:ken", "skill:research"), handler)
func (r *Router) Register(ctx context.Context, card *protocol.AgentCard, h Handler) error {
	if h == nil {
		return wrap(ErrInvalidOptions, "nil handler", nil)
	}
	if card == nil {
		return wrap(ErrInvalidOptions, "nil card", nil)
	}
	if card.AgentID == r.opts.AgentID {
		return wrap(ErrInvalidOptions, card.AgentID+" is the router's own id", nil)
	}
	if err := r.checkSigner(card); err != nil {
		return err
	}
	r.setHandler(card.AgentID, h)
	if err := r.reg.Register(ctx, card, &registry.RegisterOptions{Local: true}); err != nil {
		r.setHandler(card.AgentID, nil)
		return err
	}
	return nil
}

// Card returns the card of an agent with the given capability ids and
// nothing else, for [Router.Register]. Add to it (Display, Limits, tags)
// or write an AgentCard literal when the agent needs more.
func Card(agentID string, capabilities ...string) *protocol.AgentCard {
	card := &protocol.AgentCard{V: protocol.Version, AgentID: agentID, Capabilities: make([]protocol.Capability, 0, len(capabilities))}
	for _, c := range capabilities {
		card.Capabilities = append(card.Capabilities, protocol.Capability{ID: c})
	}
	return card
}

// Attach sets the handler of an agent that is registered in the registry
// by someone else (an adapter forwarding to a remote agent, say), without
// writing a registry event.
func (r *Router) Attach(agentID string, h Handler) error {
	if h == nil {
		return wrap(ErrInvalidOptions, "nil handler", nil)
	}
	r.setHandler(agentID, h)
	return nil
}

// setHandler sets (h ≠ nil) or removes the handler of agent id.
func (r *Router) setHandler(id string, h Handler) {
	r.hmu.Lock()
	defer r.hmu.Unlock()
	next := maps.Clone(r.handlerMap())
	if h != nil {
		mw := r.opts.Middleware
		for i := len(mw) - 1; i >= 0; i-- { // the first is the outermost
			h = mw[i](h)
		}
		next[id] = h
	} else {
		delete(next, id)
	}
	r.handlers.Store(&next)
}

func (r *Router) handlerMap() map[string]Handler { return *r.handlers.Load() }

// handler returns the handler of agent id: its own, else, in a team, the
// team's for an agent of another process.
func (r *Router) handler(id string) Handler {
	if h := r.handlerMap()[id]; h != nil {
		return h
	}
	return r.teamHandler(id)
}

// teamHandler is the team's handler of agent id, nil without a team.
func (r *Router) teamHandler(id string) Handler {
	if t := r.team.Load(); t != nil {
		return t.team.Handler(id)
	}
	return nil
}

// NewRequest returns a task.request from "from" with a new run, thread and
// task, ids and timestamp from the router's id source, addressed to the
// router, carrying payload (encoded as JSON) under payloadType. Set
// Requires, Prefers, Domain or To on it before Submit. A payloadType that
// is not of the form <domain>.<name>.v<N> is refused at once with
// ErrInvalidRequest (INVALID_FIELD); "" makes an untyped request.
func (r *Router) NewRequest(from, payloadType string, payload any) (*protocol.Message, error) {
	if err := checkPayloadType(payloadType); err != nil {
		return nil, err
	}
	m := r.ids.NewMessage(protocol.TypeTaskRequest, from)
	m.To = []protocol.Participant{{AgentID: r.opts.AgentID}}
	m.PayloadType = payloadType
	if pt := protocol.SchemaRefFor(payloadType); pt != "" {
		m.SchemaRef = pt
	}
	if err := m.SetPayload(payload); err != nil {
		return nil, err
	}
	return m, nil
}

// Submit validates the task.request req, stores it and starts routing
// it; it returns once the request is stored. A payload that
// Options.Validator refuses (one that does not meet the schema of its
// payload_type, or its workflow step) is refused with ErrInvalidPayload
// (VALIDATION, wrapping the validator's error): the request is not stored
// and nothing runs. The returned handle waits for the task's
// outcome or cancels it. ctx bounds only the submission: the task lives on
// (cancel it through the handle).
//
// A request that came from outside — decoded from bytes, or signed — is
// first checked against the registry's signature policy (see Verify and
// "Signatures" in the package doc); a refused request is not stored.
//
// A request that is already stored (same id, or same run_id and
// idempotency_key: docs/protocol.md §5.2) is not run again: the handle follows the
// task that request started, or holds its stored outcome. Dedup comes
// before validity: a redelivery of a running task's request with a new id
// follows it; another request for a running task id fails with
// ErrInvalidRequest. Dedup is the sender's own: a request that duplicates
// another sender's (from.agent_id) fails with ErrInvalidRequest, so a
// duplicate is never answered with somebody else's task. A request with a
// parent_task_id of a task not running here (a chain that starts outside)
// counts its stored ancestors toward Budget.MaxDepth. When the router holds Options.MaxInFlight tasks, a
// new task fails at once with ErrCapacity (CAPACITY, retryable); after
// Shutdown, Submit fails with ErrClosed.
func (r *Router) Submit(ctx context.Context, req *protocol.Message) (*Handle, error) {
	return r.submit(ctx, req, nil)
}

func (r *Router) submit(ctx context.Context, req *protocol.Message, parent *taskState) (*Handle, error) {
	if req == nil || req.Type != protocol.TypeTaskRequest {
		return nil, wrap(ErrInvalidRequest, "want a task.request", nil)
	}
	if err := r.verifyInbound(req, parent); err != nil { // verify.go
		return nil, err
	}
	// Validated and encoded once here; the store then takes the bytes.
	if _, err := protocol.Encode(req); err != nil {
		return nil, wrap(ErrInvalidRequest, "", err)
	}
	// The payload is checked before anything is stored: a refused request
	// leaves no event and runs nothing.
	if err := r.validate(req); err != nil {
		detail := req.PayloadType // a validator's error that does not name it
		if strings.Contains(err.Error(), req.PayloadType) {
			detail = "" // package schema's errors name it: once is enough
		}
		return nil, wrap(ErrInvalidPayload, detail, err)
	}
	depth := 0
	if parent == nil && req.ParentTaskID != "" {
		// A chain that starts outside: the depth budget counts the stored
		// ancestors too (docs/protocol.md §6.7).
		d, err := r.storedDepth(ctx, req.ParentTaskID)
		if err != nil {
			return nil, err
		}
		depth = d
	}
	for {
		ts, old, err := r.claim(ctx, req, parent, claimSubmit)
		if err != nil {
			return nil, err
		}
		if parent == nil && ts != nil {
			ts.depth = depth
		}
		if old != nil {
			// Dedup first, then validity (docs/protocol.md §5.2): a
			// redelivery of the task's request — the same id, or the
			// same run_id and idempotency_key — follows the task; any
			// other request for a running task id is refused.
			if !sameRequest(old.req, req) {
				return nil, wrap(ErrInvalidRequest, "task "+req.TaskID+" is already running", nil)
			}
			if old.req.From.AgentID != req.From.AgentID {
				return nil, otherSender(req)
			}
			h, err := r.follow(ctx, old)
			if err != nil || h != nil {
				return h, err
			}
			continue // the claim came to nothing: claim again
		}
		if h, ok, err := r.submitNow(ctx, ts); ok {
			return h, err
		}
		if ts.behind {
			if err := r.waitDecided(ctx, req.ID); err != nil {
				r.unclaim(ts, claimDropped)
				return nil, err
			}
		}
		res, err := r.storeRequest(ctx, ts) // with its owner event in a team (team.go)
		if err != nil {
			r.unclaim(ts, claimDropped)
			return nil, fmt.Errorf("router: storing the request: %w", err)
		}
		if res[0].Duplicate {
			// Stored before, maybe under another task id (§5.2): follow
			// the task of the stored request.
			r.unclaim(ts, claimDropped)
			return r.redelivered(ctx, req, res[0].Seq)
		}
		ts.reqSeq = res[0].Seq
		return r.start(ts, req.Attempt), nil
	}
}

// otherSender is the refusal of a request that duplicates a stored or
// running request of another sender (the same id, or the same run_id and
// idempotency_key): a duplicate is only answered to the sender of the
// original (docs/protocol.md §5.2, §6.7).
func otherSender(req *protocol.Message) error {
	return wrap(ErrInvalidRequest, "the request duplicates one that "+req.From.AgentID+" did not send (same id, or same run_id and idempotency_key)", nil)
}

// storedDepth is the delegation depth of a new subtask of the task
// parentID: one more than the number of task.requests on the stored
// parent_task_id chain above it, read from the store up to one past
// Budget.MaxDepth. A parent running here gives its depth at once.
func (r *Router) storedDepth(ctx context.Context, parentID string) (int, error) {
	r.mu.Lock()
	p := r.tasks[parentID]
	r.mu.Unlock()
	if p != nil {
		return p.depth + 1, nil
	}
	depth, max := 0, r.opts.Budget.MaxDepth
	for id := parentID; id != "" && depth <= max; depth++ {
		var next string
		for ev, err := range r.st.Read(ctx, store.Query{TaskID: id, TypePrefix: string(protocol.TypeTaskRequest), Limit: 1}) {
			if err != nil {
				return 0, err
			}
			m, err := ev.Message()
			if err != nil {
				return 0, err
			}
			next = m.ParentTaskID
		}
		id = next
	}
	return depth, nil
}

// sameRequest reports whether b is a redelivery of the task.request a
// (docs/protocol.md §5.2): the same id, or the same run_id and
// idempotency_key.
func sameRequest(a, b *protocol.Message) bool {
	return a.ID == b.ID || (a.IdempotencyKey != "" && a.IdempotencyKey == b.IdempotencyKey && a.RunID == b.RunID)
}

// start runs a claimed task whose request is stored, as attempt attempt.
func (r *Router) start(ts *taskState, attempt int) *Handle {
	ts.attempt.Store(int32(attempt))
	r.mu.Lock()
	r.storedLocked(ts)
	if r.closed {
		// Closed between the claim and now: the request is stored, so the
		// task ends here, with the event Close gives running tasks.
		r.mu.Unlock()
		ep := &protocol.ErrorPayload{Code: protocol.CodeInterrupted, Message: "the router closed before the task started", Retryable: true}
		r.end(ts, Outcome{Err: ep}, r.errorEvent(ts, r.opts.AgentID, ep))
		r.unclaim(ts, claimTask)
		return &ts.handle
	}
	rs := r.runs[ts.req.RunID]
	if rs == nil {
		rs = &ts.ownRun
		r.runs[ts.req.RunID] = rs
	}
	if r.opts.Budget.MaxTasks > 0 {
		if t := r.team.Load(); t != nil {
			ts.counter = t.team // counted by the team, on the task's goroutine (run)
		}
	}
	ts.budgetErr = r.checkBudget(rs, ts)
	rs.tasks++
	rs.open++
	r.launchLocked(ts)
	return &ts.handle
}

// launchLocked starts the goroutine of a claimed task whose request is
// stored and whose run counts it; r.mu is held, and unlocked on return.
func (r *Router) launchLocked(ts *taskState) {
	if parent := ts.parent; parent != nil {
		parent.children = append(parent.children, ts)
	}
	ts.started = true
	r.live++
	r.mu.Unlock()
	r.settle(ts, claimTask)

	r.pool.run(ts)
}

// checkBudget applies the run budget; r.mu is held. In a team,
// Budget.MaxTasks is applied by the task's goroutine instead (teamBudget).
func (r *Router) checkBudget(rs *runState, ts *taskState) *protocol.ErrorPayload {
	b := r.opts.Budget
	if b.MaxDepth > 0 && ts.depth > b.MaxDepth {
		return &protocol.ErrorPayload{Code: protocol.CodeBudget, Message: fmt.Sprintf("delegation depth %d exceeds the run's budget of %d", ts.depth, b.MaxDepth),
			Details: map[string]any{"max_depth": b.MaxDepth, "depth": ts.depth}}
	}
	if b.MaxTasks > 0 && ts.counter == nil && rs.tasks >= b.MaxTasks {
		return tasksBudgetError(b.MaxTasks)
	}
	return nil
}

// tasksBudgetError is the error of a task past the run's Budget.MaxTasks.
func tasksBudgetError(max int) *protocol.ErrorPayload {
	return &protocol.ErrorPayload{Code: protocol.CodeBudget, Message: fmt.Sprintf("the run already has %d tasks, its budget", max),
		Details: map[string]any{"max_tasks": max}}
}

// redelivered handles a request the store already holds, as the event at
// seq (docs/protocol.md §5.1: at-least-once delivery, dedup by the
// receiver).
func (r *Router) redelivered(ctx context.Context, req *protocol.Message, seq uint64) (*Handle, error) {
	stored, err := r.eventAt(ctx, seq)
	if err != nil {
		return nil, err
	}
	orig, err := stored.Message()
	if err != nil {
		return nil, fmt.Errorf("router: reading the stored request: %w", err)
	}
	if orig.Type != protocol.TypeTaskRequest {
		return nil, wrap(ErrInvalidRequest, "the request duplicates stored event "+orig.ID+", a "+string(orig.Type), nil)
	}
	if orig.From.AgentID != req.From.AgentID {
		return nil, otherSender(req)
	}
	h, _, err := r.recoverStored(ctx, orig)
	return h, err
}

func (r *Router) eventAt(ctx context.Context, seq uint64) (store.Event, error) {
	for ev, err := range r.st.Read(ctx, store.Query{AfterSeq: seq - 1, Limit: 1}) {
		return ev, err
	}
	return store.Event{}, wrap(ErrUnknownTask, fmt.Sprintf("no event %d", seq), nil)
}

var errRouterClosed = errors.New("router closed")

// signal is a broadcast: wait on C(), Broadcast wakes every waiter.
type signal struct {
	mu sync.Mutex
	ch chan struct{}
}

func newSignal() signal { return signal{ch: make(chan struct{})} }

func (s *signal) C() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ch
}

func (s *signal) Broadcast() {
	s.mu.Lock()
	close(s.ch)
	s.ch = make(chan struct{})
	s.mu.Unlock()
}

// now is the router clock.
func (r *Router) now() time.Time { return r.ids.Now() }

func parentRunCtx(parent *taskState) context.Context {
	if parent == nil {
		return nil
	}
	if p := parent.runCtx.Load(); p != nil {
		return *p
	}
	return nil
}

// checkPayloadType refuses a payload type that is not "" and not of the
// form <domain>.<name>.v<N>.
func checkPayloadType(pt string) error {
	if pt != "" && !protocol.ValidPayloadType(pt) {
		return wrap(ErrInvalidRequest, "payload_type "+strconv.Quote(pt)+" is not of the form <domain>.<name>.v<N>", nil)
	}
	return nil
}
