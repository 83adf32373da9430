package router

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/registry"
	"github.com/clutchprotocol/clutch/router/internal/idem"
	"github.com/clutchprotocol/clutch/store"
)

// The events routers in several processes exchange through their shared
// store (extension types, docs/protocol.md §2.6). See "Many processes" in
// the package doc.
const (
	// TypeDispatch asks the process hosting the agent in "to" to run an
	// attempt of a task: sent by the router that routed it, stored with
	// the attempt's routing.decision and task.accept; the task's ids and
	// attempt, payload {"depth", "chain"}.
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

// NodeOptions configures Join. Nil means defaults.
type NodeOptions struct {
	// Host names this process in its claims; "<hostname>:<pid>" when "".
	Host string
	// HeartbeatInterval is how often the node sends heartbeats for the
	// agents registered in this router; a third of the registry's
	// HeartbeatTTL when 0.
	HeartbeatInterval time.Duration
	// CheckInterval is how often a task dispatched to another process
	// checks that its agent is still online; a quarter of the registry's
	// HeartbeatTTL when 0.
	CheckInterval time.Duration
}

// Node is a router taking part in a team spread over processes that share
// one store (see "Many processes" in the package doc). Join makes one;
// Leave ends it.
type Node struct {
	r      *Router
	opts   NodeOptions
	ctx    context.Context
	cancel context.CancelFunc
	bg     sync.WaitGroup // follow, bus, heartbeats
	runs   sync.WaitGroup // attempts run for other processes

	mu      sync.Mutex
	proxied map[string]bool                   // agents routed to other processes
	waiting map[string]chan *protocol.Message // attempt key → its done event
	sent    map[string]bool                   // attempts dispatched with their task.accept, until their proxy runs
	running map[string]*remoteRun             // task id → the attempt run here
	err     error                             // the first background failure
	changed signal                            // broadcast after each registry change applied

	id     string               // this node in owner events and node heartbeats (adopt.go)
	joined time.Time            // when Join returned: nodes not heard from since count as alive from it
	seen   map[string]time.Time // node id → when its last heartbeat arrived here
	owned  map[string]*owned    // task id → the other node routing it, for the open tasks seen since Join
	skew   atomic.Int64         // added to the liveness clock, by tests
}

type remoteRun struct {
	attempt int
	ts      *taskState
}

// errNodeLeft is the cancel cause of attempts stopped by Leave.
var errNodeLeft = errors.New("the node left")

// Join makes r a node of the team whose processes share r's store: from
// now on
//
//   - the registry follows the other processes' registry events (it must
//     be opened with registry.Options.Shared), and every agent registered
//     elsewhere gets a handler in r that dispatches its tasks to the
//     process hosting it and waits for the outcome;
//   - the agents registered in r send heartbeats, so that the other
//     processes see them online;
//   - r claims and runs the attempts other processes dispatch to its
//     agents.
//
// Call it after New, before submitting; Leave ends it. ctx bounds Join
// itself, not the node.
func (r *Router) Join(ctx context.Context, opts *NodeOptions) (*Node, error) {
	if !r.reg.Shared() {
		return nil, wrap(ErrInvalidOptions, "Join needs a registry opened with registry.Options.Shared", nil)
	}
	var o NodeOptions
	if opts != nil {
		o = *opts
	}
	ttl := r.reg.HeartbeatTTL()
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
	start, err := r.st.LastSeq(ctx)
	if err != nil {
		return nil, fmt.Errorf("router: join: %w", err)
	}
	n := &Node{r: r, opts: o, proxied: map[string]bool{}, waiting: map[string]chan *protocol.Message{}, sent: map[string]bool{}, running: map[string]*remoteRun{}, changed: newSignal(),
		id: o.Host + "/" + r.ids.New(""), joined: time.Now(), seen: map[string]time.Time{}, owned: map[string]*owned{}}
	n.ctx, n.cancel = context.WithCancel(context.WithoutCancel(ctx))
	if !r.node.CompareAndSwap(nil, n) {
		n.cancel()
		return nil, wrap(ErrInvalidOptions, "the router is a node already: Leave before joining again", nil)
	}
	for _, a := range r.reg.List() {
		n.sync(a.ID())
	}
	n.bg.Go(func() {
		if err := r.reg.Follow(n.ctx, n.sync); err != nil {
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
		for _, a := range n.r.reg.Candidates(requires) {
			if n.r.reg.Online(a) && n.r.handler(a.ID()) != nil {
				online++
			}
		}
		if online >= count {
			return nil
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return fmt.Errorf("router: %d of %d agents online: %w", online, count, ctx.Err())
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
	n.r.opts.Logger.Error("router: node", "err", err)
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
// attempt with INTERRUPTED. It waits for all of that, then removes the
// dispatching handlers. Call it before closing the router.
func (n *Node) Leave() error {
	n.r.node.CompareAndSwap(n, nil)
	n.cancel()
	n.mu.Lock()
	for _, rr := range n.running {
		rr.ts.cancel(errNodeLeft)
	}
	n.mu.Unlock()
	// The bus and the watcher start runs: they stop first, so no run
	// starts while runs.Wait waits (a WaitGroup must not grow from zero
	// during a Wait).
	n.bg.Wait()
	n.runs.Wait()
	n.mu.Lock()
	ids := slicesOf(n.proxied)
	n.proxied = map[string]bool{}
	n.mu.Unlock()
	n.r.hmu.Lock()
	next := maps.Clone(n.r.handlerMap())
	for _, id := range ids {
		delete(next, id)
	}
	n.r.handlers.Store(&next)
	n.r.hmu.Unlock()
	return nil
}

func slicesOf(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// hosted reports whether agent id runs in this process: registered here
// (Local), or given a handler here that is not a dispatching one.
func (n *Node) hosted(id string) bool {
	if a, ok := n.r.reg.Get(id); ok && a.Local() {
		return true
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.r.handler(id) != nil && !n.proxied[id]
}

// sync gives agent id a dispatching handler when it is registered but
// has no handler here, and takes it away when the agent is removed.
func (n *Node) sync(id string) {
	defer n.changed.Broadcast()
	a, ok := n.r.reg.Get(id)
	n.r.hmu.Lock()
	defer n.r.hmu.Unlock()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ctx.Err() != nil {
		return
	}
	cur := n.r.handlerMap()
	_, has := cur[id]
	switch {
	case ok && !a.Local() && !has:
		next := maps.Clone(cur)
		next[id] = n.proxy(id) // no middleware: the hosting process runs it
		n.r.handlers.Store(&next)
		n.proxied[id] = true
	case !ok && n.proxied[id]:
		next := maps.Clone(cur)
		delete(next, id)
		n.r.handlers.Store(&next)
		delete(n.proxied, id)
	}
}

// heartbeats keeps the agents registered in this router online for the
// other processes.
func (n *Node) heartbeats() {
	t := time.NewTicker(n.opts.HeartbeatInterval)
	defer t.Stop()
	for {
		for _, a := range n.r.reg.List() {
			if a.Local() {
				if err := n.r.reg.Heartbeat(n.ctx, a.ID()); err != nil && n.ctx.Err() == nil && !errors.Is(err, registry.ErrNotFound) {
					n.r.opts.Logger.Warn("router: node heartbeat", "agent", a.ID(), "err", err)
				}
			}
		}
		// After the agents': when the others find the node dead, its
		// agents' last heartbeats are at least as old (adopt.go).
		if err := n.nodeHeartbeat(); err != nil && n.ctx.Err() == nil {
			n.r.opts.Logger.Warn("router: node heartbeat", "node", n.id, "err", err)
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
		for ev, err := range n.r.st.Follow(n.ctx, store.Query{AfterSeq: after}) {
			if err != nil {
				if n.ctx.Err() == nil {
					n.r.opts.Logger.Warn("router: node follow", "err", err)
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
	case protocol.TypeTaskResult, protocol.TypeTaskError, protocol.TypeTaskCancel, protocol.TypeTaskTimeout:
		// The routing process ended the attempt (or the task): a timeout,
		// a cancel, or it gave the attempt up.
		n.stopRun(m.TaskID, m.Attempt)
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
		rr.ts.cancel(&cancelCause{reason: "the task ended in the process that routed it"})
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

// proxy is the handler of an agent hosted by another process: it
// dispatches the attempt, then waits for its outcome, for the attempt's
// context to end, or for the agent to go offline (its process died: the
// attempt ends with INTERRUPTED, retried when Options.Recovery is
// RecoverRedispatch).
func (n *Node) proxy(agentID string) Handler {
	return func(ctx context.Context, t *Task) (*Result, error) {
		r, ts := n.r, t.ts
		key := idem.Attempt(t.ID(), t.attempt)
		n.mu.Lock()
		ch := n.waiting[key] // the dispatch went with the task.accept
		if ch == nil {
			ch = make(chan *protocol.Message, 1)
			n.waiting[key] = ch
		}
		n.mu.Unlock()
		defer func() {
			n.mu.Lock()
			delete(n.waiting, key)
			n.mu.Unlock()
		}()
		if !n.dispatched(key) {
			// Called other than through the router's attempt (a
			// middleware of its own, say): dispatch now.
			if err := r.appendLive(ctx, ts, n.dispatch(ts, agentID, t.attempt)); err != nil {
				return nil, err
			}
		}
		tick := time.NewTicker(n.opts.CheckInterval)
		defer tick.Stop()
		for {
			select {
			case m := <-ch:
				return decodeDone(m)
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-n.ctx.Done():
				return nil, n.interrupted(agentID, "this process left the team")
			case <-tick.C:
				if a, ok := r.reg.Get(agentID); !ok || !r.reg.Online(a) {
					return nil, n.interrupted(agentID, "its process stopped sending heartbeats")
				}
			}
		}
	}
}

// withDispatch adds to the routing.decision and task.accept of an attempt
// on an agent of another process the dispatch of the attempt, so that the
// three are stored together, and registers the attempt for its outcome
// before it can be stored.
func (n *Node) withDispatch(ts *taskState, agentID string, evs []*protocol.Message) []*protocol.Message {
	n.mu.Lock()
	proxied := n.proxied[agentID]
	n.mu.Unlock()
	if !proxied {
		return evs
	}
	attempt := int(ts.attempt.Load())
	key := idem.Attempt(ts.req.TaskID, attempt)
	n.mu.Lock()
	n.waiting[key] = make(chan *protocol.Message, 1)
	n.sent[key] = true
	n.mu.Unlock()
	return append(evs[:len(evs):len(evs)], n.dispatch(ts, agentID, attempt))
}

// dispatched reports whether withDispatch stored the dispatch of the
// attempt key, and forgets it.
func (n *Node) dispatched(key string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	ok := n.sent[key]
	delete(n.sent, key)
	return ok
}

// dispatch returns the dispatch event of an attempt.
func (n *Node) dispatch(ts *taskState, agentID string, attempt int) *protocol.Message {
	r := n.r
	d := r.event(ts, TypeDispatch, r.opts.AgentID, []string{agentID})
	d.Attempt = attempt
	d.IdempotencyKey = idem.Dispatch(ts.req.TaskID, attempt)
	r.setPayload(d, dispatchPayload{Depth: ts.depth, Chain: nonNilStrings(ts.ancestors())})
	return d
}

func (n *Node) interrupted(agentID, why string) error {
	return &protocol.ErrorPayload{
		Code:      protocol.CodeInterrupted,
		Message:   "agent " + agentID + " went away while running the task: " + why,
		Retryable: n.r.opts.Recovery == RecoverRedispatch,
		Details:   map[string]any{"agent": agentID},
	}
}

func decodeDone(m *protocol.Message) (*Result, error) {
	var p donePayload
	if err := json.Unmarshal(m.Payload, &p); err != nil {
		return nil, &protocol.ErrorPayload{Code: protocol.CodeInternal, Message: "an unreadable outcome from the hosting process: " + err.Error(), Retryable: true}
	}
	switch {
	case p.Error != nil:
		return nil, p.Error
	case p.Result != nil:
		res := &Result{PayloadType: p.Result.PayloadType, Attachments: p.Result.Attachments}
		if len(p.Result.Payload) > 0 {
			res.Payload = p.Result.Payload
		}
		return res, nil
	}
	return nil, &protocol.ErrorPayload{Code: protocol.CodeInternal, Message: "an empty outcome from the hosting process", Retryable: true}
}
