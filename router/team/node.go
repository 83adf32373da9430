package team

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/internal/idem"
	"github.com/clutchprotocol/clutch/store"
)

// The events routers in several processes exchange through their shared
// store (extension types, docs/protocol.md §2.6). See the package doc.
const (
	// TypeDispatch asks the process hosting the agent in "to" to run an
	// attempt of a task: sent by the router that routed it, stored with
	// the attempt's routing.decision and task.accept; the task's ids and
	// attempt, payload {"depth", "chain"}, idempotency key
	// "clutch.dispatch/<task id>/<attempt>".
	TypeDispatch protocol.Type = "x.clutch.task.dispatch"
	// TypeClaim records which process runs the attempt: sent as the agent,
	// idempotency key "clutch.claim/<task id>/<attempt>", so that the
	// store's deduplication lets exactly one claim of an attempt in.
	// Payload {"host"}.
	TypeClaim protocol.Type = "x.clutch.task.claim"
	// TypeDone carries the handler's outcome back to the routing process,
	// which stores the task's events from it: payload {"result":
	// {"payload_type", "payload", "attachments"}} or {"error": <§5.4
	// error>}; idempotency key "clutch.done/<task id>/<attempt>".
	TypeDone protocol.Type = "x.clutch.task.done"
)

// Options configures Join. Nil means defaults.
type Options struct {
	// Host names this process in its claims; "<hostname>:<pid>" when "".
	Host string
	// HeartbeatInterval is how often the node sends heartbeats for the
	// agents registered in its router, and its own; a third of the
	// registry's HeartbeatTTL when 0.
	HeartbeatInterval time.Duration
	// CheckInterval is how often a task dispatched to another process
	// checks that its agent is still online, and how often the node looks
	// for dead nodes' tasks to adopt; a quarter of the registry's
	// HeartbeatTTL when 0.
	CheckInterval time.Duration
}

// Node is a router taking part in a team spread over processes that share
// one store (see the package doc). Join makes one; Leave ends it.
type Node struct {
	r      *router.Router
	m      *router.Member
	st     store.Store // the router's store, signing as the router does
	reg    *registry.Registry
	ids    *protocol.IDs
	ro     router.Options
	log    *slog.Logger
	opts   Options
	ctx    context.Context
	cancel context.CancelFunc
	bg     sync.WaitGroup // follow, bus, heartbeats, watch
	runs   sync.WaitGroup // attempts run for other processes, adoptions

	proxies atomic.Pointer[map[string]router.Handler] // agents of other processes: their handlers (Node.handler)

	mu      sync.Mutex
	waiting map[string]chan *protocol.Message // attempt key → its done event
	sent    map[string]bool                   // attempts dispatched with their task.accept, until their proxy runs
	running map[string]*remoteRun             // task id → the attempt run here
	err     error                             // the first background failure
	changed signal                            // broadcast after each registry change applied, after a wait settles here, and after an adoption

	id     string               // this node in owner events and node heartbeats (adopt.go)
	joined time.Time            // when Join returned: nodes not heard from since count as alive from it
	seen   map[string]time.Time // node id → when its last heartbeat arrived here
	pres   store.Presence       // the store's, nil without: node heartbeats are events then (adopt.go)
	beats  map[string]string    // node id → its last beat seen here (adopt.go), under mu
	nbeat  uint64               // this node's beats so far, the data of the next one
	owned  map[string]*owned    // task id → the other node routing it, for the open tasks seen since Join
	skew   atomic.Int64         // added to the liveness clock, by tests

	cmu     sync.Mutex
	counted map[string]teamCount // what was read of runs' requests (budget.go)
}

type remoteRun struct {
	attempt int
	cancel  context.CancelCauseFunc
}

// errNodeLeft is the cancel cause of attempts stopped by Leave.
var errNodeLeft = errors.New("the node left")

// errRoutingEnded is the cancel cause of an attempt run here whose task
// the routing process ended (or moved on to a later attempt); the
// subtasks it delegated are cancelled with these words.
var errRoutingEnded = errors.New("the task ended in the process that routed it")

