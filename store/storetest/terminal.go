package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
)

// TerminalReport is what CheckTerminals found in a log: the tasks whose
// lifecycle breaks the rule that a task ends with exactly one terminal
// event (docs/protocol.md §2.1, §5), and the tasks that have not ended.
type TerminalReport struct {
	// Tasks is how many tasks (task ids with a task.request) the log has.
	Tasks int
	// Problems lists each task whose lifecycle breaks the rule, in the
	// order their first event was stored.
	Problems []TerminalProblem
	// Open lists the tasks whose last attempt has no terminal event, in
	// the order their first event was stored. It is not a problem while a
	// router may still run them.
	Open []string
}

// TerminalProblem is one task whose lifecycle breaks the rule.
type TerminalProblem struct {
	TaskID string
	// Seqs are the seqs of the events at fault, in order.
	Seqs []uint64
	// Detail says what is wrong, in words.
	Detail string
}

func (p TerminalProblem) String() string {
	return fmt.Sprintf("%s: %s (events %v)", p.TaskID, p.Detail, p.Seqs)
}

// taskTrack follows one task through the log.
type taskTrack struct {
	id       string
	requests []uint64
	ended    bool   // the last attempt has its terminal event
	endSeq   uint64 // seq of that terminal event
	endAt    int    // its attempt
	bad      []uint64
	detail   string
}

// CheckTerminals reads the whole log of st and checks, for every task,
// the rule that a task has exactly one terminal event per run of it:
//
//   - a task has one task.request;
//   - after a terminal event of attempt n, no lifecycle event of the task
//     (routing.decision, routing.failure, task.accept, task.error or
//     another terminal event) has an attempt ≤ n: only a new attempt (a
//     partial retry, docs/protocol.md §5.3) may follow, and it ends with a
//     terminal event of its own.
//
// Other events of a task (task.progress, tool.*) are not checked. Tasks
// whose last attempt has no terminal event are listed in Open.
func CheckTerminals(ctx context.Context, st store.Store) (TerminalReport, error) {
	var rep TerminalReport
	tracks := map[string]*taskTrack{}
	var order []*taskTrack
	for ev, err := range st.Read(ctx, store.Query{}) {
		if err != nil {
			return rep, err
		}
		m, err := ev.Message()
		if err != nil {
			return rep, fmt.Errorf("storetest: event %d: %w", ev.Seq, err)
		}
		if m.TaskID == "" || (m.Type.Family() != "task" && m.Type.Family() != "routing") {
			continue
		}
		tr := tracks[m.TaskID]
		if tr == nil {
			tr = &taskTrack{id: m.TaskID}
			tracks[m.TaskID] = tr
			order = append(order, tr)
		}
		tr.add(ev.Seq, m)
	}
	for _, tr := range order {
		if len(tr.requests) == 0 {
			continue // events of a task whose request another log holds
		}
		rep.Tasks++
		if tr.detail != "" {
			rep.Problems = append(rep.Problems, TerminalProblem{TaskID: tr.id, Seqs: tr.bad, Detail: tr.detail})
		}
		if !tr.ended {
			rep.Open = append(rep.Open, tr.id)
		}
	}
	return rep, nil
}

func (tr *taskTrack) fault(detail string, seqs ...uint64) {
	if tr.detail == "" {
		tr.detail = detail
		tr.bad = slices.Clone(seqs)
	}
}

func (tr *taskTrack) add(seq uint64, m *protocol.Message) {
	switch m.Type {
	case protocol.TypeTaskRequest:
		tr.requests = append(tr.requests, seq)
		if len(tr.requests) > 1 {
			tr.fault("more than one task.request", tr.requests...)
		}
		return
	case protocol.TypeRoutingDecision, protocol.TypeRoutingFailure, protocol.TypeTaskAccept, protocol.TypeTaskError,
		protocol.TypeTaskResult, protocol.TypeTaskCancel, protocol.TypeTaskTimeout:
	default:
		return // progress, input requests and the like
	}
	if tr.ended {
		if m.Attempt <= tr.endAt {
			if protocol.EndsTask(m) {
				tr.fault(fmt.Sprintf("two terminal events for attempt %d: %s after the task ended", tr.endAt, m.Type), tr.endSeq, seq)
			} else {
				tr.fault(fmt.Sprintf("%s of attempt %d after the task ended in attempt %d", m.Type, m.Attempt, tr.endAt), tr.endSeq, seq)
			}
			return
		}
		tr.ended = false // a new attempt: it must end again
	}
	if protocol.EndsTask(m) {
		tr.ended, tr.endSeq, tr.endAt = true, seq, m.Attempt
	}
}

// AssertOneTerminal fails t unless every task in st has exactly one
// terminal event (see CheckTerminals): no task breaks the rule and none is
// open. Call it when every task should have ended — after the router is
// closed, or after waiting for every handle.
func AssertOneTerminal(t testing.TB, st store.Store) {
	t.Helper()
	rep, err := CheckTerminals(context.Background(), st)
	if err != nil {
		t.Fatalf("storetest: reading the log: %v", err)
	}
	var b strings.Builder
	for _, p := range rep.Problems {
		fmt.Fprintf(&b, "\n  %s", p)
	}
	if len(rep.Open) > 0 {
		fmt.Fprintf(&b, "\n  %d tasks have no terminal event: %v", len(rep.Open), head(rep.Open, 10))
	}
	if b.Len() > 0 {
		t.Errorf("storetest: %d of %d tasks break \"exactly one terminal event\":%s", len(rep.Problems)+len(rep.Open), rep.Tasks, b.String())
	}
}

func head(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
