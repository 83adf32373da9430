package team

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/clutchprotocol/clutch/internal/coded"
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/router/internal/idem"
	"github.com/clutchprotocol/clutch/store"
)

// Adoption: the tasks a dead node routed are taken over by a survivor.
// See "Adoption" in the package doc for the contract.

const (
	// TypeOwner records which node routes a task: stored with the
	// task.request by the node the task was submitted to (idempotency key
	// "clutch.owner/<task id>"), by a node that runs it again with Retry,
	// and by a node that adopts the task from a dead one (idempotency key
	// "clutch.adopt/<task id>/<node>", so that exactly one survivor adopts
	// it). The last one in the log names the owner. Payload {"node",
	// "depth", "chain", "sub", "from"}.
	TypeOwner protocol.Type = "x.clutch.task.owner"
	// TypeNodeHeartbeat says that a node is alive: over a store without
	// store.Presence each node stores one every Options.HeartbeatInterval,
	// run_id NodesRunID, payload {"node"} (over one with it, the node
	// beats instead). A node none of whose heartbeats arrived for the
	// registry's HeartbeatTTL is dead, and its tasks are adopted.
	TypeNodeHeartbeat protocol.Type = "x.clutch.node.heartbeat"
	// NodesRunID is the run_id (and, with thr_ and task_ prefixes, the
	// thread and task) of the node heartbeats.
	NodesRunID = "run_clutch_nodes"
)

// ownerPayload is the payload of TypeOwner and TypeNodeHeartbeat.
type ownerPayload struct {
	Node  string   `json:"node"`
	Depth int      `json:"depth,omitempty"`
	Chain []string `json:"chain,omitempty"`
	Sub   bool     `json:"sub,omitempty"`  // delegated by a handler running in Node
	From  string   `json:"from,omitempty"` // the dead node it was adopted from
}

// decodeOwner reads the payload of a TypeOwner or TypeNodeHeartbeat
// event another process stored; ok is false for one without a node.
func decodeOwner(b []byte) (p ownerPayload, ok bool) {
	if json.Unmarshal(b, &p) != nil || p.Node == "" || p.Depth < 0 {
		return ownerPayload{}, false
	}
	return p, true
}

func (n *Node) ownerEvent(req *protocol.Message, p ownerPayload) *protocol.Message {
	m := n.ids.Reply(req, TypeOwner, n.ro.AgentID)
	m.To = []protocol.Participant{}
	setPayload(m, p)
	return m
}

// nodeHeartbeat records the heartbeat of this node: a beat of the key
// "<NodesRunID>/<node>" over a store with store.Presence, whose data is a
// count (so that each beat differs from the one before whatever the
// store's clock), an event otherwise.
func (n *Node) nodeHeartbeat() error {
	if n.pres != nil {
		n.nbeat++
		_, _, err := n.pres.Beat(n.ctx, NodesRunID+"/"+n.id, strconv.AppendUint(nil, n.nbeat, 10))
		return err
	}
	m := n.ids.NewMessage(TypeNodeHeartbeat, n.ro.AgentID)
	m.RunID, m.ThreadID, m.TaskID = NodesRunID, "thr_clutch_nodes", "task_clutch_nodes"
	setPayload(m, ownerPayload{Node: n.id})
	_, err := n.st.Append(n.ctx, m)
	return err
}

// pollNodes reads the nodes' beats and counts a node alive from now when
// its beat changed since the last poll (timed where they arrive, as the
// events are). The poll at Join (baseline) only notes the beats there
// are: they say nothing of life after the join.
func (n *Node) pollNodes(ctx context.Context, baseline bool) {
	if n.pres == nil {
		return
	}
	prefix := NodesRunID + "/"
	now := n.clock()
	for b, err := range n.pres.Beats(ctx, prefix) {
		if err != nil {
			if ctx.Err() == nil {
				n.log.Warn("team: reading the nodes' beats", "err", err)
			}
			return
		}
		node := strings.TrimPrefix(b.Key, prefix)
		if node == n.id {
			continue
		}
		v := b.Time.String() + "/" + string(b.Data)
		n.mu.Lock()
		old, known := n.beats[node]
		n.beats[node] = v
		if old != v && (known || !baseline) {
			n.seen[node] = now
		}
		n.mu.Unlock()
	}
}