// Join makes r a node of the team whose processes share r's store: from
// now on
//
//   - the registry follows the other processes' registry events (it must
//     be opened with registry.Options.Shared), and every agent registered
//     elsewhere is routable in r: its attempts are dispatched to the
//     process hosting it, and r waits for the outcome;
//   - the agents registered in r send heartbeats, so that the other
//     processes see them online, and so does the node;
//   - r claims and runs the attempts other processes dispatch to its
//     agents, and adopts the tasks of dead nodes.
//
// Call it after router.New, before submitting; Leave ends it. ctx bounds
// Join itself, not the node. It fails with router.ErrInvalidOptions for a
// registry that is not Shared, and for a router in a team already.
func Join(ctx context.Context, r *router.Router, opts *Options) (*Node, error) {
	reg := r.Registry()
	if !reg.Shared() {
		return nil, coded.Wrap(router.ErrInvalidOptions, "Join needs a registry opened with registry.Options.Shared", nil)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	ttl := reg.HeartbeatTTL()
	if o.Host == "" {
		h, _ := os.Hostname()
		o.Host = h + ":" + strconv.Itoa(os.Getpid())
	}
	if o.HeartbeatInterval <= 0 {
		o.HeartbeatInterval = ttl / 3
	}
	if o.CheckInterval <= 0 {
		o.CheckInterval = ttl / 4
	}
	start, err := r.Store().LastSeq(ctx)
	if err != nil {
		return nil, fmt.Errorf("team: join: %w", err)
	}
	n := &Node{r: r, reg: reg, ids: r.IDs(), opts: o, waiting: map[string]chan *protocol.Message{}, sent: map[string]bool{}, running: map[string]*remoteRun{}, changed: newSignal(),
		id: o.Host + "/" + r.IDs().New(""), joined: time.Now(), seen: map[string]time.Time{}, owned: map[string]*owned{}, counted: map[string]teamCount{}}
	n.proxies.Store(&map[string]router.Handler{})
	n.ctx, n.cancel = context.WithCancel(context.WithoutCancel(ctx))
	m, err := r.SetTeam((*hook)(n))
	if err != nil {
		n.cancel()
		return nil, err
	}
	n.m, n.st, n.ro = m, m.Store(), m.Options()
	n.log = n.ro.Logger
	if n.pres = store.PresenceOf(r.Store()); n.pres != nil {
		n.beats = map[string]string{}
		n.pollNodes(ctx, true) // what is there already is no sign of life since the join
	}
	for _, a := range reg.List() {
		n.sync(a.ID())
	}
	n.bg.Go(func() {
		if err := reg.Follow(n.ctx, n.sync); err != nil {
			n.fail(err)
		}
	})
	n.bg.Go(n.heartbeats)
	n.bg.Go(func() { n.bus(start) })
	n.bg.Go(n.watch) // adopt.go
	return n, nil
}

// AwaitAgents waits until at least count agents that have every
// capability of requires (all agents when requires is empty) are online
// and routable here, wherever they run: the way a process that submits
// tasks waits for the team's workers to come up. It returns ctx's error
// when ctx ends first.
func (n *Node) AwaitAgents(ctx context.Context, requires []string, count int) error {
	for {
		wake := n.changed.C() // before looking: a change after the look wakes us
		online := 0
		for _, a := range n.reg.Candidates(requires) {
			if n.reg.Online(a) && (n.m.Handles(a.ID()) || n.handler(a.ID()) != nil) {
				online++
			}
		}
		if online >= count {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return fmt.Errorf("team: %d of %d agents online: %w", online, count, ctx.Err())
		}
	}
}

// Err returns the first failure of the node's background work (following
// the registry or the store), nil while there is none.
func (n *Node) Err() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.err
}

func (n *Node) fail(err error) {
	n.log.Error("team: node", "err", err)
	n.mu.Lock()
	if n.err == nil {
		n.err = err
	}
	n.mu.Unlock()
}

// Leave stops the node: heartbeats end (the other processes see this
// process's agents go offline after the TTL), attempts running here for
// other processes are cancelled and answered with a retryable
// INTERRUPTED error, and tasks this router dispatched elsewhere end their
// attempt with INTERRUPTED. It waits for all of that; the router then
// routes among its own agents only. Call it before closing the router.
func (n *Node) Leave() error {
	n.m.Leave()
	n.cancel()
	n.mu.Lock()
	for _, rr := range n.running {
		rr.cancel(errNodeLeft)
	}
	n.mu.Unlock()
	// The bus and the watcher start runs: they stop first, so no run
	// starts while runs.Wait waits (a WaitGroup must not grow from zero
	// during a Wait).
	n.bg.Wait()
	n.runs.Wait()
	n.proxies.Store(&map[string]router.Handler{})
	return nil
}

// handler is the dispatching handler of agent id when it is hosted by
// another process, nil otherwise.
func (n *Node) handler(id string) router.Handler { return (*n.proxies.Load())[id] }

// hosted reports whether agent id runs in this process: registered here
// (Local), or given a handler of its own here.
func (n *Node) hosted(id string) bool {
	if a, ok := n.reg.Get(id); ok && a.Local() {
		return true
	}
	return n.m.Handles(id)
}

