package boltstore

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"runtime/debug"
	"slices"
	"sync/atomic"
	"time"

	"github.com/clutchprotocol/clutch/store"
	"github.com/clutchprotocol/clutch/store/internal/driver"
	bolt "go.etcd.io/bbolt"
)

// request is one Append call on its way to the writer. The caller prepares
// everything that does not need the file (validation, encoding, records)
// so that this work runs in parallel and the writer only commits.
type request struct {
	ctx     context.Context // the Append call's; checked before the commit
	entries []driver.Entry
	items   []item
	res     []store.AppendResult
	err     error
	done    chan struct{} // closed when res or err is set
	one     [1]item       // items of a one-message Append, without an allocation
}

type item struct {
	rec     []byte // the record, time and checksum filled in at commit
	sum     uint32 // the checksum of the record's body (bodySum)
	idemKey string // the idem bucket key, "" without an idempotency key
}

func newRequest(ctx context.Context, entries []driver.Entry) *request {
	r := &request{ctx: ctx, entries: entries, done: make(chan struct{})}
	if len(entries) == 1 {
		r.items = r.one[:]
	} else {
		r.items = make([]item, len(entries))
	}
	n := 0
	for i := range entries {
		n += recordSize(&entries[i])
	}
	buf := make([]byte, 0, n)
	for i := range entries {
		e := &entries[i]
		start := len(buf)
		buf = appendRecord(buf, e)
		r.items[i].rec = buf[start:len(buf):len(buf)]
		r.items[i].sum = bodySum(r.items[i].rec)
		if e.IdempotencyKey != "" {
			r.items[i].idemKey = string(idemKey(e.RunID, e.IdempotencyKey))
		}
	}
	return r
}

// writer is the single goroutine that commits appends. It takes every
// request waiting in the queue (up to Options.MaxBatch events) into one
// bbolt transaction — one commit, one fsync — then acknowledges each;
// requests that arrive meanwhile form the next group. Unlike bbolt's
// DB.Batch it never waits on a timer: an idle writer commits a lone append
// at once.
type writer struct {
	s          *Store
	batch      []*request
	live       []*request
	pendIDs    map[string]uint64 // this group's new events
	pendIdem   map[string]uint64
	added      []tailEntry
	maxID      []byte        // the last key of the ids bucket: larger ids are not in it
	maxIdem    []byte        // the same for the idem bucket
	closeErr   error         // the final flush's
	lastGroup  int           // requests in the last group
	lastCommit time.Duration // how long it took

	commits, appended, duplicates, flushes atomic.Uint64
}

func (w *writer) init(s *Store) error {
	w.s = s
	w.pendIDs = make(map[string]uint64)
	w.pendIdem = make(map[string]uint64)
	return s.db.View(func(tx *bolt.Tx) error {
		k, _ := tx.Bucket(bucketIDs).Cursor().Last()
		w.maxID = bytes.Clone(k)
		k, _ = tx.Bucket(bucketIdem).Cursor().Last()
		w.maxIdem = bytes.Clone(k)
		return nil
	})
}

func (w *writer) run() {
	defer close(w.s.wdone)
	// The writer reads the mapping in every commit: a fault on a damaged
	// page must become a panic that update recovers, not a fatal error.
	// The setting is this goroutine's, for its whole life.
	debug.SetPanicOnFault(true)
	open := true
	for open {
		if w.lastGroup > 1 {
			w.gather()
		}
		r, ok := <-w.s.reqs
		if !ok {
			break
		}
		w.batch = append(w.batch[:0], r)
		n := len(r.entries)
	drain:
		for n < w.s.opts.MaxBatch {
			select {
			case r, ok := <-w.s.reqs:
				if !ok {
					open = false
					break drain
				}
				w.batch = append(w.batch, r)
				n += len(r.entries)
			default:
				break drain
			}
		}
		w.lastGroup = len(w.batch)
		t := time.Now()
		w.commit()
		w.lastCommit = time.Since(t)
		clear(w.batch)
		if len(w.s.tail.entries) >= w.s.opts.IndexBatch {
			// On failure the tail stays in memory and the next flush
			// retries; the events themselves are committed.
			_ = w.flush()
		}
	}
	w.closeErr = w.flush()
}

