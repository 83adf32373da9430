package router

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router/internal/idem"
	"github.com/clutchprotocol/clutch/store"
)

// Adoption: the tasks a dead node routed are taken over by a survivor.
// See "Many processes" in the package doc for the contract.

const (
	// TypeOwner records which node routes a task: stored with the
	// task.request by the node the task was submitted to, and by a node
	// that adopts the task from a dead one (idempotency key
	// "clutch.adopt/<task id>/<node>", so that exactly one survivor adopts
	// it). The last one in the log names the owner. Payload {"node",
	// "depth", "chain", "sub", "from"}.
	TypeOwner protocol.Type = "x.clutch.task.owner"
	// TypeNodeHeartbeat says that a node is alive: each node stores one
	// every NodeOptions.HeartbeatInterval, run_id NodesRunID, payload
	// {"node"}. A node none of whose heartbeats arrived for the
	// registry's HeartbeatTTL is dead, and its tasks are adopted.
	TypeNodeHeartbeat protocol.Type = "x.clutch.node.heartbeat"
	// NodesRunID is the run_id (and, with thr_ and task_ prefixes, the
	// thread and task) of the node heartbeats.
	NodesRunID = "run_clutch_nodes"
)

// endedElsewhere is end's answer when the store already holds an end of
// the attempt (stored by another process that adopted the task, or by an
// earlier append whose answer was lost): the stored event is the outcome.
func (r *Router) endedElsewhere(ts *taskState, seq uint64, last *protocol.Message, out Outcome) (*protocol.Message, Outcome) {
	ev, err := r.eventAt(ts.detached(), seq)
	if err != nil {
		r.opts.Logger.Warn("router: reading the stored end of a task", "task", ts.req.TaskID, "err", err)
		return last, out
	}
	m, err := ev.Message()
	if err != nil {
		return last, out
	}
	o := outcomeOf(m)
	o.TaskID = ts.req.TaskID
	return m, *o
}

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

// storeRequest stores a task's request; in a node, with the owner event
// that names this node as the one routing it.
func (r *Router) storeRequest(ctx context.Context, ts *taskState) ([]store.AppendResult, error) {
	n := r.node.Load()
	if n == nil {
		// Through the task's buffer (its run goroutine has not started),
		// so that the argument list is not an allocation of its own.
		ts.evs[0] = ts.req
		res, err := r.st.Append(ctx, ts.evs[:1]...)
		ts.evs[0] = nil
		return res, err
	}
	o := n.ownerEvent(ts.req, ownerPayload{Node: n.id, Depth: ts.depth, Chain: ts.ancestors(), Sub: ts.parent != nil})
	o.IdempotencyKey = idem.Owner(ts.req.TaskID)
	return r.st.Append(ctx, ts.req, o)
}

// ownRetry stores, in a node, the owner event of a task Retry runs
// again here, so that the team knows which node routes it now.
func (r *Router) ownRetry(ctx context.Context, ts *taskState) error {
	n := r.node.Load()
	if n == nil {
		return nil
	}
	_, err := r.st.Append(ctx, n.ownerEvent(ts.req, ownerPayload{Node: n.id}))
	return err
}

func (n *Node) ownerEvent(req *protocol.Message, p ownerPayload) *protocol.Message {
	m := n.r.ids.Reply(req, TypeOwner, n.r.opts.AgentID)
	m.To = []protocol.Participant{}
	n.r.setPayload(m, p)
	return m
}

