package team

import (
	"context"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/router"
	"github.com/clutchprotocol/clutch/store"
)

// Budget.MaxTasks in a team (see "Budget" in the package doc): the tasks
// of a run are its task.request events in the shared store, and a task's
// place in its run is the number of them up to its own request, in seq
// order. The store's seqs are one total order for every process, so each
// process that routes a task of the run finds the same place for it, and
// the task past MaxTasks ends with BUDGET wherever it is routed. A retry
// stores no new request and a duplicate is not stored, so neither
// counts; a request refused for the budget is stored, and counts.

// teamCount is what this process read of a run's task.request events:
// the first n of them, in seq order, end at seq last. The log is
// append-only and its seqs become visible in order, so that prefix never
// changes: a later read goes on from last.
type teamCount struct {
	n    int
	last uint64
}

// maxCounted bounds Node.counted: past it, a run read before is
// forgotten (its next task reads its requests again).
const maxCounted = 4096

// count is Team.Count: whether t's request is not among the first max
// task.request events of its run. It reads only the requests of the run
// this process has not read yet, at most max of them in all, and nothing
// once it knows the run's first max.
func (n *Node) count(ctx context.Context, t router.TeamTask, max int) (past bool, err error) {
	run, seq := t.Request.RunID, t.Seq
	if seq == 0 {
		// Started from the log (Recover, Retry, adoption): look the
		// request up.
		ev, err := n.st.Get(ctx, t.Request.ID)
		if err != nil {
			return false, err
		}
		seq = ev.Seq
	}
	n.cmu.Lock()
	known := n.counted[run]
	n.cmu.Unlock()
	c, last := known.n, known.last
	if seq > last && c < max {
		q := store.Query{RunID: run, TypePrefix: string(protocol.TypeTaskRequest), AfterSeq: last, Limit: max - c}
		for ev, err := range n.st.Read(ctx, q) {
			if err != nil {
				return false, err
			}
			if ev.Seq > seq {
				break
			}
			c, last = c+1, ev.Seq
			if ev.Seq == seq {
				break
			}
		}
		n.cmu.Lock()
		if c > n.counted[run].n {
			if _, ok := n.counted[run]; !ok && len(n.counted) >= maxCounted {
				for k := range n.counted { // forget one run, any
					delete(n.counted, k)
					break
				}
			}
			n.counted[run] = teamCount{n: c, last: last}
		}
		n.cmu.Unlock()
	}
	// Among the first max (c < max: the request was not found among its
	// run's requests, which the store never does; it is not refused for
	// that).
	return !(seq <= last || c < max), nil
}