// clock is the node's time for liveness: real time (heartbeats are
// timed where they arrive, so the processes' clocks need not agree),
// moved on by skew in tests.
func (n *Node) clock() time.Time { return time.Now().Add(time.Duration(n.skew.Load())) }

// owned is an open task routed by another node, as the bus saw it.
type owned struct {
	node     string
	adopting bool
}

// track applies an event of the bus to the table of open tasks and
// nodes; it reports nothing, the watcher acts on it.
func (n *Node) track(m *protocol.Message) {
	switch {
	case m.Type == TypeNodeHeartbeat:
		if p, ok := decodeOwner(m.Payload); ok && p.Node != n.id {
			n.mu.Lock()
			n.seen[p.Node] = n.clock()
			n.mu.Unlock()
		}
	case m.Type == TypeOwner:
		p, ok := decodeOwner(m.Payload)
		if !ok {
			return
		}
		n.mu.Lock()
		if p.Node == n.id {
			delete(n.owned, m.TaskID)
		} else {
			n.owned[m.TaskID] = &owned{node: p.Node}
		}
		n.mu.Unlock()
	case protocol.EndsTask(m):
		n.mu.Lock()
		delete(n.owned, m.TaskID)
		n.mu.Unlock()
	}
}

// aliveLocked reports whether node sent a heartbeat within the TTL
// (counting from this node's join for a node not heard from since); n.mu
// is held.
func (n *Node) aliveLocked(node string, now time.Time) bool {
	last, ok := n.seen[node]
	if !ok {
		last = n.joined
	}
	return now.Sub(last) <= n.reg.HeartbeatTTL()
}

// watch adopts, every CheckInterval, the open tasks of the nodes that
// stopped sending heartbeats.
func (n *Node) watch() {
	t := time.NewTicker(n.opts.CheckInterval)
	defer t.Stop()
	for {
		select {
		case <-n.ctx.Done():
			return
		case <-t.C:
		}
		n.pollNodes(n.ctx, false)
		now := n.clock()
		var todo map[string]string
		n.mu.Lock()
		for task, o := range n.owned {
			if !o.adopting && !n.aliveLocked(o.node, now) {
				o.adopting = true
				if todo == nil {
					todo = map[string]string{}
				}
				todo[task] = o.node
			}
		}
		n.mu.Unlock()
		for task, node := range todo {
			n.runs.Go(func() {
				if _, err := n.adopt(task, node); err != nil && n.ctx.Err() == nil {
					n.log.Warn("team: node: adopting a task", "task", task, "from", node, "err", err)
					n.mu.Lock()
					if o := n.owned[task]; o != nil && o.node == node {
						o.adopting = false // try again at the next check
					}
					n.mu.Unlock()
				}
			})
		}
	}
}

// attemptLog is what the log says about a task, for its adoption.
type attemptLog struct {
	req       *protocol.Message // the task.request
	terminal  *protocol.Message // the terminal event, nil while open
	attempt   int               // highest attempt seen
	owner     string
	op        ownerPayload
	agent     string // the agent that accepted the last attempt
	dispatch  bool   // the last attempt was dispatched to another process
	retrying  bool   // the last attempt ended with a will_retry task.error
	done      *protocol.Message
	lastStart int // the attempt of the last task.accept
}

func unknownTask(task string) error { return coded.Wrap(router.ErrUnknownTask, task, nil) }

func (n *Node) readAttempts(ctx context.Context, task string) (*attemptLog, error) {
	l := &attemptLog{}
	for ev, err := range n.st.Read(ctx, store.Query{TaskID: task}) {
		if err != nil {
			return nil, err
		}
		m, err := ev.Message()
		if err != nil {
			continue
		}
		// The task's state, as package router reads it (its replay.go): a new
		// attempt reopens the task.
		l.attempt = max(l.attempt, m.Attempt)
		switch {
		case m.Type == protocol.TypeTaskRequest:
			if l.req == nil {
				l.req = m
			}
		case m.Type == protocol.TypeTaskAccept || m.Type == protocol.TypeRoutingDecision:
			l.terminal = nil
		case protocol.EndsTask(m):
			l.terminal = m
		}
		switch m.Type {
		case TypeOwner:
			if p, ok := decodeOwner(m.Payload); ok {
				l.owner, l.op = p.Node, p
			}
		case protocol.TypeTaskAccept:
			l.agent, l.lastStart = m.From.AgentID, m.Attempt
			l.dispatch, l.retrying, l.done = false, false, nil
		case TypeDispatch:
			if m.Attempt == l.lastStart {
				l.dispatch = true
			}
		case TypeDone:
			if m.Attempt == l.lastStart {
				l.done = m
			}
		case protocol.TypeTaskError:
			if m.Attempt == l.lastStart && !protocol.EndsTask(m) {
				l.retrying = true
			}
		}
	}
	if l.req == nil {
		return nil, unknownTask(task)
	}
	return l, nil
}

