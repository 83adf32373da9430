package boltstore

import (
	"github.com/clutchprotocol/clutch/protocol"
	"github.com/clutchprotocol/clutch/store/driver"
)

// The index tail. Appending writes only the event records (an append-only
// bucket); their index entries — id, idempotency key, run, thread, task,
// agent — are kept in memory for the events after the watermark
// meta/indexed and written to the file together, IndexBatch events at a
// time, in the same transaction that moves the watermark (flush.go).
// One flush touches each index page once for many events, instead of once
// per commit: with 64 concurrent runs that is the difference between
// rewriting a few hundred B+tree pages per commit and a few per event
// (see doc.go, "Performance").
//
// After a crash the tail is rebuilt from the records after the watermark,
// whose headers hold the indexed fields, so nothing is lost and nothing
// needs repair. Close flushes it.
type tail struct {
	base    uint64      // the watermark: events up to base are indexed in the file
	entries []tailEntry // the event base+1+i is entries[i]
	ids     map[string]uint64
	idem    map[string]uint64 // by idem bucket key (see idemKey)
}

type tailEntry struct {
	id, run, thread, task, agent string
	idemKey                      string // the idem bucket key, "" without an idempotency key
	typ                          protocol.Type
}

// attr returns the entry's value for an index.
func (e *tailEntry) attr(ix driver.Index) string {
	switch ix {
	case driver.RunIndex:
		return e.run
	case driver.ThreadIndex:
		return e.thread
	case driver.TaskIndex:
		return e.task
	case driver.AgentIndex:
		return e.agent
	}
	return ""
}

func newTail(base uint64, n int) *tail {
	return &tail{
		base:    base,
		entries: make([]tailEntry, 0, n),
		ids:     make(map[string]uint64, n),
		idem:    make(map[string]uint64),
	}
}

// add appends the entry of the event seq, which must be the next one. The
// caller holds Store.mu for writing, or owns the tail alone.
func (t *tail) add(e tailEntry, seq uint64) {
	t.entries = append(t.entries, e)
	t.ids[e.id] = seq
	if e.idemKey != "" {
		t.idem[e.idemKey] = seq
	}
}

func tailEntryOf(r *record) tailEntry {
	e := tailEntry{
		id: string(r.id), run: string(r.run), thread: string(r.thread), task: string(r.task),
		agent: string(r.agent), typ: protocol.Type(r.typ),
	}
	if len(r.idem) > 0 {
		e.idemKey = string(idemKey(e.run, string(r.idem)))
	}
	return e
}