// update runs f in a write transaction; a panic (or memory fault) in bbolt
// on a damaged page becomes a CorruptError and stops further writes.
func (w *writer) update(op string, f func(tx *bolt.Tx) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = corrupt("%s: %s: bbolt failed on a damaged page: %v", w.s.path, op, r)
			w.s.setBroken(err)
		}
	}()
	err = w.s.db.Update(f)
	if errors.Is(err, ErrCorrupt) {
		w.s.setBroken(err)
	}
	return err
}

func (w *writer) commit() {
	s := w.s
	w.live = w.live[:0]
	total := 0
	for _, r := range w.batch {
		if err := r.ctx.Err(); err != nil {
			r.err = err // given up before its commit: not stored
			close(r.done)
			continue
		}
		w.live = append(w.live, r)
		total += len(r.entries)
	}
	if len(w.live) == 0 {
		return
	}
	if err := s.brokenErr(); err != nil {
		// A damaged file is not written to (see the package doc).
		for _, r := range w.live {
			r.err = err
			close(r.done)
		}
		clear(w.live)
		return
	}
	clear(w.pendIDs)
	clear(w.pendIdem)
	w.added = w.added[:0]
	now := s.opts.Clock().UnixNano()
	keys := make([]byte, 0, 8*total) // bbolt keeps keys until the commit
	seq := s.last
	err := w.update("append", func(tx *bolt.Tx) error {
		events := tx.Bucket(bucketEvents)
		events.FillPercent = 1.0 // append-only: full pages
		ids, idem := tx.Bucket(bucketIDs), tx.Bucket(bucketIdem)
		for _, r := range w.live {
			r.res = make([]store.AppendResult, len(r.entries))
			for i := range r.entries {
				e := &r.entries[i]
				// Dedup, docs/protocol.md §5.2: the id first, then (run_id,
				// idempotency_key); this group, the tail, then the file.
				if dup, ok, err := w.findID(ids, e.ID); err != nil {
					return err
				} else if ok {
					r.res[i] = store.AppendResult{Seq: dup, Duplicate: true, DuplicateBy: store.DedupByID}
					continue
				}
				it := &r.items[i]
				if it.idemKey != "" {
					if dup, ok, err := w.findIdem(idem, it.idemKey); err != nil {
						return err
					} else if ok {
						r.res[i] = store.AppendResult{Seq: dup, Duplicate: true, DuplicateBy: store.DedupByIdempotencyKey}
						continue
					}
				}
				seq++
				sealRecord(it.rec, it.sum, now)
				keys = appendSeq(keys, seq)
				if err := events.Put(keys[len(keys)-8:], it.rec); err != nil {
					return err
				}
				w.pendIDs[e.ID] = seq
				if it.idemKey != "" {
					w.pendIdem[it.idemKey] = seq
				}
				w.added = append(w.added, tailEntry{
					id: e.ID, run: e.RunID, thread: e.ThreadID, task: e.TaskID,
					agent: e.AgentID, idemKey: it.idemKey, typ: e.Type,
				})
				r.res[i] = store.AppendResult{Seq: seq}
			}
		}
		return w.summarize(tx, now)
	})
	if err != nil {
		for _, r := range w.live {
			r.res, r.err = nil, err
			close(r.done)
		}
		return
	}
	w.commits.Add(1)
	w.appended.Add(uint64(len(w.added)))
	w.duplicates.Add(uint64(total - len(w.added)))
	s.mu.Lock()
	for i, e := range w.added {
		s.tail.add(e, s.last+1+uint64(i))
	}
	s.last = seq
	s.mu.Unlock()
	s.sig.Notify()
	for _, r := range w.live {
		close(r.done)
	}
	clear(w.live)
}

func appendSeq(b []byte, seq uint64) []byte {
	return append(b, byte(seq>>56), byte(seq>>48), byte(seq>>40), byte(seq>>32), byte(seq>>24), byte(seq>>16), byte(seq>>8), byte(seq))
}

// findID looks an id up in this group, the tail and the file. The writer
// reads the tail's maps without the lock: it is their only writer.
func (w *writer) findID(ids *bolt.Bucket, id string) (uint64, bool, error) {
	if seq, ok := w.pendIDs[id]; ok {
		return seq, true, nil
	}
	if seq, ok := w.s.tail.ids[id]; ok {
		return seq, true, nil
	}
	if w.maxID == nil || id > string(w.maxID) {
		return 0, false, nil // past the last key: time-ordered ids never cost a lookup
	}
	v := ids.Get([]byte(id))
	if v == nil {
		return 0, false, nil
	}
	seq, err := parseSeqKey(v)
	return seq, err == nil, err
}