// adopt takes over task from the dead node from: it claims the task
// (an owner event the store lets in once), then, by what the log holds,
// stores the task's end from the outcome a worker stored, waits (on a
// goroutine of its own) for the attempt still running in another
// process, or applies the recovery policy to an attempt that died with
// the node. It reports whether this node won the claim; once it returns
// true, the task is claimed in this router.
func (n *Node) adopt(task, from string) (bool, error) {
	ctx := n.ctx
	l, err := n.readAttempts(ctx, task)
	if err != nil {
		if errors.Is(err, router.ErrUnknownTask) {
			n.forget(task, from)
			return false, nil
		}
		return false, err
	}
	if l.terminal != nil || l.owner != from {
		n.forget(task, from)
		return false, nil
	}
	p := l.op
	p.Node, p.From = n.id, from
	claim := n.ownerEvent(l.req, p)
	claim.IdempotencyKey = idem.Adopt(task, from)
	res, err := n.st.Append(ctx, claim)
	if err != nil {
		return false, err
	}
	if res[0].Duplicate {
		return false, nil // another survivor adopts it; its owner event updates the table
	}
	n.forget(task, from)
	// Whatever follows, the task is this node's now (a wait that moved
	// here among it): wake those who watch the node's state.
	defer n.changed.Broadcast()
	// The waiter goes in before the log is read again: a done stored in
	// between is then either in the log or sent to it.
	key := idem.Attempt(task, l.lastStart)
	ch := make(chan *protocol.Message, 1)
	n.mu.Lock()
	n.waiting[key] = ch
	n.mu.Unlock()
	waiting := false
	defer func() {
		if !waiting {
			n.unwait(key)
		}
	}()
	if l, err = n.readAttempts(ctx, task); err != nil {
		return true, err
	}
	attempt := max(l.attempt, l.req.Attempt, 1)
	a, err := n.m.Adopt(ctx, l.req, p.Depth, p.Chain, attempt, l.agent)
	if err != nil {
		return true, err
	}
	if a == nil {
		return true, nil // it runs here already
	}
	if l.terminal == nil && a.Asked(ctx) {
		return true, nil // it waits for an answer, or was answered: the router goes on with it
	}
	switch {
	case l.terminal != nil:
		a.Resolve(l.terminal)
	case l.done != nil:
		res, ep := decodeDone(l.done)
		a.Finish(l.agent, l.lastStart, res, ep, p.Sub)
	case p.Sub:
		// Its parent's attempt ran in the dead node (the handler that
		// delegated it died there): the subtask is cancelled, as it is
		// when its parent's attempt ends in one process.
		a.Interrupt("the parent task's attempt ended: the process running it stopped")
	case l.lastStart == 0:
		// Never routed: route it now.
		a.Route(attempt)
	case l.dispatch && !l.retrying && n.agentOnline(l.agent):
		tctx := a.Hold()
		waiting = true
		agent, attempt := l.agent, l.lastStart
		n.runs.Go(func() {
			defer n.unwait(key)
			res, ep := n.awaitDone(tctx, agent, ch)
			a.Finish(agent, attempt, res, ep, false)
		})
	default:
		a.Recover(attempt, l.retrying)
	}
	return true, nil
}