// nodeHeartbeat stores the heartbeat of this node.
func (n *Node) nodeHeartbeat() error {
	m := n.r.ids.NewMessage(TypeNodeHeartbeat, n.r.opts.AgentID)
	m.RunID, m.ThreadID, m.TaskID = NodesRunID, "thr_clutch_nodes", "task_clutch_nodes"
	n.r.setPayload(m, ownerPayload{Node: n.id})
	_, err := n.r.st.Append(n.ctx, m)
	return err
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

// alive reports whether node sent a heartbeat within the TTL (counting
// from this node's join for a node not heard from since); n.mu is held.
func (n *Node) aliveLocked(node string, now time.Time) bool {
	last, ok := n.seen[node]
	if !ok {
		last = n.joined
	}
	return now.Sub(last) <= n.r.reg.HeartbeatTTL()
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
					n.r.opts.Logger.Warn("router: node: adopting a task", "task", task, "from", node, "err", err)
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
	taskLog
	owner     string
	op        ownerPayload
	agent     string // the agent that accepted the last attempt
	dispatch  bool   // the last attempt was dispatched to another process
	retrying  bool   // the last attempt ended with a will_retry task.error
	done      *protocol.Message
	lastStart int // the attempt of the last task.accept
}

func (n *Node) readAttempts(ctx context.Context, task string) (*attemptLog, error) {
	l := &attemptLog{}
	for ev, err := range n.r.st.Read(ctx, store.Query{TaskID: task}) {
		if err != nil {
			return nil, err
		}
		m, err := ev.Message()
		if err != nil {
			continue
		}
		l.add(m)
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
		return nil, wrap(ErrUnknownTask, task, nil)
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
	r, ctx := n.r, n.ctx
	l, err := n.readAttempts(ctx, task)
	if err != nil {
		if errors.Is(err, ErrUnknownTask) {
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
	res, err := r.st.Append(ctx, claim)
	if err != nil {
		return false, err
	}
	if res[0].Duplicate {
		return false, nil // another survivor adopts it; its owner event updates the table
	}
	n.forget(task, from)
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
	ts, old, err := r.claim(ctx, l.req, nil, claimStored)
	if err != nil {
		return true, err
	}
	if old != nil {
		return true, nil // it runs here already
	}
	ts.depth, ts.chain = p.Depth, p.Chain
	attempt := max(l.attempt, l.req.Attempt, 1)
	ts.attempt.Store(int32(attempt))
	if a, ok := r.reg.Get(l.agent); ok {
		ts.agent.Store(a)
	}
	switch {
	case l.terminal != nil:
		ts.resolve(outcomeOf(l.terminal))
		r.unclaim(ts, claimTask)
	case l.done != nil:
		n.finish(ts, l.agent, l.lastStart, decodeDoneMsg(l.done), p.Sub)
	case p.Sub:
		// Its parent's attempt ran in the dead node (the handler that
		// delegated it died there): the subtask is cancelled, as it is
		// when its parent's attempt ends in one process.
		n.interruptSub(ts)
	case l.lastStart == 0:
		// Never routed: route it now.
		r.start(ts, attempt)
	case l.dispatch && !l.retrying && n.agentOnline(l.agent):
		r.settle(ts, claimTask)
		waiting = true
		agent, attempt := l.agent, l.lastStart
		n.runs.Go(func() {
			defer n.unwait(key)
			n.finish(ts, agent, attempt, n.awaitDone(ts, agent, ch), false)
		})
	default:
		n.recoverAttempt(ts, attempt, l.retrying)
	}
	return true, nil
}

func (n *Node) unwait(key string) {
	n.mu.Lock()
	delete(n.waiting, key)
	n.mu.Unlock()
}

// redelivered is recoverStored's question in a team, for a stored task
// that is open and not running here: the node routing it, when alive,
// ends it, and the returned handle follows the log for its end (ok);
// when that node is dead, this one adopts the task and recoverStored
// claims it again (the adopted task). ts, recoverStored's claim, is
// dropped either way.
func (n *Node) redelivered(ctx context.Context, ts *taskState) (h *Handle, ok bool, err error) {
	r := n.r
	r.unclaim(ts, claimDropped)
	l, err := n.readAttempts(ctx, ts.req.TaskID)
	if err != nil {
		return nil, false, err
	}
	n.mu.Lock()
	alive := l.owner == n.id || (l.owner != "" && n.aliveLocked(l.owner, n.clock()))
	n.mu.Unlock()
	if !alive {
		if _, err := n.adopt(ts.req.TaskID, l.owner); err != nil {
			return nil, false, err
		}
		n.mu.Lock()
		o := n.owned[ts.req.TaskID]
		n.mu.Unlock()
		if o == nil || o.node == l.owner {
			return nil, false, nil // adopted here, or ended: claim again
		}
		// Another survivor adopted it: follow its end.
	}
	w := r.newTask(context.Background(), ts.req, nil)
	w.claim.Store(claimTask)
	n.runs.Go(func() {
		for ev, err := range r.st.Follow(n.ctx, store.Query{TaskID: w.req.TaskID}) {
			if err != nil {
				break
			}
			if m, err := ev.Message(); err == nil && protocol.EndsTask(m) {
				w.resolve(outcomeOf(m))
				return
			}
		}
		// The node left before the task ended: an outcome that says so
		// (not stored: the task goes on in its owner).
		ep := &protocol.ErrorPayload{Code: protocol.CodeInterrupted, Retryable: true,
			Message: "this process left the team before the task ended in the process routing it"}
		w.resolve(&Outcome{TaskID: w.req.TaskID, Type: protocol.TypeTaskError, Message: r.errorEvent(w, r.opts.AgentID, ep), Err: ep})
	})
	return &w.handle, true, nil
}

func (n *Node) forget(task, from string) {
	n.mu.Lock()
	if o := n.owned[task]; o != nil && o.node == from {
		delete(n.owned, task)
	}
	n.mu.Unlock()
}

func (n *Node) agentOnline(id string) bool {
	a, ok := n.r.reg.Get(id)
	return ok && n.r.reg.Online(a)
}

type doneOutcome struct {
	res *Result
	err error
}

func decodeDoneMsg(m *protocol.Message) doneOutcome {
	res, err := decodeDone(m)
	return doneOutcome{res, err}
}

// awaitDone waits for the outcome of the attempt running in another
// process: its done event, the agent going offline (INTERRUPTED), or the
// task's cancellation (a zero outcome; the caller ends the task).
func (n *Node) awaitDone(ts *taskState, agentID string, ch chan *protocol.Message) doneOutcome {
	tick := time.NewTicker(n.opts.CheckInterval)
	defer tick.Stop()
	for {
		select {
		case m := <-ch:
			return decodeDoneMsg(m)
		case <-ts.ctx.Done():
			return doneOutcome{}
		case <-n.ctx.Done():
			return doneOutcome{err: n.interrupted(agentID, "the process that adopted the task left the team")}
		case <-tick.C:
			if !n.agentOnline(agentID) {
				return doneOutcome{err: n.interrupted(agentID, "its process stopped sending heartbeats")}
			}
		}
	}
}

// finish ends the adopted attempt with its outcome, as the routing
// process would have: a result (validated), a final error, or a
// retryable one that starts the next attempt.
func (n *Node) finish(ts *taskState, agentID string, attempt int, o doneOutcome, sub bool) {
	r := n.r
	ts.attempt.Store(int32(attempt))
	switch {
	case ts.ctx.Err() != nil:
		r.onCancel(ts)
	case o.err != nil:
		ep := wireError(o.err)
		if ep.Retryable && attempt < r.opts.MaxAttempts && !sub {
			retryEP := ep
			retryEP.Details = mergeDetails(ep.Details, map[string]any{"will_retry": true, "next_attempt": attempt + 1})
			if err := r.appendLive(ts.detached(), ts, r.errorEvent(ts, agentID, &retryEP)); err == nil {
				r.start(ts, attempt+1)
				return
			}
		}
		r.end(ts, Outcome{Err: &ep}, r.errorEvent(ts, agentID, &ep))
	case o.res != nil:
		result, verr := r.resultEvent(ts, agentID, o.res)
		if verr != nil {
			r.end(ts, Outcome{Err: verr}, r.errorEvent(ts, agentID, verr))
		} else {
			r.end(ts, Outcome{}, result)
		}
	default:
		r.onCancel(ts)
	}
	r.unclaim(ts, claimTask)
}

// interruptSub cancels an adopted subtask whose delegating handler died.
func (n *Node) interruptSub(ts *taskState) {
	r := n.r
	ep := &protocol.ErrorPayload{Code: protocol.CodeCancelled, Message: "the parent task's attempt ended: the process running it stopped"}
	m := r.event(ts, protocol.TypeTaskCancel, r.opts.AgentID, nil)
	r.setPayload(m, ep)
	r.end(ts, Outcome{Err: ep}, m)
	r.unclaim(ts, claimTask)
}

// recoverAttempt applies Options.Recovery to an adopted task whose last
// attempt died with its node (or whose retry the node had not started):
// RecoverRedispatch routes it again, RecoverFail ends it with INTERRUPTED.
func (n *Node) recoverAttempt(ts *taskState, attempt int, retrying bool) {
	r := n.r
	if r.opts.Recovery == RecoverRedispatch {
		r.start(ts, attempt+1)
		return
	}
	ep := &protocol.ErrorPayload{Code: protocol.CodeInterrupted, Message: "the process routing the task stopped before it ended", Retryable: true}
	if retrying {
		ep.Message = "the process routing the task stopped before its next attempt"
	}
	r.end(ts, Outcome{Err: ep}, r.errorEvent(ts, r.opts.AgentID, ep))
	r.unclaim(ts, claimTask)
}

// recoverTeam is Recover in a node: it adopts the open tasks of the log
// whose owner is dead (or that no node owns), after waiting one
// HeartbeatTTL from the join so that the live nodes' heartbeats are in.
func (n *Node) recoverTeam(ctx context.Context) (int, error) {
	r := n.r
	if wait := time.Until(n.joined.Add(r.reg.HeartbeatTTL())); wait > 0 {
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
	for ev, err := range r.st.Read(ctx, store.Query{}) {
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
	now := n.clock()
	count := 0
	for _, task := range order {
		if !open[task] || r.running(task) {
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