// sync gives agent id a dispatching handler when it is registered but
// has no handler here, and takes it away when the agent is removed.
func (n *Node) sync(id string) {
	defer n.changed.Broadcast()
	a, ok := n.reg.Get(id)
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ctx.Err() != nil {
		return
	}
	cur := *n.proxies.Load()
	_, has := cur[id]
	switch {
	case ok && !a.Local() && !has && !n.m.Handles(id):
		next := maps.Clone(cur)
		next[id] = n.proxy(id)
		n.proxies.Store(&next)
	case !ok && has:
		next := maps.Clone(cur)
		delete(next, id)
		n.proxies.Store(&next)
	}
}

// heartbeats keeps the agents registered in this router online for the
// other processes.
func (n *Node) heartbeats() {
	t := time.NewTicker(n.opts.HeartbeatInterval)
	defer t.Stop()
	for {
		for _, a := range n.reg.List() {
			if a.Local() {
				if err := n.reg.Heartbeat(n.ctx, a.ID()); err != nil && n.ctx.Err() == nil && !errors.Is(err, registry.ErrNotFound) {
					n.log.Warn("team: node heartbeat", "agent", a.ID(), "err", err)
				}
			}
		}
		// After the agents': when the others find the node dead, its
		// agents' last heartbeats are at least as old (adopt.go).
		if err := n.nodeHeartbeat(); err != nil && n.ctx.Err() == nil {
			n.log.Warn("team: node heartbeat", "node", n.id, "err", err)
		}
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// bus follows the store from start and acts on the events of the
// processes' exchange: dispatches to agents hosted here, outcomes of
// attempts dispatched from here, and the end of tasks running here.
func (n *Node) bus(start uint64) {
	after := start
	for n.ctx.Err() == nil {
		for ev, err := range n.st.Follow(n.ctx, store.Query{AfterSeq: after}) {
			if err != nil {
				if n.ctx.Err() == nil {
					n.log.Warn("team: node follow", "err", err)
				}
				break
			}
			after = ev.Seq
			m, err := ev.Message()
			if err != nil {
				continue
			}
			n.handle(m)
		}
		select {
		case <-n.ctx.Done():
		case <-time.After(100 * time.Millisecond): // the store failed: follow again
		}
	}
}

func (n *Node) handle(m *protocol.Message) {
	n.track(m) // adopt.go
	switch m.Type {
	case TypeDispatch:
		if len(m.To) == 1 && n.hosted(m.To[0].AgentID) {
			n.stopRun(m.TaskID, m.Attempt-1) // an older attempt of it here is over
			n.runs.Go(func() { n.runRemote(m) })
		}
	case TypeDone:
		n.mu.Lock()
		ch := n.waiting[idem.Attempt(m.TaskID, m.Attempt)]
		n.mu.Unlock()
		if ch != nil {
			select {
			case ch <- m:
			default:
			}
		}
	case protocol.TypeTaskAnswer:
		// Answered, here or elsewhere: a wait of this process on that
		// question is over.
		if a, err := protocol.DecodePayload[protocol.Answer](m); err == nil {
			n.m.Settled(m.TaskID, a.QuestionID)
			n.changed.Broadcast()
		}
	case protocol.TypeTaskResult, protocol.TypeTaskError, protocol.TypeTaskCancel, protocol.TypeTaskTimeout:
		// The routing process ended the attempt (or the task): a timeout,
		// a cancel, or it gave the attempt up.
		n.stopRun(m.TaskID, m.Attempt)
		if protocol.EndsTask(m) {
			n.m.Settled(m.TaskID, "")
			n.changed.Broadcast()
		}
		// An attempt whose handler never ran (its accept was refused)
		// leaves no waiter behind.
		key := idem.Attempt(m.TaskID, m.Attempt)
		n.mu.Lock()
		if n.sent[key] {
			delete(n.sent, key)
			delete(n.waiting, key)
		}
		n.mu.Unlock()
	}
}

// stopRun cancels the attempt of task running here if it is attempt
// upTo or older: the task ended, or moved on to a later attempt.
func (n *Node) stopRun(task string, upTo int) {
	n.mu.Lock()
	rr := n.running[task]
	n.mu.Unlock()
	if rr != nil && rr.attempt <= upTo {
		rr.cancel(errRoutingEnded)
	}
}

type dispatchPayload struct {
	Depth int      `json:"depth"`
	Chain []string `json:"chain"`
}

type donePayload struct {
	Result *doneResult            `json:"result,omitempty"`
	Error  *protocol.ErrorPayload `json:"error,omitempty"`
}

type doneResult struct {
	PayloadType string                `json:"payload_type,omitempty"`
	Payload     json.RawMessage       `json:"payload,omitempty"`
	Attachments []protocol.Attachment `json:"attachments,omitempty"`
}

// proxy is the handler of an agent hosted by another process: it waits
// for the outcome of the attempt the router dispatched (hook.Dispatch),
// for the attempt's context to end, or for the agent to go offline (its
// process died: the attempt ends with INTERRUPTED, retried when
// Options.Recovery is RecoverRedispatch).
func (n *Node) proxy(agentID string) router.Handler {
	return func(ctx context.Context, t *router.Task) (*router.Result, error) {
		key := idem.Attempt(t.ID(), t.Attempt())
		n.mu.Lock()
		ch := n.waiting[key] // the dispatch went with the task.accept
		dispatched := n.sent[key]
		delete(n.sent, key)
		n.mu.Unlock()
		defer n.unwait(key)
		if !dispatched || ch == nil {
			// Routed before the agent became another process's: the
			// next attempt dispatches it.
			return nil, &protocol.ErrorPayload{Code: protocol.CodeInterrupted, Retryable: true,
				Message: "agent " + agentID + " moved to another process before the attempt was sent there"}
		}
		tick := time.NewTicker(n.opts.CheckInterval)
		defer tick.Stop()
		for {
			select {
			case m := <-ch:
				res, ep := decodeDone(m)
				if qid, ok := askedIn(ep); ok {
					return nil, n.m.Wait(ctx, t, qid) // the task waits here for the answer
				}
				if ep != nil {
					return nil, ep
				}
				return res, nil
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-n.ctx.Done():
				return nil, n.interrupted(agentID, "this process left the team")
			case <-tick.C:
				if !n.agentOnline(agentID) {
					return nil, n.interrupted(agentID, "its process stopped sending heartbeats")
				}
			}
		}
	}
}

// dispatch returns the dispatch event of attempt t, and registers the
// attempt for its outcome before it can be stored; nil when t's agent
// runs here.
func (n *Node) dispatch(t router.TeamTask) *protocol.Message {
	if n.handler(t.Agent) == nil || n.m.Handles(t.Agent) {
		return nil
	}
	key := idem.Attempt(t.Request.TaskID, t.Attempt)
	n.mu.Lock()
	n.waiting[key] = make(chan *protocol.Message, 1)
	n.sent[key] = true
	n.mu.Unlock()
	d := n.ids.Reply(t.Request, TypeDispatch, n.ro.AgentID)
	d.Attempt = t.Attempt
	if t.Trace != t.Request.Trace {
		d.Trace = t.Trace
	}
	d.To[0].AgentID = t.Agent // Reply's one recipient, readdressed
	d.IdempotencyKey = idem.Dispatch(t.Request.TaskID, t.Attempt)
	chain := t.Chain
	if chain == nil {
		chain = []string{}
	}
	setPayload(d, dispatchPayload{Depth: t.Depth, Chain: chain})
	return d
}

func (n *Node) interrupted(agentID, why string) *protocol.ErrorPayload {
	return &protocol.ErrorPayload{
		Code:      protocol.CodeInterrupted,
		Message:   "agent " + agentID + " went away while running the task: " + why,
		Retryable: n.ro.Recovery == router.RecoverRedispatch,
		Details:   map[string]any{"agent": agentID},
	}
}

func (n *Node) agentOnline(id string) bool {
	a, ok := n.reg.Get(id)
	return ok && n.reg.Online(a)
}

func (n *Node) unwait(key string) {
	n.mu.Lock()
	delete(n.waiting, key)
	n.mu.Unlock()
}

// askedIn reports whether ep is the outcome of an attempt that asked a
// question (Member.Execute) and returns the question's id.
func askedIn(ep *protocol.ErrorPayload) (string, bool) {
	if ep == nil || ep.Code != protocol.CodeInputRequired {
		return "", false
	}
	qid, ok := ep.Details["question_id"].(string)
	return qid, ok && qid != ""
}

// decodeDone reads the outcome a done event carries: a result, or a
// wire error (one of its own when the event is unreadable).
func decodeDone(m *protocol.Message) (*router.Result, *protocol.ErrorPayload) {
	var p donePayload
	if err := json.Unmarshal(m.Payload, &p); err != nil {
		return nil, &protocol.ErrorPayload{Code: protocol.CodeInternal, Message: "an unreadable outcome from the hosting process: " + err.Error(), Retryable: true}
	}
	switch {
	case p.Error != nil:
		return nil, p.Error
	case p.Result != nil:
		res := &router.Result{PayloadType: p.Result.PayloadType, Attachments: p.Result.Attachments}
		if len(p.Result.Payload) > 0 {
			res.Payload = p.Result.Payload
		}
		return res, nil
	}
	return nil, &protocol.ErrorPayload{Code: protocol.CodeInternal, Message: "an empty outcome from the hosting process", Retryable: true}
}

// setPayload sets the payload of one of the team's own events, which
// always encode.
func setPayload(m *protocol.Message, v any) {
	if err := m.SetPayload(v); err != nil {
		panic(fmt.Sprintf("team: encoding %s payload: %v", m.Type, err))
	}
}

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
