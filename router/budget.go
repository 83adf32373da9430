package router

import (
	"context"
	"errors"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// Budget.MaxTasks in a team (see "Many processes" in the package doc):
// the tasks of a run are its task.request events in the shared store, and
// a task's place in its run is the number of them up to its own request,
// in seq order. The store's seqs are one total order for every process,
// so each process that routes a task of the run finds the same place for
// it, and the task past MaxTasks ends with BUDGET wherever it is routed.
// A retry stores no new request and a duplicate is not stored, so neither
// counts; a request refused for the budget is stored, and counts.

// teamCount is what this process read of a run's task.request events:
// the first n of them, in seq order, end at seq last. The log is
// append-only and its seqs become visible in order, so that prefix never
// changes: a later read goes on from last.
type teamCount struct {
	n    int
	last uint64
}

// maxCounted bounds Router.counted: past it, a run read before is
// forgotten (its next task reads its requests again).
const maxCounted = 4096

// teamBudget applies Budget.MaxTasks to ts over the store: the budget's
// error when ts's request is not among the first MaxTasks task.request
// events of its run, nil when it is. It reads the store, so r.mu must
// not be held; it reads only the requests of the run this process has
// not read yet, at most MaxTasks of them in all, and nothing once it
// knows the run's first MaxTasks.
func (r *Router) teamBudget(ts *taskState) (*protocol.ErrorPayload, error) {
	max, run := r.opts.Budget.MaxTasks, ts.req.RunID
	seq := ts.reqSeq
	if seq == 0 {
		// Started from the log (Recover, Retry, adoption): look the
		// request up.
		ev, err := r.st.Get(ts.ctx, ts.req.ID)
		if err != nil {
			return nil, err
		}
		seq = ev.Seq
		ts.reqSeq = seq
	}
	r.mu.Lock()
	known := r.counted[run]
	r.mu.Unlock()
	n, last := known.n, known.last
	if seq > last && n < max {
		q := store.Query{RunID: run, TypePrefix: string(protocol.TypeTaskRequest), AfterSeq: last, Limit: max - n}
		for ev, err := range r.st.Read(ts.ctx, q) {
			if err != nil {
				return nil, err
			}
			if ev.Seq > seq {
				break
			}
			n, last = n+1, ev.Seq
			if ev.Seq == seq {
				break
			}
		}
		r.mu.Lock()
		if n > r.counted[run].n {
			if _, ok := r.counted[run]; !ok && len(r.counted) >= maxCounted {
				for k := range r.counted { // forget one run, any
					delete(r.counted, k)
					break
				}
			}
			r.counted[run] = teamCount{n: n, last: last}
		}
		r.mu.Unlock()
	}
	if seq <= last || n < max {
		// Among the first MaxTasks (n < max: the request was not found
		// among its run's requests, which the store never does; it is not
		// refused for that).
		return nil, nil
	}
	return tasksBudgetError(max), nil
}

// budgetUnread ends a task whose place in its run could not be read: a
// task.error with the store's code (retryable when the store was
// unavailable), or its cancellation.
func (r *Router) budgetUnread(ts *taskState, err error) {
	if ts.ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		r.onCancel(ts)
		return
	}
	ep := protocol.NewErrorPayload(err)
	ep.Message = "counting the run's tasks for its budget: " + ep.Message
	r.end(ts, Outcome{Err: &ep}, r.errorEvent(ts, r.opts.AgentID, &ep))
}
