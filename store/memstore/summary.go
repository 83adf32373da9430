package memstore

import (
	"cmp"
	"context"
	"iter"
	"slices"

	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/driver"
)

// indexed is what the store keeps of one value of an index: the seqs of
// its events and, for a run or a thread, the counts of its summary that
// its events do not give directly; for a task, the state its run and
// thread count it by (driver.TaskStep). The rest of a summary is read
// from its events when it is listed: FirstSeq and LastSeq are the first
// and the last seq, Events their number, Created and Updated their times,
// RunID and Owner those of the first event, Channel that of the event at
// channel.
type indexed struct {
	// The seqs, ascending: in own while they fit (a task's usual events),
	// then in an array of their own.
	seqs []uint64
	own  [4]uint64
	// A run or a thread (driver.Fold).
	tasks, ended int32
	status       string // one of store.Summary's constant statuses
	channel      uint64 // seq of the latest event that set meta.ui_channel, 0 for none
	// A task (driver.TaskState).
	known, taskEnded bool // its request is stored; its latest attempt ended
	attempt          int32
	// Where its value is: slabs[keySlab][keyOff:keyOff+keyLen] (see key).
	keySlab, keyOff, keyLen uint32
}

// add appends seq to the seqs.
func (v *indexed) add(seq uint64) {
	if v.seqs == nil {
		v.seqs = v.own[:0] // entries never move (chunks)
	}
	v.seqs = append(v.seqs, seq)
}

// step applies e, an event of the task, to its state and returns the
// change to the counts of its run and thread.
func (v *indexed) step(e *driver.Entry) driver.Delta {
	next, changed, d := driver.TaskStep(e, driver.TaskState{Ended: v.taskEnded, Attempt: int(v.attempt)}, v.known)
	if changed {
		v.known, v.taskEnded, v.attempt = true, next.Ended, int32(next.Attempt)
	}
	return d
}

// fold adds e, stored with seq, to the summary counts of a run or thread,
// before seq is added to v.seqs; d is the change TaskStep gave.
func (v *indexed) fold(e *driver.Entry, seq uint64, d driver.Delta) {
	sum := store.Summary{Events: len(v.seqs), Tasks: int(v.tasks), Ended: int(v.ended), Status: v.status}
	driver.Fold(&sum, "", e, seq, sum.Created, d)
	v.tasks, v.ended, v.status = int32(sum.Tasks), int32(sum.Ended), sum.Status
	if e.Channel != "" {
		v.channel = seq
	}
}

// Runs implements store.Lister.
func (s *Store) Runs(ctx context.Context, q store.ListQuery) iter.Seq2[store.Summary, error] {
	return s.list(ctx, q, driver.RunIndex)
}

// Threads implements store.Lister.
func (s *Store) Threads(ctx context.Context, q store.ListQuery) iter.Seq2[store.Summary, error] {
	return s.list(ctx, q, driver.ThreadIndex)
}

// listed is a summary being listed and the events it is completed from.
type listed struct {
	sum            store.Summary
	entry          uint32 // its index entry (Store.entries)
	first, channel []byte // the bytes of the first event and of the channel's
}

// list selects the summaries of index ix under the read lock, newest
// first, and completes and yields them with no lock held.
func (s *Store) list(ctx context.Context, q store.ListQuery, ix driver.Index) iter.Seq2[store.Summary, error] {
	return func(yield func(store.Summary, error) bool) {
		if err := q.Validate(); err != nil {
			yield(store.Summary{}, err)
			return
		}
		if err := ctx.Err(); err != nil {
			yield(store.Summary{}, err)
			return
		}
		s.mu.RLock()
		if s.closed {
			s.mu.RUnlock()
			yield(store.Summary{}, store.ErrClosed)
			return
		}
		out := s.summaries(ix, q)
		s.mu.RUnlock()
		for i := range out {
			if !yield(out[i].complete(), nil) {
				return
			}
		}
	}
}

// summaries returns the summaries q selects from index ix, newest first,
// with what is kept of them; mu is held.
func (s *Store) summaries(ix driver.Index, q store.ListQuery) []listed {
	var out []listed
	s.indexes[ix].each(func(n uint64) {
		v := s.entries.at(uint32(n))
		first, last := v.seqs[0], v.seqs[len(v.seqs)-1]
		if q.Before != 0 && last >= q.Before {
			return
		}
		out = append(out, listed{entry: uint32(n), sum: store.Summary{FirstSeq: first, LastSeq: last,
			Events: len(v.seqs), Tasks: int(v.tasks), Ended: int(v.ended), Status: v.status}})
	})
	slices.SortFunc(out, func(a, b listed) int { return cmp.Compare(b.sum.LastSeq, a.sum.LastSeq) })
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	// What needs more than the entry is read for the selected ones only.
	for i := range out {
		l := &out[i]
		v := s.entries.at(l.entry)
		l.sum.ID = string(s.key(v))
		first := s.event(l.sum.FirstSeq)
		l.first, l.sum.Created, l.sum.Updated = first.Raw, first.Time, s.event(l.sum.LastSeq).Time
		if v.channel != 0 {
			l.channel = s.event(v.channel).Raw
		}
	}
	return out
}

// complete reads the run, owner and channel of a listed summary from its
// events' bytes (which never change).
func (l *listed) complete() store.Summary {
	sum := l.sum
	if m, err := protocol.Decode(l.first); err == nil {
		sum.RunID, sum.Owner = m.RunID, m.From.AgentID
	}
	if l.channel != nil {
		if m, err := protocol.Decode(l.channel); err == nil {
			sum.Channel, _ = m.Meta["ui_channel"].(string)
		}
	}
	return sum
}