func (w *writer) findIdem(idem *bolt.Bucket, key string) (uint64, bool, error) {
	if seq, ok := w.pendIdem[key]; ok {
		return seq, true, nil
	}
	if seq, ok := w.s.tail.idem[key]; ok {
		return seq, true, nil
	}
	if w.maxIdem == nil || key > string(w.maxIdem) {
		return 0, false, nil
	}
	v := idem.Get([]byte(key))
	if v == nil {
		return 0, false, nil
	}
	seq, err := parseSeqKey(v)
	return seq, err == nil, err
}

// flush writes the index entries of the tail to the file and moves the
// watermark past them, in one transaction, then starts an empty tail.
func (w *writer) flush() error {
	s := w.s
	t := s.tail
	if len(t.entries) == 0 || s.brokenErr() != nil {
		// A damaged file keeps its index entries in memory: the next
		// Open rebuilds them, and the file is not written to.
		return nil
	}
	last := t.base + uint64(len(t.entries))
	var maxID, maxIdem []byte
	err := w.update("index flush", func(tx *bolt.Tx) error {
		ids, idem := tx.Bucket(bucketIDs), tx.Bucket(bucketIdem)
		vals := make([]byte, 0, 8*len(t.entries))
		var groups [len(indexBuckets)]map[string][]uint64
		for _, ix := range indexes {
			groups[ix] = make(map[string][]uint64)
		}
		for i := range t.entries {
			e := &t.entries[i]
			seq := t.base + 1 + uint64(i)
			vals = appendSeq(vals, seq)
			v := vals[len(vals)-8:]
			if err := ids.Put([]byte(e.id), v); err != nil {
				return err
			}
			if e.idemKey != "" {
				if err := idem.Put([]byte(e.idemKey), v); err != nil {
					return err
				}
			}
			for _, ix := range indexes {
				attr := e.attr(ix)
				groups[ix][attr] = append(groups[ix][attr], seq)
			}
		}
		for _, ix := range indexes {
			b := tx.Bucket(indexBuckets[ix])
			attrs := make([]string, 0, len(groups[ix]))
			for a := range groups[ix] {
				attrs = append(attrs, a)
			}
			slices.Sort(attrs) // in key order: fewer page visits
			for _, a := range attrs {
				seqs := groups[ix][a]
				for len(seqs) > 0 {
					chunk := seqs[:min(len(seqs), maxPostingLen)]
					seqs = seqs[len(chunk):]
					if err := b.Put(postingKey(a, chunk[0]), appendPosting(nil, chunk)); err != nil {
						return err
					}
				}
			}
		}
		if err := tx.Bucket(bucketMeta).Put(keyIndexed, seqKey(last)); err != nil {
			return err
		}
		k, _ := ids.Cursor().Last()
		maxID = bytes.Clone(k)
		k, _ = idem.Cursor().Last()
		maxIdem = bytes.Clone(k)
		return nil
	})
	if err != nil {
		return err
	}
	w.maxID, w.maxIdem = maxID, maxIdem
	w.flushes.Add(1)
	nt := &tail{base: last, entries: make([]tailEntry, 0, cap(t.entries)), ids: t.ids, idem: t.idem}
	s.mu.Lock()
	clear(nt.ids) // no reader keeps the maps past its lock
	clear(nt.idem)
	s.tail = nt
	s.mu.Unlock()
	return nil
}

// gather lets the callers just acknowledged come back before the next
// group is taken. Without it, synchronous appenders settle into two
// cohorts that alternate, each group holding half of them. It waits, by
// yielding the processor, until as many requests are queued as the last
// group held, or for at most half the last commit's duration (and never
// more than maxGather). It
// never waits after a group of one, so a lone appender pays nothing, and
// unlike a fixed batch delay it cannot cost more than a fraction of the
// commit it amortizes.
func (w *writer) gather() {
	deadline := time.Now().Add(min(w.lastCommit/2, maxGather))
	for len(w.s.reqs) < w.lastGroup && time.Now().Before(deadline) {
		runtime.Gosched()
	}
}

// maxGather caps gather's wait, so that a slow commit (a loaded machine, a
// slow disk) does not make the writer spin long.
const maxGather = 500 * time.Microsecond