// redelivered is Team.Redelivered, for a stored task that is open and
// not running here: the node routing it, when alive, ends it, and the
// returned handle follows the log for its end (ok); when that node is
// dead, this one adopts the task and the router claims it again (the
// adopted task).
func (n *Node) redelivered(ctx context.Context, req *protocol.Message) (h *router.Handle, ok bool, err error) {
	l, err := n.readAttempts(ctx, req.TaskID)
	if err != nil {
		return nil, false, err
	}
	n.pollNodes(ctx, false)
	n.mu.Lock()
	alive := l.owner == n.id || (l.owner != "" && n.aliveLocked(l.owner, n.clock()))
	n.mu.Unlock()
	if !alive {
		if _, err := n.adopt(req.TaskID, l.owner); err != nil {
			return nil, false, err
		}
		n.mu.Lock()
		o := n.owned[req.TaskID]
		n.mu.Unlock()
		if o == nil || o.node == l.owner {
			return nil, false, nil // adopted here, or ended: claim again
		}
		// Another survivor adopted it: follow its end.
	}
	h, resolve := n.m.Follow(req)
	n.runs.Go(func() {
		for ev, err := range n.st.Follow(n.ctx, store.Query{TaskID: req.TaskID}) {
			if err != nil {
				break
			}
			if m, err := ev.Message(); err == nil && protocol.EndsTask(m) {
				resolve(m)
				return
			}
		}
		// The node left before the task ended: an outcome that says so
		// (not stored: the task goes on in its owner).
		resolve(nil)
	})
	return h, true, nil
}

func (n *Node) forget(task, from string) {
	n.mu.Lock()
	if o := n.owned[task]; o != nil && o.node == from {
		delete(n.owned, task)
	}
	n.mu.Unlock()
}

// awaitDone waits for the outcome of the attempt running in another
// process: its done event, the agent going offline (INTERRUPTED), or the
// end of the task's context ctx (neither result nor error: the caller
// ends the task).
func (n *Node) awaitDone(ctx context.Context, agentID string, ch chan *protocol.Message) (*router.Result, *protocol.ErrorPayload) {
	tick := time.NewTicker(n.opts.CheckInterval)
	defer tick.Stop()
	for {
		select {
		case m := <-ch:
			return decodeDone(m)
		case <-ctx.Done():
			return nil, nil
		case <-n.ctx.Done():
			return nil, n.interrupted(agentID, "the process that adopted the task left the team")
		case <-tick.C:
			if !n.agentOnline(agentID) {
				return nil, n.interrupted(agentID, "its process stopped sending heartbeats")
			}
		}
	}
}

// recoverTeam is Recover in a node: it adopts the open tasks of the log
// whose owner is dead (or that no node owns), after waiting one
// HeartbeatTTL from the join so that the live nodes' heartbeats are in.
func (n *Node) recoverTeam(ctx context.Context) (int, error) {
	if wait := time.Until(n.joined.Add(n.reg.HeartbeatTTL())); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		}
	}
	open := map[string]bool{}
	owner := map[string]string{}
	var order []string
	for ev, err := range n.st.Read(ctx, store.Query{}) {
		if err != nil {
			return 0, err
		}
		m, err := ev.Message()
		if err != nil || m.RunID == NodesRunID || m.TaskID == "" {
			continue
		}
		switch {
		case m.Type == protocol.TypeTaskRequest:
			if _, ok := open[m.TaskID]; !ok {
				order = append(order, m.TaskID)
			}
			open[m.TaskID] = true
		case m.Type == TypeOwner:
			if p, ok := decodeOwner(m.Payload); ok {
				owner[m.TaskID] = p.Node
			}
		case m.Type == protocol.TypeTaskAccept || m.Type == protocol.TypeRoutingDecision:
			if _, ok := open[m.TaskID]; ok {
				open[m.TaskID] = true
			}
		case protocol.EndsTask(m):
			if _, ok := open[m.TaskID]; ok {
				open[m.TaskID] = false
			}
		}
	}
	n.pollNodes(ctx, false)
	now := n.clock()
	count := 0
	for _, task := range order {
		if !open[task] || n.m.Running(task) {
			continue
		}
		o := owner[task]
		n.mu.Lock()
		skip := o == n.id || (o != "" && n.aliveLocked(o, now))
		n.mu.Unlock()
		if skip {
			continue
		}
		won, err := n.adopt(task, o)
		if err != nil {
			return count, err
		}
		if won {
			count++
		}
	}
	return count, nil
}
